"""Index order on multi-GPU hosts, side by side with the reference module: the drop-in agrees
with the reference wherever the order is settled (a torch witness for the index, or GPUs of one
model), and rejects, saying why and how to fix it, only where nothing settles it.

`nvidia-smi` numbers GPUs in PCI order and CUDA fastest-first unless
``CUDA_DEVICE_ORDER=PCI_BUS_ID``; the reference's ``index,uuid`` query names no model, so the
drop-in asks the models with a second query, and only where the first answer shows more than
one GPU, the order is not ``PCI_BUS_ID`` and no witness proves the index.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

import mps_preflight
from mps_preflight import compat
from conftest import FakeHost
from test_compat import FakeTorch
from test_compat_reference import reference

H100 = "NVIDIA H100 80GB HBM3"
#: Eight UUIDs as `nvidia-smi` prints them (PyTorch's partial-UUID test host).
UUIDS = [
    "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1",
    "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
    "GPU-e429a63e-c61c-4795-b757-5132caeb8e70",
    "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
    "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e",
    "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
    "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e",
    "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
]
#: A GTX 1660 SUPER at PCI index 0 and an RTX 3090 at 1: CUDA's fastest-first order puts
#: the 3090 first.
MIXED = [
    ("NVIDIA GeForce GTX 1660 SUPER", UUIDS[0]),
    ("NVIDIA GeForce RTX 3090", UUIDS[1]),
]
REFERENCE_QUERY = ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"]
MODELS_QUERY = ["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"]


def same_model(count: int) -> list[tuple[str, str]]:
    return [(H100, uuid) for uuid in UUIDS[:count]]


class Host:
    """A `run_command` double of a host with `gpus` (model, UUID) in `nvidia-smi` order.

    `answers`: ``"fields"`` answers the fields each `--query-gpu=` asks, as `nvidia-smi` does;
    ``"index,uuid"`` answers the reference's two columns whatever is asked; ``"fails"`` raises
    as a failed command for any other query; ``"garbage"`` prints nonsense for it.
    """

    def __init__(
        self, gpus: list[tuple[str, str]], answers: str = "fields", daemon: object = "4428\n"
    ) -> None:
        self.gpus, self.answers, self.daemon = gpus, answers, daemon
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> object:
        self.calls.append((list(argv), kwargs))
        if argv[0] == "nvidia-cuda-mps-control":
            if isinstance(self.daemon, BaseException):
                raise self.daemon
            return SimpleNamespace(stdout=self.daemon, stderr="", returncode=0)
        fields = argv[1].removeprefix("--query-gpu=").split(",")
        if fields != ["index", "uuid"] and self.answers != "fields":
            if self.answers == "fails":
                raise subprocess.CalledProcessError(2, argv, output="", stderr="Invalid field\n")
            if self.answers == "garbage":
                return SimpleNamespace(stdout="???\n", stderr="", returncode=0)
            fields = ["index", "uuid"]
        rows = []
        for index, (name, uuid) in enumerate(self.gpus):
            values = {"index": str(index), "uuid": uuid, "name": name}
            rows.append(", ".join(values[field] for field in fields))
        return SimpleNamespace(stdout="".join(row + "\n" for row in rows), stderr="", returncode=0)


ANSWERS = ["fields", "index,uuid", "fails", "garbage"]


def run(module: Any, args: tuple[Any, ...], host: Host, torch: object) -> Any:
    """The module's evidence `to_dict()`, or the `ValueError` it raised."""
    try:
        return module.probe_cuda_process_sharing(
            *args, backend="mjwarp", run_command=host, torch_module=torch
        ).to_dict()
    except ValueError as err:
        return err


def side_by_side(
    args: tuple[Any, ...],
    gpus: list[tuple[str, str]],
    *,
    answers: str = "fields",
    cuda_order: list[str] | None = None,
    witness: bool = True,
    daemon: object = "4428\n",
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Any, Host, Any, Host]:
    """The reference's and compat's answers on fresh doubles of one host. `cuda_order` is the
    UUIDs in CUDA's order (default: `nvidia-smi`'s). The reference always has a torch (it
    imports one when given none); compat gets it only with `witness`."""
    torch = FakeTorch(*(cuda_order or [uuid for _, uuid in gpus]))
    monkeypatch.setitem(sys.modules, "torch", torch)  # what the reference imports
    theirs_host, ours_host = Host(gpus, answers, daemon), Host(gpus, answers, daemon)
    theirs = run(reference, args, theirs_host, torch)
    ours = run(compat, args, ours_host, torch if witness else None)
    return theirs, theirs_host, ours, ours_host


def devices(count: int) -> list[tuple[str, str]]:
    return [("cuda:0", "cuda:0"), ("cuda:1", "cuda:1"), (f"cuda:{count - 1}",) * 2]


@pytest.mark.parametrize("count", [2, 4, 8])
@pytest.mark.parametrize("answers", ANSWERS)
def test_a_witness_settles_the_order_as_the_reference_assumes_it(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, count: int, answers: str
) -> None:
    host.socket()
    for learner, collector in devices(count):
        theirs, their_host, ours, our_host = side_by_side(
            ("mps", learner, collector), same_model(count), answers=answers, monkeypatch=monkeypatch
        )
        assert isinstance(theirs, dict) and theirs["validated"] is True
        assert ours == theirs, (learner, ours)
        # Proven by the witness: exactly the reference's commands, nothing more.
        assert our_host.calls == their_host.calls


@pytest.mark.parametrize("count", [2, 4, 8])
def test_without_a_witness_one_model_is_asked_and_agrees(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    host.socket()
    for learner, collector in devices(count):
        theirs, their_host, ours, our_host = side_by_side(
            ("mps", learner, collector), same_model(count), witness=False, monkeypatch=monkeypatch
        )
        assert ours == theirs and theirs["validated"] is True, (learner, ours)
        asked = [argv for argv, _ in our_host.calls]
        assert asked == [REFERENCE_QUERY, MODELS_QUERY, ["nvidia-cuda-mps-control"]]
        assert our_host.calls[1][1] == their_host.calls[0][1]  # the same keywords and deadline


@pytest.mark.parametrize("answers", ["index,uuid", "fails", "garbage"])
def test_without_a_witness_or_models_the_unknown_is_rejected_with_the_fix(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, answers: str
) -> None:
    host.socket()
    theirs, _, ours, _ = side_by_side(
        ("mps", "cuda:1", "cuda:1"), same_model(4), answers=answers, witness=False,
        monkeypatch=monkeypatch,
    )
    assert isinstance(theirs, dict)
    assert isinstance(ours, mps_preflight.Rejected), ours
    assert ours.code == "ambiguous-device-order"
    message = str(ours)
    assert "models are unknown" in message and "--query-gpu=index,uuid,name" in message, message
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in message and "UUID" in message, message


def test_one_gpu_or_pci_bus_order_asks_nothing_more(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.socket()
    for gpus, order in ((same_model(1), None), (MIXED, "PCI_BUS_ID")):
        if order:
            monkeypatch.setenv("CUDA_DEVICE_ORDER", order)
        theirs, their_host, ours, our_host = side_by_side(
            ("mps", "cuda:0", "cuda:0"), gpus, answers="fails", witness=False,
            monkeypatch=monkeypatch,
        )
        assert ours == theirs and theirs["validated"] is True
        assert our_host.calls == their_host.calls


@pytest.mark.parametrize("answers", ANSWERS)
def test_a_mixed_host_with_a_witness_agrees_with_the_reference(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, answers: str
) -> None:
    host.socket()
    for device in ("cuda:0", "cuda:1"):
        theirs, their_host, ours, our_host = side_by_side(
            ("mps", device, device), MIXED, answers=answers, monkeypatch=monkeypatch
        )
        assert ours == theirs and theirs["validated"] is True
        assert our_host.calls == their_host.calls


def test_a_mixed_host_without_a_witness_is_rejected_where_the_reference_guesses(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.socket()
    theirs, _, ours, _ = side_by_side(
        ("mps", "cuda:0", "cuda:0"), MIXED, witness=False, monkeypatch=monkeypatch
    )
    assert isinstance(theirs, dict) and theirs["validated"] is True  # a guess
    assert isinstance(ours, mps_preflight.Rejected) and ours.code == "ambiguous-device-order"
    message = str(ours)
    assert "different models (NVIDIA GeForce GTX 1660 SUPER, NVIDIA GeForce RTX 3090)" in message
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in message and "UUID" in message


@pytest.mark.parametrize("answers", ["fields", "index,uuid"])
def test_a_witness_in_another_order_proves_nothing(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, answers: str
) -> None:
    """CUDA puts the 3090 first: torch's cuda:0 is nvidia-smi's GPU 1. The reference takes
    nvidia-smi's row 0 for the collector and rejects two GPUs; compat rejects the order."""
    host.socket()
    theirs, _, ours, _ = side_by_side(
        ("mps", "cuda:0", "cuda:0"), MIXED, answers=answers,
        cuda_order=[MIXED[1][1], MIXED[0][1]], monkeypatch=monkeypatch,
    )
    assert isinstance(theirs, ValueError) and "share one physical GPU" in str(theirs)
    assert isinstance(ours, mps_preflight.Rejected) and ours.code == "ambiguous-device-order"
    assert "reports cuda:0 as" in str(ours) and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in str(ours)


@pytest.mark.parametrize("count", [2, 4, 8])
@pytest.mark.parametrize(
    ("case", "daemon", "pipe", "cuda_order", "phrase"),
    [
        (
            "daemon unreachable",
            subprocess.CalledProcessError(1, ["nvidia-cuda-mps-control"]),
            True,
            None,
            "could not reach the control daemon",
        ),
        ("no control pipe", "4428\n", False, None, "found no control pipe"),
        ("UUID mismatch", "4428\n", True, "swapped", "share one physical GPU"),
    ],
)
def test_the_reference_s_rejections_keep_its_reason_on_a_same_model_host(
    host: FakeHost,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    case: str,
    daemon: object,
    pipe: bool,
    cuda_order: str | None,
    phrase: str,
) -> None:
    if pipe:
        host.socket()
    gpus = same_model(count)
    order = [uuid for _, uuid in gpus]
    if cuda_order:
        order[0], order[1] = order[1], order[0]
    for witness in (True, False):
        theirs, _, ours, _ = side_by_side(
            ("mps", "cuda:0", "cuda:0"), gpus, daemon=daemon, cuda_order=order,
            witness=witness, monkeypatch=monkeypatch,
        )
        assert isinstance(theirs, ValueError) and phrase in str(theirs), (case, theirs)
        if case == "UUID mismatch" and not witness:
            # Without torch, compat has no second UUID to compare: the host's GPU 0 it is.
            assert isinstance(ours, dict) and ours["validated"] is True
            continue
        assert isinstance(ours, ValueError) and phrase in str(ours), (case, witness, ours)


@pytest.mark.parametrize("count", [2, 4, 8])
@pytest.mark.parametrize("answers", ANSWERS)
def test_the_null_request_records_the_collector_uuid_as_the_reference(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, count: int, answers: str
) -> None:
    host.socket()
    for witness in (True, False):
        theirs, _, ours, _ = side_by_side(
            (None, "cuda:1", "cuda:1"), same_model(count), answers=answers, witness=witness,
            monkeypatch=monkeypatch,
        )
        assert theirs["collector_gpu_uuid"] == compat.canonicalize_gpu_uuid(UUIDS[1])
        if witness or answers == "fields":
            assert ours == theirs, (witness, ours)
        else:
            # Nothing settles the order: both GPUs are recorded as unknown, never guessed; a
            # null request never fails.
            uuids = ("learner_gpu_uuid", "collector_gpu_uuid")
            assert [ours[key] for key in uuids] == [None, None]
            assert {k: v for k, v in ours.items() if k not in uuids} == {
                k: v for k, v in theirs.items() if k not in uuids
            }


@pytest.mark.parametrize("count", [2, 4, 8])
def test_visibility_indices_resolve_as_the_reference_on_one_model(
    monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    entries = ("1", "0") + ((f"{count - 1}",) if count > 2 else ())
    gpus = same_model(count)
    theirs_host, ours_host = Host(gpus), Host(gpus)
    theirs = reference.resolve_mps_visibility_entries(entries, run_command=theirs_host)
    ours = compat.resolve_mps_visibility_entries(entries, run_command=ours_host)
    assert ours == theirs == tuple(UUIDS[int(entry)] for entry in entries)
    assert [argv for argv, _ in ours_host.calls] == [REFERENCE_QUERY, MODELS_QUERY]
    for answers in ("index,uuid", "fails", "garbage"):
        with pytest.raises(ValueError, match="models are unknown") as caught:
            compat.resolve_mps_visibility_entries(entries, run_command=Host(gpus, answers))
        assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in str(caught.value)
    with pytest.raises(ValueError, match="different models"):
        compat.resolve_mps_visibility_entries(("1", "0"), run_command=Host(MIXED))
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    pci = Host(MIXED, "fails")
    assert compat.resolve_mps_visibility_entries(("1", "0"), run_command=pci) == (
        UUIDS[1],
        UUIDS[0],
    )
    assert [argv for argv, _ in pci.calls] == [REFERENCE_QUERY]


@pytest.mark.parametrize("count", [2, 4, 8])
def test_two_devices_on_two_gpus_are_refused_for_the_reference_s_reason(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    host.socket()
    for witness in (True, False):
        theirs, _, ours, _ = side_by_side(
            ("mps", "cuda:0", f"cuda:{count - 1}"), same_model(count), witness=witness,
            monkeypatch=monkeypatch,
        )
        assert isinstance(theirs, ValueError) and isinstance(ours, mps_preflight.Rejected)
        assert ours.code == "different-gpus", (witness, ours)
        assert "share one physical GPU" in str(theirs) and "share one physical GPU" in str(ours)


def test_a_torch_that_claims_any_index_supplies_only_cuda_s_ordinals(host: FakeHost) -> None:
    host.socket()
    torch = SimpleNamespace(
        version=SimpleNamespace(hip=None),
        cuda=SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: 10**20,
            get_device_properties=lambda index: SimpleNamespace(uuid=UUIDS[0]),
        ),
    )
    with pytest.raises(ValueError):
        compat.probe_cuda_process_sharing(
            "mps", "cuda:0", "cuda:99999999999", backend="mjwarp", torch_module=torch,
            run_command=Host(same_model(2)),
        )
