#!/usr/bin/env bash
# The gateway benchmark's rows 3 and 4 (issue 17), opt-in, never part of
# scripts/test: a real fleet on loopback. dcu-controller, one dcu-agent on a
# simulated K100_AI node (scripts/lib/simfleet.sh seed000) whose replicas
# are fake_vllm processes the agent launches, and dcu-gateway following the
# controller. Load: gateway-loadgen, non-streaming chat completions.
#   3. failover under load: 2 replicas, SIGKILL one replica's engine
#      mid-run: requests that failed, and the time from the kill until the
#      deployment has 2 Ready replicas again (the agent sees the death, the
#      controller diagnoses it and relaunches, the gateway routes to it);
#   4. controller down: SIGKILL the controller mid-run and start it again
#      DOWN seconds later (30 by default): requests that failed.
#   bench/gateway/fleet.sh [--down 30] [--concurrency 16]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOWN=30
CONCURRENCY=16
while [ $# -gt 0 ]; do
  case "$1" in
    --down) DOWN="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    *) echo "usage: $0 [--down SECONDS] [--concurrency C]" >&2; exit 2 ;;
  esac
done

if [ -z "${GATEWAY_BENCH_BIN:-}" ]; then
  build_targets dcu-controller dcu-agent dcuctl dcu-memprobe dcu-gateway fake_vllm fake_hip_good \
    fake_rsmi_good fake_rsmi_noinit gateway-loadgen
fi
BIN="${GATEWAY_BENCH_BIN:-$BUILD_DIR/bin}"
# The engines run in their own sessions (they outlive an agent restart).
bench_start dcu-fleet-bench --engines

CTL="127.0.0.1:$(free_port)"
GW_PORT="$(free_port)"
ctl() { "$BIN/dcuctl" --controller "$CTL" "$@"; }
now() { date +%s.%N; }

log "simulated node in $WORK"
SIM_REPO="$REPO_ROOT" bash "$REPO_ROOT/scripts/lib/simfleet.sh" "$WORK/sim" "$BUILD_DIR" seed000
# Only the stack that serves, fast start-up, and a service time like a small
# model's: 20 ms to the first token, 5 ms per token after.
rm -rf "$WORK/sim/k100/envs/vllm-0.11.0-dtk2604"
echo '{"load_seconds": 0.5, "shards": 2, "service": {"ttft_ms": 20, "token_delay_ms": 5}}' \
  > "$WORK/sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"
mkdir -p "$WORK/catalog"
cp -r "$REPO_ROOT/deploy/catalog/stacks" "$REPO_ROOT/deploy/catalog/models" "$WORK/catalog/"

start_controller() {
  "$BIN/dcu-controller" --listen "$CTL" --db "$WORK/controller.db" --catalog "$WORK/catalog" \
    --status-interval 1 --not-ready-after 10 --instance-port-base "$(( $(free_port) / 2 + 20000 ))" \
    >>"$WORK/controller.log" 2>&1 &
  CTL_PID=$!
  PIDS+=("$CTL_PID")
  for _ in $(seq 100); do ctl --timeout 1 version >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "controller did not start: $WORK/controller.log" >&2; exit 1
}
start_controller
FAKE_HIP_DEVICES="$(cat "$WORK/sim/k100/hip-devices")" "$BIN/dcu-agent" --controller "$CTL" \
  --node node-k100 --root "$WORK/sim/k100/root" --state-dir "$WORK/state" \
  --model-root "$WORK/sim/k100/models" --env-root "$WORK/sim/k100/envs" \
  --hip_library "$BUILD_DIR/testlibs/hip_good/libamdhip64.so" --container-cli none \
  >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
"$BIN/dcu-gateway" --controller "$CTL" --listen "127.0.0.1:$GW_PORT" >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do ctl get nodes 2>/dev/null | grep -q ' Ready ' && break; sleep 0.2; done
ctl deploy qwen3-32b --tp 2 --replicas 2 --wait --wait-timeout 120 >/dev/null
ready() {
  ctl get deployment qwen3-32b -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d.get("deployment", d).get("ready_replicas", 0))' 2>/dev/null || echo 0
}
for _ in $(seq 100); do
  curl -s "http://127.0.0.1:$GW_PORT/v1/models" | grep -q '"ready_replicas":2' && break
  sleep 0.2
done

BODY='{"model":"qwen3-32b","messages":[{"role":"user","content":"hello"}],"max_tokens":8}'
# ~55 ms a request (20 + 7 x 5), C clients: N requests last about N*0.055/C s.
load() {  # REQUESTS OUT
  "$BIN/gateway-loadgen" --port "$GW_PORT" --requests "$1" --concurrency "$CONCURRENCY" \
    --body "$BODY" > "$2" || true
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# 3. Failover under load.
REQ3=$(( CONCURRENCY * 20 * 1000 / 55 ))   # ~20 s
load "$REQ3" "$WORK/row3.json" &
LOAD=$!
sleep 5
victim=$(ctl get node node-k100 -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
node = d.get("node", d)
print([i["pid"] for i in node["instances"] if i.get("phase") == "INSTANCE_READY"][0])')
t_kill=$(now)
kill -9 "$victim"
# Until the controller has seen the death (Ready drops), then until both
# replicas are Ready again.
for _ in $(seq 200); do [ "$(ready)" -lt 2 ] && break; sleep 0.05; done
for _ in $(seq 1200); do [ "$(ready)" -ge 2 ] && break; sleep 0.05; done
t_back=$(now)
wait "$LOAD"
recover=$(awk -v a="$t_kill" -v b="$t_back" 'BEGIN{printf "%.1f", b-a}')

# 4. Controller down for DOWN seconds under load.
REQ4=$(( CONCURRENCY * (DOWN + 15) * 1000 / 55 ))
load "$REQ4" "$WORK/row4.json" &
LOAD=$!
sleep 5
kill -9 "$CTL_PID"
sleep "$DOWN"
start_controller
wait "$LOAD"

echo "| row | requests | failed | req/s | p50 ms | p99 ms | other |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "| 3. 2 replicas, one engine SIGKILLed at 5 s | $(field "$WORK/row3.json" requests) | $(field "$WORK/row3.json" failures) | $(field "$WORK/row3.json" req_per_s) | $(field "$WORK/row3.json" p50_ms) | $(field "$WORK/row3.json" p99_ms) | 2 Ready again ${recover} s after the kill |"
echo "| 4. controller SIGKILLed at 5 s, back after ${DOWN} s | $(field "$WORK/row4.json" requests) | $(field "$WORK/row4.json" failures) | $(field "$WORK/row4.json" req_per_s) | $(field "$WORK/row4.json" p50_ms) | $(field "$WORK/row4.json" p99_ms) | $CONCURRENCY clients |"
