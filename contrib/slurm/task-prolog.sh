#!/bin/sh
# Slurm TaskProlog (slurm.conf: TaskProlog=/path/to/task-prolog.sh; docs/fleet.md, recipe 3).
# slurmstepd runs it as the job's user, in the task's environment, before each task; every
# `export NAME=value` line it prints is set in the task's environment and every `print text`
# line goes to the task's output. It:
#   - refuses the task (exit 1) when the Prolog (recipe 2) refused the job: an unusable tool or
#     setting, named in <report dir>/<node>-<jobid>.refused, printed here;
#   - rewrites the device indices in CUDA_VISIBLE_DEVICES to GPU-... UUIDs, which name the same
#     GPU in an MPS server's renumbered device space (unset: every GPU of the node, by UUID).
#     Only stdout is the mask; each stderr line (a warning such as a range cut short) is printed
#     as `print ...`. When the mask is refused (an index the node lacks, ...), the task is not
#     started (an index mask under MPS can pick the wrong GPU or none), unless the settings say
#     MPS_PREFLIGHT_ENFORCE=0. When mps-preflight cannot run at all, the mask is left as it is
#     and the task starts: the Prolog already refused the jobs that asked for MPS;
#   - with one daemon per GPU (MPS_PREFLIGHT_PIPE_DIRECTORY holds %g) and a step given one GPU
#     (SLURM_STEP_GPUS), sets CUDA_MPS_PIPE_DIRECTORY to that GPU's pipe directory.
# It never prints an `export` value holding a newline or another control character (which
# would start a line of its own): `visibility` refuses such a mask, and this script checks
# each value again before printing it.
# Settings: mps-preflight.env next to slurm.conf, as for the Prolog (MPS_PREFLIGHT,
# MPS_PREFLIGHT_ENFORCE, MPS_PREFLIGHT_REPORT_DIR, MPS_PREFLIGHT_PIPE_DIRECTORY,
# MPS_PREFLIGHT_PARTITIONS, PATH).
say() { printf 'print mps-preflight task prolog: %s\n' "$*"; }
settings="$(dirname "${SLURM_CONF:-/etc/slurm/slurm.conf}")/mps-preflight.env"
if [ -r "$settings" ]; then
    # shellcheck disable=SC1090
    . "$settings"
elif [ -e "$settings" ]; then
    # Its report directory may be another: a refusal there would go unseen (docs/fleet.md).
    say "warning: cannot read $settings; it must be readable by every user"
fi

refused="${MPS_PREFLIGHT_REPORT_DIR:-/var/log/mps-preflight}/${SLURMD_NODENAME:-}-${SLURM_JOB_ID:-}.refused"
if [ -f "$refused" ]; then
    say "this job is not started: $(head -n 1 "$refused")"
    exit 1
fi

# A rollout limited to some partitions (MPS_PREFLIGHT_PARTITIONS) leaves the others' masks alone.
if [ -n "${MPS_PREFLIGHT_PARTITIONS:-}" ]; then
    case " $MPS_PREFLIGHT_PARTITIONS " in *" ${SLURM_JOB_PARTITION:-} "*) ;; *) exit 0 ;; esac
fi

if ! errors="$(mktemp 2>/dev/null)"; then
    say "cannot make a temporary file; CUDA_VISIBLE_DEVICES is left as it is"
    exit 0
fi
devices="$("${MPS_PREFLIGHT:-mps-preflight}" visibility 2>"$errors")"
status=$?
sed 's/^/print mps-preflight task prolog: /' "$errors"
rm -f "$errors"
# Prints `export NAME=value`, or refuses the task when the value holds a control character.
export_value() {
    case "$2" in
        *[[:cntrl:]]*)
            say "$1 would hold a control character; the task is not started"
            exit 1
            ;;
    esac
    printf 'export %s=%s\n' "$1" "$2"
}

case "$status:$devices" in
    0:?*)
        export_value CUDA_VISIBLE_DEVICES "$devices"
        # One daemon per GPU: a step given one GPU talks to that GPU's daemon.
        case "${MPS_PREFLIGHT_PIPE_DIRECTORY:-}:${SLURM_STEP_GPUS:-}" in
            *%g*:*[!0-9]* | *%g*:) ;;
            *%g*:*) export_value CUDA_MPS_PIPE_DIRECTORY \
                "$(printf '%s\n' "$MPS_PREFLIGHT_PIPE_DIRECTORY" | sed "s/%g/$SLURM_STEP_GPUS/g")" ;;
        esac
        ;;
    1:*)
        if [ "${MPS_PREFLIGHT_ENFORCE:-1}" = 0 ]; then
            say "report-only: the task starts with CUDA_VISIBLE_DEVICES as it is"
            exit 0
        fi
        say "the task is not started"
        exit 1
        ;;
    *) say "mps-preflight exited $status; CUDA_VISIBLE_DEVICES is left as it is" ;;
esac
exit 0
