#!/usr/bin/env bash
# The fleet tests (issue 14): the shipped Slurm recipes of contrib/slurm/, run against a real
# one-node Slurm cluster (scripts/slurm-cluster.sh), a fake nvidia-smi (two H100s) and the real
# NVIDIA MPS control daemon (scripts/fetch-mps-control.sh). .ci/run calls it after
# `cargo test --workspace`; a missing Slurm, munge, jq or daemon is a failure here, not a skip.
#
# Usage: scripts/test-slurm.sh
#   MPS_PREFLIGHT_BIN          the binary to test (default: cargo build -p mps-preflight's)
#   MPS_PREFLIGHT_MPS_CONTROL  the real nvidia-cuda-mps-control (default: the fetch script's cache)
#
# It runs in its own network namespace (`unshare --net`: only loopback, so the Slurm daemons
# listen on nothing outside it and clash with no other cluster on the machine), and always tears
# everything down: the cluster by its daemons' PIDs, the MPS daemon, the temp directory.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

if [ -z "${MPS_PREFLIGHT_NETNS:-}" ]; then
    unshare --net true || { echo "test-slurm: FAIL: cannot make a network namespace (root needed)" >&2; exit 1; }
    export MPS_PREFLIGHT_NETNS=1
    # The second address (on lo, so still reachable only from inside): Slurm resolves with
    # AI_ADDRCONFIG, which finds nothing where 127.0.0.1 is the only IPv4 address.
    exec unshare --net bash -c \
        'ip link set lo up && ip addr add 10.255.255.1/32 dev lo && exec "$0" "$@"' "$0" "$@"
fi

say() { printf 'test-slurm: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
for tool in jq srun sinfo scontrol munged; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done

# docs/fleet.md prints each recipe; the printed file must be the file run here.
for recipe in contrib/slurm/*.sh; do
    printed="$(sed -n "\|^<!-- $recipe -->\$|,\|^\`\`\`\$|p" docs/fleet.md | sed '1,2d;$d')"
    [ "$printed" = "$(cat "$recipe")" ] || fail "docs/fleet.md does not print $recipe as it is"
done

if [ -z "${MPS_PREFLIGHT_BIN:-}" ]; then
    cargo build -q -p mps-preflight
    MPS_PREFLIGHT_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/mps-preflight"
fi
control="${MPS_PREFLIGHT_MPS_CONTROL:-${MPS_PREFLIGHT_CACHE:-$HOME/.cache/mps-preflight}/nvidia-cuda-mps/usr/bin/nvidia-cuda-mps-control}"
[ -x "$control" ] || fail "no real nvidia-cuda-mps-control at $control (run scripts/fetch-mps-control.sh)"

# Short: the control socket's path must stay under 108 bytes.
work="$(mktemp -d /tmp/mpsslurm.XXXXXX)"
cluster="$work/cluster"
pipe="$work/pipe"
host="$(hostname -s)"

# The control daemons serving $pipe: the real binary with that pipe directory in its environment.
daemon_pids() {
    local proc exe
    exe="$(readlink -f "$control")"
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/exe" 2>/dev/null)" = "$exe" ] || continue
        tr '\0' '\n' <"$proc/environ" 2>/dev/null | grep -qxF "CUDA_MPS_PIPE_DIRECTORY=$pipe" &&
            printf '%s\n' "${proc#/proc/}"
    done
    return 0
}
daemon_start() {
    CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_MPS_LOG_DIRECTORY="$work/mpslog" \
        "$work/bin/nvidia-cuda-mps-control" -d </dev/null
    wait_until "the MPS control socket" test -S "$pipe/control"
}
daemon_quit() {
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 "$work/bin/nvidia-cuda-mps-control" || true
    wait_until "the MPS daemon to exit" test -z "$(daemon_pids)"
}
teardown() {
    local status=$?
    set +e
    scripts/slurm-cluster.sh down "$cluster"
    if [ -n "$(daemon_pids)" ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 "$control" >/dev/null 2>&1
        for pid in $(daemon_pids); do kill -KILL "$pid" 2>/dev/null; done
    fi
    rm -rf "$work"
    if [ "$status" -eq 0 ]; then say "all passed"; else say "failed (exit $status)"; fi
    exit "$status"
}
trap teardown EXIT

# Waits up to 30 s for "$@" to succeed (each try bounds itself).
wait_until() {
    local what="$1" deadline=$((SECONDS + 30))
    shift
    while [ "$SECONDS" -lt "$deadline" ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    fail "timed out waiting for $what"
}

# The fake host tools: nvidia-smi answers only the query the probe makes.
gpu0=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6
gpu1=GPU-5a88edbe-90c4-2449-8c43-70c57591cca1
mkdir -p "$work/bin" "$pipe" "$work/mpslog"
cat >"$work/bin/nvidia-smi" <<EOF
#!/bin/sh
[ "\$*" = "--query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader" ] || exit 9
echo '0, $gpu0, NVIDIA H100 80GB HBM3, 00000000:18:00.0'
echo '1, $gpu1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0'
EOF
chmod +x "$work/bin/nvidia-smi"
ln -s "$control" "$work/bin/nvidia-cuda-mps-control"
cp "$MPS_PREFLIGHT_BIN" "$work/bin/mps-preflight"
chmod -R a+rX "$work"

daemon_start
scripts/slurm-cluster.sh up "$cluster"
export SLURM_CONF="$cluster/slurm.conf"
# The prolog's settings (it runs with a bare environment): the same node as the jobs see.
cat >"$cluster/mps-preflight.env" <<EOF
PATH=$work/bin:/usr/bin:/bin
CUDA_MPS_PIPE_DIRECTORY=$pipe
export CUDA_MPS_PIPE_DIRECTORY
EOF
# The jobs' environment (srun passes it to every task).
export PATH="$work/bin:$PATH" CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_MPS_LOG_DIRECTORY="$work/mpslog"
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER

request=(--request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp)
run() { timeout 120 srun --label "$@"; }

say "1. srun -n 2 per-rank probe, then merge: consistent"
run -n 2 contrib/slurm/srun-probe.sh "$work/run1" "${request[@]}" || fail "srun probe failed"
merged="$(mps-preflight merge "$work"/run1/rank*/manifest.json)" || fail "merge rejected run1"
jq -e --arg host "$(uname -n)" --arg pipe "$pipe" '
    .consistent == true and .world_size == 2 and .validated == true
    and ([.ranks[].rank] == [0, 1])
    and ([.ranks[].evidence.host_name] | unique == [$host])
    and ([.ranks[].evidence.pipe_directory] | unique == [$pipe])' <<<"$merged" >/dev/null ||
    fail "run1 merged wrongly: $merged"

say "2. one rank sees another GPU: its probe rejects, merge names the rank"
# Rank 1's launcher reports its learner on GPU 1 while its collector resolves to GPU 0.
if run -n 2 bash -c '
    if [ "$SLURM_PROCID" = 1 ]; then set -- "$@" --learner-uuid '"$gpu1"'; fi
    exec contrib/slurm/srun-probe.sh "$@"' srun-probe "$work/run2" "${request[@]}" \
    2>"$work/run2.err"; then
    fail "srun succeeded though rank 1 sees another GPU"
fi
grep -q '^1: error: .*learner' "$work/run2.err" || fail "rank 1's rejection not reported: $(cat "$work/run2.err")"
if grep -q '^0: error' "$work/run2.err"; then fail "rank 0 rejected: $(cat "$work/run2.err")"; fi
if mps-preflight merge "$work"/run2/rank*/manifest.json >/dev/null 2>"$work/merge2.err"; then
    fail "merge accepted run2"
fi
grep -q '^error: missing-rank: .*no evidence was given for rank 1 ' "$work/merge2.err" ||
    fail "merge did not name rank 1: $(cat "$work/merge2.err")"

say "3. TaskProlog: the task's CUDA_VISIBLE_DEVICES holds GPU- UUIDs"
[ "$(CUDA_VISIBLE_DEVICES=1 run -n 1 printenv CUDA_VISIBLE_DEVICES)" = "0: $gpu1" ] ||
    fail "TaskProlog did not rewrite index 1"
[ "$(run -n 1 printenv CUDA_VISIBLE_DEVICES)" = "0: $gpu0,$gpu1" ] ||
    fail "TaskProlog did not list the node's GPUs"
if CUDA_VISIBLE_DEVICES=7 run -n 1 printenv CUDA_VISIBLE_DEVICES >"$work/tp.out" 2>&1; then
    fail "a task started with an index the node lacks: $(cat "$work/tp.out")"
fi

say "4. Prolog with the daemon down: node drained with the code, then resumed"
daemon_quit
expected="$(mps-preflight doctor "${request[@]}" 2>/dev/null | sed -n 's/^1\. \[\([a-z0-9-]*\)\].*/\1/p')" || true
[ -n "$expected" ] || fail "doctor finds nothing wrong with the daemon down"
if run -n 1 true 2>"$work/prolog.err"; then fail "a job ran on a node whose daemon is down"; fi
node_state() { timeout 5 scontrol show node "$host" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
drained() { case "$(node_state State)" in *DRAIN*) return 0 ;; *) return 1 ;; esac; }
wait_until "node $host drained" drained
reason="$(scontrol show node "$host" | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p')"
[ "$reason" = "mps-preflight: $expected" ] || fail "Reason is '$reason', want 'mps-preflight: $expected'"
sinfo -h -R -o '%E' | grep -qxF "mps-preflight: $expected" || fail "sinfo -R does not show the reason"
say "   drained: Reason=$reason"

daemon_start
scontrol update NodeName="$host" State=RESUME
idle() { [ "$(timeout 5 sinfo -h -N -o "%T")" = idle ]; }
wait_until "node $host idle again" idle
run -n 2 contrib/slurm/srun-probe.sh "$work/run3" "${request[@]}" || fail "healthy run after resume failed"
mps-preflight merge "$work"/run3/rank*/manifest.json | jq -e '.consistent' >/dev/null ||
    fail "run3 not consistent"
