#!/usr/bin/env bash
# CTest: the NVIDIA hardware drill end to end on a CPU, against the fake
# libnvidia-ml / libcuda the tests build (they model the driver from a file
# the fake holders write), with real processes, the real runtime, scan and
# reap. Proves the script and its checks work before device time is spent.
#   dry_run_test.sh BUILD_DIR
set -u
BUILD=${1:?}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
T=$(mktemp -d /tmp/nvdrill-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$HERE/make_nvidia_bundle.sh" "$BUILD" "$T/carry" >/dev/null || exit 1
DCU_DRILL_FAKE=1 DRILL_GIB=1 DRILL_PYTHON=$(command -v python3) \
  DRILL_NVML_LIB="$BUILD/testlibs/nvml_good/libnvidia-ml.so.1" \
  DRILL_CUDA_LIB="$BUILD/testlibs/cuda_good/libcuda.so.1" \
  bash "$T/carry/nvidia_h200.sh" "$T/out" >"$T/console.txt" 2>&1
rc=$?
grep -E "^(PASS|FAIL)|checks passed" "$T/console.txt"
n=$(ls "$T/out" | wc -l)
[ "$n" -le 8 ] || { echo "drill wrote $n files; at most 8 come back from the device"; exit 1; }
[ $rc -eq 0 ] || tail -40 "$T/console.txt"
exit $rc
