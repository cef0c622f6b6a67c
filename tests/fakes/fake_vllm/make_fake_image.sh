#!/usr/bin/env bash
# make_fake_image.sh: build a container image holding the statically linked
# fake vLLM server with `docker import` (no registry needed).
#
# usage: make_fake_image.sh TAG FAKE_VLLM_BIN [--scenario FILE] [--vllm VER]
#          [--torch VER] [--triton VER] [--cli docker|podman]
#          [--add SRC:DEST]... [--env NAME=VALUE]...
#
# Image layout: /usr/local/bin/{python3,python,vllm} (the fake server),
# /usr/local/lib/python3.10/dist-packages/*-VER.dist-info/METADATA,
# /etc/{passwd,group} (group 'video' so --group-add video works),
# /usr/share/fake-vllm/scenario.json with ENV FAKE_VLLM_SCENARIO pointing at it.
# --add copies a host file into the image at DEST (absolute; mode kept,
# symlinks followed), e.g. Debian's static bash (package bash-static) as
# /bin/bash and a DTK env.sh as /opt/dtk/env.sh, so a stack's source_scripts
# run inside the image as they do in the real one. --env adds an image ENV
# (LD_LIBRARY_PATH defaults to /opt/dtk/lib).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
tag="$1"
bin="$2"
shift 2
vllm=0.9.2 torch=2.5.1 triton=3.0.0 scenario="" cli=docker
adds=() envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario="$2"; shift 2 ;;
    --vllm) vllm="$2"; shift 2 ;;
    --torch) torch="$2"; shift 2 ;;
    --triton) triton="$2"; shift 2 ;;
    --cli) cli="$2"; shift 2 ;;
    --add)
      case "$2" in
        ?*:/?*) adds+=("$2") ;;
        *) echo "make_fake_image: --add '$2' is not SRC:/ABSOLUTE/DEST" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --env)
      case "$2" in
        [A-Za-z_]*=*) envs+=("$2") ;;
        *) echo "make_fake_image: --env '$2' is not NAME=VALUE" >&2; exit 2 ;;
      esac
      shift 2 ;;
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
for a in ${adds[@]+"${adds[@]}"}; do
  src="${a%%:/*}" dest="/${a#*:/}"
  if [ ! -f "$src" ]; then
    echo "make_fake_image: --add source '$src' is not a file" >&2
    exit 1
  fi
  mkdir -p "$root$(dirname "$dest")"
  cp -L --preserve=mode "$src" "$root$dest"
done
changes=(--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin'
  --change 'ENV FAKE_VLLM_SCENARIO=/usr/share/fake-vllm/scenario.json'
  --change 'LABEL dcufleet.test-image=fake-vllm')
ld_set=0
for e in ${envs[@]+"${envs[@]}"}; do
  changes+=(--change "ENV $e")
  case "$e" in LD_LIBRARY_PATH=*) ld_set=1 ;; esac
done
[ "$ld_set" = 1 ] || changes+=(--change 'ENV LD_LIBRARY_PATH=/opt/dtk/lib')
tar -C "$root" -c . | "$cli" import "${changes[@]}" - "$tag" >/dev/null
echo "$tag"
