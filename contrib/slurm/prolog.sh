#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/path/to/prolog.sh; docs/fleet.md, recipe 2). slurmd runs it
# as root on the node before each job. Only jobs that asked for MPS are checked (the gate, below).
# For such a job it checks each GPU the job was given against that GPU's MPS daemon, judged for
# the job's user (SLURM_JOB_UID, `doctor --as-user`), and acts on the class of each finding
# (`mps-preflight codes`):
#   - a node fault (the daemon down, a GPU missing, the daemon's scope, the compute mode ...):
#     drains the node with the code, the GPU and the report's path in the Reason, and exits 1,
#     which makes Slurm fail the job ("Job prolog failed");
#   - a workload conflict (another user's live MPS server, a server held in FAULT by its
#     clients), or an unusable tool or setting (the binary missing, exit 126/127/2, a bad value
#     below): never drains. It writes <node>-<jobid>.refused next to the report and exits 0; the
#     TaskProlog (recipe 3, needed for this) then refuses every task of the job, printing why.
# With MPS_PREFLIGHT_ENFORCE=0 (report-only, for staging) it only writes the reports.
# Reports are written only into a directory this script made (mode 0755) or one that is this
# user's own and writable by no one else, never through a symbolic link; a directory someone
# else made is never chmod'ed. When it is not safe, a refusal drains the node instead.
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
# Whether the report directory is safe to write in: an absolute path that is a real directory
# (not a symbolic link) of this script's user, writable by no one else, so that no other user
# can put a link or a file of theirs where a report goes. Made here when absent, with its mode
# (0755: the job's user reads the .refused file) given at creation; a directory that already
# exists is never chmod'ed. Decided once: reports_ok is 1 (safe) or 0.
reports_ok=
reports_safe() {
    if [ -z "$reports_ok" ]; then
        reports_ok=0
        case "$reports" in /*) ;; *) return 1 ;; esac
        if [ ! -e "$reports" ] && [ ! -L "$reports" ]; then
            mkdir -p "$(dirname "$reports")" 2>/dev/null
            mkdir -m 0755 "$reports" 2>/dev/null
        fi
        # find does not follow a symbolic link given as its path (-type d is false for one).
        if [ -n "$(find "$reports" -prune -type d -user "$(id -u)" ! -perm -020 ! -perm -002 \
            2>/dev/null)" ]; then
            reports_ok=1
        fi
    fi
    [ "$reports_ok" = 1 ]
}

# A requeued job keeps its ID: an earlier run's refusal must not outlive this check.
if [ -d "$reports" ] && reports_safe; then
    rm -f "$reports/$node-$job.refused"
fi
if ! wants_mps; then
    # slurmd marks the Prolog it runs (SLURM_SCRIPT_CONTEXT=prolog_slurmd). Run by hand, a
    # skipped job says so: exit 0 alone would read as a pass that checked nothing.
    [ "${SLURM_SCRIPT_CONTEXT:-}" = prolog_slurmd ] ||
        echo "mps-preflight prolog: job $job: not checked: $skipped" >&2
    exit 0
fi

# Appends its input to the report and copies it to stderr, which slurmd's log keeps when the
# Prolog fails. Only into a safe directory (reports_safe), never through a link. Returns 0.
log() {
    if reports_safe && [ ! -L "$report" ]; then
        tee -a "$report" >&2
    else
        cat >&2
    fi
    return 0
}

# Writes $1 as the job's .refused file, created anew (noclobber: never through a link or into
# a file that is already there), only into a safe directory.
write_refused() {
    reports_safe || return 1
    refused="$reports/$node-$job.refused"
    rm -f "$refused" 2>/dev/null
    (set -C && printf '%s (report: %s)\n' "$1" "$report" >"$refused") 2>/dev/null
}

# The job must not run and the node stays in service: an unusable tool or setting, or a
# workload conflict (the work already on the node, not the node, is in the way).
refuse() {
    if [ "$enforce" = 0 ]; then
        echo "mps-preflight prolog: report-only: job $job would be refused: $1" | log
        exit 0
    fi
    echo "mps-preflight prolog: job $job refused, node not drained: $1" | log
    write_refused "$1" && exit 0
    # Without the file the job would run unchecked: the node's own disk, or its report
    # directory, is the finding now.
    why="cannot write $reports/$node-$job.refused"
    reports_safe || why="report directory $reports is not a directory of uid $(id -u) that only it can write"
    scontrol update NodeName="$node" State=DRAIN Reason="mps-preflight: $why"
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
        reports_ok=""
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

# The job's user: a server of this user is the job's own, any other user's a workload conflict.
as_user=""
case "${SLURM_JOB_UID-}" in
    "") ;; # a check by hand: judged for this script's user
    *[!0-9]*) refuse "bad SLURM_JOB_UID '$SLURM_JOB_UID'" ;;
    *) as_user="$SLURM_JOB_UID" ;;
esac

# Whether the word $1 is one of the words of $2.
one_of() {
    case " $(printf '%s\n' "$2" | tr '\n' ' ') " in *" $1 "*) return 0 ;; esac
    return 1
}

# The classes of doctor's codes, from the binary itself (sharing-policy's Code::class): a code
# in neither list (a node fault, or one this script does not know) drains.
classes_read=0
read_classes() {
    [ "$classes_read" = 1 ] && return 0
    setting_codes="$("$bin" codes --class setting 2>&1)" ||
        refuse "$bin codes exited $? ($setting_codes)"
    workload_codes="$("$bin" codes --class workload-conflict 2>&1)" ||
        refuse "$bin codes exited $? ($workload_codes)"
    classes_read=1
}

conflict=""
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
        ${as_user:+--as-user "$as_user"} \
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
    read_classes
    for code in $codes; do
        one_of "$code" "$setting_codes" && refuse "a setting is wrong: $code"
    done
    # A node fault drains, whatever else was found; only workload conflicts leave the node in
    # service (the next GPUs are still checked for a node fault).
    for code in $codes; do
        one_of "$code" "$workload_codes" || drain "$code" "$gpu"
    done
    [ -n "$conflict" ] ||
        conflict="workload conflict on gpu $gpu: $(printf '%s\n' "$codes" | head -n 1) (another job's MPS work on the node)"
done
[ -z "$conflict" ] || refuse "$conflict"
echo "mps-preflight prolog: job $job: gpu $gpus: ok" >&2
exit 0
