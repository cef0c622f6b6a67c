#!/usr/bin/env bash
# make_fake_image.sh: build a container image holding the statically linked
# fake vLLM server with `docker import` (no registry needed).
#
# usage: make_fake_image.sh TAG FAKE_VLLM_BIN [--scenario FILE] [--vllm VER]
#          [--torch VER] [--triton VER] [--cli docker|podman]
#
# Image layout: /usr/local/bin/{python3,python,vllm} (the fake server),
# /usr/local/lib/python3.10/dist-packages/*-VER.dist-info/METADATA,
# /etc/{passwd,group} (group 'video' so --group-add video works),
# /usr/share/fake-vllm/scenario.json with ENV FAKE_VLLM_SCENARIO pointing at it.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
tag="$1"
bin="$2"
shift 2
vllm=0.9.2 torch=2.5.1 triton=3.0.0 scenario="" cli=docker
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario="$2"; shift 2 ;;
    --vllm) vllm="$2"; shift 2 ;;
    --torch) torch="$2"; shift 2 ;;
    --triton) triton="$2"; shift 2 ;;
    --cli) cli="$2"; shift 2 ;;
    *) echo "make_fake_image: unknown option '$1'" >&2; exit 2 ;;
  esac
done
root="$(mktemp -d /tmp/fake-vllm-image.XXXXXX)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/usr/share/fake-vllm" \
  "$root/usr/local/lib/python3.10/dist-packages" "$root/root"
chmod 1777 "$root/tmp"
cp "$bin" "$root/usr/local/bin/python3"
ln -s python3 "$root/usr/local/bin/python"
ln -s python3 "$root/usr/local/bin/vllm"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nvideo:x:44:\nrender:x:109:\n' >"$root/etc/group"
for pkg in "vllm:$vllm" "torch:$torch" "triton:$triton"; do
  d="$root/usr/local/lib/python3.10/dist-packages/${pkg%%:*}-${pkg#*:}.dist-info"
  mkdir -p "$d"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "${pkg%%:*}" "${pkg#*:}" >"$d/METADATA"
done
if [ -n "$scenario" ]; then
  cp "$scenario" "$root/usr/share/fake-vllm/scenario.json"
else
  echo '{}' >"$root/usr/share/fake-vllm/scenario.json"
fi
tar -C "$root" -c . | "$cli" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV FAKE_VLLM_SCENARIO=/usr/share/fake-vllm/scenario.json' \
  --change 'ENV LD_LIBRARY_PATH=/opt/dtk/lib' \
  --change 'LABEL dcufleet.test-image=fake-vllm' \
  - "$tag" >/dev/null
echo "$tag"
