# Shared set-up of the gateway benchmarks (run.sh, cpu_per_request.sh,
# fleet.sh): one work directory per run with every process it starts killed
# on exit, free loopback ports, fake_vllm replicas and the HAProxy peer.
# Sourced after scripts/lib/common.sh; sets WORK and PIDS.

# bench_start NAME: a fresh work directory and the exit trap that stops
# every pid in PIDS and, with --engines, every process whose command line
# names the work directory (engines an agent launched run in their own
# sessions and outlive it).
bench_start() {
  WORK="$(mktemp -d "/tmp/$1.XXXXXX")"
  PIDS=()
  BENCH_KILL_ENGINES="${2:-}"
  trap bench_cleanup EXIT
}
bench_cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "$BENCH_KILL_ENGINES" = --engines ]; then
    for cmd in /proc/[0-9]*/cmdline; do
      if { tr '\0' ' ' < "$cmd"; } 2>/dev/null | grep -q "$WORK/"; then
        pid=${cmd#/proc/}; kill -9 "${pid%/cmdline}" 2>/dev/null || true
      fi
    done
  fi
  wait 2>/dev/null || true
  rm -rf "$WORK"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_http PORT [PATH] [--any]: until something answers on the port (2xx,
# or any status with --any: HAProxy answers 503 while it checks nothing).
wait_http() {
  local curl_fail=-f
  [ "${3:-}" = --any ] && curl_fail=""
  for _ in $(seq 1 200); do
    curl $curl_fail -sS -o /dev/null "http://127.0.0.1:$1${2:-/}" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing answers on port $1" >&2; return 1
}

ensure_haproxy() {
  command -v haproxy >/dev/null && return 0
  log "installing haproxy (Debian) for the benchmark"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y -qq --no-install-recommends haproxy >/dev/null
}

# start_fake_replica MODEL TTFT_MS TOKEN_DELAY_MS MAX_CONCURRENCY LOG: starts
# one replica on a free port, left in REPLICA_PORT; its pid joins PIDS.
start_fake_replica() {
  REPLICA_PORT="$(free_port)"
  "$BIN/fake_vllm" --model "/models/$1" --served-model-name "$1" --host 127.0.0.1 \
    --port "$REPLICA_PORT" --fake-ttft-ms "$2" --fake-token-delay-ms "$3" \
    --fake-max-concurrency "$4" >"$5" 2>&1 &
  PIDS+=($!)
}

# replicas_json MODEL PORT...: dcu-gateway's --replicas-file for one model.
replicas_json() {
  local model="$1" servers="" sep=""
  shift
  for p in "$@"; do servers+="$sep{\"host\":\"127.0.0.1\",\"port\":$p}"; sep=","; done
  echo "{\"models\":[{\"deployment\":\"$model\",\"replicas\":[$servers]}]}"
}

# haproxy_cfg LISTEN_PORT BALANCE PORT...: the peer's configuration.
haproxy_cfg() {
  local listen="$1" balance="$2" i=0
  shift 2
  printf 'global\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 2s\n'
  printf '  timeout client 120s\n  timeout server 120s\nfrontend fe\n  bind 127.0.0.1:%s\n' "$listen"
  printf '  default_backend be\nbackend be\n  balance %s\n' "$balance"
  for p in "$@"; do echo "  server r$i 127.0.0.1:$p"; i=$((i + 1)); done
}
