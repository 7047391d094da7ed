"""The Python package's benchmarks (BENCHMARKS.md), on the valid-socket fake host with
compiled fake tools and a stand-in control daemon (xtask/bench/stand_in_daemon.c: it holds
<pipe>/control_lock and has written its log's first lines, as a real daemon does). A
measurement, not a test: it prints a table.

    python crates/mps-preflight-py/bench/bench_probe.py [--runs N]

Side by side in one run, interleaved call by call: the reference module's
probe_cuda_process_sharing (re-indented copy, stand-in torch), mps_preflight.probe, the compat
probe_cuda_process_sharing with the same stand-in torch, and the CLI spawned from Python (the
console command, and target/release/mps-preflight when built). Then the import time (`python
-X importtime`, fresh interpreters) and the resident memory the package adds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CONSOLE = Path(sys.executable).parent / "mps-preflight"
RELEASE = REPO / "target" / "release" / "mps-preflight"
FLAGS = ["--request", "mps", "--learner-device", "cuda:0", "--collector-device", "cuda:0", "--backend", "mjwarp"]
UUID = "8932f937-d72c-4106-c12f-20bd9faed9f6"


class FakeTorch:
    """A torch stand-in: one CUDA device whose properties carry the fake host's GPU UUID."""

    version = SimpleNamespace(hip=None)
    cuda = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        get_device_properties=lambda index: SimpleNamespace(uuid=UUID),
    )


#: The reference module run as a command, the way a launcher's shell step would: a fresh
#: interpreter imports it and probes with a torch stand-in (real torch would add its import).
REFERENCE_COMMAND = """
import sys
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
import reference_cuda_process_sharing as reference
uuid = sys.argv[2]
torch = SimpleNamespace(version=SimpleNamespace(hip=None), cuda=SimpleNamespace(
    is_available=lambda: True, device_count=lambda: 1,
    get_device_properties=lambda index: SimpleNamespace(uuid=uuid)))
print(reference.probe_cuda_process_sharing("mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch).to_dict())
"""


def fake_host() -> tuple[Path, socket.socket, subprocess.Popen[bytes]]:
    root = Path(tempfile.mkdtemp(prefix="mpfb", dir="/tmp"))
    for name in ("bin", "pipe", "log"):
        (root / name).mkdir()
    tool = root / "bin" / "nvidia-smi"
    subprocess.run(["cc", "-O2", "-o", str(tool), str(HERE / "fake_tools.c")], check=True)
    os.link(tool, root / "bin" / "nvidia-cuda-mps-control")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(root / "pipe" / "control"))
    listener.listen()
    stand_in = root / "nvidia-cuda-mps-control"
    subprocess.run(["cc", "-O2", "-o", str(stand_in), str(REPO / "xtask/bench/stand_in_daemon.c")], check=True)
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(root / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(root / "log")}
    daemon = subprocess.Popen([str(stand_in), "-d"], stdin=subprocess.DEVNULL, env=env)
    log = root / "log" / "control.log"
    started = time.monotonic()
    while not log.exists() or not log.stat().st_size:
        if time.monotonic() - started > 5:
            daemon.kill()
            raise SystemExit("the stand-in daemon wrote no log")
        time.sleep(0.005)
    return root, listener, daemon


def stats(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(ordered) * 1e3:.3f} ms | {ordered[0] * 1e3:.3f} ms | {p90 * 1e3:.3f} ms"


def side_by_side(runs: int) -> dict[str, list[float]]:
    sys.path.insert(0, str(HERE))
    import reference_cuda_process_sharing as reference

    import mps_preflight
    from mps_preflight import compat

    torch = FakeTorch()
    # The in-memory double: answers as the reference's tests wrote theirs (its
    # 2-column table, a daemon listing server 4428), with no process spawned.
    answers = {"nvidia-smi": f"0, GPU-{UUID}\n", "nvidia-cuda-mps-control": "4428\n"}

    def in_memory(argv: list[str], **_: object) -> SimpleNamespace:
        return SimpleNamespace(stdout=answers[argv[0]], stderr="", returncode=0)

    cases: dict[str, Callable[[], object]] = {
        "reference probe_cuda_process_sharing (stand-in torch)": lambda: reference.probe_cuda_process_sharing(
            "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch
        ),
        "mps_preflight.probe": lambda: mps_preflight.probe(
            "mps", "cuda:0", "cuda:0", backend="mjwarp"
        ),
        "mps_preflight.compat.probe_cuda_process_sharing (stand-in torch)": lambda: compat.probe_cuda_process_sharing(
            "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch
        ),
        "reference probe_cuda_process_sharing, in-memory run_command": lambda: reference.probe_cuda_process_sharing(
            "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch, run_command=in_memory
        ),
        "mps_preflight.compat.probe_cuda_process_sharing, in-memory run_command": lambda: compat.probe_cuda_process_sharing(
            "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch, run_command=in_memory
        ),
        "reference module as a command (python -c, stand-in torch)": lambda: subprocess.run(
            [sys.executable, "-c", REFERENCE_COMMAND, str(HERE), UUID], capture_output=True, check=True
        ),
        "CLI spawned from Python (console command)": lambda: subprocess.run(
            [str(CONSOLE), "probe", *FLAGS], capture_output=True, check=True
        ),
    }
    if RELEASE.is_file():
        cases["CLI spawned from Python (target/release/mps-preflight)"] = lambda: subprocess.run(
            [str(RELEASE), "probe", *FLAGS], capture_output=True, check=True
        )
    # Every case must validate on this host before it is timed.
    assert compat.probe_cuda_process_sharing(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch, run_command=in_memory
    ).to_dict() == reference.probe_cuda_process_sharing(
        "mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch, run_command=in_memory
    ).to_dict()
    assert "'validated': True" in subprocess.run(
        [sys.executable, "-c", REFERENCE_COMMAND, str(HERE), UUID], capture_output=True, text=True, check=True
    ).stdout
    assert reference.probe_cuda_process_sharing("mps", "cuda:0", "cuda:0", backend="mjwarp", torch_module=torch).server_pid == 4428
    assert mps_preflight.probe("mps", "cuda:0", "cuda:0", backend="mjwarp").server_pid == 4428
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, call in cases.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


def import_times(runs: int) -> tuple[list[float], list[float]]:
    """`import mps_preflight`'s cumulative microseconds under -X importtime, and the wall time
    of `python -c 'import mps_preflight'` less that of `python -c pass`, per fresh interpreter."""
    cumulative, wall = [], []
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import mps_preflight"],
            capture_output=True, text=True, check=True,
        )
        line = [row for row in result.stderr.splitlines() if row.rstrip().endswith("| mps_preflight")][-1]
        cumulative.append(int(line.split("|")[1]) / 1e6)
        timed = []
        for code in ("pass", "import mps_preflight"):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            timed.append(time.perf_counter() - start)
        wall.append(timed[1] - timed[0])
    return cumulative, wall


RSS = """
import sys
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
before = rss()
import mps_preflight
imported = rss()
for _ in range(200):
    mps_preflight.probe('mps', 'cuda:0', 'cuda:0', backend='mjwarp')
print(before, imported, rss())
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    root, listener, daemon = fake_host()
    os.environ["PATH"] = f"{root / 'bin'}:{os.environ.get('PATH', '')}"
    os.environ["CUDA_MPS_PIPE_DIRECTORY"] = str(root / "pipe")
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MPS_LOG_DIRECTORY"):
        os.environ.pop(name, None)
    try:
        print(f"# {args.runs} interleaved calls each; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
        print("| case | median | min | p90 |\n|---|---:|---:|---:|")
        times = side_by_side(args.runs)
        for name, samples in times.items():
            print(f"| {name} | {stats(samples)} |")
        reference = statistics.median(next(iter(times.values())))
        native = statistics.median(times["mps_preflight.probe"])
        console = statistics.median(times["CLI spawned from Python (console command)"])
        print(f"\nreference / mps_preflight.probe: {reference / native:.2f}x (target >= 1.5x)")
        compat_memory = statistics.median(times["mps_preflight.compat.probe_cuda_process_sharing, in-memory run_command"])
        reference_memory = statistics.median(times["reference probe_cuda_process_sharing, in-memory run_command"])
        print(f"compat / reference, in-memory run_command: {compat_memory / reference_memory:.2f}x (target <= 1x)")
        if RELEASE.is_file():
            command = statistics.median(times["reference module as a command (python -c, stand-in torch)"])
            binary = statistics.median(times["CLI spawned from Python (target/release/mps-preflight)"])
            print(f"reference as a command / release CLI probe: {command / binary:.2f}x (target >= 14x)")
        print(f"console CLI / mps_preflight.probe: {console / native:.2f}x (target >= 1x)")
        cumulative, wall = import_times(max(10, args.runs // 10))
        print(f"import mps_preflight, -X importtime cumulative: median {statistics.median(cumulative) * 1e3:.2f} ms, "
              f"min {min(cumulative) * 1e3:.2f} ms; wall over `python -c pass`: median {statistics.median(wall) * 1e3:.2f} ms (target < 20 ms)")
        before, imported, used = map(int, subprocess.run(
            [sys.executable, "-c", RSS], capture_output=True, text=True, check=True
        ).stdout.split())
        print(f"RSS: {before} KiB before import, +{imported - before} KiB after import, "
              f"+{used - before} KiB after 200 probes (target < 5 MiB = 5120 KiB)")
    finally:
        listener.close()
        daemon.kill()
        daemon.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
