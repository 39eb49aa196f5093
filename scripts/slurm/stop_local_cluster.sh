#!/usr/bin/env bash
# Stop the single-node cluster of start_local_cluster.sh: slurmd and slurmctld (munged is left running: other software may use it).
#   scripts/slurm/stop_local_cluster.sh [--purge]    # --purge also removes its state folder
set -uo pipefail
STATE="${CODESWITCH_SLURM_STATE:-/var/tmp/codeswitch-slurm}"
for d in slurmd slurmctld; do
  if [ -s "$STATE/$d.pid" ]; then
    pid="$(cat "$STATE/$d.pid")"
    kill "$pid" 2>/dev/null && echo "[slurm] stopped $d ($pid)" >&2
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
done
if [ "${1:-}" = "--purge" ]; then rm -rf "$STATE" && echo "[slurm] removed $STATE" >&2; fi
