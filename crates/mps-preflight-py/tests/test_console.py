"""The `mps-preflight` console command `pip install` puts on PATH is the Rust binary's command
line: the same stdout, stderr and exit status for the same arguments on the same host."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CONSOLE, FIXTURES, MPS_FLAGS, REPO, FakeHost, Run


def _binary() -> Path | None:
    """`$MPS_PREFLIGHT_BIN`, else the newest of target/{debug,release}/mps-preflight."""
    named = os.environ.get("MPS_PREFLIGHT_BIN")
    if named:
        return Path(named)
    built = [REPO / "target" / kind / "mps-preflight" for kind in ("debug", "release")]
    found = [path for path in built if path.is_file()]
    return max(found, key=lambda path: path.stat().st_mtime) if found else None


BINARY = _binary()

ARGUMENT_LINES = [
    ["--help"],
    ["--version"],
    ["probe", "--help"],
    ["check"],
    ["bogus"],
    ["check", "--snapshot", "missing.json", *MPS_FLAGS],
    ["check", "--snapshot", str(FIXTURES / "healthy-socket-with-server.json"), *MPS_FLAGS],
    ["check", "--snapshot", str(FIXTURES / "stale-socket-after-daemon-death.json"), *MPS_FLAGS],
    ["doctor", "--snapshot", str(FIXTURES / "mps-control-not-installed.json"), *MPS_FLAGS],
    ["doctor", "--format", "json", *MPS_FLAGS],
    ["probe", *MPS_FLAGS],
    ["probe", *MPS_FLAGS[2:], "--rank", "x"],
    ["visibility", "--devices", "0"],
    ["visibility", "--devices", "1"],
    ["merge", "missing.json"],
]


def _binary_run(host: FakeHost, args: list[str]) -> Run:
    assert BINARY is not None
    result = subprocess.run(
        [str(BINARY), *args], env=host.env, cwd=host.root, capture_output=True, text=True,
        check=False, stdin=subprocess.DEVNULL,
    )
    return Run(result.returncode, result.stdout, result.stderr)


@pytest.mark.parametrize("args", ARGUMENT_LINES, ids=lambda args: " ".join(args)[:60])
def test_the_console_command_is_the_binary(args: list[str], host: FakeHost) -> None:
    if BINARY is None:
        pytest.skip("no target/{debug,release}/mps-preflight: run cargo build -p mps-preflight")
    host.healthy()
    console, binary = host.cli(*args), _binary_run(host, args)
    if args == ["--version"]:
        # `mps-preflight 0.2.0 (<commit>, <target>)`: the release must match; the commit and
        # target name each build, and the wheel is not the binary's build.
        console, binary = (Run(r.code, _release(r.stdout), r.stderr) for r in (console, binary))
    assert console == binary


def _release(version_line: str) -> str:
    """`mps-preflight 0.2.0` of `mps-preflight 0.2.0 (3a62974, x86_64-unknown-linux-gnu)`."""
    release, _, build = version_line.partition(" (")
    assert build.endswith(")\n"), version_line
    return release


def _interrupted(command: list[str], host: FakeHost) -> tuple[int, list[int]]:
    """The exit status of `command probe …` sent SIGINT while its daemon query hangs, and the
    hung queries still alive once it has exited."""
    pids = host.root / "pids"
    host.script("nvidia-cuda-mps-control", f"echo $$ >> {pids}\nexec /bin/sleep 30")
    process = subprocess.Popen(
        [*command, "probe", *MPS_FLAGS, "--timeout-ms", "20000"],
        env=host.env, cwd=host.root, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=5)
        return status, [pid for pid in _pids(pids) if _alive(pid)]
    finally:
        process.kill()
        process.wait()
        # The hung query runs in its own process group, which a signal to the command misses.
        for pid in _pids(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        pids.unlink(missing_ok=True)


def _pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_ends_the_console_command_as_it_ends_the_binary(host: FakeHost) -> None:
    # Both kill and reap the hung query's process group, then exit 128 + SIGINT.
    host.one_gpu().socket()
    console = _interrupted([str(CONSOLE)], host)
    assert console == (128 + signal.SIGINT, [])
    if BINARY is not None:
        assert _interrupted([str(BINARY)], host) == console


_PROBE_UNTIL_INTERRUPTED = """
import signal, sys, time
import mps_preflight
# A shell's background job starts with SIGINT ignored, and Python then keeps it ignored: the
# test needs the handler an interactive Ctrl-C meets.
signal.signal(signal.SIGINT, signal.default_int_handler)
started = time.monotonic()
try:
    mps_preflight.probe("mps", "cuda:0", "cuda:0", backend="mjwarp", timeout=20.0)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - started:.3f} s")
    sys.exit(0)
print("returned")
sys.exit(1)
"""


def test_ctrl_c_in_probe_raises_keyboard_interrupt_and_leaves_no_query(host: FakeHost) -> None:
    # KeyboardInterrupt in the calling thread ends the probe at once (not at its 20 s
    # deadline), and the hung query's process group is killed and reaped.
    host.one_gpu().socket()
    pids = host.root / "pids"
    host.script("nvidia-cuda-mps-control", f"echo $$ >> {pids}\nexec /bin/sleep 30")
    env = {**os.environ, **host.env, "PATH": f"{host.bin}:{os.environ.get('PATH', '')}"}
    process = subprocess.Popen(
        [sys.executable, "-c", _PROBE_UNTIL_INTERRUPTED],
        env=env, cwd=host.root, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pids.exists(), "the fake daemon query never started"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=5)
        assert process.returncode == 0, (stdout, stderr)
        assert stdout.startswith("interrupted after "), (stdout, stderr)
        assert [pid for pid in _pids(pids) if _alive(pid)] == []
    finally:
        process.kill()
        process.wait()
        for pid in _pids(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _with_closed(closed: str, command: list[str], host: FakeHost) -> tuple[int, bytes]:
    """`command` run on `host` with `closed` ("1", "2" or "1 2") closed by the shell; its exit
    status and whatever it wrote on the descriptors left open."""
    redirections = " ".join(f"{fd}>&-" for fd in closed.split())
    result = subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {redirections}', "sh", *command],
        env=host.env, cwd=host.root, stdin=subprocess.DEVNULL, capture_output=True,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


_COMMANDS = {
    "console": [str(CONSOLE)],
    "python -m": [sys.executable, "-m", "mps_preflight"],
}


@pytest.mark.parametrize("closed", ["1", "2", "1 2"])
@pytest.mark.parametrize("name", list(_COMMANDS))
def test_closed_standard_streams_still_record_the_manifest(
    name: str, closed: str, host: FakeHost
) -> None:
    # With stdout or stderr closed, the console command behaves like the
    # binary: exit 0 with the manifest written (its evidence intact, not mixed with the output
    # that had nowhere to go), or exit 2 for an input error; never a traceback and exit 1.
    host.healthy()
    manifest = host.root / "run.json"
    status, _ = _with_closed(
        closed, [*_COMMANDS[name], "probe", *MPS_FLAGS, "--manifest", str(manifest)], host
    )
    assert status == 0
    recorded = json.loads(manifest.read_text())
    assert recorded["cuda_process_sharing"]["validated"] is True
    assert sorted(path.name for path in host.root.iterdir()) == [
        "bin", "daemon", "pipe", "run.json", "run.json.lock",
    ]
    missing = str(host.root / "missing.json")
    status, _ = _with_closed(closed, [*_COMMANDS[name], "check", "--snapshot", missing], host)
    assert status == 2
    if BINARY is not None:
        manifest.unlink()
        status, _ = _with_closed(
            closed, [str(BINARY), "probe", *MPS_FLAGS, "--manifest", str(manifest)], host
        )
        assert status == 0
        assert json.loads(manifest.read_text()) == recorded


def test_with_stdout_closed_the_error_still_reaches_stderr(host: FakeHost) -> None:
    status, said = _with_closed(
        "1", [str(CONSOLE), "check", "--snapshot", str(host.root / "missing.json")], host
    )
    assert status == 2
    assert said.startswith(b"error: "), said
    assert b"Traceback" not in said
