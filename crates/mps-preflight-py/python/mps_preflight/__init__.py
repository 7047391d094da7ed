"""Will these two processes really share one physical GPU through a live CUDA MPS daemon?

Fail-closed and in-process, on the same Rust crates as the ``mps-preflight`` command line: an
explicit request is either proven against this host or refused with the first unmet
prerequisite and what to do. Nothing here imports torch, initialises CUDA, or starts, stops or
reconfigures a daemon; the host is observed with ``nvidia-smi`` and read-only
``nvidia-cuda-mps-control`` queries, bounded in time and size, with the GIL released.

The reference module's API (``probe_cuda_process_sharing`` and friends) is in
:mod:`mps_preflight.compat`, and its names are importable from here too.
"""

from __future__ import annotations

import os

from mps_preflight import _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, MutableMapping, Sequence
    from typing import Any, Union

    StrPath = Union[str, "os.PathLike[str]"]

    from mps_preflight._types import Attestation, MergeReport, Snapshot

__all__ = [
    "Attestation",
    "Diagnosis",
    "Evidence",
    "Finding",
    "ManifestError",
    "MergeReport",
    "Rejected",
    "Snapshot",
    "SnapshotError",
    "attest",
    "canonicalize_gpu_uuid",
    "capture",
    "check",
    "doctor",
    "merge",
    "probe",
    "record",
    "visibility",
    "write_manifest",
    # The reference module's names (mps_preflight.compat), imported on first use.
    "CudaProcessSharingEvidence",
    "SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS",
    "apply_cuda_process_sharing_manifest",
    "probe_cuda_process_sharing",
    "resolve_mps_visibility_entries",
]

__version__: str = _native.__version__

#: The manifest key the evidence is recorded under.
MANIFEST_KEY = "cuda_process_sharing"

#: The host-facts snapshot schema this version reads and writes.
SCHEMA: str = _native.SCHEMA

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class Finding:
    """One unmet prerequisite: its stable ``code``, the full ``message``, what was ``found``,
    ``why`` it matters and the ``fix``."""

    __slots__ = ("code", "message", "found", "why", "fix")

    code: str
    message: str
    found: str
    why: str
    fix: str

    def __init__(self, code: str, message: str, found: str, why: str, fix: str) -> None:
        for name, value in zip(self.__slots__, (code, message, found, why, fix)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Finding is frozen; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Finding is frozen; cannot delete {name!r}")

    def to_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))

    def __repr__(self) -> str:
        return f"Finding(code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> tuple[type[Finding], tuple[str, ...]]:
        return (Finding, tuple(self.to_dict().values()))


class Diagnosis(list[Finding]):
    """What :func:`doctor` found: the list of every unmet prerequisite (empty exactly when the
    request validates), with the same verdict's :attr:`warnings` (what could not be verified,
    and the advisories: they block nothing) and its :attr:`evidence` (``None`` when rejected),
    as ``mps-preflight doctor --format json`` reports them. It is a ``list`` of
    :class:`Finding`, so ``doctor(...) == []`` still says "nothing blocks"; list equality
    compares the findings only."""

    warnings: list[Finding]
    evidence: Evidence | None

    def __init__(
        self,
        findings: Iterable[Finding] = (),
        warnings: Iterable[Finding] = (),
        evidence: Evidence | None = None,
    ) -> None:
        super().__init__(findings)
        self.warnings = list(warnings)
        self.evidence = evidence

    @property
    def findings(self) -> list[Finding]:
        """The unmet prerequisites, as a plain ``list``."""
        return list(self)

    def __repr__(self) -> str:
        return (
            f"Diagnosis(findings={list(self)!r}, warnings={self.warnings!r}, "
            f"evidence={self.evidence!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (Diagnosis, (list(self), self.warnings, self.evidence))


class Evidence:
    """Per-rank evidence: one attribute per key of the CLI's evidence JSON (the reference's
    ``to_dict`` keys in its order, then this project's), frozen. :meth:`to_dict` returns
    them in that order, ready for a run manifest."""

    __slots__ = ("_fields",)
    _fields: dict[str, Any]

    def __init__(self, fields: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_fields", dict(fields))

    if TYPE_CHECKING:
        # Every key of this version, read-only for a type checker: a typo (`ev.sever_pid`)
        # or an assignment (`ev.validated = False`) is an error under `mypy --strict`.
        @property
        def configured(self) -> str | None: ...
        @property
        def effective(self) -> str | None: ...
        @property
        def validated(self) -> bool: ...
        @property
        def rank(self) -> int: ...
        @property
        def world_size(self) -> int: ...
        @property
        def learner_device(self) -> str | None: ...
        @property
        def collector_device(self) -> str | None: ...
        @property
        def learner_gpu_uuid(self) -> str | None: ...
        @property
        def collector_gpu_uuid(self) -> str | None: ...
        @property
        def pipe_directory_env(self) -> str | None: ...
        @property
        def pipe_directory(self) -> str | None: ...
        @property
        def control_pipe(self) -> str | None: ...
        @property
        def control_pipe_kind(self) -> str | None: ...
        @property
        def server_pid(self) -> int | None: ...
        @property
        def ambient_server(self) -> bool: ...
        @property
        def daemon_pid(self) -> int | None: ...
        @property
        def caller_uid(self) -> int | None: ...
        @property
        def judged_for_uid(self) -> int | None: ...
        @property
        def server_uids(self) -> list[int]: ...
        @property
        def daemon_visible_devices(self) -> str | None: ...
        @property
        def daemon_multiuser(self) -> bool | None: ...
        @property
        def compute_mode(self) -> str | None: ...
        @property
        def driver_version(self) -> str | None: ...
        @property
        def unverified(self) -> list[str]: ...
        @property
        def host_name(self) -> str | None: ...
        @property
        def default_active_thread_percentage(self) -> float | None: ...
        @property
        def default_pinned_mem_limit(self) -> str | None: ...
        @property
        def server_status(self) -> str | None: ...
        @property
        def daemon_log(self) -> str | None: ...
        @property
        def last_server_ready(self) -> int | None: ...
        @property
        def server_clients(self) -> int | None: ...
        @property
        def server_client_pids(self) -> list[int] | None: ...
        @property
        def server_active_thread_percentage(self) -> float | None: ...
        @property
        def server_pinned_mem_limit(self) -> str | None: ...
        @property
        def shm_free_bytes(self) -> int | None: ...
        @property
        def shm_total_bytes(self) -> int | None: ...
        @property
        def advisories(self) -> list[str]: ...
        @property
        def gpu_compute_processes(self) -> int | None: ...
        @property
        def server_client_limit(self) -> int | None: ...
        @property
        def pipe_access(self) -> str | None: ...

    else:
        # At runtime every key of the Rust evidence is an attribute, a key a later version
        # adds included (the stub above lists this version's).
        def __getattr__(self, name: str) -> Any:
            try:
                return self._fields[name]
            except KeyError:
                raise AttributeError(f"Evidence has no key {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Evidence is frozen; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Evidence is frozen; cannot delete {name!r}")

    def __dir__(self) -> Iterable[str]:
        return [*object.__dir__(self), *self._fields]

    def to_dict(self) -> dict[str, Any]:
        """The evidence JSON as a new ``dict``, keys in the CLI's order."""
        return dict(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Evidence) and list(self._fields.items()) == list(
            other._fields.items()
        )

    def __hash__(self) -> int:
        # `server_uids` and `unverified` are lists: hash them as tuples.
        return hash(
            tuple(
                (key, tuple(value) if isinstance(value, list) else value)
                for key, value in self._fields.items()
            )
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self._fields.items())
        return f"Evidence({inner})"

    def __reduce__(self) -> tuple[type[Evidence], tuple[dict[str, Any]]]:
        return (Evidence, (self._fields,))


class Rejected(ValueError):
    """An explicit request is refused. ``str(err)`` is the CLI's message without ``error: ``;
    ``code`` is the first unmet prerequisite's stable code and ``findings`` every unmet one
    (the first of which is this one)."""

    code: str
    findings: list[Finding]

    def __init__(self, message: str, code: str = "", findings: Iterable[Finding] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.findings = list(findings)

    def __reduce__(self) -> tuple[type[Rejected], tuple[str, str, list[Finding]]]:
        return (Rejected, (str(self), self.code, self.findings))


class SnapshotError(OSError, ValueError):
    """A snapshot cannot be read: missing, not a regular file, too large, not JSON, not a
    host-facts snapshot, or of another schema. Like :class:`io.UnsupportedOperation`, it is
    both an ``OSError`` (an input that cannot be read) and a ``ValueError`` (a bad value)."""


class ManifestError(OSError, ValueError):
    """A manifest cannot be read or written (the file is then left untouched): a symbolic
    link, not a regular file, too large, not writable, not JSON or not a JSON object. Both an
    ``OSError`` and a ``ValueError``, as :class:`SnapshotError`."""


def _unwrap(answer: tuple[Any, ...]) -> Any:
    """The payload of a native answer, or its failure raised as this package's exception."""
    tag = answer[0]
    if tag == "ok":
        return answer[1] if len(answer) > 1 else None
    if tag == "rejected":
        raise Rejected(answer[2], answer[1], [Finding(**finding) for finding in answer[3]])
    if tag == "snapshot":
        raise SnapshotError(answer[1])
    if tag == "manifest":
        raise ManifestError(answer[1])
    raise ValueError(answer[1])


def _saturated(value: object, name: str) -> int:
    """An ``int`` (not a ``bool``), saturated to 64 bits as the CLI's ``--rank``: an
    out-of-range value still reaches the policy and is refused there."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return min(max(value, _I64_MIN), _I64_MAX)


def _spec(
    request: str | None,
    learner_device: str | None,
    collector_device: str | None,
    backend: str,
    rank: int,
    world_size: int,
    supported_backends: Sequence[str],
    learner_uuid: str | None,
    timeout: float,
    *,
    require_verified: bool = False,
    compat: bool = False,
    min_active_thread_percentage: float | str | None = None,
    min_pinned_mem: str | None = None,
    cuda_device_uuids: dict[int, str] | None = None,
    as_user: int | str | None = None,
    min_shm: str | None = None,
) -> dict[str, Any]:
    if learner_device is None:
        raise TypeError("missing required argument 'learner_device'")
    if isinstance(supported_backends, str):
        raise TypeError("supported_backends must be a sequence of names, not one str")
    if isinstance(min_active_thread_percentage, bool) or not isinstance(
        min_active_thread_percentage, (int, float, str, type(None))
    ):
        raise TypeError(
            f"min_active_thread_percentage must be a number, got {min_active_thread_percentage!r}"
        )
    if not isinstance(min_pinned_mem, (str, type(None))):
        raise TypeError(f"min_pinned_mem must be a str like '10G', got {min_pinned_mem!r}")
    if not isinstance(min_shm, (str, type(None))):
        raise TypeError(f"min_shm must be a str like '2G', got {min_shm!r}")
    if isinstance(as_user, bool) or not isinstance(as_user, (int, str, type(None))):
        raise TypeError(f"as_user must be a UID (int) or a user name (str), got {as_user!r}")
    return {
        "mode": request,
        "learner_device": learner_device,
        "collector_device": collector_device,
        "backend": backend,
        "rank": _saturated(rank, "rank"),
        "world_size": _saturated(world_size, "world_size"),
        "supported_backends": list(supported_backends),
        "learner_uuid": learner_uuid,
        "cuda_device_uuids": dict(cuda_device_uuids or {}),
        "timeout": float(timeout),
        "require_verified": _flag(require_verified, "require_verified"),
        "compat": compat,
        # Text, read by the same parser as the CLI's flags (a bad value raises ValueError).
        "min_active_thread_percentage": (
            None if min_active_thread_percentage is None else str(min_active_thread_percentage)
        ),
        "min_pinned_mem": min_pinned_mem,
        # Text, read by the same resolver as the CLI's --as-user (an unknown name, or a
        # negative UID, raises ValueError there).
        "as_user": None if as_user is None else str(as_user),
        # Text, read by the same parser as the CLI's --min-shm.
        "min_shm": min_shm,
    }


def _flag(value: object, name: str) -> bool:
    """A ``bool``, strictly: a truthy string or number is a mistake, not a yes."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


def _snapshot_source(snapshot: Mapping[str, Any] | StrPath) -> dict[str, str]:
    """``path=`` for a path, ``text=`` for JSON text or a mapping."""
    if isinstance(snapshot, str):
        if snapshot.lstrip().startswith("{"):
            return {"text": snapshot}
        return {"path": snapshot}
    if isinstance(snapshot, os.PathLike):
        return {"path": os.fspath(snapshot)}
    import json

    try:
        return {"text": json.dumps(snapshot)}
    except (TypeError, ValueError) as err:
        raise SnapshotError(f"snapshot: cannot be encoded as JSON: {err}") from err


def probe(
    request: str | None = None,
    learner_device: str | None = None,
    collector_device: str | None = None,
    *,
    backend: str,
    rank: int = 0,
    world_size: int = 1,
    supported_backends: Sequence[str] = ("mjwarp",),
    learner_uuid: str | None = None,
    timeout: float = 5.0,
    require_verified: bool = False,
    min_active_thread_percentage: float | str | None = None,
    min_pinned_mem: str | None = None,
    as_user: int | str | None = None,
    min_shm: str | None = None,
) -> Evidence:
    """Observe this host and validate the request, as ``mps-preflight probe``.

    ``request`` is ``None`` (or ``"null"``) for no sharing, or ``"mps"``; ``learner_device`` is
    required. ``learner_uuid`` is the learner's GPU UUID as its own CUDA runtime reports it.
    ``timeout`` is each host query's deadline in seconds. The GIL is released meanwhile.
    ``require_verified``: what could not be verified (the evidence's ``unverified`` codes) is a
    rejection, as ``--require-verified``.
    ``min_active_thread_percentage`` (``50``, ``12.5``) and ``min_pinned_mem`` (``"512M"``,
    ``"10G"``) are the CLI's ``--min-active-thread-percentage`` and ``--min-pinned-mem``.
    ``as_user`` (a UID, or a user name in ``/etc/passwd``) judges the request for that user, as
    ``--as-user``: a server of that user is the job's own; the evidence's ``judged_for_uid``
    records it. ``min_shm`` (``"2G"``) is ``--min-shm``: the least free space of ``/dev/shm``.

    Raises:
        Rejected: the first unmet prerequisite of an explicit request (never for a null one).
        ValueError: a minimum that is not a percentage or an amount of memory, or an
            ``as_user`` that names no user.
    """
    spec = _spec(
        request, learner_device, collector_device, backend, rank, world_size,
        supported_backends, learner_uuid, timeout, require_verified=require_verified,
        min_active_thread_percentage=min_active_thread_percentage,
        min_pinned_mem=min_pinned_mem,
        as_user=as_user,
        min_shm=min_shm,
    )
    return Evidence(_unwrap(_native.probe(spec)))


def check(
    snapshot: Mapping[str, Any] | StrPath,
    request: str | None = None,
    learner_device: str | None = None,
    collector_device: str | None = None,
    *,
    backend: str,
    rank: int = 0,
    world_size: int = 1,
    supported_backends: Sequence[str] = ("mjwarp",),
    learner_uuid: str | None = None,
    require_verified: bool = False,
    min_active_thread_percentage: float | str | None = None,
    min_pinned_mem: str | None = None,
    as_user: int | str | None = None,
    min_shm: str | None = None,
) -> Evidence:
    """Validate the request against a snapshot alone, as ``mps-preflight check``.

    ``snapshot`` is a ``dict`` (as :func:`capture` returns), a path, or a ``str`` of JSON (one
    that starts with ``{``). A ``learner_uuid`` replaces the recorded one.
    ``require_verified`` as for :func:`probe`.

    Raises:
        Rejected: the first unmet prerequisite of an explicit request.
        SnapshotError: the snapshot cannot be read.
    """
    spec = _spec(
        request, learner_device, collector_device, backend, rank, world_size,
        supported_backends, learner_uuid, 5.0, require_verified=require_verified,
        min_active_thread_percentage=min_active_thread_percentage,
        min_pinned_mem=min_pinned_mem,
        as_user=as_user,
        min_shm=min_shm,
    )
    return Evidence(_unwrap(_native.check(spec, **_snapshot_source(snapshot))))


def doctor(
    request: str | None = None,
    learner_device: str | None = None,
    collector_device: str | None = None,
    *,
    backend: str,
    rank: int = 0,
    world_size: int = 1,
    supported_backends: Sequence[str] = ("mjwarp",),
    learner_uuid: str | None = None,
    timeout: float = 5.0,
    snapshot: Mapping[str, Any] | StrPath | None = None,
    min_active_thread_percentage: float | str | None = None,
    min_pinned_mem: str | None = None,
    as_user: int | str | None = None,
    min_shm: str | None = None,
) -> Diagnosis:
    """Every unmet prerequisite at once, as ``mps-preflight doctor``: on this host, or on
    ``snapshot``. Empty exactly when :func:`probe` (or :func:`check`) would validate. The
    :class:`Diagnosis` is that list of :class:`Finding`, with the same verdict's ``warnings``
    (each a :class:`Finding`: an unverified prerequisite, with how to verify it in ``fix``, or
    an advisory) and its ``evidence`` (``None`` when a finding blocks the request).

    Raises:
        SnapshotError: the snapshot cannot be read.
    """
    spec = _spec(
        request, learner_device, collector_device, backend, rank, world_size,
        supported_backends, learner_uuid, timeout,
        min_active_thread_percentage=min_active_thread_percentage,
        min_pinned_mem=min_pinned_mem,
        as_user=as_user,
        min_shm=min_shm,
    )
    source = {} if snapshot is None else _snapshot_source(snapshot)
    answer = _native.doctor(spec, path=source.get("path"), text=source.get("text"))
    _unwrap(answer)
    _, findings, evidence, warnings = answer
    return Diagnosis(
        [Finding(**finding) for finding in findings],
        [Finding(**warning) for warning in warnings],
        None if evidence is None else Evidence(evidence),
    )


def capture(*, learner_uuid: str | None = None, timeout: float = 5.0) -> Snapshot:
    """This host's raw facts, as ``mps-preflight capture`` prints them (a ``dict``, typed as
    :class:`Snapshot`): for :func:`check` and :func:`doctor` here or on another machine."""
    result: Snapshot = _native.capture(learner_uuid, float(timeout))
    return result


def visibility(mask: str | None = None, *, timeout: float = 5.0) -> str:
    """``CUDA_VISIBLE_DEVICES`` (or ``mask``) with device indices rewritten to ``GPU-`` UUIDs,
    as ``mps-preflight visibility``: set it for an MPS client before CUDA starts. The same Rust
    function as the command line's, called natively; the GIL is released meanwhile.

    Raises:
        Rejected: an index has no host GPU, ``nvidia-smi`` cannot list the GPUs, or index order
            cannot be trusted (``code`` is ``"visibility-unresolved"``).
    """
    mask_text: str = _unwrap(_native.visibility(mask, float(timeout)))
    return mask_text


def attest(
    learner_pid: int,
    collector_pid: int,
    *,
    wait: float = 0.0,
    timeout: float = 5.0,
    manifest: StrPath | None = None,
) -> Attestation:
    """After both processes started: prove that they are clients of one MPS server of their
    user, on this environment's pipe directory, as ``mps-preflight attest`` does (read-only
    ``get_server_list`` and ``get_client_list <pid>``, and their ``/proc`` entries), through the
    same Rust function, called natively with the GIL released. Returns the attestation (a
    ``dict``, the CLI's JSON). ``wait`` seconds: keep asking with a bounded backoff until both
    are attached (clients attach at CUDA init); ``timeout``: each query's deadline.
    ``manifest``: as ``attest --manifest``, the pipe directory asked is the one the manifest's
    evidence validated, and the attestation is recorded in it under
    ``cuda_process_sharing.attestation`` (the same locked, atomic write as the CLI's).

    Raises:
        Rejected: not attested; ``code`` is the first unattached process's code
            (``not-a-client``, ``not-running``, …) and the message has one part per process.
        ValueError: a PID that is not a positive integer, the same PID for both processes
            (one process proves nothing about two), or a negative ``wait``.
    """
    path = None if manifest is None else os.fspath(manifest)
    answer = _native.attest(
        learner_pid, collector_pid, wait=wait, timeout=float(timeout), manifest=path
    )
    result: Attestation = _unwrap(answer)
    return result


def canonicalize_gpu_uuid(value: str) -> str:
    """The comparison token of a GPU UUID: upper case, no ``GPU-`` prefix, no dashes."""
    token: str = _native.canonicalize_gpu_uuid(value)
    return token


def record(manifest: MutableMapping[str, Any], evidence: Evidence) -> None:
    """Record ``evidence`` in a manifest mapping under ``cuda_process_sharing``, in place."""
    manifest[MANIFEST_KEY] = evidence.to_dict()


def write_manifest(path: StrPath, evidence: Evidence) -> None:
    """Record ``evidence`` in the JSON manifest file at ``path`` as ``probe --manifest`` does:
    every other key and the key order kept, written atomically; a missing file is created.
    Like the CLI, it also names the evidence's schema under ``cuda_process_sharing_schema`` and
    the release that wrote it (``"mps-preflight " + __version__``) under
    ``cuda_process_sharing_writer``.

    Raises:
        ManifestError: the file cannot be read or written; it is left byte for byte untouched.
    """
    import json

    _unwrap(_native.write_manifest(os.fspath(path), json.dumps(evidence.to_dict())))


def merge(paths: Iterable[StrPath]) -> MergeReport:
    """Check the per-rank evidence of one run, as ``mps-preflight merge``: the merged run, with
    ``consistent`` false and ``findings`` (``code``, ``message``, ``sources``) when the ranks
    disagree.

    Raises:
        ManifestError: a file cannot be read.
    """
    report: MergeReport = _unwrap(_native.merge([os.fspath(path) for path in paths]))
    return report


_COMPAT = frozenset(
    {
        "CudaProcessSharingEvidence",
        "SUPPORTED_CUDA_PROCESS_SHARING_BACKENDS",
        "apply_cuda_process_sharing_manifest",
        "probe_cuda_process_sharing",
        "resolve_mps_visibility_entries",
    }
)


_TYPES = frozenset({"Attestation", "MergeReport", "Snapshot"})


def __getattr__(name: str) -> Any:
    # The reference module's names load mps_preflight.compat (and subprocess, dataclasses)
    # on first use only, so that `import mps_preflight` stays cheap; the TypedDicts likewise
    # (typing).
    if name in _COMPAT:
        from mps_preflight import compat

        return getattr(compat, name)
    if name in _TYPES:
        from mps_preflight import _types

        return getattr(_types, name)
    raise AttributeError(f"module 'mps_preflight' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_COMPAT, *_TYPES})
