#!/usr/bin/env bash
# Packs what tests/hardware/nvidia_h200.sh needs on a GPU machine that has
# none of the build dependencies: dcu-nvdrill and dcu-memprobe from BUILD_DIR,
# the shared libraries they load (not glibc's; libstdc++/libgcc_s only as a
# fallback, the machine's own are newer), the memprobe source (to rebuild it
# there if the binary will not run), and the drill's scripts.
#
#   make_nvidia_bundle.sh BUILD_DIR DEST
#
# DEST then holds nvidia_h200.sh & co. and bundle/; run `DEST/nvidia_h200.sh OUT`.
set -euo pipefail
BUILD=${1:?usage: make_nvidia_bundle.sh BUILD_DIR DEST}
DEST=${2:?usage: make_nvidia_bundle.sh BUILD_DIR DEST}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
B=$DEST/bundle
rm -rf "$B"
mkdir -p "$B/bin" "$B/lib" "$B/lib-fallback" "$B/src/agent/memprobe"
cp "$BUILD/bin/dcu-nvdrill" "$BUILD/bin/dcu-memprobe" "$B/bin/"
strip "$B/bin/"* 2>/dev/null || true
for bin in "$B/bin/dcu-nvdrill" "$B/bin/dcu-memprobe"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$B/lib-fallback/" ;;
    *) cp -L "$lib" "$B/lib/" ;;
  esac
done
cp "$SRC"/agent/memprobe/*.cc "$SRC"/agent/memprobe/*.h "$B/src/agent/memprobe/"
cp "$HERE/nvidia_h200.sh" "$HERE/nvidia_h200_check.py" "$HERE/nvidia_gpu_holder.py" "$DEST/"
du -sh "$B"
