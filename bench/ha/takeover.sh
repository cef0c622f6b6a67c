#!/usr/bin/env bash
# Leader takeover (issue 21), opt-in, never part of scripts/test: three
# dcu-controllers on one real PostgreSQL 15 (started here, in a temp dir,
# as nobody when run as root), the leader SIGKILLed KILLS times. Each kill's
# takeover time runs from the SIGKILL until a standby logs that it leads and
# answers `dcuctl get nodes` (it decides and serves); the killed controller
# is restarted as a standby before the next kill. A dcuctl writer creates an
# API key every 0.2 s through all three addresses meanwhile: every key it
# was told was created must be in the database at the end (acknowledged
# writes lost: 0), none twice.
#   bench/ha/takeover.sh [--kills 10] [--lease 6] [--renew 2]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"

KILLS=10
LEASE=6
RENEW=2
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) KILLS="$2"; shift 2 ;;
    --lease) LEASE="$2"; shift 2 ;;
    --renew) RENEW="$2"; shift 2 ;;
    *) echo "usage: $0 [--kills N] [--lease S] [--renew S]" >&2; exit 2 ;;
  esac
done
[ -n "${DCU_BENCH_BIN:-}" ] || build_targets dcu-controller dcuctl
BIN="${DCU_BENCH_BIN:-$BUILD_DIR/bin}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pg_start
CTL_ARGS=(--lease "$LEASE" --lease-renew "$RENEW")
for i in 0 1 2; do ctl_start "$i"; sleep 0.3; done
ADDRS="$CTL_ADDRS"

# The writer: one key per 0.2 s, through the whole list; acknowledged names
# go to acked.txt.
(
  n=0
  while [ ! -f "$WORK/stop-writer" ]; do
    n=$((n + 1))
    if "$BIN/dcuctl" --controller "$ADDRS" --timeout 5 apikey create "k$n" >/dev/null 2>&1; then
      echo "k$n" >>"$WORK/acked.txt"
    fi
    sleep 0.2
  done
) &
WRITER=$!
PIDS+=($WRITER)

for _ in $(seq 1 300); do ctl_leader >/dev/null && break; sleep 0.1; done

TIMES=()
for k in $(seq 1 "$KILLS"); do
  L="$(ctl_leader)" || { echo "no leader before kill $k" >&2; exit 1; }
  before=()
  for i in 0 1 2; do before+=("$(ctl_leads "$i")"); done
  t0="$(now)"
  kill -9 "${CTL_PID[$L]}"
  wait "${CTL_PID[$L]}" 2>/dev/null || true
  new="$(ctl_wait_takeover "$L" "${before[@]}")" || new=""
  t1="$(now)"
  [ -n "$new" ] || { echo "no takeover within 60 s after kill $k" >&2; exit 1; }
  TIMES+=("$(python3 -c "print('%.2f' % (float('$t1') - float('$t0')))")")
  log "kill $k: controller $L killed, controller $new leads after ${TIMES[-1]} s"
  ctl_start "$L"
  sleep 1
done
touch "$WORK/stop-writer"
wait "$WRITER" 2>/dev/null || true
KEYS="$("$BIN/dcuctl" --controller "$ADDRS" --timeout 10 apikey list -o json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("keys", d.get("items", d)) if isinstance(d, dict) else d; print(" ".join(k["name"] for k in d))')"
python3 - "$LEASE" "$RENEW" "${TIMES[*]}" "$WORK/acked.txt" "$KEYS" <<'PY'
import statistics, sys
lease, renew, times, acked_file, keys = sys.argv[1:6]
t = sorted(float(x) for x in times.split())
acked = [l.strip() for l in open(acked_file)] if times else []
present = keys.split()
lost = [a for a in acked if a not in present]
dups = len(present) - len(set(present))
p99 = t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]
print(f"## Takeover: 3 controllers, lease {lease} s, renewed every {renew} s, {len(t)} SIGKILLs of the leader\n")
print("| takeover p50 s | p99 s | max s | acknowledged writes | lost | duplicated |")
print("| --- | --- | --- | --- | --- | --- |")
print(f"| {statistics.median(t):.2f} | {p99:.2f} | {t[-1]:.2f} | {len(acked)} | {len(lost)} | {dups} |")
print("\nper kill (s):", " ".join(f"{x:.2f}" for x in t))
if lost: print("lost:", " ".join(lost))
PY
