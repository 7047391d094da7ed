"""The reference module's API, as a drop-in: same names, signatures, defaults and exception
types as ``cuda_process_sharing``, on this project's validator.

Behaviour follows this project (its deliberate fixes and key phrases); a rejection is a
``ValueError`` (:class:`mps_preflight.Rejected`). Two parameters keep their meaning:

- ``torch_module``: never imported here. A module the caller passes (and has already
  initialised) supplies the learner's UUID from ``cuda.get_device_properties(i).uuid``, as
  ``--learner-uuid`` does on the command line, and is asked for the collector's index too:
  a UUID it reports equal to ``nvidia-smi``'s row at that index proves CUDA's device order
  for that index. Without one, the learner is resolved from ``CUDA_VISIBLE_DEVICES`` and
  ``nvidia-smi`` as the command line does.
- ``run_command``: the reference's test seam. Left at ``subprocess.run``, the host queries run
  in Rust (bounded, own process group) as :func:`mps_preflight.probe` runs them. Any other
  callable receives exactly the reference's commands (and the models query below, only where
  index order is in doubt), with its keyword arguments: ``nvidia-smi
  --query-gpu=index,uuid --format=csv,noheader`` (``text``, ``capture_output``, ``timeout``,
  ``check``), and ``nvidia-cuda-mps-control`` with ``get_server_list\n`` as ``input`` and
  ``env`` (this environment with ``CUDA_MPS_PIPE_DIRECTORY`` set), the latter only when a socket
  or FIFO is at the control path. So the reference's own test doubles keep working. What those
  two commands cannot tell (compute mode, driver version, the caller's and the servers' users,
  the daemon's scope) is unverified, as for a v1 snapshot; an empty server list proves a live
  daemon only with a live daemon pid file. What ``run_command`` returns is capped as a real
  process's output. It is called on the calling thread, as the reference calls it, and must keep
  the deadline it is given (``subprocess.run`` does); an answer that comes back more than half a
  second past it is recorded as timed out, never read.

A second ``nvidia-smi`` query: ``nvidia-smi`` numbers GPUs in PCI order, CUDA fastest-first
unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so on a host whose GPUs are different models a device
index can name different GPUs in the two orders; the reference's ``index,uuid`` table names no
model. So, only where its answer shows more than one GPU, ``CUDA_DEVICE_ORDER`` is not
``PCI_BUS_ID``, and ``torch_module`` does not prove a device of the request by index (above),
the models are asked, through the same ``run_command`` with the same keywords and deadline:
``nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader``
(``resolve_mps_visibility_entries`` asks it too, without a torch). GPUs of one model are
numbered alike in both orders: the reference's answer follows. Different models, or no models
(a double that answers only ``index,uuid``, or fails), with nothing else settling the order, are
rejected (``ambiguous-device-order``), saying so and how to fix it: export
``CUDA_DEVICE_ORDER=PCI_BUS_ID``, or put ``GPU-`` UUIDs in ``CUDA_VISIBLE_DEVICES``. The native
API and the command line ask for the models in their one table query.

The evidence (:class:`CudaProcessSharingEvidence`, its ``to_dict()``, ``dataclasses.asdict``
and :func:`apply_cuda_process_sharing_manifest`) has exactly the reference's 15 keys, in its
order; the full record is :meth:`mps_preflight.Evidence.to_dict` of the native API.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, fields

import mps_preflight
from mps_preflight import _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping, Sequence
    from typing import Any

__all__ = [
    "CudaProcessSharingEvidence",
    "SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS",
    "apply_cuda_process_sharing_manifest",
    "canonicalize_gpu_uuid",
    "probe_cuda_process_sharing",
    "resolve_mps_visibility_entries",
]

SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS = frozenset({"mjwarp"})

canonicalize_gpu_uuid = mps_preflight.canonicalize_gpu_uuid

_QUERY_TIMEOUT_SEC = 5.0


@dataclass(frozen=True)
class CudaProcessSharingEvidence:
    """Structured per-rank evidence: the reference's dataclass, its 15 fields in its order.
    The keys this project adds are in :meth:`mps_preflight.Evidence.to_dict`."""

    configured: str | None
    effective: str | None
    validated: bool
    rank: int = 0
    world_size: int = 1
    learner_device: str | None = None
    collector_device: str | None = None
    learner_gpu_uuid: str | None = None
    collector_gpu_uuid: str | None = None
    pipe_directory_env: str | None = None
    pipe_directory: str | None = None
    control_pipe: str | None = None
    control_pipe_kind: str | None = None
    server_pid: int | None = None
    ambient_server: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-shaped diagnostics stored in a runtime manifest."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def _from_evidence(cls, evidence: mps_preflight.Evidence) -> CudaProcessSharingEvidence:
        data = evidence.to_dict()
        return cls(**{field.name: data[field.name] for field in fields(cls)})


def _query(
    run_command: Callable[..., Any],
    argv: list[str],
    stdin: str,
    env_set: dict[str, bytes],
    env_removed: list[str],
    timeout: float,
) -> tuple[str, int, bytes, bytes, str]:
    """One host query through ``run_command``, as the Rust runner asks for it: ``(kind,
    code, stdout, stderr, error)`` with kind ``exited``, ``timed_out`` or ``failed``."""
    # The reference's keyword arguments, in its order: `input` first, `env` last.
    kwargs: dict[str, Any] = {"input": stdin} if stdin else {}
    kwargs.update(text=True, capture_output=True, timeout=timeout, check=True)
    if env_set or env_removed:
        env = os.environ.copy()
        env.update({name: os.fsdecode(value) for name, value in env_set.items()})
        for name in env_removed:
            env.pop(name, None)
        kwargs["env"] = env
    try:
        result = run_command(argv, **kwargs)
    except subprocess.TimeoutExpired as exc:
        return ("timed_out", 0, _bytes(exc.stdout), _bytes(exc.stderr), "")
    except subprocess.CalledProcessError as exc:
        return ("exited", int(exc.returncode), _bytes(exc.stdout), _bytes(exc.stderr), "")
    except Exception as exc:  # noqa: BLE001 - any failure to run is recorded, never raised
        return ("failed", 0, b"", b"", f"{type(exc).__name__}: {exc}")
    code = getattr(result, "returncode", 0)
    return (
        "exited",
        code if isinstance(code, int) else 0,
        _bytes(getattr(result, "stdout", None)),
        _bytes(getattr(result, "stderr", None)),
        "",
    )


def _bytes(output: object) -> bytes:
    if output is None:
        return b""
    if isinstance(output, bytes):
        return output
    return str(output).encode("utf-8", "surrogateescape")


def _runner(run_command: Callable[..., Any]) -> Callable[..., Any] | None:
    """``None`` for the default (the Rust runner), else the adapter the Rust side calls."""
    if run_command is subprocess.run:
        return None
    return lambda *query: _query(run_command, *query)


def _cuda_index(device: object) -> int | None:
    """``cuda`` → 0, ``cuda:N`` → N, as the validator (Rust) reads the device; anything else
    is left for the validator to judge."""
    index: int | None = _native.cuda_index(str(device))
    return index


def _torch_uuids(torch_module: Any, *devices: object) -> dict[int, str]:
    """The UUID the caller's own torch reports for each CUDA device's index, where it reports
    one: the learner's UUID, and what proves index order for the learner's and the collector's
    indices (equal to ``nvidia-smi``'s row there). A torch that cannot answer supplies nothing;
    then the learner is resolved from the host, as without a torch module."""
    indices = {index for index in map(_cuda_index, devices) if index is not None}
    if not indices:
        return {}
    uuids: dict[int, str] = {}
    try:
        if not torch_module.cuda.is_available():
            return {}
        # An index past CUDA's 32-bit ordinals names no device, whatever the module claims.
        count = min(int(torch_module.cuda.device_count()), 2**32)
        for index in sorted(indices):
            if index < count:
                properties = torch_module.cuda.get_device_properties(index)
                uuid = str(getattr(properties, "uuid", "") or "").strip()
                if uuid:
                    uuids[index] = uuid
    except Exception:  # noqa: BLE001 - a torch that cannot answer supplies nothing more
        return uuids
    return uuids


def _mode(requested: Any) -> str | None:
    if requested is None:
        return None
    return requested if isinstance(requested, str) else repr(requested)


def probe_cuda_process_sharing(
    requested: Any,
    learner_device: str,
    collector_device: str | None,
    *,
    backend: str,
    rank: int = 0,
    world_size: int = 1,
    torch_module: Any | None = None,
    run_command: Callable[..., Any] = subprocess.run,
) -> CudaProcessSharingEvidence:
    """Validate one rank's requested CUDA process-sharing mode.

    Raises:
        ValueError: The first unmet prerequisite for an explicit request
            (:class:`mps_preflight.Rejected`, with its ``code``).
    """
    uuids: dict[int, str] = {}
    if torch_module is not None:
        uuids = _torch_uuids(torch_module, learner_device, collector_device)
    learner_index = _cuda_index(learner_device)
    learner_uuid = None if learner_index is None else uuids.get(learner_index)
    spec = mps_preflight._spec(
        _mode(requested),
        str(learner_device),
        None if collector_device is None else str(collector_device),
        str(backend),
        _rank(rank),
        _rank(world_size),
        sorted(SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS),
        learner_uuid,
        _QUERY_TIMEOUT_SEC,
        compat=True,
        cuda_device_uuids=uuids,
    )
    answer = _native.probe(spec, _runner(run_command))
    evidence = mps_preflight.Evidence(mps_preflight._unwrap(answer))
    return CudaProcessSharingEvidence._from_evidence(evidence)


def _rank(value: Any) -> int:
    """The reference refuses a ``bool`` or non-``int`` rank; -1 is refused the same way."""
    return -1 if isinstance(value, bool) or not isinstance(value, int) else value


def resolve_mps_visibility_entries(
    entries: Sequence[str],
    *,
    run_command: Callable[..., Any] = subprocess.run,
) -> tuple[str, ...]:
    """Return ``CUDA_VISIBLE_DEVICES`` entries with numeric indices as UUIDs.

    With more than one GPU and ``CUDA_DEVICE_ORDER`` not ``PCI_BUS_ID``, the GPUs' models are
    asked by a second query (``nvidia-smi --query-gpu=index,uuid,name``): indices are mapped
    only where the GPUs are one model.

    Raises:
        ValueError: A numeric entry could not be mapped to a host GPU UUID, or index order
            cannot be trusted on this host (models that differ or are unknown).
    """
    if not any(entry.isdigit() for entry in entries):
        return tuple(entries)
    mask = ",".join(entries)
    runner = _runner(run_command)
    resolved = mps_preflight._unwrap(_native.visibility_with(mask, runner, _QUERY_TIMEOUT_SEC))
    return tuple(resolved)


def apply_cuda_process_sharing_manifest(
    runtime_manifest: MutableMapping[str, Any],
    evidence: CudaProcessSharingEvidence,
) -> None:
    """Record process-sharing evidence in a producer-owned manifest mapping."""
    runtime_manifest[mps_preflight.MANIFEST_KEY] = evidence.to_dict()
