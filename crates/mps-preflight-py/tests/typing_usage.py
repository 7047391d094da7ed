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
    facts: mps_preflight.Snapshot = mps_preflight.capture(timeout=2.5)
    schema: str = facts["schema"]
    findings: list[mps_preflight.Finding] = mps_preflight.doctor(
        None, "cpu", backend="mjwarp", snapshot=facts
    )
    diagnosis: mps_preflight.Diagnosis = mps_preflight.doctor(None, "cpu", backend="mjwarp")
    warnings: list[mps_preflight.Finding] = diagnosis.warnings
    verified: mps_preflight.Evidence | None = diagnosis.evidence
    fixes: list[str] = [warning.fix for warning in warnings]
    report: mps_preflight.MergeReport = mps_preflight.merge([snapshot.with_name("manifest.json")])
    consistent: bool = report["consistent"]
    attestation: mps_preflight.Attestation = mps_preflight.attest(
        1, 2, wait=30.0, manifest=snapshot.with_name("manifest.json")
    )
    attested: bool = attestation["attested"]
    strict: mps_preflight.Evidence = mps_preflight.probe(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", require_verified=True
    )
    unverified: list[str] = strict.unverified
    owners: list[int] = evidence.server_uids
    token: str = mps_preflight.canonicalize_gpu_uuid(mask)
    print(pid, uuid, findings, verified, fixes, report, token, schema, consistent, attested, unverified, owners)
    return evidence.validated


def launch_as_before(manifest: dict[str, Any]) -> None:
    evidence: CudaProcessSharingEvidence = probe_cuda_process_sharing(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", rank=0, world_size=1
    )
    apply_cuda_process_sharing_manifest(manifest, evidence)
    validated: bool = evidence.validated
    print(validated, evidence.to_dict())
