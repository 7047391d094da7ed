"""Several builds of mps-preflight side by side in one run (BENCHMARKS.md): each
build's `probe` on the compiled fake hosts of `cargo xtask bench`, interleaved run by run with
the floors, so that drift on a shared machine hits every column alike. A measurement, not a
test.

    python3 xtask/bench/compare.py [--runs N] LABEL=PATH [LABEL=PATH ...]

Hosts: an idle daemon (its GPU in Exclusive_Process, so the probe asks the compute processes
too, and in Default mode, where it does not) and a daemon serving server 4428, each with a
stand-in daemon process (stand_in_daemon.c) that holds <pipe>/control_lock and has written its
log's first lines, as a real daemon does, so the probe proves it and scans no /proc; each
without a pid file (470/535) and with one naming the stand-in (550+).
Floors (floor.c, a tiny C program run as a whole process): the queries the newest build makes on
that host (read from its `capture`), one after the other.
With --seed, the seed too: the reference module (crates/mps-preflight-py/bench/, the seed
re-indented) run as a command on each served host, the way a launcher's shell step would (a
fresh interpreter imports it and probes with a torch stand-in; real torch would add its import),
spawned as the builds are, so that "N times faster than the seed" is read in the same run.
With --idle-ms N, each timed run follows N ms of sleep instead of the case before it: the
state a launcher's one probe meets on a quiet node, where work that waits on the kernel (an RCU
grace period, an idle CPU's wake-up) shows, and back-to-back runs hide it.
Every run must exit as expected. Prints each case's median and minimum in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SEED_BENCH = REPO / "crates/mps-preflight-py/bench"
PROBE = "probe --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp".split()


def build(root: Path) -> tuple[dict[str, Path], list[object]]:
    """The four hosts under `root`, and what must stay alive while they are used."""
    keep: list[object] = []
    hosts = {}
    for kind in ("idle", "idle-default", "served"):
        tools = root / f"{kind}-tools"
        flags = {"idle": ["-DFAKE_IDLE"], "idle-default": ["-DFAKE_IDLE", "-DFAKE_DEFAULT_MODE"], "served": []}[kind]
        subprocess.run(["cc", "-O2", *flags, "-o", str(tools), str(REPO / "crates/mps-preflight-py/bench/fake_tools.c")], check=True)
        for pid_file in (False, True):
            host = root / (kind + ("-pid-file" if pid_file else ""))
            (host / "bin").mkdir(parents=True)
            (host / "pipe").mkdir()
            for name in ("nvidia-smi", "nvidia-cuda-mps-control"):
                shutil.copy(tools, host / "bin" / name)
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(str(host / "pipe" / "control"))
            listener.listen()
            keep.append(listener)
            daemon = start_daemon(root, host)
            keep.append(daemon)
            if pid_file:
                (host / "pipe" / "nvidia-cuda-mps-control.pid").write_text(f"{daemon.pid}\n")
            hosts[host.name] = host
    subprocess.run(["cc", "-O2", "-o", str(root / "floor"), str(HERE / "floor.c")], check=True)
    return hosts, keep


def start_daemon(root: Path, host: Path) -> subprocess.Popen[bytes]:
    """The host's stand-in control daemon, running once it holds the lock and wrote its log."""
    program = host / "nvidia-cuda-mps-control"
    if not (root / "stand-in-daemon").exists():
        subprocess.run(["cc", "-O2", "-o", str(root / "stand-in-daemon"), str(HERE / "stand_in_daemon.c")], check=True)
    shutil.copy(root / "stand-in-daemon", program)
    (host / "log").mkdir()
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(host / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(host / "log")}
    daemon = subprocess.Popen([str(program), "-d"], stdin=subprocess.DEVNULL, env=env)
    started = time.monotonic()
    while not (host / "log" / "control.log").exists() or not (host / "log" / "control.log").stat().st_size:
        if time.monotonic() - started > 5:
            daemon.kill()
            raise SystemExit(f"the stand-in daemon of {host} wrote no log")
        time.sleep(0.005)
    return daemon


def floor_queries(builds: list[tuple[str, str]], host: Path) -> list[str]:
    """The floor's arguments after the two tools: the queries the newest build makes on `host`
    after the GPU table (its first session's stdin, its settings session's when it asks one,
    `--compute-apps` when it asks that), from its `capture`."""
    env = {"PATH": str(host / "bin"), "CUDA_MPS_PIPE_DIRECTORY": str(host / "pipe")}
    snapshot = json.loads(subprocess.run([builds[-1][1], "capture"], env=env, capture_output=True, check=True).stdout)
    queries = [str(snapshot["daemon_query"]["stdin"])]
    if snapshot.get("settings_query"):
        queries.append(str(snapshot["settings_query"]["stdin"]))
    if snapshot.get("compute_apps_query"):
        queries.append("--compute-apps")
    return queries


def seed_cases(hosts: dict[str, Path]) -> list[tuple[str, list[str], str, int]]:
    """The seed run as a command on the served hosts, each checked to validate there first."""
    sys.path.insert(0, str(SEED_BENCH))
    from bench_probe import REFERENCE_COMMAND, UUID

    cases = []
    for host, label in (("served", "served, no pid file"), ("served-pid-file", "served, pid file")):
        argv = [sys.executable, "-c", REFERENCE_COMMAND, str(SEED_BENCH), UUID]
        env = {"PATH": str(hosts[host] / "bin"), "CUDA_MPS_PIPE_DIRECTORY": str(hosts[host] / "pipe")}
        answer = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
        if "'validated': True" not in answer:
            raise SystemExit(f"the seed does not validate on {host}: {answer[:400]!r}")
        cases.append((f"seed as a command: probe, {label}", argv, host, 0))
    return cases


def print_seed_ratios(builds: list[tuple[str, str]], times: dict[str, list[float]]) -> None:
    """Each build's served probe against the seed's, medians from the same run."""
    for label, _ in builds:
        for host in ("served, no pid file", "served, pid file"):
            seed = statistics.median(times[f"seed as a command: probe, {host}"])
            build = statistics.median(times[f"{label}: probe, {host}"])
            print(f"seed / {label}, {host}: {seed / build:.2f}x (target >= 14x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", action="store_true", help="also time the seed run as a command on the served hosts")
    parser.add_argument("--idle-ms", type=float, default=0.0, help="sleep this long before each timed run")
    parser.add_argument("builds", nargs="+", help="LABEL=PATH")
    args = parser.parse_args()
    builds = [tuple(item.split("=", 1)) for item in args.builds]
    root = Path(tempfile.mkdtemp(prefix="mps-preflight-compare-"))
    keep: list[object] = []
    try:
        hosts, keep = build(root)
        floor = str(root / "floor")

        def tools(host: str) -> list[str]:
            return [str(hosts[host] / "bin" / "nvidia-smi"), str(hosts[host] / "bin" / "nvidia-cuda-mps-control")]

        cases = []
        for host in ("idle", "idle-default", "served"):
            queries = floor_queries(builds, hosts[host])
            cases.append((f"floor, {len(queries) + 1} queries ({host})", [floor, *tools(host), *queries], host, 0))
        cases.append(("floor program alone", [floor], "idle", 2))
        for label, path in builds:
            cases += [
                (f"{label}: --version", [path, "--version"], "idle", 0),
                (f"{label}: probe, idle, no pid file", [path, *PROBE], "idle", 0),
                (f"{label}: probe, idle Default mode, no pid file", [path, *PROBE], "idle-default", 0),
                (f"{label}: probe, served, no pid file", [path, *PROBE], "served", 0),
                (f"{label}: probe, idle, pid file", [path, *PROBE], "idle-pid-file", 0),
                (f"{label}: probe, served, pid file", [path, *PROBE], "served-pid-file", 0),
            ]
        if args.seed:
            cases += seed_cases(hosts)
        times: dict[str, list[float]] = {case[0]: [] for case in cases}
        load = open("/proc/loadavg").read().split()[:3]
        for run in range(args.runs + 3):
            for name, argv, host, code in cases:
                env = {"PATH": str(hosts[host] / "bin"), "CUDA_MPS_PIPE_DIRECTORY": str(hosts[host] / "pipe")}
                if args.idle_ms:
                    time.sleep(args.idle_ms / 1e3)
                started = time.perf_counter()
                result = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                elapsed = time.perf_counter() - started
                if result.returncode != code:
                    raise SystemExit(f"{name}: exit {result.returncode}: {result.stderr[:400]!r}")
                if run >= 3:
                    times[name].append(elapsed * 1e3)
        print(f"# {args.runs} interleaved runs each, {args.idle_ms:g} ms idle before each; load {' '.join(load)} at start, "
              f"{' '.join(open('/proc/loadavg').read().split()[:3])} at end")
        print("| case | median ms | min ms |\n|---|---:|---:|")
        for name, samples in times.items():
            print(f"| {name} | {statistics.median(samples):.3f} | {min(samples):.3f} |")
        if args.seed:
            print_seed_ratios(builds, times)
    finally:
        for item in keep:
            if isinstance(item, subprocess.Popen):
                item.kill()
                item.wait()
            elif isinstance(item, socket.socket):
                item.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
