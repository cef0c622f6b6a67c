#!/usr/bin/env bash
# Agent CPU per report with and without --metrics-listen (issue 18).
#   bench/metrics/agent_cpu.sh [SECONDS [INTERVAL]]   (default 60 s, a report every 0.2 s;
#                                                      build dir: $DCU_BUILD_DIR or ./build)
# A real dcu-controller and a real dcu-agent on the k100ai-8x fixture (8
# devices, sysfs/KFD probe, holder scan) report once per INTERVAL; with metrics
# on, /metrics is scraped every second (a scrape per two reports: far more
# often than Prometheus' usual 15 s). CPU ticks are 10 ms: run long enough. CPU is the agent's utime+stime from
# /proc/PID/stat, reports its dcu_agent_reports_total (on) or the same count
# of intervals (off).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${DCU_BUILD_DIR:-$REPO/build}/bin"
SECS="${1:-60}"
INTERVAL="${2:-0.2}"
TMP="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
TICK=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$BIN/dcu-controller" --listen 127.0.0.1:0 --port-file "$TMP/port" --db "$TMP/db" \
  --status-interval "$INTERVAL" >"$TMP/controller.log" 2>&1 &
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
CTL="127.0.0.1:$(cat "$TMP/port")"

run() {  # run on|off
  local mode=$1 args=() mport=""
  if [ "$mode" = on ]; then
    mport=$((20000 + RANDOM % 20000))
    args=(--metrics-listen "127.0.0.1:$mport")
  fi
  "$BIN/dcu-agent" --controller "$CTL" --node "bench-$mode" --state-dir "$TMP/state-$mode" \
    --root "$REPO/tests/fixtures/sysfs/k100ai-8x/root" --device-probe sysfs_kfd \
    --runtimes bare --container-cli none "${args[@]}" >"$TMP/agent-$mode.log" 2>&1 &
  local pid=$!
  sleep 3  # connected, first reports sent
  local t0; t0=$(cpu_ticks "$pid")
  local r0=0 loop=""
  if [ "$mode" = on ]; then
    r0=$(curl -s "http://127.0.0.1:$mport/metrics" | awk '/^dcu_agent_reports_total/ {print $2}')
    ( while sleep 1; do curl -s -o /dev/null "http://127.0.0.1:$mport/metrics"; done ) &
    loop=$!
  fi
  sleep "$SECS"
  local t1; t1=$(cpu_ticks "$pid")
  local reports
  if [ "$mode" = on ]; then
    local r1; r1=$(curl -s "http://127.0.0.1:$mport/metrics" | awk '/^dcu_agent_reports_total/ {print $2}')
    reports=$(awk -v a="$r0" -v b="$r1" 'BEGIN {print b - a}')
    kill "$loop" 2>/dev/null || true
  else
    reports=$(awk -v s="$SECS" -v i="$INTERVAL" 'BEGIN {print s / i}')
  fi
  local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  awk -v m="$mode" -v t="$((t1 - t0))" -v hz="$TICK" -v n="$reports" -v rss="$rss" 'BEGIN {
    printf "metrics %-3s: %d reports, agent CPU %.2f s = %.2f ms per report, RSS %.1f MiB\n",
           m, n, t / hz, 1000 * t / hz / n, rss / 1024 }'
}
run off
run on
