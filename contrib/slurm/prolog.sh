#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/path/to/prolog.sh; docs/fleet.md, recipe 2). slurmd runs it
# as root on the node before each job. Only jobs that asked for MPS are checked (the gate, below).
# For such a job it checks each GPU the job was given against that GPU's MPS daemon, and:
#   - a finding about the node (exit 1 of `doctor`, the daemon down, a GPU missing ...): drains
#     the node with the code, the GPU and the report's path in the Reason, and exits 1, which
#     makes Slurm fail the job ("Job prolog failed");
#   - an unusable tool or setting (the binary missing, exit 126/127/2, a bad value below): never
#     drains. It writes <node>-<jobid>.refused next to the report and exits 0; the TaskProlog
#     (recipe 3, needed for this) then refuses every task of the job, printing the reason.
# With MPS_PREFLIGHT_ENFORCE=0 (report-only, for staging) it only writes the reports.
#
# Slurm runs a Prolog with a bare environment (no PATH), so the settings come from
# mps-preflight.env next to slurm.conf, sourced when present:
#   PATH                          where mps-preflight, nvidia-smi, nvidia-cuda-mps-control are
#   MPS_PREFLIGHT_ENFORCE         1 (default): drain or fail; 0: report only
#   MPS_PREFLIGHT_PIPE_DIRECTORY  the MPS pipe directory; %g stands for the GPU's index, for one
#                                 daemon per GPU (default: CUDA_MPS_PIPE_DIRECTORY, /tmp/nvidia-mps)
#   MPS_PREFLIGHT_REPORT_DIR      where reports go (default /var/log/mps-preflight)
#   MPS_PREFLIGHT_FEATURE         a job whose --constraint names it is checked (default mps)
#   MPS_PREFLIGHT_COMMENT         a job whose --comment contains it is checked (default: none)
#   MPS_PREFLIGHT_CHECK_ALL       1: check every job (an MPS-only partition)
#   MPS_PREFLIGHT_PARTITIONS      if set, only jobs in these partitions (space-separated)
#   MPS_PREFLIGHT_GPUS            GPU indices to check when the job has none (default 0)
#   MPS_PREFLIGHT                 the binary (default: mps-preflight on PATH)
#   MPS_PREFLIGHT_BACKEND         the simulation backend (default: mjwarp)
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# slurmd passes no MPS_PREFLIGHT_ENFORCE: one in the environment is an operator's check by hand
# (docs/fleet.md), and wins over the file.
by_hand="${MPS_PREFLIGHT_ENFORCE-}"
settings="$(dirname "${SLURM_CONF:-/etc/slurm/slurm.conf}")/mps-preflight.env"
if [ -f "$settings" ]; then
    # shellcheck disable=SC1090
    . "$settings"
fi
[ -z "$by_hand" ] || MPS_PREFLIGHT_ENFORCE="$by_hand"
node="${SLURMD_NODENAME:?}"
job="${SLURM_JOB_ID:?}"
enforce="${MPS_PREFLIGHT_ENFORCE:-1}"
reports="${MPS_PREFLIGHT_REPORT_DIR:-/var/log/mps-preflight}"
report="$reports/$node-$job.txt"
bin="${MPS_PREFLIGHT:-mps-preflight}"

# The gate. What a Prolog sees of the job (Slurm 22.05, docs/fleet.md): gres/mps sets
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (gres/gpu does not); --constraint is SLURM_JOB_CONSTRAINTS,
# --comment SLURM_JOB_COMMENT. A job it skips leaves why in $skipped.
wants_mps() {
    if [ -n "${MPS_PREFLIGHT_PARTITIONS:-}" ]; then
        skipped="SLURM_JOB_PARTITION='${SLURM_JOB_PARTITION:-}' is not in MPS_PREFLIGHT_PARTITIONS"
        case " $MPS_PREFLIGHT_PARTITIONS " in *" ${SLURM_JOB_PARTITION:-} "*) ;; *) return 1 ;; esac
    fi
    [ "${MPS_PREFLIGHT_CHECK_ALL:-0}" = 1 ] && return 0
    [ -n "${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-}" ] && return 0
    skipped="no gres/mps (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), constraint or comment asks for MPS"
    feature="${MPS_PREFLIGHT_FEATURE-mps}"
    if [ -n "$feature" ]; then
        # Any word of the constraint expression (a&b, a|b, [a*2], ...) equal to the feature.
        for word in $(printf '%s\n' "${SLURM_JOB_CONSTRAINTS:-}" | tr -c 'A-Za-z0-9_.-' ' '); do
            [ "$word" = "$feature" ] && return 0
        done
    fi
    case "${MPS_PREFLIGHT_COMMENT:-}" in
        "") return 1 ;;
        *) case "${SLURM_JOB_COMMENT:-}" in *"$MPS_PREFLIGHT_COMMENT"*) return 0 ;; esac ;;
    esac
    return 1
}
# A requeued job keeps its ID: an earlier run's refusal must not outlive this check.
case "$reports" in /*) rm -f "$reports/$node-$job.refused" ;; esac
if ! wants_mps; then
    # slurmd marks the Prolog it runs (SLURM_SCRIPT_CONTEXT=prolog_slurmd). Run by hand, a
    # skipped job says so: exit 0 alone would read as a pass that checked nothing.
    [ "${SLURM_SCRIPT_CONTEXT:-}" = prolog_slurmd ] ||
        echo "mps-preflight prolog: job $job: not checked: $skipped" >&2
    exit 0
fi

# Appends its input to the report and copies it to stderr, which slurmd's log keeps when the
# Prolog fails. The directory is made on first use, readable by the job's user (whose TaskProlog
# reads the .refused file). Always returns 0.
log() {
    mkdir -p "$reports" 2>/dev/null && chmod 0755 "$reports" 2>/dev/null
    tee -a "$report" >&2
    return 0
}

# An unusable tool or setting: the job must not run, the node stays in service.
refuse() {
    if [ "$enforce" = 0 ]; then
        echo "mps-preflight prolog: report-only: job $job would be refused: $1" | log
        exit 0
    fi
    echo "mps-preflight prolog: job $job refused, node not drained: $1" | log
    printf '%s (report: %s)\n' "$1" "$report" >"$reports/$node-$job.refused" && exit 0
    # Without the file the job would run unchecked: the node's own disk is the finding now.
    scontrol update NodeName="$node" State=DRAIN \
        Reason="mps-preflight: cannot write $reports/$node-$job.refused"
    exit 1
}

# A finding about the node: drain it, naming the code, the GPU and the report.
drain() {
    reason="mps-preflight: $1 on gpu $2, see $report"
    if [ "$enforce" = 0 ]; then
        echo "mps-preflight prolog: report-only: would drain: $reason" | log
        exit 0
    fi
    echo "mps-preflight prolog: draining: $reason" | log
    scontrol update NodeName="$node" State=DRAIN Reason="$reason"
    exit 1
}

case "$enforce" in
    0 | 1) ;;
    *)
        enforce=1 # an unreadable mode enforces: the job does not run unchecked
        refuse "bad setting MPS_PREFLIGHT_ENFORCE=$MPS_PREFLIGHT_ENFORCE"
        ;;
esac
case "$reports" in
    /*) ;;
    *)
        reports=/var/log/mps-preflight
        report="$reports/$node-$job.txt"
        refuse "bad setting MPS_PREFLIGHT_REPORT_DIR (not an absolute path)"
        ;;
esac
# The one device of the first recipe is gone: each GPU of the job is checked now. A setting the
# script would silently ignore could leave the GPU the operator meant unchecked.
[ -z "${MPS_PREFLIGHT_DEVICE:-}" ] ||
    refuse "MPS_PREFLIGHT_DEVICE is no longer read: the job's GPUs are checked (MPS_PREFLIGHT_GPUS)"
backend="${MPS_PREFLIGHT_BACKEND:-mjwarp}"
gpus="${SLURM_JOB_GPUS:-${MPS_PREFLIGHT_GPUS:-0}}"
case "$gpus" in *[!0-9,]* | "" | ,* | *, | *,,*) refuse "bad GPU list '$gpus'" ;; esac
pipes="${MPS_PREFLIGHT_PIPE_DIRECTORY:-${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}}"
case "$pipes" in /*) ;; *) refuse "bad setting MPS_PREFLIGHT_PIPE_DIRECTORY (not an absolute path)" ;; esac
for tool in "$bin" nvidia-smi nvidia-cuda-mps-control; do
    command -v "$tool" >/dev/null || refuse "$tool not found (PATH=$PATH)"
done

# The codes of `doctor` that are about the request this script makes, so about its settings.
setting_code() {
    case "$1" in
        unsupported-* | not-cuda-device | invalid-* | missing-collector | control-path-too-long | \
            non-utf8-pipe-directory) return 0 ;;
    esac
    return 1
}

for gpu in $(printf '%s\n' "$gpus" | tr ',' ' '); do
    # Slurm's GPU index is nvidia-smi's (PCI order) index: name the GPU by UUID, which means the
    # same GPU to a per-GPU daemon that renumbers its GPU as 0 (docs/mps-daemon.md, T5).
    uuid="$(CUDA_DEVICE_ORDER=PCI_BUS_ID "$bin" visibility --devices "$gpu" 2>&1)"
    status=$?
    case "$status:$uuid" in
        0:GPU-*[!0-9a-f-]*) refuse "$bin visibility printed '$uuid'" ;;
        0:GPU-*) ;;
        1:*) printf '%s\n' "$uuid" | log; drain gpu-not-found "$gpu" ;;
        *) printf '%s\n' "$uuid" | log; refuse "$bin visibility exited $status" ;;
    esac
    pipe="$(printf '%s\n' "$pipes" | sed "s/%g/$gpu/g")"
    out="$(CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_VISIBLE_DEVICES="$uuid" "$bin" doctor \
        --request mps --learner-device cuda:0 --collector-device cuda:0 --backend "$backend" 2>&1)"
    status=$?
    [ "$status" -eq 0 ] && continue
    printf 'gpu %s (%s), pipe directory %s, doctor exit %s:\n%s\n' "$gpu" "$uuid" "$pipe" \
        "$status" "$out" | log
    [ "$status" -eq 1 ] || refuse "$bin doctor exited $status"
    # Each finding is "N. [<code>] <message>"; the first is what `probe` would reject with. A
    # wrong setting anywhere makes the node's findings untrustworthy: refuse, do not drain.
    codes="$(printf '%s\n' "$out" | sed -n 's/^[0-9]*\. \[\([a-z0-9-]*\)\].*/\1/p')"
    [ -n "$codes" ] || refuse "$bin doctor exited 1 without a finding"
    for code in $codes; do
        setting_code "$code" && refuse "a setting is wrong: $code"
    done
    drain "$(printf '%s\n' "$codes" | head -n 1)" "$gpu"
done
echo "mps-preflight prolog: job $job: gpu $gpus: ok" >&2
exit 0
