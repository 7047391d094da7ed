#!/bin/sh
# Slurm TaskProlog (slurm.conf: TaskProlog=/path/to/task-prolog.sh; docs/fleet.md, recipe 3).
# slurmstepd runs it as the job's user, in the task's environment, before each task; every
# `export NAME=value` line it prints is set in the task's environment. This one rewrites the
# device indices in CUDA_VISIBLE_DEVICES to GPU-... UUIDs, which name the same GPU in an MPS
# server's renumbered device space (unset: every GPU of the node, by UUID).
#
# When the mask cannot be rewritten it prints the reason to the task's output and exits 1, and
# Slurm does not start the task (an index mask under MPS can pick the wrong GPU or none).
# MPS_PREFLIGHT names the binary (default: mps-preflight on the job's PATH).
if devices="$("${MPS_PREFLIGHT:-mps-preflight}" visibility 2>&1)"; then
    printf 'export CUDA_VISIBLE_DEVICES=%s\n' "$devices"
else
    printf 'print mps-preflight task prolog: %s\n' "$devices"
    exit 1
fi
