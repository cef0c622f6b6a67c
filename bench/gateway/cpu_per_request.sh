#!/usr/bin/env bash
# The gateway benchmark's steadier figure (issue 17), opt-in, never part of
# scripts/test: CPU time the proxy process spends per request (utime + stime
# from /proc, all its threads), HAProxy against dcu-gateway, on the overhead
# setup of run.sh (4 instant fake_vllm replicas, 32 closed-loop clients,
# Connection: close). On a shared, loaded machine req/s swings with whatever
# else runs; the CPU a request costs the proxy swings far less.
#   bench/gateway/cpu_per_request.sh [--requests 10000] [--rounds 2] [--baseline PATH]
# --baseline PATH: a second dcu-gateway binary measured in the same rounds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=10000
ROUNDS=2
BASELINE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) N="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --baseline) BASELINE="$(realpath "$2")"; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--rounds R] [--baseline PATH]" >&2; exit 2 ;;
  esac
done
if [ -z "${GATEWAY_BENCH_BIN:-}" ]; then build_targets dcu-gateway fake_vllm gateway-loadgen; fi
BIN="${GATEWAY_BENCH_BIN:-$BUILD_DIR/bin}"
bench_start dcu-gateway-cpu
ensure_haproxy

REPLICA_PORTS=()
for i in 0 1 2 3; do
  start_fake_replica bench-model 0 0 0 "$WORK/replica-$i.log"
  REPLICA_PORTS+=("$REPLICA_PORT")
done
for p in "${REPLICA_PORTS[@]}"; do wait_http "$p" /health; done
replicas_json bench-model "${REPLICA_PORTS[@]}" >"$WORK/replicas.json"
HA_PORT="$(free_port)"
haproxy_cfg "$HA_PORT" roundrobin "${REPLICA_PORTS[@]}" >"$WORK/haproxy.cfg"
haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
PIDS+=($!); HA_PID=$!
wait_http "$HA_PORT" /health --any
start_gateway() {  # BINARY -> GW_PORT GW_PID
  GW_PORT="$(free_port)"
  "$1" --replicas-file "$WORK/replicas.json" --listen "127.0.0.1:$GW_PORT" --threads 2 \
    --queue-size 10000 >>"$WORK/gateway.log" 2>&1 &
  GW_PID=$!; PIDS+=($GW_PID)
  wait_http "$GW_PORT" /healthz
}
start_gateway "$BIN/dcu-gateway"; GW1_PORT=$GW_PORT; GW1_PID=$GW_PID
if [ -n "$BASELINE" ]; then start_gateway "$BASELINE"; GW2_PORT=$GW_PORT; GW2_PID=$GW_PID; fi

BODY='{"model":"bench-model","messages":[{"role":"user","content":"hello"}],"max_tokens":1}'
HZ="$(getconf CLK_TCK)"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() {  # NAME PORT PID
  "$BIN/gateway-loadgen" --port "$2" --requests 500 --concurrency 32 --body "$BODY" >/dev/null || true
  local t0 t1 out
  t0="$(ticks "$3")"
  out="$("$BIN/gateway-loadgen" --port "$2" --requests "$N" --concurrency 32 --body "$BODY" || true)"
  t1="$(ticks "$3")"
  python3 -c '
import json, sys
d = json.loads(sys.argv[2])
us = (int(sys.argv[4]) - int(sys.argv[3])) * 1e6 / int(sys.argv[5]) / int(sys.argv[6])
print("| %s | %.0f | %.2f | %.2f | %d | %.0f |" % (sys.argv[1], d["req_per_s"], d["p50_ms"], d["p99_ms"], d["failures"], us))
' "$1" "$out" "$t0" "$t1" "$HZ" "$N"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| proxy | req/s | p50 ms | p99 ms | failed | CPU us/request |"
echo "| --- | --- | --- | --- | --- | --- |"
for _ in $(seq 1 "$ROUNDS"); do
  measure "HAProxy roundrobin" "$HA_PORT" "$HA_PID"
  measure "dcu-gateway" "$GW1_PORT" "$GW1_PID"
  if [ -n "$BASELINE" ]; then measure "dcu-gateway (baseline)" "$GW2_PORT" "$GW2_PID"; fi
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
