"""Under a per-user process limit (RLIMIT_NPROC) the native probe and capture
never raise PanicException (which `except Exception` does not catch): a null request still
answers, an explicit one is a Rejected, whatever threads and processes could be had."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FakeHost

_UNDER_LIMIT = """
import mps_preflight
evidence = mps_preflight.probe(None, "cuda:0", backend="mjwarp")
assert evidence.validated is False
mps_preflight.capture()
try:
    mps_preflight.probe("mps", "cuda:0", "cuda:0", backend="mjwarp")
except mps_preflight.Rejected:
    pass
print("answered")
"""


def _unused_uid(run: int) -> int:
    """A UID no account has and no process runs as, distinct for every run of every test."""
    return 3_100_000_000 + (os.getpid() % 100_000) * 10 + run


@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_no_panic_under_a_process_limit(nproc: int, host: FakeHost) -> None:
    # The fake host's PATH holds its fake tools only: look in the system's own directories.
    system = "/usr/bin:/bin:/usr/sbin:/sbin"
    setpriv, prlimit = shutil.which("setpriv", path=system), shutil.which("prlimit", path=system)
    if os.geteuid() != 0 or setpriv is None or prlimit is None:
        pytest.skip("needs root, setpriv and prlimit")
    host.healthy()
    for path in (host.root, host.bin, host.pipe):
        path.chmod(0o755)
    uid = _unused_uid(nproc)
    result = subprocess.run(
        [prlimit, f"--nproc={nproc}:{nproc}", "--", setpriv, f"--reuid={uid}",
         f"--regid={uid}", "--clear-groups", "--", sys.executable, "-c", _UNDER_LIMIT],
        env={**host.env, "PYTHONPATH": os.pathsep.join(sys.path)}, cwd=host.root,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, timeout=60,
    )
    assert (result.returncode, result.stdout) == (0, "answered\n"), result.stderr
    assert "PanicException" not in result.stderr
    assert Path(sys.executable).exists()
