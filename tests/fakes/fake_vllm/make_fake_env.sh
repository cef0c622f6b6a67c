#!/usr/bin/env bash
# make_fake_env.sh: create a fake conda env whose bin/python is the fake vLLM
# server, with dist-info METADATA so environment discovery can read versions.
#
# usage: make_fake_env.sh ENV_DIR FAKE_VLLM_BIN [--vllm VER] [--torch VER]
#          [--triton VER] [--flash-attn VER] [--scenario FILE] [--symlink]
#
#   ENV_DIR/bin/{python,python3,vllm}     the fake server (copied; --symlink links it)
#   ENV_DIR/lib/python3.10/site-packages/{vllm,torch,triton}-VER.dist-info/METADATA
#   ENV_DIR/share/fake-vllm/scenario.json  the scenario (only with --scenario)
#   ENV_DIR/conda-meta/history             so it looks like a conda env
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
env_dir="$1"
bin="$2"
shift 2
vllm=0.9.2 torch=2.5.1 triton=3.0.0 flash_attn="" scenario="" link=0
while [ $# -gt 0 ]; do
  case "$1" in
    --vllm) vllm="$2"; shift 2 ;;
    --torch) torch="$2"; shift 2 ;;
    --triton) triton="$2"; shift 2 ;;
    --flash-attn) flash_attn="$2"; shift 2 ;;
    --scenario) scenario="$2"; shift 2 ;;
    --symlink) link=1; shift ;;
    *) echo "make_fake_env: unknown option '$1'" >&2; exit 2 ;;
  esac
done
if [ ! -x "$bin" ]; then
  echo "make_fake_env: fake server '$bin' is not executable" >&2
  exit 1
fi
mkdir -p "$env_dir/bin" "$env_dir/conda-meta" "$env_dir/lib/python3.10/site-packages"
if [ "$link" = 1 ]; then
  ln -sfn "$(readlink -f "$bin")" "$env_dir/bin/python3.10"
else
  cp -f "$bin" "$env_dir/bin/python3.10"
fi
ln -sfn python3.10 "$env_dir/bin/python3"
ln -sfn python3.10 "$env_dir/bin/python"
ln -sfn python3.10 "$env_dir/bin/vllm"
echo "# cmd: conda create -p $env_dir python=3.10 (dcufleet fake env)" >"$env_dir/conda-meta/history"
write_meta() {  # name version
  local d="$env_dir/lib/python3.10/site-packages/$1-$2.dist-info"
  mkdir -p "$d"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$1" "$2" >"$d/METADATA"
}
[ -n "$vllm" ] && write_meta vllm "$vllm"
[ -n "$torch" ] && write_meta torch "$torch"
[ -n "$triton" ] && write_meta triton "$triton"
[ -n "$flash_attn" ] && write_meta flash_attn "$flash_attn"
if [ -n "$scenario" ]; then
  mkdir -p "$env_dir/share/fake-vllm"
  cp -f "$scenario" "$env_dir/share/fake-vllm/scenario.json"
fi
exit 0
