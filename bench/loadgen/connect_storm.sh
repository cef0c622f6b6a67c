#!/usr/bin/env bash
# Connect storm (issue 22), opt-in, never part of scripts/test: AGENTS
# simulated agents (one connection each) dial a fresh controller at once,
# on a SQLite file and on a real PostgreSQL 15 (started here, as nobody
# under root). Figures per run: how long until every agent was welcomed,
# and Hello -> Welcome p50/p99 as the agents saw it. With --baseline the
# same runs alternate with an older dcu-controller binary, round by round,
# so a change is measured in one session on one machine.
# A run the loadgen reports errors for (streams that timed out while
# waiting to be welcomed, say) is still a row, marked so.
#   bench/loadgen/connect_storm.sh [--rounds 3] [--agents 10000] [--stores "sqlite postgres"] [--baseline OLD_CONTROLLER]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
ROUNDS=3
AGENTS=10000
BASELINE=""
STORES="sqlite postgres"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --agents) AGENTS="$2"; shift 2 ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    --stores) STORES="$2"; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--agents N] [--stores \"sqlite postgres\"] [--baseline OLD_CONTROLLER]" >&2; exit 2 ;;
  esac
done
[ -n "${DCU_BENCH_BIN:-}" ] || build_targets dcu-controller dcu-loadgen
BIN="${DCU_BENCH_BIN:-$BUILD_DIR/bin}"
source "$(dirname "${BASH_SOURCE[0]}")/../ha/lib.sh"
pg_start
ulimit -n $((AGENTS + 2000)) 2>/dev/null || {
  echo "connect_storm: cannot raise the open-file limit to $((AGENTS + 2000)); run as root or lower --agents" >&2
  exit 2
}

run() {  # WHICH(current|baseline) BACKEND ROUND
  local ctl="$BIN/dcu-controller" db out="$WORK/$1-$2-$3"
  [ "$1" = baseline ] && ctl="$BASELINE"
  if [ "$2" = sqlite ]; then db="$out.db"; else db="$(fresh_pg "c_$1_$3")"; fi
  local ok=1
  "$BIN/dcu-loadgen" --controller-bin "$ctl" --db "$db" --mode ingest --agents "$AGENTS" \
    --agents-per-connection 1 --connect-rate "$AGENTS" --report-interval 5 --duration 3 --warmup 1 \
    --keep-log "$out.controller.log" --json "$out.json" >"$out.txt" 2>&1 || ok=0
  [ -s "$out.json" ] || { echo "loadgen $1 $2 round $3 failed:" >&2; tail -20 "$out.txt" >&2; exit 1; }
  python3 - "$1" "$2" "$3" "$out.json" "$ok" <<'PY'
import json, sys
which, backend, rnd, path, ok = sys.argv[1:]
j = json.load(open(path))
c = j["connect_latency"]
rate = j["welcomed"] / max(j["connect_s"], 1e-9)
errors = "" if ok == "1" else f'{j["stream_errors"]} stream, {j["write_errors"]} write, {j["rpc_errors"]} RPC errors'
print(f'| {backend} | {which} | {rnd} | {j["connect_s"]:.2f} s | {rate:.0f}/s | {c["p50_ms"]:.2f} ms | {c["p99_ms"]:.2f} ms | {errors} |')
PY
}

echo "| store | controller | round | all welcomed | rate | Hello -> Welcome p50 | p99 | errors |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq 1 "$ROUNDS"); do
  for backend in $STORES; do
    [ -n "$BASELINE" ] && run baseline "$backend" "$r"
    run current "$backend" "$r"
  done
done
