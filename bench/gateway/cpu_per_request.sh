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
WORK="$(mktemp -d /tmp/dcu-gateway-cpu.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.05; done; return 1; }

servers="" sep="" hasrv=""
for i in 0 1 2 3; do
  p="$(free_port)"
  "$BIN/fake_vllm" --model /models/bench-model --served-model-name bench-model --host 127.0.0.1 \
    --port "$p" --fake-ttft-ms 0 --fake-token-delay-ms 0 --fake-max-concurrency 0 \
    >"$WORK/replica-$i.log" 2>&1 &
  PIDS+=($!)
  servers+="$sep{\"host\":\"127.0.0.1\",\"port\":$p}"; sep=","
  hasrv+="  server r$i 127.0.0.1:$p"$'\n'
  wait_port "$p"
done
echo "{\"models\":[{\"deployment\":\"bench-model\",\"replicas\":[$servers]}]}" >"$WORK/replicas.json"
HA_PORT="$(free_port)"
printf 'global\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server 120s\nfrontend fe\n  bind 127.0.0.1:%s\n  default_backend be\nbackend be\n  balance roundrobin\n%s' \
  "$HA_PORT" "$hasrv" >"$WORK/haproxy.cfg"
haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
PIDS+=($!); HA_PID=$!
wait_port "$HA_PORT"
start_gateway() {  # BINARY -> GW_PORT GW_PID
  GW_PORT="$(free_port)"
  "$1" --replicas-file "$WORK/replicas.json" --listen "127.0.0.1:$GW_PORT" --threads 2 \
    --queue-size 10000 >>"$WORK/gateway.log" 2>&1 &
  GW_PID=$!; PIDS+=($GW_PID)
  wait_port "$GW_PORT"
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
