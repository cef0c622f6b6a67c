# Shared by the HA benchmarks (bench/ha/*.sh, issue 21): a real PostgreSQL 15
# in a temp dir (as nobody when run as root; no system service), free
# loopback ports, controllers on one database, and cleanup by pid.
# Source it after scripts/lib/common.sh; it sets WORK, PG_PORT, PG_URL and
# appends every pid it starts to PIDS (killed on exit).
PGBIN=/usr/lib/postgresql/15/bin
[ -x "$PGBIN/postgres" ] || { echo "PostgreSQL 15 missing: apt-get install postgresql-15" >&2; exit 2; }

WORK="$(mktemp -d "/tmp/dcu-ha-bench.XXXXXX")"
chmod 755 "$WORK"
PIDS=()
PG_PID=""
ha_cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "$PG_PID" ]; then
    kill -INT "$PG_PID" 2>/dev/null || true
    wait "$PG_PID" 2>/dev/null || true
  fi
  if [ "${DCU_BENCH_KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap ha_cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
elapsed() { python3 -c "print('%.2f' % (float('$2') - float('$1')))"; }  # T0 T1

# pg_start: initdb + postgres on a free port; PG_URL names its database.
pg_start() {
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups); fi
  mkdir -p "$WORK/pg"
  [ "$(id -u)" = 0 ] && chown nobody:nogroup "$WORK/pg"
  "${as_pg[@]}" "$PGBIN/initdb" -D "$WORK/pg/data" -U dcufleet --auth=trust --encoding=UTF8 \
    --locale=C --no-sync >"$WORK/initdb.log" 2>&1
  PG_PORT="$(free_port)"
  "${as_pg[@]}" "$PGBIN/postgres" -D "$WORK/pg/data" -p "$PG_PORT" -k "$WORK/pg/data" \
    -c listen_addresses=127.0.0.1 -c max_connections=100 >"$WORK/postgres.log" 2>&1 &
  PG_PID=$!
  PG_URL="postgres://dcufleet@127.0.0.1:$PG_PORT/postgres"
  for _ in $(seq 1 100); do
    "$PGBIN/pg_isready" -h 127.0.0.1 -p "$PG_PORT" -q && return 0
    sleep 0.1
  done
  echo "PostgreSQL did not start; see $WORK/postgres.log" >&2
  exit 1
}

# fresh_pg NAME: an empty database per run, so no run inherits another's rows.
fresh_pg() {
  "$PGBIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U dcufleet -d postgres -q -c "CREATE DATABASE $1" >/dev/null
  echo "postgres://dcufleet@127.0.0.1:$PG_PORT/$1"
}

# Three controllers on PG_URL: ctl_start INDEX [extra dcu-controller flags].
# CTL_ARGS (array) is added to every start; CTL_PORTS and CTL_PID are
# indexed 0..2; CTL_ADDRS is the list clients are given.
CTL_PORTS=("$(free_port)" "$(free_port)" "$(free_port)")
CTL_PID=("" "" "")
CTL_ADDRS="127.0.0.1:${CTL_PORTS[0]},127.0.0.1:${CTL_PORTS[1]},127.0.0.1:${CTL_PORTS[2]}"
CTL_ARGS=()
ctl_start() {
  local i=$1; shift
  "$BIN/dcu-controller" --listen "127.0.0.1:${CTL_PORTS[$i]}" --db "$PG_URL" "${CTL_ARGS[@]}" "$@" \
    >>"$WORK/ctl-$i.log" 2>&1 &
  CTL_PID[$i]=$!
  PIDS+=($!)
}
# How many times controller INDEX has logged that it leads.
ctl_leads() { grep -c "leading on" "$WORK/ctl-$1.log" 2>/dev/null || true; }
# The index of the controller that serves (the leader), or failure.
ctl_leader() {
  local i
  for i in 0 1 2; do
    if "$BIN/dcuctl" --controller "127.0.0.1:${CTL_PORTS[$i]}" --timeout 2 get nodes >/dev/null 2>&1; then
      echo "$i"; return 0
    fi
  done
  return 1
}
# ctl_wait_takeover OLD BEFORE0 BEFORE1 BEFORE2: waits (60 s at most) until a
# controller other than OLD has logged that it leads once more than BEFOREi
# and answers `get nodes`; prints its index.
ctl_wait_takeover() {
  local old=$1 i; shift
  local before=("$@")
  for _ in $(seq 1 1200); do
    for i in 0 1 2; do
      [ "$i" = "$old" ] && continue
      if [ "$(ctl_leads "$i")" -gt "${before[$i]}" ] &&
         "$BIN/dcuctl" --controller "127.0.0.1:${CTL_PORTS[$i]}" --timeout 2 get nodes >/dev/null 2>&1; then
        echo "$i"; return 0
      fi
    done
    sleep 0.05
  done
  return 1
}
