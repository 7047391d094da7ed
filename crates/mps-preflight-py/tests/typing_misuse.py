"""Uses the stubs wrongly: `mypy --strict` must reject this file (tests/test_packaging.py)."""

import mps_preflight

evidence = mps_preflight.check("host.json", "mps", "cuda:0", backend=3)
pid: str = evidence.server_pid
warning_code: int = mps_preflight.doctor(None, "cpu", backend="mjwarp").warnings[0].code
