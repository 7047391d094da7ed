"""The reference module itself, side by side with mps_preflight.compat, on the same test
doubles written the reference's way: the same commands are sent, and the
verdict and ``to_dict()`` are the reference's.

The reference is the seed's text (/work/shared/seed/cuda_process_sharing.reference.txt),
re-indented in bench/reference_cuda_process_sharing.py; it imports torch only when no
``torch_module`` is given, so every call here passes a torch stand-in.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mps_preflight import compat
from test_compat import FakeRun, FakeTorch
from conftest import GPU0, GPU1, FakeHost

_PATH = Path(__file__).resolve().parents[1] / "bench" / "reference_cuda_process_sharing.py"
_SPEC = importlib.util.spec_from_file_location("reference_cuda_process_sharing", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
reference = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = reference  # dataclasses look the module up while it loads
_SPEC.loader.exec_module(reference)

ROW0 = f"0, {GPU0}\n"


def doubles(daemon: object = "4428\n", smi: object = ROW0) -> FakeRun:
    return FakeRun(**{"nvidia-smi": smi, "nvidia-cuda-mps-control": daemon})


def both(*args: Any, daemon: object = "4428\n", smi: object = ROW0, **kwargs: Any) -> list[Any]:
    """Each module's answer (its evidence's `to_dict()`, or the `ValueError` it raised) and
    the commands it sent, on a fresh double of the same answers."""
    answers = []
    for module in (reference, compat):
        run = doubles(daemon, smi)
        try:
            answer: Any = module.probe_cuda_process_sharing(
                *args, run_command=run, torch_module=FakeTorch(GPU0.removeprefix("GPU-")), **kwargs
            ).to_dict()
        except ValueError as err:
            answer = err
        answers.append((answer, run.calls))
    return answers


def test_a_healthy_explicit_request_gives_the_reference_dict_and_commands(host: FakeHost) -> None:
    host.socket()
    (ours, our_calls), (theirs, their_calls) = reversed(
        both("mps", "cuda:0", "cuda:0", backend="mjwarp", rank=0, world_size=1)
    )
    assert isinstance(ours, dict) and ours["validated"] is True
    assert ours == theirs
    assert list(ours) == list(theirs)
    assert our_calls == their_calls


def test_a_null_request_records_the_same_ambient_state(host: FakeHost) -> None:
    host.socket()
    (theirs, _), (ours, _) = both(None, "cuda:0", None, backend="anything")
    assert ours == theirs
    assert ours["ambient_server"] is True and ours["server_pid"] == 4428
    host.close()  # no control pipe: nothing ambient
    (theirs, _), (ours, _) = both(None, "cuda:0", None, backend="anything")
    assert ours == theirs and ours["ambient_server"] is False


@pytest.mark.parametrize(
    ("case", "daemon", "smi", "phrase"),
    [
        (
            "daemon gone",
            subprocess.CalledProcessError(1, ["nvidia-cuda-mps-control"]),
            ROW0,
            "could not reach the control daemon",
        ),
        ("daemon idle, no pid file", "", ROW0, "could not reach the control daemon"),
        ("collector on another GPU", "4428\n", f"0, {GPU1}\n", "share one physical GPU"),
        (
            "no GPU table",
            "4428\n",
            FileNotFoundError(2, "No such file or directory"),
            "could not resolve the",
        ),
    ],
)
def test_a_rejection_of_the_reference_is_a_rejection_here(
    host: FakeHost, case: str, daemon: object, smi: object, phrase: str
) -> None:
    host.socket()
    (theirs, _), (ours, _) = both(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", daemon=daemon, smi=smi
    )
    assert isinstance(theirs, ValueError), case
    assert isinstance(ours, ValueError), (case, ours)
    assert phrase in str(theirs) and phrase in str(ours), (case, str(theirs), str(ours))


def test_no_control_pipe_is_refused_by_both(host: FakeHost) -> None:
    (theirs, _), (ours, their_calls) = both("mps", "cuda:0", "cuda:0", backend="mjwarp")
    assert isinstance(theirs, ValueError) and isinstance(ours, ValueError)
    assert "found no control pipe" in str(theirs) and "found no control pipe" in str(ours)


def test_visibility_entries_resolve_as_the_reference_resolves_them() -> None:
    for entries in (["0"], [GPU0, "MIG-x"], ["MIG-x"]):
        runs = [doubles(), doubles()]
        theirs = reference.resolve_mps_visibility_entries(entries, run_command=runs[0])
        ours = compat.resolve_mps_visibility_entries(entries, run_command=runs[1])
        assert ours == theirs
        assert runs[0].calls == runs[1].calls
    for module in (reference, compat):
        with pytest.raises(ValueError, match=r"could not resolve CUDA_VISIBLE_DEVICES entry '1'"):
            module.resolve_mps_visibility_entries(["1"], run_command=doubles())
