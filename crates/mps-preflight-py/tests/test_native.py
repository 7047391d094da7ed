"""The native API on fake hosts, against the command line on the same host."""

from __future__ import annotations

import json
import pickle
import threading
import time
from pathlib import Path

import pytest

import mps_preflight
from conftest import (
    FIXTURES, GPU0, GPU1, MPS, MPS_FLAGS, ROW0, TOKEN0, FakeHost, is_dead,
)

FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))


def test_the_fixtures_are_there() -> None:
    assert len(FIXTURE_FILES) >= 10, FIXTURES


@pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=lambda path: path.stem)
def test_check_of_every_fixture_equals_the_cli(fixture: Path, host: FakeHost) -> None:
    run = host.cli("check", "--snapshot", str(fixture), *MPS_FLAGS)
    if run.code == 0:
        assert mps_preflight.check(fixture, **MPS).to_dict() == run.json()
    elif run.code == 2:
        with pytest.raises(mps_preflight.SnapshotError) as unreadable:
            mps_preflight.check(fixture, **MPS)
        assert run.stderr == f"error: {unreadable.value}\n"
    else:
        with pytest.raises(mps_preflight.Rejected) as caught:
            mps_preflight.check(fixture, **MPS)
        assert str(caught.value) == run.error()
        assert caught.value.findings[0].code == caught.value.code
        assert caught.value.findings[0].message == str(caught.value)


def test_a_healthy_host_validates_as_the_cli_says(host: FakeHost) -> None:
    host.healthy()
    evidence = mps_preflight.probe(**MPS)
    assert evidence.validated is True
    assert (evidence.server_pid, evidence.control_pipe_kind) == (4428, "unix_socket")
    assert evidence.learner_gpu_uuid == evidence.collector_gpu_uuid == TOKEN0
    assert evidence.control_pipe == str(host.pipe / "control")
    assert evidence.to_dict() == host.cli("probe", *MPS_FLAGS).json()
    assert list(evidence.to_dict()) == list(host.cli("probe", *MPS_FLAGS).json())


def test_a_rejection_is_the_cli_message_with_its_code_and_findings(host: FakeHost) -> None:
    host.one_gpu().socket().daemon_gone()
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.probe(**MPS)
    err = caught.value
    assert isinstance(err, ValueError)
    assert err.code == "daemon-unreachable"
    assert str(err) == host.cli("probe", *MPS_FLAGS).error()
    assert not str(err).startswith("error:")
    assert "could not reach the control daemon" in str(err)
    assert [finding.code for finding in err.findings] == ["daemon-unreachable"]
    copy = pickle.loads(pickle.dumps(err))  # e.g. across a multiprocessing pool
    assert (str(copy), copy.code, copy.findings) == (str(err), err.code, err.findings)


def test_doctor_lists_what_the_cli_lists(host: FakeHost) -> None:
    # No nvidia-smi, no control pipe, no daemon front-end.
    findings = mps_preflight.doctor(**MPS)
    report = json.loads(host.cli("doctor", *MPS_FLAGS, "--format", "json").stdout)
    assert [f.to_dict() for f in findings] == report["findings"]
    assert len(findings) >= 2
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.probe(**MPS)
    assert caught.value.code == findings[0].code
    assert caught.value.findings == findings
    assert mps_preflight.doctor(**{**MPS, "request": None}) == []


@pytest.mark.parametrize(
    "name", ["healthy-socket-with-server.json", "v4-shm-shared-low-open-files.json",
             "stale-socket-after-daemon-death.json"],
)
def test_doctor_returns_the_verdict_s_warnings_as_the_cli_reports_them(
    name: str, host: FakeHost
) -> None:
    """doctor() returns the warnings (unverified prerequisites and advisories)
    and the evidence of its one verdict, as `doctor --format json` reports them."""
    fixture = FIXTURES / name
    diagnosis = mps_preflight.doctor(**MPS, snapshot=fixture)
    run = host.cli("doctor", "--snapshot", str(fixture), *MPS_FLAGS, "--format", "json")
    report = json.loads(run.stdout)
    assert isinstance(diagnosis, list) and isinstance(diagnosis, mps_preflight.Diagnosis)
    assert [f.to_dict() for f in diagnosis] == report["findings"]
    assert [f.to_dict() for f in diagnosis.findings] == report["findings"]
    assert [w.to_dict() for w in diagnosis.warnings] == report["warnings"]
    assert all(isinstance(w, mps_preflight.Finding) for w in diagnosis.warnings)
    if report["evidence"] is None:
        assert diagnosis.evidence is None and diagnosis
    else:
        assert diagnosis.evidence is not None and diagnosis == []
        assert diagnosis.evidence.to_dict() == report["evidence"]
    copy = pickle.loads(pickle.dumps(diagnosis))
    assert (copy, copy.warnings, copy.evidence) == (diagnosis, diagnosis.warnings, diagnosis.evidence)


def test_doctor_s_warnings_name_unverified_codes_and_advisories() -> None:
    unverified = mps_preflight.doctor(**MPS, snapshot=FIXTURES / "healthy-socket-with-server.json")
    assert unverified == [] and unverified.evidence is not None
    assert [w.code for w in unverified.warnings] == unverified.evidence.unverified
    advisories = mps_preflight.doctor(**MPS, snapshot=FIXTURES / "v4-shm-shared-low-open-files.json")
    codes = [w.code for w in advisories.warnings]
    assert "daemon-open-files-low" in codes and "device-max-connections-high" in codes


def test_a_null_request_never_fails_and_records_the_ambient_daemon(host: FakeHost) -> None:
    null = {**MPS, "request": None}
    assert mps_preflight.probe(**null).ambient_server is False
    host.healthy()
    ambient = mps_preflight.probe(**null)
    assert (ambient.configured, ambient.validated, ambient.ambient_server) == (None, False, True)
    assert mps_preflight.probe(**{**MPS, "request": "NULL"}) == ambient
    assert ambient.to_dict() == host.cli("probe", *MPS_FLAGS[2:]).json()


def test_capture_is_the_snapshot_check_reads_in_every_form(host: FakeHost, tmp_path: Path) -> None:
    host.healthy()
    snapshot = mps_preflight.capture()
    assert snapshot["schema"] == mps_preflight.SCHEMA
    assert snapshot["env"]["cuda_mps_pipe_directory"] == str(host.pipe)
    expected = mps_preflight.probe(**MPS)
    path = tmp_path / "host.json"
    path.write_text(json.dumps(snapshot))
    for form in (snapshot, json.dumps(snapshot), path, str(path)):
        assert mps_preflight.check(form, **MPS) == expected
    # A learner UUID given to check replaces the recorded one, as --learner-uuid does.
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(snapshot, **MPS, learner_uuid=GPU1)
    assert caught.value.code == "different-gpus"
    assert mps_preflight.capture(learner_uuid=GPU0)["learner_uuid"] == GPU0


def test_unreadable_snapshots_are_snapshot_errors(tmp_path: Path) -> None:
    other = json.loads((FIXTURES / "healthy-socket-with-server.json").read_text())
    other["schema"] = "mps-preflight/host-facts/v0"
    (tmp_path / "bad.json").write_text("{")
    cases = {
        "missing": tmp_path / "missing.json",
        "not JSON": tmp_path / "bad.json",
        "a directory": tmp_path,
        "another schema": other,
        "not a snapshot": "{}",
    }
    for what, snapshot in cases.items():
        with pytest.raises(mps_preflight.SnapshotError) as caught:
            mps_preflight.check(snapshot, **MPS)
        assert isinstance(caught.value, OSError) and isinstance(caught.value, ValueError), what
    with pytest.raises(mps_preflight.SnapshotError, match="capture the host again"):
        mps_preflight.check(other, **MPS)


def test_visibility_rewrites_indices_as_the_cli_does(host: FakeHost) -> None:
    host.two_gpus()
    assert mps_preflight.visibility("1") == GPU1
    assert mps_preflight.visibility("0,1") == f"{GPU0},{GPU1}"
    assert mps_preflight.visibility() == f"{GPU0},{GPU1}"
    assert host.cli("visibility").stdout == f"{GPU0},{GPU1}\n"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.visibility("2")
    # The command line's message, in this API's words: `mask=`, never `--devices`.
    cli = host.cli("visibility", "--devices", "2").error()
    assert cli.startswith('--devices "2" (the value for CUDA_VISIBLE_DEVICES): ')
    assert str(caught.value) == 'mask="2": ' + cli.split(": ", 1)[1]
    assert "--devices" not in str(caught.value)
    host.gpus(ROW0)
    assert mps_preflight.visibility(GPU1) == GPU1  # a UUID needs no table


def test_visibility_codes_come_through_natively(host: FakeHost) -> None:
    """No command line in between; the code is the Rust refusal's."""
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.visibility("")
    assert caught.value.code == "visibility-unresolved"
    assert str(caught.value).startswith('mask="": the mask is empty')
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.visibility("0\n1")
    assert str(caught.value).startswith("mask= holds a control character")
    host.gpus()  # nvidia-smi lists nothing: the unset mask cannot be listed
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.visibility(timeout=0)  # rounded up to 1 ms, as before
    assert caught.value.code == "visibility-unresolved"
    assert "or pass mask= with `GPU-` UUIDs" in str(caught.value), str(caught.value)
    assert "--devices" not in str(caught.value) and "--timeout-ms" not in str(caught.value)
    assert not hasattr(mps_preflight, "_python_words")


def test_canonicalize_gpu_uuid_is_the_reference_token() -> None:
    assert mps_preflight.canonicalize_gpu_uuid(f" {GPU0.lower()}\n") == TOKEN0
    assert mps_preflight.canonicalize_gpu_uuid("8932f937-d72c-4106-c12f-20bd9faed9f6") == TOKEN0


def _evidence() -> mps_preflight.Evidence:
    return mps_preflight.check(FIXTURES / "healthy-socket-with-server.json", **MPS)


def test_evidence_is_frozen_ordered_comparable_and_picklable() -> None:
    evidence = _evidence()
    with pytest.raises(AttributeError):
        evidence.validated = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        evidence.no_such_key  # noqa: B018
    data = evidence.to_dict()
    data["validated"] = False
    assert evidence.validated is True, "to_dict returns a copy"
    assert list(evidence.to_dict())[:15] == [
        "configured", "effective", "validated", "rank", "world_size", "learner_device",
        "collector_device", "learner_gpu_uuid", "collector_gpu_uuid", "pipe_directory_env",
        "pipe_directory", "control_pipe", "control_pipe_kind", "server_pid", "ambient_server",
    ]
    assert pickle.loads(pickle.dumps(evidence)) == evidence
    assert hash(evidence) == hash(_evidence())
    assert "daemon_pid" in dir(evidence) and "daemon_pid=2718" in repr(evidence)


def test_record_and_write_manifest_keep_every_other_key(tmp_path: Path) -> None:
    evidence = _evidence()
    manifest: dict[str, object] = {"run_id": "abc"}
    mps_preflight.record(manifest, evidence)
    assert manifest == {"run_id": "abc", "cuda_process_sharing": evidence.to_dict()}

    path = tmp_path / "manifest.json"
    path.write_text('{"run_id": "abc", "steps": 10}')
    mps_preflight.write_manifest(path, evidence)
    written = json.loads(path.read_text())
    # The file write also names the evidence's schema beside it; `record` keeps the
    # reference module's in-memory shape.
    assert list(written) == [
        "run_id",
        "steps",
        "cuda_process_sharing",
        "cuda_process_sharing_schema",
        "cuda_process_sharing_writer",
    ]
    assert written["cuda_process_sharing"] == evidence.to_dict()
    assert written["cuda_process_sharing_schema"] == "mps-preflight/evidence/v1"
    # The release that wrote it is this package's version.
    assert written["cuda_process_sharing_writer"] == f"mps-preflight {mps_preflight.__version__}"

    mps_preflight.write_manifest(tmp_path / "new.json", evidence)
    assert json.loads((tmp_path / "new.json").read_text()) == {
        "cuda_process_sharing": evidence.to_dict(),
        "cuda_process_sharing_schema": "mps-preflight/evidence/v1",
        "cuda_process_sharing_writer": f"mps-preflight {mps_preflight.__version__}",
    }


def test_a_manifest_that_is_not_an_object_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("[1, 2]")
    with pytest.raises(mps_preflight.ManifestError, match="not a JSON object") as caught:
        mps_preflight.write_manifest(path, _evidence())
    assert isinstance(caught.value, OSError)
    assert path.read_text() == "[1, 2]"
    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(mps_preflight.ManifestError, match="symbolic link"):
        mps_preflight.write_manifest(link, _evidence())


def test_merge_checks_the_ranks_of_one_run(tmp_path: Path) -> None:
    ranks = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        evidence = mps_preflight.check(
            FIXTURES / "healthy-socket-with-server.json", **MPS, rank=rank, world_size=2
        )
        mps_preflight.write_manifest(path, evidence)
        ranks.append(path)
    report = mps_preflight.merge(ranks)
    assert report["consistent"] is True and report["world_size"] == 2
    short = mps_preflight.merge(ranks[:1])
    assert short["consistent"] is False
    assert [finding["code"] for finding in short["findings"]] == ["missing-rank"]
    with pytest.raises(mps_preflight.ManifestError):
        mps_preflight.merge([tmp_path / "missing.json"])


def test_arguments_are_checked_as_the_cli_checks_them() -> None:
    fixture = FIXTURES / "healthy-socket-with-server.json"
    with pytest.raises(TypeError, match="learner_device"):
        mps_preflight.check(fixture, request="mps", backend="mjwarp")
    with pytest.raises(TypeError, match="rank"):
        mps_preflight.check(fixture, **MPS, rank=True)
    with pytest.raises(TypeError, match="supported_backends"):
        mps_preflight.check(fixture, **MPS, supported_backends="mjwarp")
    with pytest.raises(ValueError, match="timeout"):
        mps_preflight.probe(**MPS, timeout=0)
    # Out-of-range integers reach the policy, which refuses them (not a usage error).
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(fixture, **MPS, rank=2**70)
    assert caught.value.code == "invalid-rank"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(fixture, **{**MPS, "request": "bogus"})
    assert caught.value.code == "unsupported-mode"


def test_stated_minimums_are_the_cli_flags(host: FakeHost) -> None:
    """``min_active_thread_percentage=`` and ``min_pinned_mem=`` are read by the
    CLI's own parsers: a bad value is a ValueError, never a dropped requirement."""
    for name, found in [("v3-no-pinned-limit", None), ("v3-pinned-limit-512m", "512M")]:
        fixture = FIXTURES / f"{name}.json"
        evidence = mps_preflight.check(fixture, **MPS, min_pinned_mem="512M")
        assert evidence.default_pinned_mem_limit == found
    fixture = FIXTURES / "v3-pinned-limit-512m.json"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(fixture, **MPS, min_pinned_mem="1G")
    assert caught.value.code == "pinned-mem-below-requirement"
    run = host.cli("check", "--snapshot", str(fixture), *MPS_FLAGS, "--min-pinned-mem", "1G")
    assert str(caught.value) == run.error()
    low = FIXTURES / "v3-no-pinned-limit.json"
    assert mps_preflight.check(low, **MPS).default_active_thread_percentage == 33.0
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(low, **MPS, min_active_thread_percentage=50)
    assert caught.value.code == "active-thread-percentage-below-requirement"
    for bad in [0, 100.5, 12.25, "50%"]:
        with pytest.raises(ValueError, match="min_active_thread_percentage"):
            mps_preflight.check(low, **MPS, min_active_thread_percentage=bad)
    with pytest.raises(ValueError, match="min_pinned_mem"):
        mps_preflight.check(low, **MPS, min_pinned_mem="10GB")
    with pytest.raises(TypeError, match="min_active_thread_percentage"):
        mps_preflight.check(low, **MPS, min_active_thread_percentage=True)


def test_min_shm_is_the_cli_flag_and_advisories_never_reject(host: FakeHost) -> None:
    """``min_shm=`` is ``--min-shm``; a /dev/shm not the daemon's is rejected as the CLI does;
    the capacity advisories are listed, never rejections, even with ``require_verified``."""
    shared = FIXTURES / "v4-shm-shared-low-open-files.json"
    evidence = mps_preflight.check(shared, **MPS, min_shm="1G", require_verified=True)
    assert evidence.shm_free_bytes == 1 << 30
    assert evidence.advisories == ["device-max-connections-high", "daemon-open-files-low"]
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(shared, **MPS, min_shm="2G")
    assert caught.value.code == "shm-below-requirement"
    run = host.cli("check", "--snapshot", str(shared), *MPS_FLAGS, "--min-shm", "2G")
    assert str(caught.value) == run.error()
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(FIXTURES / "v4-shm-not-shared.json", **MPS)
    assert caught.value.code == "shm-not-shared"
    assert evidence.pipe_access == "modes"
    with pytest.raises(ValueError, match="min_shm"):
        mps_preflight.check(shared, **MPS, min_shm="2GB")
    with pytest.raises(TypeError, match="min_shm"):
        mps_preflight.check(shared, **MPS, min_shm=2)


def test_as_user_judges_for_that_user_as_the_cli_does(host: FakeHost) -> None:
    """``as_user=`` is ``--as-user``: the server of uid 1001 is that user's own, another
    user's for the probing uid 1000; the evidence records whom it was judged for."""
    fixture = FIXTURES / "v2-server-of-another-user.json"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(fixture, **MPS)
    assert caught.value.code == "server-of-another-user"
    for user in [1001, "1001"]:
        evidence = mps_preflight.check(fixture, **MPS, as_user=user)
        assert (evidence.caller_uid, evidence.judged_for_uid) == (1000, 1001)
    run = host.cli("check", "--snapshot", str(fixture), *MPS_FLAGS, "--as-user", "1001")
    assert json.loads(run.stdout)["judged_for_uid"] == 1001
    assert mps_preflight.doctor(**MPS, snapshot=fixture, as_user=1001) == []
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(fixture, **MPS, as_user="root")
    assert "judged for uid 0" in str(caught.value)
    with pytest.raises(ValueError, match="as_user: no user named"):
        mps_preflight.check(fixture, **MPS, as_user="no-such-user-mps-preflight")
    with pytest.raises(ValueError, match="as_user"):
        mps_preflight.check(fixture, **MPS, as_user=-1)
    with pytest.raises(TypeError, match="as_user"):
        mps_preflight.check(fixture, **MPS, as_user=True)


def test_the_gil_is_released_while_a_query_hangs(host: FakeHost) -> None:
    host.one_gpu().socket().script("nvidia-cuda-mps-control", "exec /bin/sleep 30")
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        with pytest.raises(mps_preflight.Rejected) as caught:
            mps_preflight.probe(**MPS, timeout=1.0)
    finally:
        stop.set()
        counter.join()
    assert caught.value.code == "daemon-timed-out"
    # A held GIL would have let the counter run only at the switch interval's mercy around
    # the call, not for a whole second of 1 ms sleeps.
    assert ticks > 100, ticks


def test_nothing_is_left_running_after_a_timeout(host: FakeHost) -> None:
    pids = host.root / "pids"
    host.one_gpu().socket().script(
        "nvidia-cuda-mps-control",
        f"echo $$ >> {pids}\n/bin/sleep 30 &\necho $! >> {pids}\nwait",
    )
    with pytest.raises(mps_preflight.Rejected, match="did not answer within 500 ms") as caught:
        mps_preflight.probe(**MPS, timeout=0.5)
    assert caught.value.code == "daemon-timed-out"
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2
    deadline = time.monotonic() + 5
    while not all(is_dead(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(is_dead(pid) for pid in started), started


def test_the_console_command_is_the_cli(host: FakeHost) -> None:
    fixture = str(FIXTURES / "healthy-socket-with-server.json")
    ok = host.cli("check", "--snapshot", fixture, *MPS_FLAGS)
    assert ok.json() == mps_preflight.check(fixture, **MPS).to_dict()
    assert host.cli("check", "--snapshot", str(host.root / "missing.json"), *MPS_FLAGS).code == 2
    assert host.cli("--rank").code == 2
    version = host.cli("--version")
    # `mps-preflight 0.2.0 (<commit>, <target>)`: the same release as __version__.
    assert version.code == 0
    assert version.stdout.startswith(f"mps-preflight {mps_preflight.__version__} ("), version.stdout
    assert host.cli("probe", "--help").stdout.startswith("Observe this host")


def test_a_pipe_directory_the_jobs_user_cannot_search_is_rejected_as_the_cli_does(host: FakeHost) -> None:
    """The v4 fixture whose pipe directory is root's at 0700 is ``pipe-directory-unreachable``
    for its caller (UID 1000), with the CLI's message; a v3 snapshot, which never recorded the
    modes, is judged as it was then (``pipe_access`` null)."""
    blocked = FIXTURES / "v4-pipe-directory-0700.json"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(blocked, **MPS)
    assert caught.value.code == "pipe-directory-unreachable"
    assert "chmod o+x /tmp/nvidia-mps" in str(caught.value)
    run = host.cli("check", "--snapshot", str(blocked), *MPS_FLAGS)
    assert str(caught.value) == run.error()
    reached = mps_preflight.check(FIXTURES / "v4-served-validated.json", **MPS, require_verified=True)
    assert reached.pipe_access == "modes" and reached.unverified == []
    older = mps_preflight.check(FIXTURES / "v3-served-validated.json", **MPS)
    assert older.unverified == [] and older.pipe_access is None


def test_require_verified_makes_what_is_unverified_a_rejection() -> None:
    from conftest import FIXTURES

    v1 = FIXTURES / "healthy-socket-with-server.json"
    lenient = mps_preflight.check(v1, **MPS)
    assert lenient.validated and lenient.unverified
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(v1, **MPS, require_verified=True)
    assert caught.value.code == lenient.unverified[0]
    with pytest.raises(TypeError):
        mps_preflight.check(v1, **MPS, require_verified="yes")  # type: ignore[arg-type]


def test_a_compute_process_holding_the_exclusive_gpu_is_rejected_as_the_cli_does(
    host: FakeHost,
) -> None:
    """A compute process on an ``Exclusive_Process`` GPU with no MPS server yet is
    ``gpu-held-by-compute-process``, worded as the CLI words it; the evidence carries the two
    new keys."""
    held = FIXTURES / "v4-exclusive-gpu-held-by-compute-process.json"
    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.check(held, **MPS)
    assert caught.value.code == "gpu-held-by-compute-process"
    assert "PID 31337" in str(caught.value)
    run = host.cli("check", "--snapshot", str(held), *MPS_FLAGS)
    assert str(caught.value) == run.error()
    shared = FIXTURES / "v4-shm-shared-low-open-files.json"
    evidence = mps_preflight.check(shared, **MPS, require_verified=True)
    assert evidence.gpu_compute_processes is None
    assert evidence.server_client_limit == 48
