#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on this machine, for the fleet tests.
#
# Usage: scripts/slurm-cluster.sh up DIR     start munged, slurmctld and slurmd with their config,
#                                           state and logs all under DIR (created; must not exist)
#                                           and wait until `sinfo` shows the node idle
#        scripts/slurm-cluster.sh down DIR   stop the three daemons by their PIDs and remove DIR
#        scripts/slurm-cluster.sh env DIR    print `export SLURM_CONF=...` for the cluster in DIR
#
# Needs root, Debian's slurmctld, slurmd, slurm-client and munge packages (.ci/run installs
# them), and no systemd. The node is `hostname -s` at 127.0.0.1; munge listens on a socket in
# DIR, so a munged of the host (if any) is left alone. slurmctld binds every address (Slurm
# 22.05 has no loopback-only setting that works in a namespace), so run it where only loopback
# exists: scripts/test-slurm.sh runs it inside `unshare --net`, where only loopback exists. The job prologs are the shipped recipes:
#   MPS_PREFLIGHT_PROLOG       (default contrib/slurm/prolog.sh)
#   MPS_PREFLIGHT_TASK_PROLOG  (default contrib/slurm/task-prolog.sh)
# Optional extras (scripts/test-slurm.sh: two fake GPUs with gres/gpu and gres/mps):
#   MPS_PREFLIGHT_SLURM_CONF_EXTRA  lines added to slurm.conf before the NodeName line
#   MPS_PREFLIGHT_SLURM_NODE_EXTRA  words added to the NodeName line (Gres=..., Features=...)
#   MPS_PREFLIGHT_GRES_CONF         a file copied to DIR/gres.conf (next to slurm.conf)
# `up` tears down what it started when it fails; callers run `down` from a trap.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
say() { printf 'slurm-cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# Stops the process named by pid file $1 (TERM, then KILL after 10 s) and removes the file.
stop_pid_file() {
    local file="$1" pid
    [ -f "$file" ] || return 0
    pid="$(cat "$file")"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}

down() {
    local dir="$1"
    [ -d "$dir" ] || return 0
    # slurmd first (it may still run job steps), then the controller, then munge.
    stop_pid_file "$dir/run/slurmd.pid"
    stop_pid_file "$dir/run/slurmctld.pid"
    stop_pid_file "$dir/run/munged.pid"
    rm -rf "$dir"
}

write_conf() {
    local dir="$1" host="$2" prolog="$3" task_prolog="$4"
    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm-cluster.sh for a throwaway one-node test cluster.
ClusterName=mps-preflight-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=${MPS_PREFLIGHT_SLURMCTLD_PORT:-6817}
SlurmdPort=${MPS_PREFLIGHT_SLURMD_PORT:-6818}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
Prolog=$prolog
TaskProlog=$task_prolog
${MPS_PREFLIGHT_SLURM_CONF_EXTRA:-}
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN ${MPS_PREFLIGHT_SLURM_NODE_EXTRA:-}
PartitionName=main Nodes=$host Default=YES MaxTime=10 State=UP
EOF
}

# Waits up to $2 seconds for "${@:3}" to succeed (each try bounds itself).
wait_for() {
    local what="$1" deadline=$((SECONDS + $2))
    shift 2
    while [ "$SECONDS" -lt "$deadline" ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    die "timed out waiting for $what"
}

node_idle() {
    [ "$(timeout 5 sinfo -h -N -o "%T" 2>/dev/null)" = "idle" ]
}

up() {
    local dir="$1" host prolog task_prolog
    [ "$(id -u)" = 0 ] || die "needs root (SlurmUser=root, munged)"
    for tool in munged munge slurmctld slurmd sinfo srun scontrol; do
        command -v "$tool" >/dev/null 2>&1 ||
            die "$tool is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    done
    [ ! -e "$dir" ] || die "$dir already exists"
    prolog="${MPS_PREFLIGHT_PROLOG:-$repo/contrib/slurm/prolog.sh}"
    task_prolog="${MPS_PREFLIGHT_TASK_PROLOG:-$repo/contrib/slurm/task-prolog.sh}"
    [ -x "$prolog" ] && [ -x "$task_prolog" ] || die "prologs not executable: $prolog $task_prolog"
    host="$(hostname -s)"
    mkdir -p "$dir"/{munge,state,spool,log,run}
    chmod 0755 "$dir"
    chmod 0700 "$dir/munge"
    failed_start="$dir"
    trap 'if [ -n "$failed_start" ]; then
        say "start failed; logs:"; tail -n 20 "$failed_start"/log/* >&2; down "$failed_start"; fi' EXIT
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 0400 "$dir/munge/munge.key"
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" 2>>"$dir/log/munged.log"
    wait_for "munged" 10 timeout 5 munge -S "$dir/munge/munge.socket" -n
    write_conf "$dir" "$host" "$prolog" "$task_prolog"
    if [ -n "${MPS_PREFLIGHT_GRES_CONF:-}" ]; then cp "$MPS_PREFLIGHT_GRES_CONF" "$dir/gres.conf"; fi
    export SLURM_CONF="$dir/slurm.conf"
    # -D: no fork, so $! is the daemon; its pid file is written by the daemon as well.
    slurmctld -D -f "$SLURM_CONF" >>"$dir/log/slurmctld.out" 2>&1 &
    echo $! >"$dir/run/slurmctld.pid"
    wait_for "slurmctld" 30 timeout 5 scontrol ping
    slurmd -D -f "$SLURM_CONF" >>"$dir/log/slurmd.out" 2>&1 &
    echo $! >"$dir/run/slurmd.pid"
    wait_for "node $host idle" 60 node_idle
    failed_start=""
    say "up: node $host idle; SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
    up) up "${2:?usage: $0 up DIR}" ;;
    down) down "${2:?usage: $0 down DIR}" ;;
    env) printf 'export SLURM_CONF=%q\n' "${2:?usage: $0 env DIR}/slurm.conf" ;;
    *) die "usage: $0 up|down|env DIR" ;;
esac
