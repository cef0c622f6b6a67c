#!/usr/bin/env bash
# SQLite beside PostgreSQL (issue 21), opt-in, never part of scripts/test:
# the same dcu-loadgen runs against a controller on a SQLite file and on a
# real PostgreSQL 15 (started here, as nobody under root), alternating,
# ROUNDS rounds, one machine, one session. Figures: persisted placements/s
# (--mode place: every Deploy and every placement is committed before it is
# answered or sent) and ingest p50/p99 (--mode ingest: NodeStatus at 1 Hz
# per agent, probed by GetNode). PostgreSQL runs twice: with the store's
# pipelined transactions (the default) and with DCU_PG_PIPELINE=0, one round
# trip per statement as before, so the change is measured in the same run.
#   bench/ha/stores.sh [--rounds 3] [--agents 1000] [--deployments 2000] [--ingest-agents 2000]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
HA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROUNDS=3
AGENTS=1000
DEPLOYMENTS=2000
INGEST_AGENTS=2000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --agents) AGENTS="$2"; shift 2 ;;
    --deployments) DEPLOYMENTS="$2"; shift 2 ;;  # at most 2 x --agents
    --ingest-agents) INGEST_AGENTS="$2"; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--agents N] [--deployments N] [--ingest-agents N]" >&2; exit 2 ;;
  esac
done
[ -n "${DCU_BENCH_BIN:-}" ] || build_targets dcu-controller dcu-loadgen
BIN="${DCU_BENCH_BIN:-$BUILD_DIR/bin}"
source "$HA_DIR/lib.sh"
pg_start

run() {  # BACKEND MODE ROUND
  local db out="$WORK/$1-$2-$3.json"
  local pipeline=1
  if [ "$1" = sqlite ]; then db="$WORK/$1-$2-$3.db"; else db="$(fresh_pg "r_${1//-/_}_$2_$3")"; fi
  [ "$1" = postgres-one-by-one ] && pipeline=0
  if [ "$2" = place ]; then
    # Every node a K100_AI with all devices free and TP 4: two replicas
    # per node, so AGENTS nodes hold 2 x AGENTS deployments exactly.
    DCU_PG_PIPELINE=$pipeline "$BIN/dcu-loadgen" --mode place --agents "$AGENTS" --deployments "$DEPLOYMENTS" --uniform-fleet \
      --tp 4 --report-interval 5 --timeout 60 --db "$db" --json "$out" >"$WORK/$1-$2-$3.txt" 2>&1
  else
    DCU_PG_PIPELINE=$pipeline "$BIN/dcu-loadgen" --mode ingest --agents "$INGEST_AGENTS" --duration 20 --warmup 5 \
      --db "$db" --json "$out" >"$WORK/$1-$2-$3.txt" 2>&1
  fi || { echo "loadgen $1 $2 round $3 failed:" >&2; tail -20 "$WORK/$1-$2-$3.txt" >&2; exit 1; }
  log "$1 $2 round $3 done"
}
for r in $(seq 1 "$ROUNDS"); do
  for mode in place ingest; do
    run sqlite "$mode" "$r"
    run postgres "$mode" "$r"
    run postgres-one-by-one "$mode" "$r"
  done
done
python3 - "$WORK" "$ROUNDS" "$AGENTS" "$DEPLOYMENTS" "$INGEST_AGENTS" <<'PY'
import json, statistics, sys
work, rounds, agents, deployments, ingest_agents = sys.argv[1:6]
rounds = int(rounds)
def load(b, m, r):
    return json.load(open(f"{work}/{b}-{m}-{r}.json"))
print(f"## SQLite beside PostgreSQL: {rounds} alternating rounds; place: {agents} K100_AI agents, "
      f"{deployments} TP 4 deployments; ingest: {ingest_agents} agents at 1 Hz\n")
print("| store | placements/s, median (each round) | ready s, median | ingest p50 ms | ingest p99 ms, median (each round) | errors |")
print("| --- | --- | --- | --- | --- | --- |")
for b in ("sqlite", "postgres", "postgres-one-by-one"):
    rates, ready, p50, p99, errors = [], [], [], [], 0
    for r in range(1, rounds + 1):
        p, i = load(b, "place", r), load(b, "ingest", r)
        rates.append(p["placements_per_s"]); ready.append(p["ready_s"])
        p50.append(i["ingest_latency"]["p50_ms"]); p99.append(i["ingest_latency"]["p99_ms"])
        for d in (p, i):
            errors += sum(d.get(k, 0) for k in ("rpc_errors", "stream_errors", "write_errors",
                                                "controller_errors", "database_is_locked", "deploy_refused"))
    each = lambda v, f: " ".join(f % x for x in v)
    print(f"| {b} | {statistics.median(rates):.0f} ({each(rates, '%.0f')}) | {statistics.median(ready):.1f} | "
          f"{statistics.median(p50):.2f} | {statistics.median(p99):.2f} ({each(p99, '%.1f')}) | {errors} |")
PY
