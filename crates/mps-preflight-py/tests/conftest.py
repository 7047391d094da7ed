"""Fake hosts for the Python package's tests, built as the Rust tests build them
(crates/mps-preflight/tests/it/support.rs): a temp pipe directory with a real listening Unix
socket, fake `nvidia-smi` / `nvidia-cuda-mps-control` shell scripts on a temp `PATH`, and the
CUDA variables of the real host removed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures" / "hosts"

GPU0 = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
GPU1 = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1"
TOKEN0 = "8932F937D72C4106C12F20BD9FAED9F6"
TOKEN1 = "5A88EDBE90C424498C4370C57591CCA1"
#: `nvidia-smi` rows of the probe's query: compute mode, driver version, the five health columns
#: (persistence on, no recovery action, nothing pending or failed), index, UUID, name, bus id.
ROW0 = f"Exclusive_Process, 550.163.01, Enabled, None, No, No, No, 0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0"
ROW1 = f"Exclusive_Process, 550.163.01, Enabled, None, No, No, No, 1, {GPU1}, NVIDIA H100 80GB HBM3, 00000000:3B:00.0"

#: The explicit request most tests make, as keyword arguments.
MPS = {
    "request": "mps",
    "learner_device": "cuda:0",
    "collector_device": "cuda:0",
    "backend": "mjwarp",
}
#: The same request, as command-line flags.
MPS_FLAGS = [
    "--request", "mps", "--learner-device", "cuda:0",
    "--collector-device", "cuda:0", "--backend", "mjwarp",
]

#: The CUDA variables a real host may have set; every fake host starts without them.
CUDA_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "CUDA_MPS_PROTOCOL_VERSION",
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@dataclass
class Run:
    """One run of the command line."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        assert self.code == 0 and self.stderr == "", self
        value = json.loads(self.stdout)
        assert isinstance(value, dict)
        return value

    def error(self) -> str:
        """The one `error: ` message of a rejection, without the prefix."""
        assert self.code == 1 and self.stdout == "", self
        assert self.stderr.startswith("error: ") and self.stderr.count("\n") == 1, self
        return self.stderr.removeprefix("error: ").rstrip("\n")


class FakeHost:
    """A fake host: its own `PATH` and pipe directory in a short temp dir under /tmp (a
    socket path must stay under 108 bytes)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mpf", dir="/tmp"))
        self.bin = self.root / "bin"
        self.pipe = self.root / "pipe"
        self.bin.mkdir()
        self.pipe.mkdir()
        self.env = {"PATH": str(self.bin), "CUDA_MPS_PIPE_DIRECTORY": str(self.pipe)}
        self._listener: socket.socket | None = None

    def tool(self, name: str, stdout: str, stderr: str = "", code: int = 0) -> FakeHost:
        """A fake tool that reads stdin to its end, prints, and exits `code` (builtins only)."""
        return self.script(
            name,
            "while read -r line; do :; done\n"
            f"printf '%s' {_quote(stdout)}\nprintf '%s' {_quote(stderr)} >&2\nexit {code}",
        )

    def script(self, name: str, body: str) -> FakeHost:
        path = self.bin / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
        return self

    def gpus(self, *rows: str) -> FakeHost:
        return self.tool("nvidia-smi", "".join(row + "\n" for row in rows))

    def one_gpu(self) -> FakeHost:
        return self.gpus(ROW0)

    def two_gpus(self) -> FakeHost:
        return self.gpus(ROW0, ROW1)

    def daemon_answers(self, servers: str = "") -> FakeHost:
        """A live daemon listing `servers`: the fake front-end shared with the command line's
        tests (fixtures/fake-host/nvidia-cuda-mps-control)."""
        state = self.root / "daemon"
        state.mkdir(exist_ok=True)
        (state / "servers").write_text(servers)
        path = self.bin / "nvidia-cuda-mps-control"
        shutil.copyfile(REPO / "fixtures" / "fake-host" / "nvidia-cuda-mps-control", path)
        path.chmod(0o755)
        return self

    def daemon_gone(self) -> FakeHost:
        return self.tool(
            "nvidia-cuda-mps-control", "", "Cannot find MPS control daemon process\n", 1
        )

    def socket(self) -> FakeHost:
        """A real listening Unix socket at `<pipe>/control`, open while the host lives."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.pipe / "control"))
        listener.listen()
        self._listener = listener
        return self

    def healthy(self) -> FakeHost:
        """One GPU, a live socket, a daemon serving server 4428."""
        return self.one_gpu().socket().daemon_answers("4428\n")

    def cli(self, *args: str) -> Run:
        """The `mps-preflight` console command of this virtual environment, on this host."""
        result = subprocess.run(
            [str(CONSOLE), *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        return Run(result.returncode, result.stdout, result.stderr)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        shutil.rmtree(self.root, ignore_errors=True)


#: The console command `pip install` put beside this interpreter.
CONSOLE = Path(sys.executable).parent / "mps-preflight"


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHost]:
    """A fake host whose environment is this process's for the test (the native calls read
    the process environment, as the binary does)."""
    fake = FakeHost()
    for name in CUDA_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.close()


def process_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 1 :].split()[0]


def is_dead(pid: int) -> bool:
    return process_state(pid) in (None, "Z", "X")


def is_executable(path: Path) -> bool:
    return path.is_file() and bool(path.stat().st_mode & stat.S_IXUSR)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # CI sets this: a run in which any test skipped (the real daemon missing, say) fails,
    # so that a green run means every test ran.
    if os.environ.get("MPS_PREFLIGHT_PYTEST_NO_SKIPS") and exitstatus == 0:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
        if skipped:
            print(f"\nerror: {skipped} test(s) skipped and MPS_PREFLIGHT_PYTEST_NO_SKIPS is set")
            session.exitstatus = 1
