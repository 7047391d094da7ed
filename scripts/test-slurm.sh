#!/usr/bin/env bash
# The fleet tests: the shipped Slurm recipes of contrib/slurm/, run against a
# real one-node Slurm cluster (scripts/slurm-cluster.sh) with two fake GPUs (gres/gpu, gres/mps,
# a fake nvidia-smi listing two H100s) and one real NVIDIA MPS control daemon per GPU
# (scripts/fetch-mps-control.sh). .ci/run calls it after `cargo test --workspace`; a missing
# Slurm, munge, jq, shellcheck or daemon is a failure here, not a skip. Tests 1-3 run on a node
# without GRES, 4-10 on the same node with two GPUs as gres/gpu and gres/mps (the gate, per-GPU
# daemons, report-only, a missing binary, bad settings, the check by hand; the job's user and
# workload conflicts against a stand-in MPS server; where the reports may be written).
#
# Usage: scripts/test-slurm.sh
#   MPS_PREFLIGHT_BIN          the binary to test (default: cargo build -p mps-preflight's)
#   MPS_PREFLIGHT_MPS_CONTROL  the real nvidia-cuda-mps-control (default: the fetch script's cache)
#
# It runs in its own network namespace (`unshare --net`: only loopback, so the Slurm daemons
# listen on nothing outside it and clash with no other cluster on the machine), and always tears
# everything down: the cluster by its daemons' PIDs, the MPS daemons, the temp directory.
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

say() { printf 'test-slurm: [%3ss] %s\n' "$SECONDS" "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
for tool in jq srun sbatch squeue sinfo scontrol munged shellcheck dash setpriv mknod; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done

# docs/fleet.md prints each recipe; the printed file must be the file run here. Every recipe is
# POSIX sh (Slurm runs them with /bin/sh, dash on Debian) and shellcheck-clean.
for recipe in contrib/slurm/*.sh; do
    printed="$(sed -n "\|^<!-- $recipe -->\$|,\|^\`\`\`\$|p" docs/fleet.md | sed '1,2d;$d')"
    [ "$printed" = "$(cat "$recipe")" ] || fail "docs/fleet.md does not print $recipe as it is"
    dash -n "$recipe" || fail "$recipe is not POSIX sh (dash -n)"
    shellcheck --shell=sh "$recipe" || fail "$recipe is not shellcheck-clean"
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
reports="$work/reports"
host="$(hostname -s)"
gpu0=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6
gpu1=GPU-5a88edbe-90c4-2449-8c43-70c57591cca1
uuids=("$gpu0" "$gpu1")

# One daemon per GPU (docs/mps-daemon.md, T4): GPU g's daemon serves only that GPU, named by
# UUID in its CUDA_VISIBLE_DEVICES, through the pipe directory $work/gpu-g.
pipe_of() { printf '%s/gpu-%s' "$work" "$1"; }
# The control daemons serving GPU $1's pipe directory: the real binary with it in its environment.
daemon_pids() {
    local proc exe pipe
    exe="$(readlink -f "$control")"
    pipe="$(pipe_of "$1")"
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/exe" 2>/dev/null)" = "$exe" ] || continue
        tr '\0' '\n' <"$proc/environ" 2>/dev/null | grep -qxF "CUDA_MPS_PIPE_DIRECTORY=$pipe" &&
            printf '%s\n' "${proc#/proc/}"
    done
    return 0
}
daemon_start() {
    mkdir -p "$(pipe_of "$1")"
    CUDA_VISIBLE_DEVICES="${uuids[$1]}" CUDA_MPS_PIPE_DIRECTORY="$(pipe_of "$1")" \
        CUDA_MPS_LOG_DIRECTORY="$work/mpslog" "$work/bin/nvidia-cuda-mps-control" -d </dev/null
    wait_until "GPU $1's MPS control socket" test -S "$(pipe_of "$1")/control"
}
daemon_quit() {
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$(pipe_of "$1")" timeout 10 "$work/bin/nvidia-cuda-mps-control" || true
    wait_until "GPU $1's MPS daemon to exit" test -z "$(daemon_pids "$1")"
}
teardown() {
    local status=$? gpu
    set +e
    # A job still running (test 5's GPU holder) would keep its srun waiting for the cluster.
    if [ -n "${holder:-}" ]; then kill "$holder" 2>/dev/null; fi
    if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null; fi
    scripts/slurm-cluster.sh down "$cluster"
    for gpu in 0 1; do
        if [ -n "$(daemon_pids "$gpu")" ]; then
            echo quit | CUDA_MPS_PIPE_DIRECTORY="$(pipe_of "$gpu")" timeout 10 "$control" >/dev/null 2>&1
            for pid in $(daemon_pids "$gpu"); do kill -KILL "$pid" 2>/dev/null; done
        fi
    done
    rm -rf "$work"
    if [ "$status" -eq 0 ]; then say "all passed in ${SECONDS}s"; else say "failed (exit $status)"; fi
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

# The fake host tools: nvidia-smi answers only the query the probe makes. The GPUs' device
# files (for gres.conf) are character devices of NVIDIA's major number, with no driver behind.
mkdir -p "$work/bin" "$work/mpslog" "$work/dev"
cat >"$work/bin/nvidia-smi" <<EOF
#!/bin/sh
# The one query mps-preflight runs: compute mode, driver version and the health columns first.
[ "\$*" = "--query-gpu=compute_mode,driver_version,persistence_mode,gpu_recovery_action,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,index,uuid,name,pci.bus_id --format=csv,noheader" ] || exit 9
echo 'Default, 535.261.03, Enabled, None, No, No, No, 0, $gpu0, NVIDIA H100 80GB HBM3, 00000000:18:00.0'
echo 'Default, 535.261.03, Enabled, None, No, No, No, 1, $gpu1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0'
EOF
chmod +x "$work/bin/nvidia-smi"
# The real control program, except that a session asking get_server_list second (the probe's
# first session, and attest's server list) also lists the PID in <pipe directory>.server, when
# that file exists, right after its first liveness line: a stand-in for an MPS server, which a
# daemon without a GPU never starts. The stand-in is `sleep` named nvidia-cuda-mps-server, so
# that its comm and argv[0] are a server's.
cat >"$work/bin/nvidia-cuda-mps-control" <<EOF
#!/bin/sh
[ \$# -eq 0 ] || exec "$control" "\$@"
server="\${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}.server"
[ -f "\$server" ] || exec "$control"
stdin="\$(cat)"
case "\$stdin" in
"get_default_active_thread_percentage
get_server_list"*) ;;
*) printf '%s\\n' "\$stdin" | "$control"; exit \$? ;;
esac
answer="\$(printf '%s\\n' "\$stdin" | "$control")"
status=\$?
printf '%s\\n' "\$answer" | sed "1r \$server"
exit \$status
EOF
chmod +x "$work/bin/nvidia-cuda-mps-control"
cp "$(command -v sleep)" "$work/bin/nvidia-cuda-mps-server"
cp "$MPS_PREFLIGHT_BIN" "$work/bin/mps-preflight"
mknod "$work/dev/nvidia0" c 195 0
mknod "$work/dev/nvidia1" c 195 1
cat >"$work/gres.conf" <<EOF
Name=gpu File=$work/dev/nvidia0
Name=gpu File=$work/dev/nvidia1
Name=mps Count=100 File=$work/dev/nvidia0
Name=mps Count=100 File=$work/dev/nvidia1
EOF
chmod -R a+rX "$work"

daemon_start 0
daemon_start 1
# The recipes' settings (the Prolog runs with a bare environment): the node's tools, one pipe
# directory per GPU, the reports under $work. Each test writes them with its own extras.
settings() {
    {
        printf 'PATH=%s/bin:/usr/bin:/bin\n' "$work"
        printf 'MPS_PREFLIGHT_PIPE_DIRECTORY=%s/gpu-%%g\n' "$work"
        printf 'MPS_PREFLIGHT_REPORT_DIR=%s\n' "$reports"
        printf '%s\n' "$@"
    } >"$cluster/mps-preflight.env"
}
# Tests 1-3 run on a node without GRES, where the jobs' own CUDA_VISIBLE_DEVICES reaches the
# tasks (with gres/gpu configured, Slurm sets or unsets it for every step).
scripts/slurm-cluster.sh up "$cluster"
export SLURM_CONF="$cluster/slurm.conf"
settings
# The jobs' environment (srun passes it to every task).
export PATH="$work/bin:$PATH" CUDA_MPS_PIPE_DIRECTORY="$work/gpu-0" CUDA_MPS_LOG_DIRECTORY="$work/mpslog"
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER

request=(--request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp)
run() { timeout 120 srun --label "$@"; }
node_state() { timeout 5 scontrol show node "$host" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
drained() { case "$(node_state State)" in *DRAIN*) return 0 ;; *) return 1 ;; esac; }
idle() { [ "$(timeout 5 sinfo -h -N -o "%T")" = idle ]; }
# The node must be idle (not drained) now; after a job, its state settles within a second.
assert_idle() {
    wait_until "node $host idle ($1)" idle
    if drained; then fail "$1: node drained: $(node_state Reason)"; fi
}
reason() { scontrol show node "$host" | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p'; }
resume() {
    scontrol update NodeName="$host" State=RESUME
    wait_until "node $host idle again" idle
}

say "1. srun -n 2 per-rank probe, then merge: consistent"
run -n 2 contrib/slurm/srun-probe.sh "$work/run1" "${request[@]}" || fail "srun probe failed"
merged="$(mps-preflight merge "$work"/run1/rank*/manifest.json)" || fail "merge rejected run1"
jq -e --arg host "$(uname -n)" --arg pipe "$(pipe_of 0)" '
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

say "3. TaskProlog: the task's CUDA_VISIBLE_DEVICES holds GPU- UUIDs; warnings become print lines"
[ "$(CUDA_VISIBLE_DEVICES=1 run -n 1 printenv CUDA_VISIBLE_DEVICES)" = "0: $gpu1" ] ||
    fail "TaskProlog did not rewrite index 1"
[ "$(run -n 1 printenv CUDA_VISIBLE_DEVICES)" = "0: $gpu0,$gpu1" ] ||
    fail "TaskProlog did not list the node's GPUs"
# Slurm's own mask for a gres/gpu job (the global index) is rewritten too.
if CUDA_VISIBLE_DEVICES=7 run -n 1 printenv CUDA_VISIBLE_DEVICES >"$work/tp.out" 2>&1; then
    fail "a task started with an index the node lacks: $(cat "$work/tp.out")"
fi
# A range is cut to its first index (CUDA reads 0-1 as 0): the user is told, in a print line.
CUDA_VISIBLE_DEVICES=0-1 run -n 1 printenv CUDA_VISIBLE_DEVICES >"$work/range.out" 2>&1 ||
    fail "the range mask's task did not run: $(cat "$work/range.out")"
grep -qx "0: $gpu0" "$work/range.out" || fail "range 0-1 not rewritten to GPU 0: $(cat "$work/range.out")"
grep -q 'mps-preflight task prolog: warning: .*0-1' "$work/range.out" ||
    fail "the range's warning was not printed: $(cat "$work/range.out")"

# A mask holding a newline never becomes a second export line: the task is not started.
if CUDA_VISIBLE_DEVICES="$(printf '0,-1,\nexport LD_PRELOAD=/nonexistent.so')" \
    run -n 1 printenv CUDA_VISIBLE_DEVICES LD_PRELOAD >"$work/newline.out" 2>&1; then
    fail "a task started with a newline in its mask: $(cat "$work/newline.out")"
fi
grep -q 'control character' "$work/newline.out" ||
    fail "the task's output does not say why: $(cat "$work/newline.out")"

# Tests 4-8: the node's two GPUs are gres/gpu and gres/mps, and it has the feature mps.
scripts/slurm-cluster.sh down "$cluster"
MPS_PREFLIGHT_GRES_CONF="$work/gres.conf" MPS_PREFLIGHT_SLURM_CONF_EXTRA="GresTypes=gpu,mps" \
    MPS_PREFLIGHT_SLURM_NODE_EXTRA="Gres=gpu:2,mps:200 Features=mps" \
    scripts/slurm-cluster.sh up "$cluster"
settings
# Slurm's own mask for a gres/gpu job (the global index) is rewritten too.
[ "$(run -n 1 --gres=gpu:1 printenv CUDA_VISIBLE_DEVICES)" = "0: $gpu0" ] ||
    fail "TaskProlog did not rewrite a gres/gpu job's mask"

say "4. the gate: on a node whose GPU 1 daemon is down, jobs that did not ask for MPS run"
daemon_quit 1
run -n 1 true || fail "a CPU job failed on the broken node"
run -n 1 --gres=gpu:2 true || fail "a GPU job that did not ask for MPS failed on the broken node"
assert_idle "jobs that did not ask for MPS"
[ ! -e "$reports" ] || fail "reports written for jobs that did not ask for MPS: $(ls "$reports")"
# An MPS job outside the partitions being checked (rollout, docs/fleet.md) is not checked.
settings MPS_PREFLIGHT_PARTITIONS=staging
run -n 1 --gres=gpu:2 --constraint=mps true || fail "an MPS job outside MPS_PREFLIGHT_PARTITIONS failed"
[ "$(run -n 1 --gres=gpu:1 printenv CUDA_VISIBLE_DEVICES)" = "0: 0" ] ||
    fail "the TaskProlog rewrote a mask outside MPS_PREFLIGHT_PARTITIONS"
assert_idle "an MPS job outside MPS_PREFLIGHT_PARTITIONS"
settings

say "5. per-GPU daemons: an MPS job on the healthy GPU 0 runs, one on GPU 1 drains the node, naming it"
[ "$(run -n 1 --gres=mps:50 printenv CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY)" = \
    "0: $gpu0"$'\n'"0: $(pipe_of 0)" ] || fail "the gres/mps job on healthy GPU 0 did not run on it with its pipe"
assert_idle "an MPS job on the healthy GPU"
# A job holding GPU 0 (not an MPS job) makes Slurm give the next gres/mps job GPU 1; both take
# little memory, to run side by side.
timeout 120 srun -n 1 --mem=100 --gres=gpu:1 sleep 60 </dev/null >/dev/null 2>&1 &
holder=$!
holder_runs() { [ -n "$(timeout 5 squeue -h -t R -o %i)" ]; }
wait_until "the GPU 0 holder to run" holder_runs
if run -n 1 --mem=100 --gres=mps:50 true 2>"$work/mps1.err"; then fail "an MPS job ran on GPU 1 with its daemon down"; fi
wait_until "node $host drained" drained
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null || true
holder=""
got="$(reason)"
[[ "$got" =~ ^mps-preflight:\ daemon-unreachable\ on\ gpu\ 1,\ see\ ($reports/$host-[0-9]+\.txt)$ ]] ||
    fail "Reason is '$got', want 'mps-preflight: daemon-unreachable on gpu 1, see $reports/$host-<job>.txt'"
report="${BASH_REMATCH[1]}"
grep -qF "gpu 1 ($gpu1), pipe directory $(pipe_of 1)" "$report" || fail "report $report: $(cat "$report")"
grep -q '^1\. \[daemon-unreachable\]' "$report" || fail "the report lacks doctor's findings: $(cat "$report")"
sinfo -h -R -o '%E' | grep -qxF "$got" || fail "sinfo -R does not show the reason"
say "   drained: Reason=$got"
resume
# A job given both GPUs is checked on each: GPU 1 is named.
if run -n 1 --gres=gpu:2 --constraint=mps true 2>/dev/null; then fail "a job with both GPUs ran"; fi
wait_until "node $host drained" drained
[[ "$(reason)" == "mps-preflight: daemon-unreachable on gpu 1, see "* ]] || fail "Reason is '$(reason)'"
resume

say "6. report-only (MPS_PREFLIGHT_ENFORCE=0): nothing drained or failed, the report written"
rm -rf "$reports"
settings MPS_PREFLIGHT_ENFORCE=0
run -n 1 --gres=gpu:2 --constraint=mps true || fail "report-only failed a job"
assert_idle "report-only"
grep -q "report-only: would drain: mps-preflight: daemon-unreachable on gpu 1" "$reports/$host"-*.txt ||
    fail "report-only wrote no report: $(cat "$reports"/* 2>&1)"
# Checking the node by hand, as the Prolog would for a gres/mps job on GPU 1, report-only, with
# step 2's settings of the rollout (docs/fleet.md): the command sets the job's partition.
slurmd_user="$(scontrol show config | sed -n 's/^SlurmdUser *= *\([^(]*\).*/\1/p')"
settings MPS_PREFLIGHT_PARTITIONS=gpu-mps
rm -rf "$reports"
setpriv --reuid="$slurmd_user" env -i SLURM_CONF="$SLURM_CONF" SLURMD_NODENAME="$host" \
    SLURM_JOB_ID=by-hand SLURM_JOB_PARTITION=gpu-mps SLURM_JOB_GPUS=1 \
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 MPS_PREFLIGHT_ENFORCE=0 contrib/slurm/prolog.sh 2>"$work/by-hand.err" ||
    fail "the check by hand failed: $(cat "$work/by-hand.err")"
grep -q "report-only: would drain: mps-preflight: daemon-unreachable on gpu 1, see $reports/$host-by-hand.txt" \
    "$reports/$host-by-hand.txt" || fail "the check by hand wrote no report: $(cat "$work/by-hand.err")"
# Without the partition the gate skips the job: run by hand, the Prolog says so on stderr.
rm -rf "$reports"
setpriv --reuid="$slurmd_user" env -i SLURM_CONF="$SLURM_CONF" SLURMD_NODENAME="$host" \
    SLURM_JOB_ID=by-hand SLURM_JOB_GPUS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 \
    MPS_PREFLIGHT_ENFORCE=0 contrib/slurm/prolog.sh 2>"$work/skipped.err" ||
    fail "the skipped check by hand failed: $(cat "$work/skipped.err")"
grep -qx "mps-preflight prolog: job by-hand: not checked: SLURM_JOB_PARTITION='' is not in MPS_PREFLIGHT_PARTITIONS" \
    "$work/skipped.err" || fail "the skipped check by hand did not say so: $(cat "$work/skipped.err")"
[ ! -e "$reports" ] || fail "the skipped check by hand wrote a report: $(ls "$reports")"
settings
assert_idle "the check by hand"
daemon_start 1

say "7. the binary missing: an MPS job fails with the reason, the node stays idle, a CPU job runs"
rm -rf "$reports"
settings MPS_PREFLIGHT=/nonexistent/mps-preflight
if run -n 1 --gres=mps:50 true >"$work/missing.out" 2>&1; then fail "an MPS job ran without the binary"; fi
grep -q 'mps-preflight task prolog: this job is not started: /nonexistent/mps-preflight not found' \
    "$work/missing.out" || fail "the job's output does not say why: $(cat "$work/missing.out")"
assert_idle "the binary missing"
run -n 1 true >"$work/cpu.out" 2>&1 || fail "a CPU job failed with the binary missing: $(cat "$work/cpu.out")"
grep -q 'mps-preflight exited 127' "$work/cpu.out" || fail "the TaskProlog did not say: $(cat "$work/cpu.out")"
# A batch job: the TaskProlog refuses its batch script too; the reason is in the job's output.
if timeout 120 sbatch -W -o "$work/batch.out" --gres=mps:50 --wrap true >/dev/null; then
    fail "an MPS batch job ran without the binary"
fi
grep -q 'this job is not started: /nonexistent/mps-preflight not found' "$work/batch.out" ||
    fail "the batch job's output does not say why: $(cat "$work/batch.out")"

say "8. a bad setting: the MPS job fails with its own reason, the node stays idle"
settings MPS_PREFLIGHT_BACKEND=mjwrap
if run -n 1 --gres=mps:50 true >"$work/backend.out" 2>&1; then fail "an MPS job ran with a bad backend"; fi
grep -q 'this job is not started: a setting is wrong: unsupported-backend' "$work/backend.out" ||
    fail "the job's output does not say why: $(cat "$work/backend.out")"
settings MPS_PREFLIGHT_DEVICE=cuda:1
if run -n 1 --gres=mps:50 true >"$work/device.out" 2>&1; then fail "an MPS job ran with MPS_PREFLIGHT_DEVICE"; fi
grep -q 'MPS_PREFLIGHT_DEVICE is no longer read' "$work/device.out" ||
    fail "the job's output does not say why: $(cat "$work/device.out")"
settings MPS_PREFLIGHT_ENFORCE=yes
if run -n 1 --gres=mps:50 true >"$work/enforce.out" 2>&1; then fail "an MPS job ran with ENFORCE=yes"; fi
grep -q 'bad setting MPS_PREFLIGHT_ENFORCE=yes' "$work/enforce.out" ||
    fail "the job's output does not say why: $(cat "$work/enforce.out")"
assert_idle "bad settings"
settings
run -n 1 --gres=mps:50 true || fail "the MPS job failed once the settings were fixed"

# A stand-in MPS server of uid $1 on GPU 0 (listed by its daemon, see the wrapper above).
server_start() {
    setpriv --reuid="$1" --regid="$1" --clear-groups "$work/bin/nvidia-cuda-mps-server" 300 \
        </dev/null >/dev/null 2>&1 &
    server=$!
    printf '%s\n' "$server" >"$(pipe_of 0).server"
}
server_stop() {
    rm -f "$(pipe_of 0).server"
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null || true
    server=""
}
# Jobs of user nobody (uid 65534), from a directory it can read; its srun reaches munged's
# socket through the munge directory (0700 as the cluster starts; the key stays 0400).
chmod 0711 "$cluster/munge"
as_nobody() { (cd /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }

say "9. the job's user: its own live server is no conflict; another user's refuses the job, no drain"
rm -rf "$reports"
server_start 65534
for n in 1 2; do
    as_nobody timeout 120 srun -n 1 --gres=mps:50 true >"$work/own$n.out" 2>&1 ||
        fail "job $n of the server's own user did not run: $(cat "$work/own$n.out")"
    assert_idle "job $n of the server's own user"
done
[ ! -e "$reports" ] || fail "reports written for the server's own user: $(cat "$reports"/*)"
if run -n 1 --gres=mps:50 true >"$work/other.out" 2>&1; then
    fail "a job of another user ran beside uid 65534's server"
fi
grep -q 'this job is not started: workload conflict on gpu 0: server-of-another-user' \
    "$work/other.out" || fail "the job's output does not say why: $(cat "$work/other.out")"
assert_idle "another user's server"
grep -q 'PID [0-9]* (uid 65534); the job is judged for uid 0' "$reports/$host"-*.txt ||
    fail "the report does not say whom it judged for: $(cat "$reports"/*)"
# A node fault still drains beside a workload conflict.
daemon_quit 1
if run -n 1 --gres=gpu:2 --constraint=mps true 2>/dev/null; then fail "a job with both GPUs ran"; fi
wait_until "node $host drained" drained
[[ "$(reason)" == "mps-preflight: daemon-unreachable on gpu 1, see "* ]] || fail "Reason is '$(reason)'"
resume
daemon_start 1
server_stop

say "10. reports: never through a link, never into a directory of another user, never chmod'ed"
# A report directory that is a link to a directory of another user: nothing is written through
# it, and the refusal that cannot be written drains the node, saying why.
mkdir -m 0777 "$work/theirs"
chown 65534:65534 "$work/theirs"
ln -s "$work/theirs" "$work/linked"
settings MPS_PREFLIGHT_REPORT_DIR="$work/linked" MPS_PREFLIGHT_BACKEND=mjwrap
if run -n 1 --gres=mps:50 true >/dev/null 2>&1; then fail "an MPS job ran with a bad backend"; fi
wait_until "node $host drained" drained
[ "$(reason)" = "mps-preflight: report directory $work/linked is not a directory of uid 0 that only it can write" ] ||
    fail "Reason is '$(reason)'"
[ -z "$(ls -A "$work/theirs")" ] || fail "written through the link: $(ls -A "$work/theirs")"
resume
# The directory of another user itself: nothing written into it, and its mode left as it is.
settings MPS_PREFLIGHT_REPORT_DIR="$work/theirs" MPS_PREFLIGHT_BACKEND=mjwrap
if run -n 1 --gres=mps:50 true >/dev/null 2>&1; then fail "an MPS job ran with a bad backend"; fi
wait_until "node $host drained" drained
resume
[ -z "$(ls -A "$work/theirs")" ] || fail "written into another user's directory: $(ls -A "$work/theirs")"
[ "$(stat -c '%a %u' "$work/theirs")" = "777 65534" ] ||
    fail "another user's report directory was changed: $(stat -c '%a %u' "$work/theirs")"
# A directory the Prolog makes: 0755, with the report and the refusal in it.
rm -rf "$reports"
settings MPS_PREFLIGHT_BACKEND=mjwrap
if run -n 1 --gres=mps:50 true >/dev/null 2>&1; then fail "an MPS job ran with a bad backend"; fi
[ "$(stat -c '%a %u' "$reports")" = "755 0" ] || fail "the report directory is $(stat -c '%a %u' "$reports")"
ls "$reports/$host"-*.refused >/dev/null || fail "no refusal written: $(ls -A "$reports")"
assert_idle "a refusal in the Prolog's own report directory"
settings

