#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine, for the executor tests and for trying
# `./reproduce.sh --executor slurm` without a cluster: munged, slurmctld and slurmd on
# localhost, one partition (`local`) with this machine's cores and memory, no accounting.
#
#   scripts/slurm/start_local_cluster.sh     # installs slurm-wlm + munge with apt if missing (as root)
#   export SLURM_CONF=/var/tmp/codeswitch-slurm/slurm.conf   # for sinfo / sbatch / the tests
#   scripts/slurm/stop_local_cluster.sh
#
# State (config, spool, logs) lives in $CODESWITCH_SLURM_STATE (default /var/tmp/codeswitch-slurm);
# nothing under /etc/slurm is touched.  Waits up to $CODESWITCH_SLURM_TIMEOUT seconds (default 120)
# for `sinfo` to show the node idle; exit 0 when it does, 2 when Slurm cannot be installed or started.
set -euo pipefail
STATE="${CODESWITCH_SLURM_STATE:-/var/tmp/codeswitch-slurm}"
TIMEOUT="${CODESWITCH_SLURM_TIMEOUT:-120}"
say() { echo "[slurm] $*" >&2; }
fail() { say "cannot start: $*"; exit 2; }
deadline=$(( $(date +%s) + TIMEOUT ))

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing slurm-wlm and munge with apt"
    export DEBIAN_FRONTEND=noninteractive
    timeout "$TIMEOUT" apt-get update -qq >/dev/null || fail "apt-get update failed"
    timeout "$TIMEOUT" apt-get install -y -qq slurm-wlm munge >/dev/null || fail "apt-get install slurm-wlm munge failed"
  else
    fail "slurmctld/slurmd/munged are not installed and apt-get cannot run here (needs root and apt)"
  fi
fi
[ "$(id -u)" = 0 ] || fail "the daemons need root (slurmd starts jobs as their user)"

mkdir -p "$STATE"/{ctld,spool,munge}
host="$(hostname -s)"
cpus="$(nproc)"
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))

# ---- munge: a key of our own unless the system has one
key=/etc/munge/munge.key
if [ ! -s "$key" ]; then
  mkdir -p /etc/munge
  if command -v mungekey >/dev/null 2>&1; then mungekey --create --keyfile="$key" >/dev/null 2>&1 || true; fi
  [ -s "$key" ] || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chown munge:munge "$key" 2>/dev/null || true
chmod 0400 "$key"
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "starting munged"
  if id munge >/dev/null 2>&1; then
    runuser -u munge -- munged || fail "munged did not start"
  else
    munged --force || fail "munged did not start"
  fi
fi
for _ in $(seq 1 20); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
munge -n | unmunge >/dev/null 2>&1 || fail "munge does not answer"

# ---- slurm.conf for localhost
cat > "$STATE/slurm.conf" <<CONF
# written by scripts/slurm/start_local_cluster.sh: a single-node cluster on $host
ClusterName=codeswitch
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
export SLURM_CONF="$STATE/slurm.conf"

if ! scontrol ping 2>/dev/null | grep -q "is UP"; then
  say "starting slurmctld"
  slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not start (log: $STATE/slurmctld.log)"
fi
if ! pgrep -F "$STATE/slurmd.pid" >/dev/null 2>&1; then
  say "starting slurmd"
  slurmd -f "$SLURM_CONF" || fail "slurmd did not start (log: $STATE/slurmd.log)"
fi
while :; do
  state="$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -1 || true)"
  case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*) scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
  esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "the node is not idle after ${TIMEOUT} s (state '${state:-none}'; logs in $STATE)"
  sleep 1
done
say "up: partition 'local', node $host ($cpus CPUs, $mem_mb MB); export SLURM_CONF=$SLURM_CONF"
