"""The reference module's API (mps_preflight.compat): run_command fakes shaped like the
reference's own test doubles give the outcomes the real tools give; a torch stand-in supplies
the learner's UUID; the manifest mapping is mutated in place."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

import pytest

import mps_preflight
from mps_preflight import compat
from conftest import GPU0, GPU1, MPS, ROW0, TOKEN0, TOKEN1, FakeHost

REQUEST = ("mps", "cuda:0", "cuda:0")


class FakeRun:
    """A `run_command` double as the reference's tests wrote them: answers by program name
    with an object that has `.stdout`, or raises what `subprocess.run(check=True)` raises."""

    def __init__(self, **answers: object) -> None:
        self.answers = answers
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> object:
        self.calls.append((argv, kwargs))
        answer = self.answers.get(argv[0])
        if answer is None:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        if isinstance(answer, BaseException):
            raise answer
        return SimpleNamespace(stdout=answer, stderr="", returncode=0)


#: The reference's `nvidia-smi --query-gpu=index,uuid` row for GPU 0.
REF_ROW0 = f"0, {GPU0}"


def healthy_run() -> FakeRun:
    """The reference's doubles: its 2-column GPU table, and its daemon listing server 4428."""
    return FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": "4428\n"})


def probe(**kwargs: Any) -> compat.CudaProcessSharingEvidence:
    return compat.probe_cuda_process_sharing(*REQUEST, backend="mjwarp", **kwargs)


def test_a_fake_run_command_gives_what_the_real_tools_give(host: FakeHost) -> None:
    host.socket()
    fake = probe(run_command=healthy_run())
    host.one_gpu().daemon_answers("4428\n")
    real = probe()
    assert fake == real
    assert (fake.validated, fake.server_pid, fake.learner_gpu_uuid) == (True, 4428, TOKEN0)
    native = mps_preflight.probe(**MPS).to_dict()
    assert fake.to_dict() == {key: native[key] for key in fake.to_dict()}


def test_exactly_the_reference_commands_are_sent(host: FakeHost) -> None:
    host.socket()
    run = healthy_run()
    probe(run_command=run)
    assert [argv for argv, _ in run.calls] == [
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
        ["nvidia-cuda-mps-control"],
    ]
    (_, smi), (_, daemon) = run.calls
    assert smi == {"text": True, "capture_output": True, "timeout": 5.0, "check": True}
    assert list(daemon) == ["input", "text", "capture_output", "timeout", "check", "env"]
    assert daemon["input"] == "get_server_list\n"
    import os

    assert daemon["env"] == {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(host.pipe)}


def test_what_the_reference_commands_cannot_tell_is_unverified(host: FakeHost) -> None:
    host.socket()
    spec = mps_preflight._spec("mps", "cuda:0", "cuda:0", "mjwarp", 0, 1, ["mjwarp"], None, 5.0, compat=True)
    answer = compat._native.probe(spec, compat._runner(healthy_run()))
    evidence = mps_preflight.Evidence(mps_preflight._unwrap(answer))
    assert evidence.validated and evidence.server_pid == 4428
    assert evidence.unverified == [
        "daemon-scope-unverified", "server-owner-unverified", "compute-mode-unverified",
        "server-status-unverified", "server-clients-unverified",
    ]
    assert (evidence.compute_mode, evidence.driver_version, evidence.caller_uid) == (None, None, None)


def test_an_idle_daemon_needs_more_than_an_empty_server_list(host: FakeHost) -> None:
    host.socket()
    idle = FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": ""})
    caught = rejection(run_command=idle)
    assert caught.code == "daemon-unreachable"
    assert "could not reach the control daemon" in str(caught)
    # This project's own liveness line is not a PID: a double answering it is not the reference's.
    ours = FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": "100.0\n4428\n"})
    assert rejection(run_command=ours).code == "daemon-answer-unrecognized"


def rejection(**kwargs: Any) -> mps_preflight.Rejected:
    with pytest.raises(ValueError) as caught:
        probe(**kwargs)
    assert isinstance(caught.value, mps_preflight.Rejected)
    return caught.value


def test_raised_errors_give_the_real_tools_outcomes(host: FakeHost) -> None:
    host.socket()
    gone = subprocess.CalledProcessError(
        1, ["nvidia-cuda-mps-control"], output="", stderr="Cannot find MPS control daemon process\n"
    )
    fake_gone = rejection(run_command=FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": gone}))
    host.one_gpu().daemon_gone()
    assert str(fake_gone) == str(rejection())
    assert fake_gone.code == "daemon-unreachable"

    hung = subprocess.TimeoutExpired(["nvidia-cuda-mps-control"], 5.0)
    fake_hung = rejection(run_command=FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": hung}))
    assert fake_hung.code == "daemon-timed-out"

    # No tools at all: nvidia-smi is missing, as on a host without the driver.
    missing = rejection(run_command=FakeRun())
    (host.bin / "nvidia-smi").unlink()
    (host.bin / "nvidia-cuda-mps-control").unlink()
    assert missing.code == rejection().code


def test_a_run_command_that_answers_after_its_deadline_is_not_believed(host: FakeHost) -> None:
    # As the reference does, the drop-in calls run_command on the calling thread and trusts it
    # to honour `timeout` (no thread, so it costs what the reference costs); an
    # answer that comes back after the deadline and its grace is still never read.
    host.socket()

    def late(argv: list[str], **kwargs: Any) -> object:
        if argv[0] == "nvidia-smi":
            return SimpleNamespace(stdout=REF_ROW0 + "\n")
        time.sleep(kwargs["timeout"] + 0.7)  # ignores its deadline, then answers
        return SimpleNamespace(stdout="4428\n")

    started = time.monotonic()
    with pytest.raises(mps_preflight.Rejected) as caught:
        compat.probe_cuda_process_sharing(*REQUEST, backend="mjwarp", run_command=late)
    assert caught.value.code == "daemon-timed-out"
    assert time.monotonic() - started >= 5.7, "called on this thread, waited for as the reference waits"


def test_ctrl_c_in_run_command_reaches_the_caller_and_asks_nothing_more(host: FakeHost) -> None:
    host.socket()
    asked: list[str] = []

    def interrupted(argv: list[str], **kwargs: Any) -> object:
        asked.append(argv[0])
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        compat.probe_cuda_process_sharing(*REQUEST, backend="mjwarp", run_command=interrupted)
    assert asked == ["nvidia-smi"]


def test_output_past_the_cap_is_cut_short_and_proves_nothing(host: FakeHost) -> None:
    host.socket()
    flood = "4428\n" * (1 << 19)
    run = FakeRun(**{"nvidia-smi": REF_ROW0 + "\n", "nvidia-cuda-mps-control": flood})
    assert rejection(run_command=run).code == "daemon-answer-unrecognized"


class FakeTorch:
    """A torch stand-in: `cuda.is_available`, `device_count`, `get_device_properties(i).uuid`."""

    def __init__(self, *uuids: str) -> None:
        self.version = SimpleNamespace(hip=None)
        self.cuda = SimpleNamespace(
            is_available=lambda: bool(uuids),
            device_count=lambda: len(uuids),
            get_device_properties=lambda index: SimpleNamespace(uuid=uuids[index]),
        )


def test_a_torch_stand_in_supplies_the_learner_uuid(host: FakeHost) -> None:
    host.healthy()
    same = probe(torch_module=FakeTorch("8932f937-d72c-4106-c12f-20bd9faed9f6"))
    assert same.learner_gpu_uuid == TOKEN0
    other = rejection(torch_module=FakeTorch(GPU1.removeprefix("GPU-")))
    assert other.code == "different-gpus"
    assert TOKEN1 in str(other) and TOKEN0 in str(other)
    # A torch without CUDA supplies nothing: the learner is resolved from the host.
    assert probe(torch_module=FakeTorch()).learner_gpu_uuid == TOKEN0
    assert "torch" not in sys.modules


REFERENCE_KEYS = [
    "configured", "effective", "validated", "rank", "world_size", "learner_device",
    "collector_device", "learner_gpu_uuid", "collector_gpu_uuid", "pipe_directory_env",
    "pipe_directory", "control_pipe", "control_pipe_kind", "server_pid", "ambient_server",
]


def test_the_manifest_mapping_is_mutated_in_place_with_the_reference_keys(host: FakeHost) -> None:
    host.healthy()
    evidence = probe()
    manifest: dict[str, Any] = {"run": 1}
    compat.apply_cuda_process_sharing_manifest(manifest, evidence)
    assert list(manifest) == ["run", "cuda_process_sharing"]
    assert list(manifest["cuda_process_sharing"]) == REFERENCE_KEYS
    assert list(evidence.to_dict()) == REFERENCE_KEYS
    assert list(dataclasses.asdict(evidence)) == REFERENCE_KEYS
    native = mps_preflight.probe(**MPS).to_dict()
    assert manifest["cuda_process_sharing"] == {key: native[key] for key in REFERENCE_KEYS}


def test_the_evidence_is_the_reference_dataclass() -> None:
    names = [field.name for field in dataclasses.fields(compat.CudaProcessSharingEvidence)]
    assert names == REFERENCE_KEYS
    bare = compat.CudaProcessSharingEvidence(configured=None, effective=None, validated=False)
    assert list(bare.to_dict()) == names
    with pytest.raises(dataclasses.FrozenInstanceError):
        bare.rank = 1  # type: ignore[misc]
    assert dataclasses.replace(bare, rank=1).rank == 1
    assert hash(bare) == hash(dataclasses.replace(bare))


def test_the_reference_names_are_at_top_level_and_keep_its_defaults() -> None:
    for name in compat.__all__:
        assert getattr(mps_preflight, name) is getattr(compat, name), name
    assert compat.SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS == frozenset({"mjwarp"})
    import inspect

    signature = inspect.signature(compat.probe_cuda_process_sharing)
    assert list(signature.parameters) == [
        "requested", "learner_device", "collector_device", "backend", "rank", "world_size",
        "torch_module", "run_command",
    ]
    assert signature.parameters["run_command"].default is subprocess.run


def test_a_null_request_records_ambient_state_and_never_fails(host: FakeHost) -> None:
    evidence = compat.probe_cuda_process_sharing(None, "cuda:0", None, backend="anything")
    assert (evidence.configured, evidence.validated, evidence.ambient_server) == (None, False, False)
    host.healthy()
    ambient = compat.probe_cuda_process_sharing(None, "cuda:0", None, backend="anything")
    assert ambient.ambient_server is True and ambient.server_pid == 4428


def test_the_reference_key_phrases_are_kept(host: FakeHost) -> None:
    with pytest.raises(ValueError, match=r"^Unsupported training.cuda_process_sharing='bogus'"):
        compat.probe_cuda_process_sharing("bogus", "cuda:0", "cuda:0", backend="mjwarp")
    with pytest.raises(ValueError, match="supports only the mjwarp backend"):
        compat.probe_cuda_process_sharing("mps", "cuda:0", "cuda:0", backend="other")
    with pytest.raises(ValueError, match=r"requires a valid rank in \[0, world_size\)"):
        compat.probe_cuda_process_sharing("mps", "cuda:0", "cuda:0", backend="mjwarp", rank=True)
    with pytest.raises(ValueError, match="requires a CUDA collector"):
        compat.probe_cuda_process_sharing("mps", "cuda:0", None, backend="mjwarp")


def test_resolve_mps_visibility_entries(host: FakeHost) -> None:
    assert compat.resolve_mps_visibility_entries(["MIG-x", GPU0]) == ("MIG-x", GPU0)
    host.gpus(ROW0)
    assert compat.resolve_mps_visibility_entries(["0"]) == (GPU0,)
    with pytest.raises(ValueError):
        compat.resolve_mps_visibility_entries(["1"])


def test_resolve_mps_visibility_entries_through_a_run_command(host: FakeHost) -> None:
    one = FakeRun(**{"nvidia-smi": REF_ROW0 + "\n"})
    assert compat.resolve_mps_visibility_entries(["0"], run_command=one) == (GPU0,)
    assert one.calls == [
        (
            ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
            {"text": True, "capture_output": True, "timeout": 5.0, "check": True},
        )
    ]
    # The reference's words, then what was found; never the CLI's --devices.
    reference = (
        "training.cuda_process_sharing='mps' could not resolve CUDA_VISIBLE_DEVICES entry '1' "
        "to a host GPU UUID; MPS clients require UUID visibility entries. Check "
        "nvidia-smi --query-gpu=index,uuid --format=csv,noheader."
    )
    with pytest.raises(ValueError, match="has no host UUID") as caught:
        compat.resolve_mps_visibility_entries(["1"], run_command=one)
    assert str(caught.value).startswith(reference)
    host.gpus(ROW0)
    with pytest.raises(ValueError) as native:
        compat.resolve_mps_visibility_entries(["1"])
    assert str(native.value) == str(caught.value)
    assert "--devices" not in str(native.value)
    with pytest.raises(ValueError, match="the table is unavailable"):
        compat.resolve_mps_visibility_entries(["0"], run_command=FakeRun())
    # A double that answers only the 2-column table to the models query too names no model:
    # two GPUs by index then need CUDA_DEVICE_ORDER=PCI_BUS_ID.
    two = FakeRun(**{"nvidia-smi": f"0, {GPU0}\n1, {GPU1}\n"})
    with pytest.raises(ValueError, match="index order cannot be trusted"):
        compat.resolve_mps_visibility_entries(["1"], run_command=two)


def test_the_torch_indices_asked_are_the_validator_s_reading_of_the_devices() -> None:
    """Which CUDA index a device names is Rust's reading, never Python's
    again (`str.isdigit` took `cuda:٣` for index 3; the validator refuses it)."""
    assert compat._cuda_index(" CUDA:3 ") == 3
    assert compat._cuda_index("cuda") == 0
    for other in ("cpu", "cuda:", "cuda:-1", "cuda:\u0663", "cuda:\u00b2", "cuda:4294967296"):
        assert compat._cuda_index(other) is None, other
