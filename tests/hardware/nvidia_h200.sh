#!/usr/bin/env bash
# The NVIDIA hardware drill: proves on a real GPU what the DCU path proves
# on fixtures -- the agent's two memory views, its holder scan, its reaping
# and a supervised CUDA launch. One call, on a machine with one NVIDIA GPU,
# PyTorch and the driver (the lent nvidia-h200 machine: see docs/nvidia.md).
#
#   nvidia_h200.sh OUT_DIR [BUNDLE_DIR]
#
# BUNDLE_DIR (default: <this dir>/bundle, made by make_nvidia_bundle.sh)
# holds bin/dcu-nvdrill, bin/dcu-memprobe and lib/ (their shared libraries;
# lib-fallback/ has libstdc++ for an older system). Without a usable
# bundle the drill still records the raw views (dcu-memprobe is rebuilt
# from agent/memprobe/ with the machine's compiler when the source is there).
#
# Phases: idle; a process holding DRILL_GIB GiB (default 20) through
# PyTorch; that process SIGSTOPped; a server started through the agent's
# ProcessRuntime (marker, CUDA_VISIBLE_DEVICES) whose child holds DRILL_GIB
# GiB; the server SIGKILLed so its child is a leftover; a reap; recovery.
# Writes to OUT_DIR (at most 8 files): inventory_{idle,alloc,stopped,
# leftover,recovered}.json (dcu-agent inventory -o json, through
# dcu-nvdrill inventory = RunInventoryCommand), reap_report.json,
# capture.json (raw views per phase, facts, checks) and log.txt.
# Exit 0 when every check passed.
#
# CPU dry run (no GPU): DCU_DRILL_FAKE=1 with DRILL_NVML_LIB / DRILL_CUDA_LIB
# pointing at the fake libraries the tests build; the holders then allocate
# nothing and the memory checks are expected to fail.
set -u
OUT_DIR=${1:?usage: nvidia_h200.sh OUT_DIR [BUNDLE_DIR]}
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${2:-$HERE/bundle}
GIB=${DRILL_GIB:-20}
ID=inst-h200
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
WORK=$(mktemp -d /tmp/nvdrill.XXXXXX)
echo "== nvidia drill $(date -u +%FT%TZ) work=$WORK bundle=$BUNDLE gib=$GIB"

# Keep NVLink multicast off in everything we start (the lender's rule).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
unset DCUFLEET_INSTANCE CUDA_VISIBLE_DEVICES
PY=${DRILL_PYTHON:-$(command -v python3)}
if [ "${DCU_DRILL_FAKE:-0}" = 1 ]; then
  # CPU dry run: the fake libraries model the driver from this file.
  export DCU_DRILL_FAKE_GPU=1 FAKE_GPU_PROCS_FILE=$WORK/fake_gpu_procs
  : >"$FAKE_GPU_PROCS_FILE"
fi
ORIG_LD=${LD_LIBRARY_PATH:-}
STARTED_PIDS=()
cleanup() {
  for p in "${STARTED_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT

step() { echo; echo "== $(date -u +%T) $*"; }
# The device run is cut at 600 s: leave time for the checks and the capture.
T0=$SECONDS
budget_ok() {
  if (( SECONDS - T0 > ${DRILL_BUDGET_S:-450} )); then echo "time budget spent: skipping $1"; return 1; fi
}

# ---------------------------------------------------------------- facts
step facts
uname -a
cat /etc/os-release 2>/dev/null | grep -E '^(PRETTY_NAME|VERSION_ID)='
ldd --version 2>&1 | head -1
nproc
if [ "${DCU_DRILL_FAKE:-0}" != 1 ]; then
  nvidia-smi || true
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,compute_cap,driver_version,compute_mode,persistence_mode,memory.total,memory.reserved,memory.used,memory.free --format=csv || true
  ls -l /dev/nvidia* 2>&1
fi
echo "python: $PY"
"$PY" -c 'import sys, torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])' 2>&1 | tail -1

find_lib() {  # NAME -> a path the loader would use, else a search
  local p
  p=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }')
  if [ -z "$p" ]; then
    p=$(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/cuda*/compat \
          -maxdepth 3 -name "$1" 2>/dev/null | head -1)
  fi
  echo "${p:-$1}"
}
NVML_LIB=${DRILL_NVML_LIB:-$(find_lib libnvidia-ml.so.1)}
CUDA_LIB=${DRILL_CUDA_LIB:-$(find_lib libcuda.so.1)}
echo "nvml=$NVML_LIB cuda=$CUDA_LIB"

# ---------------------------------------------------------------- binaries
DRILL=$BUNDLE/bin/dcu-nvdrill
MEMPROBE=$BUNDLE/bin/dcu-memprobe
EXTRA_LD=""
drill() { LD_LIBRARY_PATH="$BUNDLE/lib${EXTRA_LD:+:$EXTRA_LD}${ORIG_LD:+:$ORIG_LD}" "$DRILL" "$@"; }
DRILL_OK=0
if [ -x "$DRILL" ]; then
  drill >/dev/null 2>"$WORK/drill_try.err"; rc=$?
  if [ $rc -ne 2 ]; then
    cat "$WORK/drill_try.err"
    echo "dcu-nvdrill does not start with the system libstdc++ (rc $rc); trying the carried one"
    EXTRA_LD=$BUNDLE/lib-fallback
    drill >/dev/null 2>"$WORK/drill_try.err"; rc=$?
  fi
  if [ $rc -eq 2 ]; then DRILL_OK=1; else cat "$WORK/drill_try.err"; fi
fi
if [ ! -x "$MEMPROBE" ] || ! "$MEMPROBE" --help >/dev/null 2>&1; then
  # The helper needs nothing but libdl: build it here from the source.
  SRCROOT=$BUNDLE/src
  [ -d "$SRCROOT/agent/memprobe" ] || SRCROOT=$(cd "$HERE/../.." && pwd)
  echo "building dcu-memprobe from $SRCROOT/agent/memprobe"
  mkdir -p "$WORK/bin" && c++ -O2 -std=c++17 -I"$SRCROOT" "$SRCROOT"/agent/memprobe/memprobe_main.cc \
    "$SRCROOT"/agent/memprobe/memprobe_cuda.cc -ldl -o "$WORK/bin/dcu-memprobe" && MEMPROBE=$WORK/bin/dcu-memprobe
fi
echo "drill usable: $DRILL_OK; memprobe: $MEMPROBE"
LIBFLAGS=(--nvml_library "$NVML_LIB" --cuda_library "$CUDA_LIB" --memprobe "$MEMPROBE" --memprobe_timeout 60)

# ---------------------------------------------------------------- helpers
# raw PHASE: what the tools see, outside the agent's code.
raw() {
  local ph=$1
  "$MEMPROBE" --runtime cuda --cuda_library "$CUDA_LIB" --nvml_library "$NVML_LIB" \
    >"$WORK/raw_$ph.memprobe" 2>"$WORK/raw_$ph.memprobe.err"
  echo "memprobe($ph): $(grep '"index"' "$WORK/raw_$ph.memprobe")"
  if [ "${DCU_DRILL_FAKE:-0}" != 1 ]; then
    nvidia-smi --query-gpu=index,pci.bus_id,memory.total,memory.reserved,memory.used,memory.free \
      --format=csv,noheader,nounits >"$WORK/raw_$ph.smi_gpu" 2>&1
    nvidia-smi --query-compute-apps=pid,used_memory,gpu_bus_id --format=csv,noheader,nounits \
      >"$WORK/raw_$ph.smi_apps" 2>&1
    echo "nvidia-smi($ph): $(cat "$WORK/raw_$ph.smi_gpu") apps: $(tr '\n' ' ' <"$WORK/raw_$ph.smi_apps")"
    "$PY" - "$WORK/raw_$ph.pynvml" <<'EOF' 2>&1 | tail -3
import json, sys
out = {}
try:
    import pynvml as n
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    m1 = n.nvmlDeviceGetMemoryInfo(h)
    out["v1"] = {"total": m1.total, "free": m1.free, "used": m1.used}
    try:
        m2 = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
        out["v2"] = {"total": m2.total, "reserved": m2.reserved, "free": m2.free, "used": m2.used}
    except Exception as e:
        out["v2_error"] = str(e)
    out["compute_processes"] = [{"pid": p.pid, "used": p.usedGpuMemory}
                                for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
    out["minor"] = n.nvmlDeviceGetMinorNumber(h)
except Exception as e:
    out["error"] = repr(e)
json.dump(out, open(sys.argv[1], "w"))
EOF
  fi
}

# inventory PHASE [flags]: dcu-agent inventory -o json (RunInventoryCommand).
inventory() {
  local ph=$1; shift
  if [ $DRILL_OK -ne 1 ]; then echo "inventory($ph): skipped, no usable dcu-nvdrill"; return; fi
  local t=$(date +%s%N)
  drill inventory -o json --device_probe nvml,cuda "${LIBFLAGS[@]}" "$@" \
    >"$OUT_DIR/inventory_$ph.json" 2>"$WORK/inventory_$ph.err"
  local rc=$?
  echo $((($(date +%s%N) - t) / 1000000)) >"$WORK/timing_$ph"
  echo "inventory($ph): rc $rc in $(cat "$WORK/timing_$ph") ms $(head -c 300 "$WORK/inventory_$ph.err")"
  drill inventory -o table --device_probe nvml,cuda "${LIBFLAGS[@]}" "$@" 2>&1
}

wait_file() {  # FILE SECONDS [PID]: gives up early when PID has exited
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ -s "$1" ] && return 0
    if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then echo "pid $3 exited before writing $1"; return 1; fi
    sleep 0.1
  done
  echo "timed out waiting for $1"; return 1
}

wait_gone_from_gpu() {  # PID SECONDS: until NVML no longer lists it
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if [ "${DCU_DRILL_FAKE:-0}" = 1 ]; then return 0; fi
    nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -qw "$1" || return 0
    sleep 0.1
  done
  echo "pid $1 still listed by NVML after $2 s"
}

# ---------------------------------------------------------------- phases
step "phase idle"
raw idle
inventory idle

budget_ok alloc && {
step "phase alloc: an unmanaged process holds $GIB GiB"
"$PY" "$HERE/nvidia_gpu_holder.py" hold --gib "$GIB" --ready "$WORK/u.ready" &
UPID=$!
STARTED_PIDS+=("$UPID")
wait_file "$WORK/u.ready" 180 "$UPID" && cat "$WORK/u.ready"
raw alloc
inventory alloc

step "phase stopped: SIGSTOP $UPID"
kill -STOP "$UPID"
sleep 0.5
grep State "/proc/$UPID/status"
raw stopped
inventory stopped
kill -CONT "$UPID"
# How long the driver keeps an ended process's memory: SIGTERM, then NVML
# polled every few ms while the process stays a zombie (not yet waited for).
"$PY" - "$UPID" "$WORK/release_lag.json" <<'EOF'
import json, os, signal, sys, time
pid, out = int(sys.argv[1]), {}
def state():
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
try:
    import pynvml as n
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    listed = lambda: any(p.pid == pid for p in n.nvmlDeviceGetComputeRunningProcesses(h))
    used = lambda: n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2).used
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    last, changes, marks = None, [], {}
    while time.monotonic() - t0 < 10:
        t = round((time.monotonic() - t0) * 1000, 1)
        s = (state(), listed(), used())
        if s != last:
            changes.append([t, *s])
            last = s
        if s[0] in ("Z", "gone"): marks.setdefault("ended_ms", t)
        if not s[1]: marks.setdefault("unlisted_ms", t)
        if s[2] < (1 << 30): marks.setdefault("used_below_1gib_ms", t)
        if len(marks) == 3:
            break
        time.sleep(0.002)
    out = dict(marks, changes=changes)
except Exception as e:
    out["error"] = repr(e)
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
json.dump(out, open(sys.argv[2], "w"))
print("release lag:", json.dumps(out)[:600])
EOF
kill -KILL "$UPID" 2>/dev/null  # never wait forever on a holder that ignored SIGTERM
wait "$UPID" 2>/dev/null
wait_gone_from_gpu "$UPID" 60
raw between
}

step "phase managed: a server started through ProcessRuntime as instance '$ID'"
ENVFLAGS=(--env "PATH=$PATH" --env NCCL_NVLS_ENABLE=0 --env TORCH_SYMM_MEM_DISABLE_MULTICAST=1
          --env NVSHMEM_DISABLE_NVLS=1 --env PYTHONUNBUFFERED=1)
[ -n "$ORIG_LD" ] && ENVFLAGS+=(--env "LD_LIBRARY_PATH=$ORIG_LD")
[ "${DCU_DRILL_FAKE:-0}" = 1 ] && ENVFLAGS+=(--env DCU_DRILL_FAKE_GPU=1 --env "FAKE_GPU_PROCS_FILE=$FAKE_GPU_PROCS_FILE")
if [ $DRILL_OK -eq 1 ] && budget_ok managed; then
  drill launch --state_dir "$WORK/state" --id "$ID" --device 0 "${ENVFLAGS[@]}" -- \
    "$PY" "$HERE/nvidia_gpu_holder.py" spawn --gib "$GIB" --ready "$WORK/m.ready" >"$WORK/launch.json"
  cat "$WORK/launch.json"
  SERVER=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$WORK/launch.json")
  STARTED_PIDS+=("$SERVER")
  wait_file "$WORK/m.ready" 180 "$SERVER" && cat "$WORK/m.ready.parent" "$WORK/m.ready"
  CHILD=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["child_pid"])' "$WORK/m.ready.parent")
  STARTED_PIDS+=("$CHILD")
  raw managed
  drill inventory -o json --device_probe nvml,cuda "${LIBFLAGS[@]}" --instance "$ID" \
    >"$WORK/inventory_managed.json" 2>"$WORK/inventory_managed.err"
  echo "inventory(managed): rc $?"

  step "phase leftover: SIGKILL the server $SERVER; its child $CHILD keeps the GPU"
  kill -KILL "$SERVER"
  for i in $(seq 1 100); do
    drill inspect --state_dir "$WORK/state" --id "$ID" >"$WORK/inspect.json" 2>&1
    grep -q '"running": false' "$WORK/inspect.json" && break
    sleep 0.1
  done
  cat "$WORK/inspect.json"
  raw leftover
  inventory leftover   # no live instance: the marked child is a leftover

  step "phase reap"
  budget_ok "reap (the child is killed at the end)"
  drill reap --device_probe nvml,cuda "${LIBFLAGS[@]}" --grace 10 >"$OUT_DIR/reap_report.json" 2>"$WORK/reap.err"
  echo "reap: rc $? $(head -c 300 "$WORK/reap.err")"
  wait_gone_from_gpu "$CHILD" 60
  [ -d "/proc/$CHILD" ] && echo "child $CHILD still in /proc: $(grep State /proc/$CHILD/status)"
else
  echo "managed/leftover/reap phases skipped: no usable dcu-nvdrill"
fi

step "phase recovered"
raw recovered
inventory recovered

# ---------------------------------------------------------------- checks
step checks
"$PY" "$HERE/nvidia_h200_check.py" --out "$OUT_DIR" --work "$WORK" --gib "$GIB" --nvml "$NVML_LIB" \
  --cuda "$CUDA_LIB" --drill_ok "$DRILL_OK"
rc=$?
echo "== done rc $rc in $((SECONDS - T0)) s"
sleep 0.3  # let tee write the log
exit $rc
