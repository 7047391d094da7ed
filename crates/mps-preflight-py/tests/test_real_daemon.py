"""probe() against Debian's real nvidia-cuda-mps-control (535 from bookworm, 550 from trixie,
fetched by scripts/fetch-mps-control.sh): it validates an idle daemon and rejects once the
daemon has quit. No GPU is needed: the control daemon starts and answers without one. The
daemon is started and stopped only by this harness; the probe cannot send `quit`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import mps_preflight
from conftest import CUDA_VARS, MPS, ROW0, TOKEN0, is_dead

BINARY = "nvidia-cuda-mps/usr/bin/nvidia-cuda-mps-control"


def _binaries() -> list[Path]:
    """`$MPS_PREFLIGHT_MPS_CONTROLS` (paths joined by `:`), else the fetch script's caches."""
    listed = os.environ.get("MPS_PREFLIGHT_MPS_CONTROLS")
    if listed:
        return [Path(path) for path in listed.split(":") if path]
    home = Path.home() / ".cache"
    candidates = [home / "mps-preflight" / BINARY, home / "mps-preflight-550" / BINARY]
    return [path for path in candidates if path.is_file()]


def _version(binary: Path) -> str:
    version = binary.parents[2] / "VERSION"
    return version.read_text().strip() if version.is_file() else binary.name


BINARIES = _binaries()


def _daemon_pids(pipe: Path, binary: Path) -> list[int]:
    """Live processes running `binary` with this pipe directory in their environment."""
    needle = f"CUDA_MPS_PIPE_DIRECTORY={pipe}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            exe = (entry / "exe").resolve()
        except OSError:
            continue
        if needle in environ and exe == binary.resolve() and not is_dead(int(entry.name)):
            found.append(int(entry.name))
    return found


def _wait(condition, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


@pytest.fixture(params=BINARIES or [None], ids=lambda path: _version(path) if path else "none")
def daemon(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    binary = request.param
    if binary is None:
        pytest.skip("the real nvidia-cuda-mps-control was not found; run scripts/fetch-mps-control.sh")
    root = Path(tempfile.mkdtemp(prefix="mpsd", dir="/tmp"))
    pipe, log, bin_dir = root / "p", root / "l", root / "b"
    for folder in (pipe, log, bin_dir):
        folder.mkdir()
    (bin_dir / "nvidia-cuda-mps-control").symlink_to(binary)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '%s\\n' '{ROW0}'\n")
    smi.chmod(0o755)
    env = {"PATH": str(bin_dir), "CUDA_MPS_PIPE_DIRECTORY": str(pipe), "CUDA_MPS_LOG_DIRECTORY": str(log)}
    for name in CUDA_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    subprocess.run([str(binary), "-d"], env=env, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    pids: list[int] = []

    def started() -> bool:
        pids[:] = _daemon_pids(pipe, binary)
        return len(pids) == 1 and (pipe / "control").exists()

    try:
        assert _wait(started), f"no daemon for {pipe}: {pids}"
        yield {"binary": binary, "env": env, "pid": pids[0], "pipe": pipe}
    finally:
        for pid in _daemon_pids(pipe, binary):
            subprocess.run([str(binary)], input="quit\n", env=env, text=True, capture_output=True, timeout=10)
            if not _wait(lambda: is_dead(pid), 5):
                os.kill(pid, 9)
        shutil.rmtree(root, ignore_errors=True)


def test_an_idle_daemon_validates_and_a_quit_one_is_rejected(daemon: dict[str, object]) -> None:
    evidence = mps_preflight.probe(**MPS, timeout=10.0)
    assert evidence.validated is True
    assert evidence.learner_gpu_uuid == evidence.collector_gpu_uuid == TOKEN0
    assert (evidence.control_pipe_kind, evidence.server_pid) == ("unix_socket", None)
    if evidence.daemon_pid is not None:  # 550 writes a pid file; 535 does not
        assert evidence.daemon_pid == daemon["pid"]

    env = daemon["env"]
    assert isinstance(env, dict)
    subprocess.run([str(daemon["binary"])], input="quit\n", env=env, text=True, capture_output=True, timeout=10, check=True)
    pid = daemon["pid"]
    assert isinstance(pid, int)
    assert _wait(lambda: is_dead(pid)), "the daemon did not quit"

    with pytest.raises(mps_preflight.Rejected) as caught:
        mps_preflight.probe(**MPS, timeout=10.0)
    assert caught.value.code in ("control-pipe-missing", "daemon-unreachable"), caught.value
    ambient = mps_preflight.probe(**{**MPS, "request": None}, timeout=10.0)
    assert ambient.ambient_server is False
