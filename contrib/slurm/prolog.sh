#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/path/to/prolog.sh; docs/fleet.md, recipe 2). slurmd runs it
# as root on the node before each job. When the node cannot give the job a proven MPS setup,
# it drains the node with the unmet prerequisite's code in the Reason, then exits 1, which
# makes Slurm fail the job ("Job prolog failed").
#
# Slurm runs a Prolog with a bare environment (no PATH, none of the job's variables), so the
# settings come from mps-preflight.env next to slurm.conf, sourced when present:
#   PATH                     where mps-preflight, nvidia-smi and nvidia-cuda-mps-control are
#   CUDA_MPS_PIPE_DIRECTORY  the node's MPS pipe directory (unset: /tmp/nvidia-mps)
#   MPS_PREFLIGHT            the binary (default: mps-preflight on PATH)
#   MPS_PREFLIGHT_DEVICE     the device both processes use (default: cuda:0)
#   MPS_PREFLIGHT_BACKEND    the simulation backend (default: mjwarp)
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
settings="$(dirname "${SLURM_CONF:-/etc/slurm/slurm.conf}")/mps-preflight.env"
if [ -f "$settings" ]; then
    # shellcheck disable=SC1090
    . "$settings"
fi
device="${MPS_PREFLIGHT_DEVICE:-cuda:0}"

report="$("${MPS_PREFLIGHT:-mps-preflight}" doctor --request mps --learner-device "$device" \
    --collector-device "$device" --backend "${MPS_PREFLIGHT_BACKEND:-mjwarp}" 2>&1)"
status=$?
[ "$status" -eq 0 ] && exit 0

# The first finding is what `probe` would reject with: "1. [<code>] <message>".
code="$(printf '%s\n' "$report" | sed -n 's/^1\. \[\([a-z0-9-]*\)\].*/\1/p' | head -n 1)"
[ -n "$code" ] || code="doctor-exit-$status"
printf '%s\n' "$report" >&2
scontrol update NodeName="${SLURMD_NODENAME:?}" State=DRAIN Reason="mps-preflight: $code"
exit 1
