"""A launcher's use of the package, checked with `mypy --strict` (tests/test_packaging.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mps_preflight
from mps_preflight.compat import (
    CudaProcessSharingEvidence,
    apply_cuda_process_sharing_manifest,
    probe_cuda_process_sharing,
)


def launch(manifest: dict[str, Any], snapshot: Path) -> bool:
    try:
        evidence: mps_preflight.Evidence = mps_preflight.check(
            snapshot, request="mps", learner_device="cuda:0", collector_device="cuda:0",
            backend="mjwarp", rank=0, world_size=1,
        )
    except mps_preflight.Rejected as err:
        codes: list[str] = [finding.code for finding in err.findings]
        print(err.code, codes)
        return False
    except mps_preflight.SnapshotError:
        return False
    mps_preflight.record(manifest, evidence)
    mps_preflight.write_manifest(snapshot.with_name("manifest.json"), evidence)
    pid: int | None = evidence.server_pid
    uuid: str | None = evidence.learner_gpu_uuid
    mask: str = mps_preflight.visibility("0", timeout=1.0)
    facts: dict[str, Any] = mps_preflight.capture(timeout=2.5)
    findings: list[mps_preflight.Finding] = mps_preflight.doctor(
        None, "cpu", backend="mjwarp", snapshot=facts
    )
    report: dict[str, Any] = mps_preflight.merge([snapshot.with_name("manifest.json")])
    token: str = mps_preflight.canonicalize_gpu_uuid(mask)
    print(pid, uuid, findings, report, token)
    return evidence.validated


def launch_as_before(manifest: dict[str, Any]) -> None:
    evidence: CudaProcessSharingEvidence = probe_cuda_process_sharing(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", rank=0, world_size=1
    )
    apply_cuda_process_sharing_manifest(manifest, evidence)
    validated: bool = evidence.validated
    print(validated, evidence.to_dict())
