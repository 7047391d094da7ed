#!/bin/sh
# Per-rank probe under srun (docs/fleet.md, recipe 1). Each task probes its own view of the
# node and records the evidence in RUN_DIR/rank<N>/manifest.json; then, once:
#
#   srun -n 2 contrib/slurm/srun-probe.sh RUN_DIR --request mps --learner-device cuda:0 \
#       --collector-device cuda:0 --backend mjwarp
#   mps-preflight merge RUN_DIR/rank*/manifest.json
#
# The probe flags after RUN_DIR are passed through; --rank, --world-size and --manifest come
# from Slurm (SLURM_PROCID, SLURM_NTASKS). MPS_PREFLIGHT names the binary (default: the
# mps-preflight on PATH). Exits with the probe's status: 1 when this rank is rejected (the
# reason on stderr, nothing recorded), 2 on a usage or manifest error.
set -eu
run_dir="${1:?usage: srun-probe.sh RUN_DIR PROBE_FLAGS...}"
shift
rank="${SLURM_PROCID:?not run by srun: SLURM_PROCID is unset}"
world_size="${SLURM_NTASKS:?not run by srun: SLURM_NTASKS is unset}"
mkdir -p "$run_dir/rank$rank"
exec "${MPS_PREFLIGHT:-mps-preflight}" probe "$@" --rank "$rank" --world-size "$world_size" \
    --manifest "$run_dir/rank$rank/manifest.json" >/dev/null
