# A real Slurm 22.05 cluster on loopback for benchmarks (issue 22), sourced:
# one slurmctld and N slurmd on this host (`slurmd -N nX`, each on its own
# port), AuthType=auth/none, everything under SLURM_BENCH_DIR, every daemon
# stopped by pid. The configuration is the test harness's
# (tests/testing/slurm_cluster.cc); pitfalls of this Debian build, measured:
# Gres= on NodeName lines is dropped while parsing, so GRES is set with
# `scontrol update` once the slurmds register, and nodes that register
# drained are resumed; the packaged -emulator daemons do not start.
#
#   slurm_cluster_start DIR NODES GRES_PER_NODE [SCHEDULER_PARAMETERS]
#   slurm_cluster_stop
# Afterwards SLURM_CONF names the cluster's slurm.conf for every client.

# N distinct free loopback ports below the kernel's ephemeral range, all
# held until all are chosen. A port the kernel hands out (bind to 0) is
# ephemeral: 100 slurmd and their controller's connections take ephemeral
# ports while starting, and one slurmd failed "Unable to bind listen port
# (45765): Address already in use" (2026-12-07), leaving the run waiting.
slurm_bench_free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
held, port = [], random.randrange(10000, max(10001, low - 4 * n - 1000))
while len(held) < n and port < low:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        held.append(s)
    except OSError:
        s.close()
    port += 1
if len(held) < n:
    sys.exit("no %d free ports below the ephemeral range (%d)" % (n, low))
for s in held:
    print(s.getsockname()[1])
PY
}

slurm_cluster_start() {
  local dir="$1" nodes="$2" gres="$3" sched_params="${4:-}"
  SLURM_BENCH_DIR="$dir"
  SLURM_BENCH_PIDS=()
  mkdir -p "$dir"/{etc,state,log,run,dev}
  local i
  for i in $(seq 0 $((gres - 1))); do ln -sf /dev/null "$dir/dev/dcu$i"; done
  echo "NodeName=n[1-$nodes] Name=dcu File=$dir/dev/dcu[0-$((gres - 1))]" >"$dir/etc/gres.conf"
  export SLURM_CONF="$dir/etc/slurm.conf"
  local ports
  mapfile -t ports < <(slurm_bench_free_ports $((nodes + 1)))
  [ "${#ports[@]}" -eq $((nodes + 1)) ] || { echo "slurm_cluster_start: no free ports" >&2; return 1; }
  {
    echo "ClusterName=dcubench"
    echo "SlurmctldHost=localhost(127.0.0.1)"
    echo "SlurmctldPort=${ports[0]}"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=dcu"
    echo "MpiDefault=none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SchedulerType=sched/backfill"
    [ -n "$sched_params" ] && echo "SchedulerParameters=$sched_params"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=300"
    echo "InactiveLimit=0"
    echo "MinJobAge=2"
    echo "KillWait=5"
    # 1,000 slurmd on 2 cores take minutes to reap 2,000 cancelled steps:
    # with the default 60 s, slurmd drains nodes "Kill task failed" (seen at
    # 1,000 nodes), which is the host's load, not the scheduler's doing.
    echo "UnkillableStepTimeout=600"
    echo "MessageTimeout=30"
    echo "MaxJobCount=100000"
    # An array's indices must stay below MaxArraySize (default 1001): the
    # side-by-side submits 2 x NODES tasks as one array ("Invalid job array
    # specification" at 1,000 nodes otherwise).
    echo "MaxArraySize=$((2 * nodes + 1 > 1001 ? 2 * nodes + 1 : 1001))"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=error"
    echo "SlurmdDebug=error"
    for i in $(seq 1 "$nodes"); do
      echo "NodeName=n$i NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=8 RealMemory=1000 Gres=dcu:$gres Port=${ports[$i]}"
    done
    echo "PartitionName=dcu Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
  } >"$SLURM_CONF"
  slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  SLURM_BENCH_PIDS+=($!)
  for i in $(seq 1 "$nodes"); do
    mkdir -p "$dir/spool/n$i"
    slurmd -D -N "n$i" -f "$SLURM_CONF" >"$dir/log/slurmd-n$i.out" 2>&1 &
    SLURM_BENCH_PIDS+=($!)
  done
  # Until every node is idle with its GRES (set once by hand: see above).
  local updated=0 idle line
  for _ in $(seq 1 600); do
    idle=0
    local missing=() drained=()
    while IFS='|' read -r name state g; do
      [ -z "$name" ] && continue
      if [[ "$g" != *"dcu:$gres"* ]]; then missing+=("$name"); fi
      if [[ "$state" == drain* ]]; then drained+=("$name"); fi
      if [[ "$g" == *"dcu:$gres"* && "$state" == idle* ]]; then idle=$((idle + 1)); fi
    done < <(sinfo -h -N -o '%N|%T|%G' 2>/dev/null)
    [ "$idle" -eq "$nodes" ] && return 0
    if [ "$updated" = 0 ] && [ $(( ${#missing[@]} + ${#drained[@]} )) -gt 0 ] &&
       [ "$(sinfo -h -N -o '%N' 2>/dev/null | wc -l)" -ge "$nodes" ]; then
      updated=1
      for line in "${missing[@]}"; do scontrol update nodename="$line" gres="dcu:$gres" || true; done
      for line in "${drained[@]}"; do scontrol update nodename="$line" state=resume || true; done
    fi
    sleep 0.5
  done
  echo "Slurm: $idle of $nodes nodes idle with dcu:$gres after 300 s; logs under $dir/log" >&2
  return 1
}

slurm_cluster_stop() {
  if [ -n "${SLURM_CONF:-}" ]; then scancel --quiet --user=root 2>/dev/null || true; fi
  local p
  for p in "${SLURM_BENCH_PIDS[@]:1}"; do kill "$p" 2>/dev/null || true; done
  for p in "${SLURM_BENCH_PIDS[@]:1}"; do wait "$p" 2>/dev/null || true; done
  [ "${#SLURM_BENCH_PIDS[@]}" -gt 0 ] && { kill "${SLURM_BENCH_PIDS[0]}" 2>/dev/null || true; wait "${SLURM_BENCH_PIDS[0]}" 2>/dev/null || true; }
  SLURM_BENCH_PIDS=()
}
