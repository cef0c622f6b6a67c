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
  local ctl="$BIN/dcu-controller" db txt="$WORK/$1-$2-$3.txt"
  [ "$1" = baseline ] && ctl="$BASELINE"
  if [ "$2" = sqlite ]; then db="$WORK/$1-$2-$3.db"; else db="$(fresh_pg "c_$1_$3")"; fi
  "$BIN/dcu-loadgen" --controller-bin "$ctl" --db "$db" --mode ingest --agents "$AGENTS" \
    --agents-per-connection 1 --connect-rate "$AGENTS" --report-interval 5 --duration 3 --warmup 1 \
    --keep-log "$WORK/$1-$2-$3.controller.log" \
    >"$txt" 2>&1 || true
  grep -q '^connect:' "$txt" || { echo "loadgen $1 $2 round $3 failed:" >&2; tail -20 "$txt" >&2; exit 1; }
  # "connect: 10000/10000 agents welcomed in 11.26 s (888/s); Hello -> Welcome p50 60.84 ms  p90 ... p99 436.26 ms ..."
  python3 - "$1" "$2" "$3" "$txt" <<'PY'
import re, sys
which, backend, rnd, path = sys.argv[1:]
line = next(l for l in open(path) if l.startswith("connect:"))
m = re.search(r"welcomed in ([\d.]+) s \((\d+)/s\).*p50 ([\d.]+) ms.*p99 ([\d.]+) ms", line)
errors = next((l.strip() for l in open(path) if l.startswith("errors:")), "")
ok = any(l.startswith("result: completed without errors") for l in open(path))
print(f"| {backend} | {which} | {rnd} | {m.group(1)} s | {m.group(2)}/s | {m.group(3)} ms | {m.group(4)} ms |"
      + (" |" if ok else f" {errors} |"))
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
