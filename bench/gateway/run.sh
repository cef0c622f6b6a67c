#!/usr/bin/env bash
# The gateway benchmark (issue 17), opt-in: never part of scripts/test.
#   bench/gateway/run.sh [--requests 5000] [--concurrency 200] [--overhead-only]
#     [--baseline PATH]
# --baseline PATH: a second dcu-gateway binary (say, main's) measured in the
# same run, one row more in table 1, for before/after figures side by side.
# Side by side in one run, on fake_vllm replicas on loopback:
#   1. overhead: direct to one fast replica vs HAProxy (roundrobin) vs
#      dcu-gateway, 4 instant replicas;
#   2. routing quality: 4 replicas, one 4x slower, each running at most 32
#      requests at once (the rest wait, as vLLM's --max-num-seqs): HAProxy
#      roundrobin, HAProxy leastconn, dcu-gateway. p50/p99 and the max/min
#      per-replica request ratio (from each replica's vllm:request_success_total).
# Installs Debian's haproxy when missing. Prints a Markdown table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REQUESTS=5000
CONCURRENCY=200
OVERHEAD_CONCURRENCY=32
OVERHEAD_ONLY=0
BASELINE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) REQUESTS="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --overhead-only) OVERHEAD_ONLY=1; shift ;;
    --baseline) BASELINE="$(realpath "$2")"; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--concurrency C] [--overhead-only] [--baseline PATH]" >&2; exit 2 ;;
  esac
done

ensure_haproxy
# GATEWAY_BENCH_BIN=DIR: binaries already built there (skips the build).
if [ -z "${GATEWAY_BENCH_BIN:-}" ]; then build_targets dcu-gateway fake_vllm gateway-loadgen; fi
BIN="${GATEWAY_BENCH_BIN:-$BUILD_DIR/bin}"
bench_start dcu-gateway-bench

MODEL=bench-model
REPLICA_PORTS=()
start_replicas() {  # "TTFT DELAY MAXCONC" per replica
  stop_all
  REPLICA_PORTS=()
  local i=0
  for spec in "$@"; do
    read -r ttft delay maxc <<<"$spec"
    start_fake_replica "$MODEL" "$ttft" "$delay" "$maxc" "$WORK/replica-$i.log"
    REPLICA_PORTS+=("$REPLICA_PORT")
    i=$((i + 1))
  done
  for p in "${REPLICA_PORTS[@]}"; do wait_http "$p" /health; done
}
stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}

start_gateway() {  # [BINARY]
  local gateway="${1:-$BIN/dcu-gateway}"
  replicas_json "$MODEL" "${REPLICA_PORTS[@]}" >"$WORK/replicas.json"
  GW_PORT="$(free_port)"
  "$gateway" --replicas-file "$WORK/replicas.json" --listen "127.0.0.1:$GW_PORT" \
    --threads 2 --queue-size 10000 >"$WORK/gateway.log" 2>&1 &
  PIDS+=($!)
  wait_http "$GW_PORT" /healthz
}

start_haproxy() {  # BALANCE
  HA_PORT="$(free_port)"
  haproxy_cfg "$HA_PORT" "$1" "${REPLICA_PORTS[@]}" >"$WORK/haproxy.cfg"
  haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
  PIDS+=($!)
  wait_http "$HA_PORT" /health --any || { cat "$WORK/haproxy.log" >&2; return 1; }
}

served_counts() {  # prints the per-replica vllm:request_success_total{length}
  for p in "${REPLICA_PORTS[@]}"; do
    curl -fsS "http://127.0.0.1:$p/metrics" |
      awk '/^vllm:request_success_total\{.*finished_reason="length"/ {print int($2)}'
  done | paste -sd' '
}

loadgen() {  # PORT REQUESTS CONCURRENCY MAX_TOKENS
  local body="{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":$4}"
  "$BIN/gateway-loadgen" --port "$1" --requests "$2" --concurrency "$3" --body "$body" || true
}
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

row() {  # NAME JSON COUNTS
  local counts="$3" ratio="-"
  if [ -n "$counts" ]; then
    ratio="$(python3 -c "import sys; c=[int(x) for x in sys.argv[1].split()]; print('%.2f' % (max(c)/max(1,min(c))) + ' (' + '/'.join(map(str,c)) + ')')" "$counts")"
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(field "$2" req_per_s)" "$(field "$2" p50_ms)" \
    "$(field "$2" p99_ms)" "$(field "$2" failures)" "$ratio"
}

echo "## Overhead: 4 instant replicas, $OVERHEAD_CONCURRENCY clients, $REQUESTS requests (max_tokens 1)"
echo
echo "| path | req/s | p50 ms | p99 ms | failed | per-replica max/min |"
echo "| --- | --- | --- | --- | --- | --- |"
start_replicas "0 0 0" "0 0 0" "0 0 0" "0 0 0"
loadgen "${REPLICA_PORTS[0]}" 500 "$OVERHEAD_CONCURRENCY" 1 >/dev/null  # warm-up
row "direct (one replica)" "$(loadgen "${REPLICA_PORTS[0]}" "$REQUESTS" "$OVERHEAD_CONCURRENCY" 1)" ""
start_haproxy roundrobin
loadgen "$HA_PORT" 500 "$OVERHEAD_CONCURRENCY" 1 >/dev/null
row "HAProxy roundrobin" "$(loadgen "$HA_PORT" "$REQUESTS" "$OVERHEAD_CONCURRENCY" 1)" ""
start_gateway
loadgen "$GW_PORT" 500 "$OVERHEAD_CONCURRENCY" 1 >/dev/null
row "dcu-gateway" "$(loadgen "$GW_PORT" "$REQUESTS" "$OVERHEAD_CONCURRENCY" 1)" ""
if [ -n "$BASELINE" ]; then
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'
  start_gateway "$BASELINE"
  loadgen "$GW_PORT" 500 "$OVERHEAD_CONCURRENCY" 1 >/dev/null
  row "dcu-gateway (baseline)" "$(loadgen "$GW_PORT" "$REQUESTS" "$OVERHEAD_CONCURRENCY" 1)" ""
fi
[ "$OVERHEAD_ONLY" = 1 ] && exit 0

FAST="10 2.5 32"
SLOW="40 10 32"
echo
echo "## Routing: 4 replicas (ttft 10 ms + 2.5 ms/token; one 4x slower), at most 32 running each,"
echo "## $CONCURRENCY clients, $REQUESTS requests of 16 tokens"
echo
echo "| balancer | req/s | p50 ms | p99 ms | failed | per-replica max/min (counts, slow last) |"
echo "| --- | --- | --- | --- | --- | --- |"
for balancer in "haproxy roundrobin" "haproxy leastconn" "dcu-gateway"; do
  start_replicas "$FAST" "$FAST" "$FAST" "$SLOW"
  if [ "$balancer" = "dcu-gateway" ]; then start_gateway; port="$GW_PORT"
  else start_haproxy "${balancer#haproxy }"; port="$HA_PORT"; fi
  out="$(loadgen "$port" "$REQUESTS" "$CONCURRENCY" 16)"
  row "$balancer" "$out" "$(served_counts)"
done
