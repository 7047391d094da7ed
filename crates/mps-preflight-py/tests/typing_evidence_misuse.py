"""Typos and writes on `Evidence`: `mypy --strict` must reject both lines
(tests/test_packaging.py), since the stub declares every key, read-only, with no fallback."""

import mps_preflight

ev = mps_preflight.check("host.json", "mps", "cuda:0", "cuda:0", backend="mjwarp")
print(ev.sever_pid)
ev.validated = False
