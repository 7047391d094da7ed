"""The shapes of the documents :func:`mps_preflight.attest`, :func:`mps_preflight.capture` and
:func:`mps_preflight.merge` return, as ``TypedDict``\\ s: the top-level keys of the CLI's JSON
(``mps-preflight schema attestation|snapshot|merge`` describes every level). Nested records are
``dict[str, Any]``; a key a later version adds is still in the ``dict`` at runtime."""

from __future__ import annotations

from typing import Any, Optional, TypedDict


class Attestation(TypedDict):
    """``attest``'s attestation (``mps-preflight schema attestation``)."""

    attested: bool
    pipe_directory: str
    pipe_directory_source: str
    server_pid: Optional[int]
    server_uid: Optional[int]
    servers: list[int]
    learner: dict[str, Any]
    collector: dict[str, Any]
    rounds: int
    elapsed_ms: int
    host_name: Optional[str]


class _SnapshotRequired(TypedDict):
    schema: str
    os: str
    env: dict[str, Any]
    gpu_query: Optional[dict[str, Any]]
    control_pipe: Optional[dict[str, Any]]
    daemon_query: Optional[dict[str, Any]]
    pid_file: Optional[dict[str, Any]]
    learner_uuid: Optional[str]


class Snapshot(_SnapshotRequired, total=False):
    """``capture``'s host-facts snapshot (``mps-preflight schema snapshot``): what was
    observed, uninterpreted; ``None`` is "not observed", and the v2 keys are absent when
    nothing was recorded for them."""

    caller: dict[str, Any]
    server_processes: list[dict[str, Any]]
    daemon_process: dict[str, Any]
    host_name: Any


class MergeReport(TypedDict):
    """``merge``'s report (``mps-preflight schema merge``)."""

    consistent: bool
    world_size: Optional[int]
    configured: Optional[str]
    effective: Optional[str]
    validated: Optional[bool]
    ranks: list[dict[str, Any]]
    findings: list[dict[str, Any]]
