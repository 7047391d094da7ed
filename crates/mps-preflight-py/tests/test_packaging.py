"""What `pip install` gives: typed, cheap to import, and importing loads nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE,
    )


def test_the_stubs_type_a_launcher_under_mypy_strict() -> None:
    ok = _mypy(HERE / "typing_usage.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_mypy_strict_catches_a_misuse() -> None:
    bad = _mypy(HERE / "typing_misuse.py")
    assert bad.returncode == 1, bad.stdout
    assert 'Argument "backend"' in bad.stdout
    assert "incompatible type" in bad.stdout.lower()
    # doctor()'s warnings are typed findings: a warning's code is a str.
    assert 'expression has type "str", variable has type "int"' in bad.stdout, bad.stdout


def test_mypy_strict_rejects_a_typo_and_a_write_on_evidence() -> None:
    bad = _mypy(HERE / "typing_evidence_misuse.py")
    assert bad.returncode == 1, bad.stdout
    assert '"Evidence" has no attribute "sever_pid"' in bad.stdout, bad.stdout
    assert "validated" in bad.stdout and "read-only" in bad.stdout, bad.stdout
    assert "Found 2 errors" in bad.stdout, bad.stdout


def test_the_benchmarks_type_check_under_mypy_strict() -> None:
    # The benches are run by hand, not by the tests: type-checking them here keeps them runnable
    # as the package's API moves. The seed's copy imports torch lazily (not installed here),
    # so imported modules are checked only where the benches use them.
    repo = HERE.parents[2]
    benches = [HERE.parent / "bench" / "bench_probe.py", repo / "xtask" / "bench" / "compare.py"]
    ok = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", *map(str, benches)],
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_the_typed_dicts_are_importable_at_runtime() -> None:
    import mps_preflight

    assert mps_preflight.Snapshot.__required_keys__ >= {"schema", "os", "env"}
    assert "attested" in mps_preflight.Attestation.__annotations__
    assert "consistent" in mps_preflight.MergeReport.__annotations__


def test_import_loads_no_torch_no_subprocess_and_no_compat() -> None:
    probe = (
        "import sys, mps_preflight; "
        "print(' '.join(m for m in ('torch', 'subprocess', 'dataclasses', 'json', "
        "'mps_preflight.compat') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == []
    compat = subprocess.run(
        [sys.executable, "-I", "-c", probe.replace("mps_preflight;", "mps_preflight; mps_preflight.probe_cuda_process_sharing;")],
        capture_output=True, text=True, check=True,
    )
    assert "mps_preflight.compat" in compat.stdout.split()
    assert "torch" not in compat.stdout.split()


def test_python_m_runs_the_command_line() -> None:
    run = subprocess.run([sys.executable, "-m", "mps_preflight", "--version"], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout.split()[0]) == (0, "mps-preflight")
