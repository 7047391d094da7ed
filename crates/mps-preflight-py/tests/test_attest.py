"""`mps_preflight.attest`: a fake `nvidia-cuda-mps-control` lists the PIDs of real
processes started here with `subprocess.Popen`, as a launcher starts the learner and collector."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import mps_preflight
from conftest import FakeHost

#: Answers the liveness line, the server list in `state/servers`, and each server's client list
#: in `state/clients.<pid>` (none: `Server <pid> not found`).
FAKE_DAEMON = """S='{state}'
while read -r cmd arg; do
  case "$cmd" in
    get_default_active_thread_percentage) echo 100.0 ;;
    get_server_list) [ -f "$S/servers" ] && while read -r l; do echo "$l"; done < "$S/servers" ;;
    get_client_list) if [ -f "$S/clients.$arg" ]; then while read -r l; do echo "$l"; done < "$S/clients.$arg"; else echo "Server $arg not found"; fi ;;
  esac
done
exit 0"""


@pytest.fixture
def processes(host: FakeHost) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The learner, the collector and a server: real processes, their CUDA pointed at the host."""
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(host.pipe)}
    started = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
        for _ in range(2)
    ]
    # The server must look like one to /proc (comm `nvidia-cuda-mps`, argv[0]
    # `nvidia-cuda-mps-server`): a copy of `sleep` under the server's name.
    server = host.root / "srv" / "nvidia-cuda-mps-server"
    server.parent.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", server)
    started.append(subprocess.Popen([str(server), "60"], env=env))
    state = host.root / "state"
    state.mkdir()
    host.script("nvidia-cuda-mps-control", FAKE_DAEMON.format(state=state))
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_attached_processes_are_attested(host: FakeHost, processes: list) -> None:
    learner, collector, server = processes
    (host.root / "state" / "servers").write_text(f"{server.pid}\n")
    (host.root / "state" / f"clients.{server.pid}").write_text(f"{learner.pid}\n{collector.pid}\n")
    attestation = mps_preflight.attest(learner.pid, collector.pid)
    assert attestation["attested"] is True
    assert attestation["server_pid"] == server.pid
    assert attestation["learner"]["code"] == "attached"


def test_wait_covers_a_delayed_attach(host: FakeHost, processes: list) -> None:
    learner, collector, server = processes
    state = host.root / "state"

    def attach() -> None:
        time.sleep(0.3)
        (state / f"clients.{server.pid}").write_text(f"{learner.pid} {collector.pid}\n")
        (state / "servers").write_text(f"{server.pid}\n")

    thread = threading.Thread(target=attach)
    thread.start()
    attestation = mps_preflight.attest(learner.pid, collector.pid, wait=10.0)
    thread.join()
    assert attestation["attested"] is True and attestation["rounds"] > 1


def test_not_attached_is_rejected_with_a_code(host: FakeHost, processes: list) -> None:
    learner, collector, _ = processes
    with pytest.raises(mps_preflight.Rejected) as raised:
        mps_preflight.attest(learner.pid, collector.pid, wait=0.2)
    assert raised.value.code == "not-a-client"
    assert "no MPS server is running" in str(raised.value)
    # Python's parameter, not the command line's flag.
    assert "`wait=30`" in str(raised.value) and "--wait-ms" not in str(raised.value)
    collector.kill()
    collector.wait()
    with pytest.raises(mps_preflight.Rejected) as raised:
        mps_preflight.attest(learner.pid, collector.pid, wait=5.0)
    assert "not-running" in str(raised.value)


@pytest.mark.parametrize("bad", [0, -1, True, 2**31, 2**70, "12", 1.0, None])
def test_pids_are_positive_integers(bad: object) -> None:
    # Checked in Rust (the shared front end), named as Python passes them.
    with pytest.raises(ValueError, match=r"^learner_pid must be a positive integer PID, got "):
        mps_preflight.attest(bad, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^collector_pid must be a positive integer PID, got "):
        mps_preflight.attest(1, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan")])
def test_a_negative_wait_is_a_value_error(bad: float) -> None:
    with pytest.raises(ValueError, match=r"^wait must be at least 0 seconds, got "):
        mps_preflight.attest(1, 2, wait=bad)


def test_the_codes_come_from_the_verdict_natively(host: FakeHost, processes: list) -> None:
    """`attest()` calls the library, not the command line: the code is the
    Rust attestation's first, and the message has each process's line, code first."""
    learner, collector, _ = processes
    collector.kill()
    collector.wait()
    with pytest.raises(mps_preflight.Rejected) as raised:
        mps_preflight.attest(learner.pid, collector.pid)
    message = str(raised.value)
    assert raised.value.code == "not-a-client"
    assert message.startswith(f"not-a-client: the learner (PID {learner.pid})"), message
    assert f"; not-running: the collector (PID {collector.pid})" in message, message


def test_attest_records_in_a_manifest_on_its_pipe_directory(
    host: FakeHost, processes: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from conftest import FIXTURES

    learner, collector, server = processes
    (host.root / "state" / "servers").write_text(f"{server.pid}\n")
    (host.root / "state" / f"clients.{server.pid}").write_text(f"{learner.pid}\n{collector.pid}\n")
    # A run's manifest whose evidence validated this host's pipe directory.
    evidence = mps_preflight.check(
        FIXTURES / "v2-served-validated.json", **{"request": "mps", "learner_device": "cuda:0",
                                                  "collector_device": "cuda:0", "backend": "mjwarp"}
    ).to_dict()
    evidence["pipe_directory"] = str(host.pipe)
    manifest = host.root / "run" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"run": 1, "cuda_process_sharing": evidence}))
    # The environment names another pipe directory: the manifest's is the one asked.
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(host.root / "elsewhere"))
    attestation = mps_preflight.attest(learner.pid, collector.pid, manifest=manifest)
    assert attestation["attested"] is True
    assert attestation["pipe_directory"] == str(host.pipe)
    recorded = json.loads(manifest.read_text())
    assert recorded["run"] == 1
    assert recorded["cuda_process_sharing"]["attestation"] == attestation


def test_the_python_attest_recipe_of_docs_cli_kills_both_children(
    host: FakeHost, processes: list, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """docs/cli.md's Python recipe, run as written (with a short wait): the children are
    started with this interpreter, attest rejects them (no server lists them), and the
    `finally` leaves neither running."""
    import re
    from pathlib import Path

    from conftest import REPO, is_dead

    text = (REPO / "docs" / "cli.md").read_text()
    recipe = re.search(r"From a Python launcher.*?```py\n(.*?)```", text, flags=re.S)
    assert recipe is not None
    code = recipe.group(1).replace("wait=30.0", "wait=0.2")
    work = Path(str(tmp_path))
    for name in ("learner.py", "collector.py"):
        (work / name).write_text("import time\ntime.sleep(60)\n")
    (work / "run").mkdir()
    (work / "run" / "manifest.json").write_text('{"run": 1}')
    monkeypatch.chdir(work)
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        child = real_popen(*args, **kwargs)  # type: ignore[call-overload]
        started.append(child)
        return child

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    with pytest.raises(mps_preflight.Rejected):
        exec(compile(code, "docs/cli.md", "exec"), {})  # noqa: S102 - our own docs
    assert len(started) == 2
    assert [child.args[0] for child in started] == [sys.executable, sys.executable]
    assert all(is_dead(child.pid) for child in started)


def test_the_same_pid_twice_is_a_value_error(host: FakeHost, processes: list) -> None:
    """A launcher that captured `$!` twice is told so, never "attested"."""
    learner, collector, server = processes
    (host.root / "state" / "servers").write_text(f"{server.pid}\n")
    (host.root / "state" / f"clients.{server.pid}").write_text(f"{learner.pid}\n{collector.pid}\n")
    with pytest.raises(ValueError, match="two processes"):
        mps_preflight.attest(learner.pid, learner.pid)
