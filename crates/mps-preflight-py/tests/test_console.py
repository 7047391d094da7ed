"""The `mps-preflight` console command `pip install` puts on PATH is the Rust binary's command
line: the same stdout, stderr and exit status for the same arguments on the same host."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, MPS_FLAGS, REPO, FakeHost, Run


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
    assert host.cli(*args) == _binary_run(host, args)
