#!/usr/bin/env bash
# Leader kills while the fleet changes (issue 21), opt-in, never part of
# scripts/test. Three dcu-controllers on one real PostgreSQL 15, a
# simulated 8x K100_AI node (a real dcu-agent that knows all three
# addresses, fake engines that load in 1 s: one node, since engines of two
# nodes on one host would contend for the same ports) and a churn of
# deployments: a client keeps LIVE deployments of qwen3-32b (TP 2) alive, deleting the
# oldest and creating a new one, all through the controller list. The
# leader is SIGKILLed KILLS times; every FAILOVER_EVERY-th kill lands while
# a failover is in progress: a serving engine is SIGKILLed first and the
# leader 0.2-1.5 s later (before the agent's report, during the decision,
# during the new instance's start-up).
#
# Measured per kill: the takeover (a standby logs that it leads and answers
# `get nodes`) and the first churn write acknowledged after the kill; per
# failover kill, the time until the deployment whose engine was killed is
# Ready again. Checked throughout and at the end, from /proc (every engine
# carries its instance id, bench/ha/instances.py):
#   lost        acknowledged deployments missing at the end, or acknowledged
#               deletes still present
#   duplicated  samples (every 0.2 s) with two servers of one replica alive
#   orphaned    engines of deployments that are gone (end, after settling)
#   not ready   deployments that did not come back Ready
#   bench/ha/churn.sh [--kills 30] [--lease 6] [--renew 2] [--live 3] [--failover-every 2]
#                     [--churn-pause 1]   (seconds between two churn writes)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
HA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KILLS=30
LEASE=6
RENEW=2
LIVE=3
FAILOVER_EVERY=2
CHURN_PAUSE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) KILLS="$2"; shift 2 ;;
    --lease) LEASE="$2"; shift 2 ;;
    --renew) RENEW="$2"; shift 2 ;;
    --live) LIVE="$2"; shift 2 ;;
    --failover-every) FAILOVER_EVERY="$2"; shift 2 ;;
    --churn-pause) CHURN_PAUSE="$2"; shift 2 ;;
    *) echo "usage: $0 [--kills N] [--lease S] [--renew S] [--live N] [--failover-every N] [--churn-pause S]" >&2; exit 2 ;;
  esac
done
[ "$LIVE" -le 3 ] || { echo "--live: the node holds four TP 2 replicas; keep one slot free (at most 3)" >&2; exit 2; }
if [ -z "${DCU_BENCH_BIN:-}" ]; then
  build_targets dcu-controller dcu-agent dcuctl fake_vllm fake_hip_good
fi
BIN="${DCU_BENCH_BIN:-$BUILD_DIR/bin}"
TESTLIBS="${DCU_BENCH_TESTLIBS:-$BUILD_DIR/testlibs}"
source "$HA_DIR/lib.sh"
procs() { python3 "$HA_DIR/instances.py" "$@"; }
ha_cleanup_instances() { procs kill "$WORK" 2>/dev/null || true; ha_cleanup; }
trap ha_cleanup_instances EXIT
ctl() { "$BIN/dcuctl" --controller "$CTL_ADDRS" --timeout 5 "$@"; }

pg_start
log "simulated nodes in $WORK/sim"
SIM_REPO="$REPO_ROOT" bash "$REPO_ROOT/scripts/lib/simfleet.sh" "$WORK/sim" "$(dirname "$BIN")" twok100
mkdir -p "$WORK/catalog"
cp -r "$REPO_ROOT/deploy/catalog/stacks" "$REPO_ROOT/deploy/catalog/models" "$WORK/catalog/"

CTL_ARGS=(--lease "$LEASE" --lease-renew "$RENEW" --catalog "$WORK/catalog"
          --status-interval 0.5 --reconcile-interval 0.2)
for i in 0 1 2; do ctl_start "$i"; sleep 0.3; done
for _ in $(seq 1 300); do ctl_leader >/dev/null && break; sleep 0.1; done

for n in node-a; do
  FAKE_HIP_DEVICES="$(cat "$WORK/sim/$n/hip-devices")" "$BIN/dcu-agent" --controller "$CTL_ADDRS" \
    --node "$n" --root "$WORK/sim/$n/root" --state-dir "$WORK/sim/$n/state" \
    --model-root "$WORK/sim/$n/models" --env-root "$WORK/sim/$n/envs" \
    --hip_library "$TESTLIBS/hip_good/libamdhip64.so" --container-cli none \
    --status-interval 0.5 >"$WORK/agent-$n.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 200); do
  [ "$(ctl get nodes 2>/dev/null | grep -c ' Ready')" -ge 1 ] && break
  sleep 0.2
done
[ "$(ctl get nodes 2>/dev/null | grep -c ' Ready')" -ge 1 ] ||
  { echo "the agent did not register; see $WORK/agent-node-a.log" >&2; exit 1; }

# The sampler: the servers alive every 0.2 s.
python3 "$HA_DIR/instances.py" sample "$WORK" "$WORK/samples.txt" "$WORK/stop" &
PIDS+=($!)

# The churn: every write retried until the controller answers (deploy is
# idempotent for one spec; delete of a missing deployment exits 3). A
# write is acknowledged when dcuctl exits 0 (or 3 for a delete); ops.txt
# gets "<time> deployed|deleted NAME".
(
  live=()
  n=0
  while [ ! -f "$WORK/stop" ]; do
    if [ "${#live[@]}" -lt "$LIVE" ]; then
      n=$((n + 1))
      while :; do
        if ctl deploy qwen3-32b --name "c$n" --tp 2 >/dev/null 2>>"$WORK/churn.err"; then break; fi
        sleep 0.2
      done
      echo "$(now) deployed c$n" >>"$WORK/ops.txt"
      live+=("c$n")
    else
      # The oldest, unless a failover is being timed on it (protect).
      victim="${live[0]}"
      if [ "$victim" = "$(cat "$WORK/protect" 2>/dev/null)" ] && [ "${#live[@]}" -gt 1 ]; then
        victim="${live[1]}"
      fi
      while :; do
        rc=0
        ctl delete deployment "$victim" >/dev/null 2>>"$WORK/churn.err" || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 3 ] && break
        sleep 0.2
      done
      echo "$(now) deleted $victim" >>"$WORK/ops.txt"
      rest=()
      for x in "${live[@]}"; do [ "$x" = "$victim" ] || rest+=("$x"); done
      live=("${rest[@]}")
    fi
    sleep "$CHURN_PAUSE"
  done
) &
CHURN=$!
PIDS+=($CHURN)

# ready_names: the deployments that are Ready now, one per line.
ready_names() {
  ctl get deployments -o json 2>/dev/null | python3 -c '
import json, sys
for d in json.load(sys.stdin).get("deployments", []):
    st = d.get("status", {})
    if st.get("phase") == "DEPLOYMENT_READY" and not st.get("deleted"):
        print(d["spec"]["name"])' || true
}
# ready_with_new_engine NAME OLD_PID: NAME is Ready on a server other than OLD_PID.
ready_with_new_engine() {
  ready_names | grep -qx "$1" || return 1
  local pid
  pid="$(procs engine "$WORK" "$1")" || return 1
  [ "$pid" != "$2" ]
}

sleep 3
TAKEOVER=()
FIRST_WRITE=()
RECOVERED=()
for k in $(seq 1 "$KILLS"); do
  L="$(ctl_leader)" || { echo "no leader before kill $k" >&2; exit 1; }
  failover=""
  engine=""
  if [ $((k % FAILOVER_EVERY)) = 0 ]; then
    # A deployment Ready now (waiting up to 20 s for one: the churn
    # replaces them every few seconds).
    for _ in $(seq 1 100); do
      for name in $(ready_names); do
        engine="$(procs engine "$WORK" "$name")" && { failover="$name"; break; }
      done
      [ -n "$failover" ] && break
      sleep 0.2
    done
    [ -n "$failover" ] || log "kill $k: no Ready deployment to fail over within 20 s"
    # The churn leaves it alone until it is timed.
    [ -n "$failover" ] && echo "$failover" >"$WORK/protect"
  fi
  before=()
  for i in 0 1 2; do before+=("$(ctl_leads "$i")"); done
  ops_before="$(wc -l <"$WORK/ops.txt" 2>/dev/null || echo 0)"
  # The churn may have deleted it meanwhile: then this kill is a plain one.
  if [ -n "$failover" ] && ! kill -9 "$engine" 2>/dev/null; then
    log "kill $k: $failover's engine was gone before it could be killed"
    failover=""
  fi
  if [ -n "$failover" ]; then
    delays=(0.2 0.5 1.0 1.5)
    sleep "${delays[$(( (k / FAILOVER_EVERY) % 4 ))]}"
  fi
  t0="$(now)"
  kill -9 "${CTL_PID[$L]}"
  wait "${CTL_PID[$L]}" 2>/dev/null || true
  new="$(ctl_wait_takeover "$L" "${before[@]}")" || { echo "no takeover within 60 s after kill $k" >&2; exit 1; }
  t1="$(now)"
  TAKEOVER+=("$(elapsed "$t0" "$t1")")
  # The first churn write acknowledged after the kill.
  tw=""
  for _ in $(seq 1 600); do
    tw="$(tail -n +"$((ops_before + 1))" "$WORK/ops.txt" 2>/dev/null | awk -v t="$t0" '$1 > t { print $1; exit }')"
    [ -n "$tw" ] && break
    sleep 0.1
  done
  [ -n "$tw" ] && FIRST_WRITE+=("$(elapsed "$t0" "$tw")")
  line="kill $k: controller $L killed, $new leads after ${TAKEOVER[-1]} s, first write acknowledged after ${FIRST_WRITE[-1]:-?} s"
  if [ -n "$failover" ]; then
    back=""
    for _ in $(seq 1 600); do
      if ready_with_new_engine "$failover" "$engine"; then back="$(now)"; break; fi
      # Deleted by a churn write already under way when it was chosen.
      grep -q " deleted $failover\$" "$WORK/ops.txt" && break
      sleep 0.1
    done
    if [ -n "$back" ]; then
      RECOVERED+=("$(elapsed "$t0" "$back")")
      line+="; $failover's engine killed before, Ready again on a new one after ${RECOVERED[-1]} s"
    elif grep -q " deleted $failover\$" "$WORK/ops.txt"; then
      line+="; $failover's engine killed before, deleted by the churn before it came back"
    else
      RECOVERED+=("never")
      line+="; $failover's engine killed before, NOT Ready again within 60 s"
    fi
  fi
  rm -f "$WORK/protect"
  log "$line"
  ctl_start "$L"
  sleep 2
done

# Settle: the churn stops, the live set must be Ready and the rest gone.
touch "$WORK/stop"
wait "$CHURN" 2>/dev/null || true
settled=0
for _ in $(seq 1 120); do
  want="$(awk '{ if ($2 == "deployed") l[$3] = 1; else delete l[$3] } END { for (n in l) print n }' "$WORK/ops.txt" | sort)"
  ready="$(ready_names | sort)"
  running="$(procs serving "$WORK")"
  if [ "$want" = "$ready" ] && [ "$want" = "$running" ]; then settled=1; break; fi
  sleep 0.5
done

ctl get deployments -o json >"$WORK/final.json" 2>/dev/null || echo '{}' >"$WORK/final.json"
procs list "$WORK" >"$WORK/final-procs.txt"
python3 - "$LEASE" "$RENEW" "$KILLS" "$FAILOVER_EVERY" "$settled" "${TAKEOVER[*]}" "${FIRST_WRITE[*]}" \
  "${RECOVERED[*]:-}" "$WORK/ops.txt" "$WORK/final.json" "$WORK/final-procs.txt" "$WORK/samples.txt" \
  "$HA_DIR" <<'PY'
import collections, json, statistics, sys
(lease, renew, kills, every, settled, takeover, first, recovered, ops_file, final_file,
 procs_file, samples_file, ha_dir) = sys.argv[1:14]
sys.path.insert(0, ha_dir)
import instances

def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))] if v else float("nan")

takeover = [float(x) for x in takeover.split()]
first = [float(x) for x in first.split()]
rec = [x for x in recovered.split()]
never = rec.count("never")
rec = [float(x) for x in rec if x != "never"]
ops = [l.split() for l in open(ops_file)]
live, deleted = set(), set()
for _, op, name in ops:
    if op == "deployed":
        live.add(name)
    else:
        live.discard(name); deleted.add(name)
final = json.load(open(final_file)).get("deployments", [])
present = {d["spec"]["name"] for d in final if not d.get("status", {}).get("deleted")}
ready = {d["spec"]["name"] for d in final
         if d.get("status", {}).get("phase") == "DEPLOYMENT_READY" and not d["status"].get("deleted")}
lost = sorted(live - present) + sorted(deleted & present)
not_ready = sorted(live - ready)
servers = collections.Counter()
orphans = []
for line in open(procs_file):
    pid, leader, iid = line.split()
    dep, replica = instances.deployment_of(iid)
    if dep not in live:
        orphans.append(f"{iid} (pid {pid})")
    elif leader == "1":
        servers[(dep, replica)] += 1
dups_end = [f"{d} r{r}: {c} servers" for (d, r), c in servers.items() if c > 1]
dup_samples = 0
dup_seen = set()
for line in open(samples_file):
    parts = line.split()
    per = collections.Counter(instances.deployment_of(i) for i in parts[1:])
    bad = [k for k, c in per.items() if c > 1]
    if bad:
        dup_samples += 1
        dup_seen.update(f"{d} r{r}" for d, r in bad)
n_samples = sum(1 for _ in open(samples_file))
print(f"## Churn: 3 controllers, lease {lease} s, renewed every {renew} s, {kills} SIGKILLs of the leader,"
      f" every {every}th during a failover ({len(rec) + never} timed)\n")
print(f"churn: {sum(1 for o in ops if o[1] == 'deployed')} deploys and "
      f"{sum(1 for o in ops if o[1] == 'deleted')} deletes acknowledged; {len(live)} deployments live at the end;"
      f" settled: {'yes' if settled == '1' else 'NO'}\n")
print("| | p50 s | p99 s | max s | n |")
print("| --- | --- | --- | --- | --- |")
print(f"| takeover (leads and serves) | {statistics.median(takeover):.2f} | {pct(takeover, .99):.2f} | {max(takeover):.2f} | {len(takeover)} |")
if first:
    print(f"| first churn write acknowledged | {statistics.median(first):.2f} | {pct(first, .99):.2f} | {max(first):.2f} | {len(first)} |")
if rec:
    print(f"| failover: killed engine's deployment Ready again | {statistics.median(rec):.2f} | {pct(rec, .99):.2f} | {max(rec):.2f} | {len(rec)} |")
print()
print("| acknowledged deployments lost | duplicated instances (samples) | orphaned processes | not Ready again |")
print("| --- | --- | --- | --- |")
print(f"| {len(lost)} | {dup_samples} of {n_samples} | {len(orphans)} | {len(not_ready) + never} |")
if lost: print("lost:", " ".join(lost))
if dup_seen: print("duplicated:", " ".join(sorted(dup_seen)))
if dups_end: print("duplicated at the end:", "; ".join(dups_end))
if orphans: print("orphaned:", "; ".join(orphans))
if not_ready: print("not Ready:", " ".join(not_ready))
bad = lost or dup_samples or orphans or not_ready or never or settled != "1"
sys.exit(1 if bad else 0)
PY
