#!/usr/bin/env bash
# ensure-docker.sh: make a Docker engine usable for the container tests.
#
# Installs docker.io (Debian, --no-install-recommends) when dockerd is
# missing, starts dockerd in the background when no engine answers, and waits
# for it. Idempotent. Exits 0 when `docker info` answers, 1 otherwise, and
# always prints why on stderr; the container tests then skip with the reason
# written to $DCU_DOCKER_STATUS_FILE (default /tmp/dcufleet-docker.status).
#
# Environment:
#   DCU_DOCKER_LOG          dockerd log file (default /tmp/dcufleet-dockerd.log)
#   DCU_DOCKER_WAIT_S       seconds to wait for the engine (default 30)
#   DCU_DOCKER_NO_INSTALL   when 1, never run apt-get
#   DCU_DOCKER_STATUS_FILE  where the outcome line is written
set -u

log_file="${DCU_DOCKER_LOG:-/tmp/dcufleet-dockerd.log}"
wait_s="${DCU_DOCKER_WAIT_S:-30}"
status_file="${DCU_DOCKER_STATUS_FILE:-/tmp/dcufleet-docker.status}"

say() { echo "ensure-docker: $*" >&2; }
finish() {
  # $1 = exit code, $2 = one-line outcome
  echo "$2" >"$status_file" 2>/dev/null || true
  say "$2"
  exit "$1"
}

# An engine that answers may still be unable to run anything (dockerd inside
# an unprivileged container: "Error creating mount namespace before pivot:
# operation not permitted"). Import a one-file image and run it; the outcome
# decides "ok" or "unusable", and the tests skip, saying why, on the latter.
probe_engine() {
  local dir img out
  dir=$(mktemp -d)
  img="dcufleet-engine-probe:latest"
  mkdir -p "$dir/bin"
  if [ -x /bin/bash-static ]; then cp /bin/bash-static "$dir/bin/sh"; else : > "$dir/probe"; fi
  if ! out=$(tar -C "$dir" -c . 2>/dev/null | docker import - "$img" 2>&1); then
    rm -rf "$dir"
    echo "docker import failed: $(echo "$out" | tail -1)"
    return 1
  fi
  rm -rf "$dir"
  if [ -x /bin/bash-static ]; then
    if ! out=$(docker run --rm --network host "$img" /bin/sh -c 'exit 0' 2>&1); then
      docker rmi -f "$img" >/dev/null 2>&1 || true
      echo "docker run failed: $(echo "$out" | tail -1)"
      return 1
    fi
  fi
  docker rmi -f "$img" >/dev/null 2>&1 || true
  return 0
}

finish_probed() {
  # $1 = outcome when the engine works
  local why
  if why=$(probe_engine); then
    finish 0 "$1"
  fi
  finish 1 "unusable: the engine answers but cannot run containers here: $why"
}

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  finish_probed "ok: docker engine already running ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if [ "${DCU_DOCKER_NO_INSTALL:-0}" = "1" ]; then
    finish 1 "unavailable: dockerd is not installed and DCU_DOCKER_NO_INSTALL=1"
  fi
  if [ "$(id -u)" != "0" ]; then
    finish 1 "unavailable: dockerd is not installed and installing it needs root"
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    finish 1 "unavailable: dockerd is not installed and apt-get is missing"
  fi
  say "installing docker.io (apt-get, --no-install-recommends)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends docker.io >>"$log_file.apt" 2>&1; then
    apt-get update >>"$log_file.apt" 2>&1 || true
    if ! apt-get install -y --no-install-recommends docker.io >>"$log_file.apt" 2>&1; then
      finish 1 "unavailable: apt-get install docker.io failed (see $log_file.apt)"
    fi
  fi
fi

if ! command -v docker >/dev/null 2>&1; then
  finish 1 "unavailable: docker CLI missing after install"
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != "0" ]; then
    finish 1 "unavailable: dockerd is not running and starting it needs root"
  fi
  say "starting dockerd (log: $log_file)"
  # A sandbox without iptables/bridge support still runs containers with
  # --network host, which is all the tests use.
  extra=()
  if ! iptables -L >/dev/null 2>&1; then
    extra+=(--iptables=false --bridge=none)
  fi
  nohup dockerd "${extra[@]}" >>"$log_file" 2>&1 &
  echo $! >/tmp/dcufleet-dockerd.pid
fi

for _ in $(seq 1 "$wait_s"); do
  if docker info >/dev/null 2>&1; then
    finish_probed "ok: docker engine started ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
  fi
  if [ -f /tmp/dcufleet-dockerd.pid ] && ! kill -0 "$(cat /tmp/dcufleet-dockerd.pid)" 2>/dev/null; then
    break
  fi
  sleep 1
done
reason="$(grep -iE 'level=(fatal|error)|failed to start' "$log_file" 2>/dev/null | tail -n 1 | cut -c1-300)"
finish 1 "unavailable: dockerd did not answer within ${wait_s}s${reason:+: $reason}"
