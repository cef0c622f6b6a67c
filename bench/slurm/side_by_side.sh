#!/usr/bin/env bash
# Placements/s side by side with real Slurm 22.05 (issue 22), opt-in, never
# part of scripts/test. Same machine, same job shape, one run:
#   - Slurm: NODES slurmd on loopback (bench/slurm/cluster.sh), 8 GRES dcu
#     each; one held job array of 2 x NODES tasks of `--gres=dcu:4 -n1`
#     (exactly the fleet's capacity), released at once with
#     `scontrol release`; the window runs from the release until squeue
#     shows every task RUNNING (slurmctld has placed it).
#   - dcufleet: dcu-loadgen --mode place with NODES simulated agents of 8
#     devices and 2 x NODES deployments of TP 4 (--tp 4), its own figure
#     (deployments persisted and at their agents per second). One fill of
#     a small fleet takes milliseconds, too short a window to time, so a
#     round is as many fills (--waves: fill, delete all, wait until the
#     fleet is empty, untimed, fill again) as it takes for the fills' own
#     windows to add up to MIN_WINDOW seconds (default 1). A Slurm round
#     likewise: as many fills (release, all RUNNING, cancel, wait until
#     every node is idle again, untimed) as it takes for the windows to add
#     up to MIN_WINDOW — one at 1,000 nodes, where a fill takes tens of
#     seconds; two or more at 100 nodes, where tuned Slurm fills 200 slots
#     in under a second (0.68 s, stop 43).
# Rounds alternate (Slurm, dcufleet, Slurm, …); each side's median of
# ROUNDS is printed with its spread, and the ratio of the medians.
#   bench/slurm/side_by_side.sh [--nodes 100] [--rounds 5] [--slurm-only]
#     [--sched-params 'default_queue_depth=10000'] [--min-window 1] [--poll 0.25]
#     [--slurm-jobs array|separate]
# --sched-params: Slurm's SchedulerParameters (default: none, Slurm's own
# defaults, as a site gets them; the figure says which was used).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

NODES=100
ROUNDS=5
SLURM_ONLY=0
SCHED_PARAMS=""
MIN_WINDOW=1
POLL=0.25
SLURM_JOBS=array
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --slurm-only) SLURM_ONLY=1; shift ;;
    --sched-params) SCHED_PARAMS="$2"; shift 2 ;;
    --min-window) MIN_WINDOW="$2"; shift 2 ;;
    --poll) POLL="$2"; shift 2 ;;
    --slurm-jobs) SLURM_JOBS="$2"; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--rounds R] [--slurm-only] [--sched-params P] [--min-window S] [--poll S] [--slurm-jobs array|separate]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "run as root: slurmd runs the jobs (SlurmdUser=root)" >&2; exit 2; }
for b in slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$b" >/dev/null || { echo "'$b' missing: apt-get install slurmctld slurmd slurm-client" >&2; exit 2; }
done
JOBS=$((2 * NODES))
case "$SLURM_JOBS" in array|separate) ;; *) echo "--slurm-jobs: array or separate" >&2; exit 2 ;; esac
if [ "$SLURM_ONLY" = 0 ]; then
  [ -n "${DCU_BENCH_BIN:-}" ] || build_targets dcu-loadgen dcu-controller
  BIN="${DCU_BENCH_BIN:-$BUILD_DIR/bin}"
  if ! "$BIN/dcu-loadgen" --help 2>&1 | grep -q -- "--min-window"; then
    echo "this dcu-loadgen has no --min-window flag (one fill is too short a window to time)" >&2
    exit 2
  fi
fi

WORK="$(mktemp -d /tmp/dcu-slurm-bench.XXXXXX)"
cleanup() { slurm_cluster_stop; rm -rf "$WORK"; }
trap cleanup EXIT

log "starting Slurm: 1 slurmctld + $NODES slurmd, 8 x dcu each${SCHED_PARAMS:+, SchedulerParameters=$SCHED_PARAMS}"
slurm_cluster_start "$WORK/slurm" "$NODES" 8 "$SCHED_PARAMS"

now() { date +%s.%N; }
running_tasks() { squeue -h -r -t RUNNING -o '%i' 2>/dev/null | wc -l; }
queued_tasks() { squeue -h -r -o '%i' 2>/dev/null | wc -l; }

slurm_fill() {  # one fill of the cluster; prints its window in seconds
  local id t0 t1 n ids=() i
  # `exec sleep`: the batch shell becomes the sleep, so a running task is
  # slurmstepd and one process, not three — at 1,000 nodes (2,000 tasks) the
  # reaping after a round was what a 2-core host could not keep up with.
  if [ "$SLURM_JOBS" = array ]; then
    id="$(sbatch --parsable -H --array="1-$JOBS" --gres=dcu:4 -n1 -o /dev/null --wrap 'exec sleep 86400')" ||
      { echo "sbatch refused the array of $JOBS tasks" >&2; return 1; }
    id="${id%%;*}"
    ids=("$id")
  else
    # As many separate held jobs: each release is an event that Slurm
    # answers with a quick scheduling attempt (sched_config.html), where an
    # array's tasks wait for the main loop or backfill.
    for i in $(seq 1 "$JOBS"); do
      id="$(sbatch --parsable -H --gres=dcu:4 -n1 -o /dev/null --wrap 'exec sleep 86400')" ||
        { echo "sbatch refused job $i of $JOBS" >&2; return 1; }
      ids+=("${id%%;*}")
    done
  fi
  local list
  list="$(IFS=,; echo "${ids[*]}")"
  t0="$(now)"
  scontrol release "$list" >/dev/null
  # squeue every POLL seconds: each is an RPC that takes slurmctld's job
  # lock, so polling much faster slows the scheduler being timed (20 a
  # second did, measured); the window's error is under one POLL.
  for _ in $(seq 1 $((300 * 4))); do
    n="$(running_tasks)"
    [ "$n" -ge "$JOBS" ] && break
    sleep "$POLL"
  done
  t1="$(now)"
  [ "$n" -ge "$JOBS" ] || { echo "Slurm placed $n of $JOBS tasks in 300 s" >&2; return 1; }
  # Said now: at 1,000 nodes on a small host the cleanup below can take
  # longer than the round.
  python3 -c "import sys; print('    Slurm: %d tasks running after %.2f s' % (int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2])))" "$JOBS" "$t0" "$t1" >&2
  # How Slurm started them: its own counters (main scheduler cycles and
  # backfill), reset per round.
  sdiag 2>/dev/null | grep -E "^(Main schedule statistics|Backfilling stats)|Total cycles|Last cycle:|Mean cycle|Total backfilled jobs \(since last slurm start\)|Last depth cycle:" \
    | sed 's/^/    sdiag: /' >&2 || true
  sdiag --reset >/dev/null 2>&1 || true
  scancel "${ids[@]}"
  for _ in $(seq 1 3000); do [ "$(queued_tasks)" -eq 0 ] && break; sleep 0.2; done
  # Every slurmstepd gone and the nodes idle again before the next round; a
  # node drained "Kill task failed" (a step the loaded host reaped late) is
  # resumed and counted, not left out of the next round's capacity.
  local idle=0 node
  local -A resumed=()
  for _ in $(seq 1 1200); do
    idle="$(sinfo -h -t idle -N -o '%N' 2>/dev/null | wc -l)"
    [ "$idle" -ge "$NODES" ] && break
    while read -r node; do
      [ -n "$node" ] || continue
      scontrol update nodename="$node" state=resume 2>/dev/null && resumed[$node]=1
    done < <(sinfo -h -N -t drained -o '%N' 2>/dev/null)
    sleep 0.5
  done
  [ "${#resumed[@]}" -eq 0 ] || echo "    resumed ${#resumed[@]} node(s) drained while the steps were reaped" >&2
  [ "$idle" -ge "$NODES" ] || { echo "Slurm: $idle of $NODES nodes idle 600 s after the round" >&2; return 1; }
  python3 -c "import sys; print('%.4f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1"
}

slurm_round() {  # prints placements/s, fills, seconds of placement windows
  local total=0 fills=0 w
  while :; do
    w="$(slurm_fill)" || return 1
    fills=$((fills + 1))
    total="$(python3 -c "import sys; print(float(sys.argv[1]) + float(sys.argv[2]))" "$total" "$w")"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$total" "$MIN_WINDOW" && break
  done
  python3 -c "import sys; print('%.1f %d %.2f' % (int(sys.argv[1]) * int(sys.argv[2]) / float(sys.argv[3]), int(sys.argv[2]), float(sys.argv[3])))" "$JOBS" "$fills" "$total"
}

dcufleet_round() {  # prints placements/s, fills, seconds of placement windows
  "$BIN/dcu-loadgen" --mode place --agents "$NODES" --deployments "$JOBS" --tp 4 --uniform-fleet \
    --report-interval 5 --min-window "$MIN_WINDOW" --json "$WORK/loadgen.json" >"$WORK/loadgen.log" 2>&1 ||
    { tail -20 "$WORK/loadgen.log" >&2; return 1; }
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('%.1f %d %.2f' % (d['placements_per_s'], d['waves'], d['place_s']))" "$WORK/loadgen.json"
}

SLURM=() FLEET=()
for r in $(seq 1 "$ROUNDS"); do
  read -r srate sfills swindow < <(slurm_round)
  [ -n "${srate:-}" ] || { echo "the Slurm round $r failed" >&2; exit 1; }
  SLURM+=("$srate")
  log "round $r: Slurm $srate placements/s ($sfills fills, ${swindow} s of placement windows)"
  if [ "$SLURM_ONLY" = 0 ]; then
    read -r rate waves window < <(dcufleet_round)
    [ -n "${rate:-}" ] || { echo "dcu-loadgen failed in round $r" >&2; exit 1; }
    FLEET+=("$rate")
    log "round $r: dcufleet $rate placements/s ($waves fills, ${window} s of placement windows)"
  fi
done

python3 - "$NODES" "$JOBS" "${SCHED_PARAMS:-Slurm defaults}" "${SLURM[*]}" "${FLEET[*]:-}" "$( [ "$SLURM_JOBS" = array ] && echo "one array of $JOBS tasks" || echo "$JOBS separate jobs")" <<'PY'
import statistics, sys
nodes, jobs, params, slurm, fleet, shape = sys.argv[1:7]
s = [float(x) for x in slurm.split()]
f = [float(x) for x in fleet.split()] if fleet.strip() else []
print(f"## {nodes} nodes x 8 devices, {jobs} placements of 4 devices per round ({params}; Slurm jobs: {shape})\n")
print("| scheduler | median placements/s | spread (min-max) | rounds |")
print("| --- | --- | --- | --- |")
print(f"| Slurm 22.05 | {statistics.median(s):.1f} | {min(s):.1f}-{max(s):.1f} | {' '.join(map(str, s))} |")
if f:
    print(f"| dcufleet | {statistics.median(f):.1f} | {min(f):.1f}-{max(f):.1f} | {' '.join(map(str, f))} |")
    print(f"\nratio of medians: {statistics.median(f) / statistics.median(s):.1f}x")
PY
