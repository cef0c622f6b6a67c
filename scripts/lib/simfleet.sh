# Builds simulated DCU nodes for the demo and the scenario tests: fixture
# roots (recorded sysfs/KFD layout), a device view served by the test-built
# libamdhip64, fake conda envs and images whose fake vLLM fails exactly as the
# seed reports describe, and model directories. Sourced by scripts/demo and
# run by tests/integration (scripts/lib/simfleet.sh DIR BUILD_DIR SCENARIO).
#
# Nothing here decides an outcome: the envs carry the failures their real
# counterparts had (seeds/000, seeds/003); dcufleet has to find its way.
set -euo pipefail

SIM_KIB=1024
sim_gib() { awk -v g="$1" 'BEGIN { printf "%.0f", g * 1073741824 }'; }

# sim_le64 N: N as 8 little-endian bytes (a safetensors header length).
sim_le64() {
  local n=$1 i
  for i in 0 1 2 3 4 5 6 7; do
    printf "\\x$(printf %02x $(( (n >> (8 * i)) & 255 )))"
  done
}

# sim_model_dir DIR CONFIG_JSON SHARDS TOTAL_BYTES
# A model directory: config.json, a safetensors index naming SHARDS shards
# and the shard files. Each shard is a real safetensors file (one U8 tensor,
# a real header) whose data is a hole: sparse, so TOTAL_BYTES of weights
# take no disk, and the agent's weights verification (issue 19: headers,
# lengths, index, total_size) finds it clean. The fake server never reads
# tensors.
sim_model_dir() {
  local dir=$1 config=$2 shards=$3 total=$4
  mkdir -p "$dir"
  cp "$config" "$dir/config.json"
  local map="" i name header bytes per=$(( total / shards ))
  for i in $(seq 1 "$shards"); do
    name=$(printf 'model-%05d-of-%05d.safetensors' "$i" "$shards")
    bytes=$per
    [ "$i" -eq "$shards" ] && bytes=$(( total - per * (shards - 1) ))
    header=$(printf '{"layer.%s.weight":{"dtype":"U8","shape":[%s],"data_offsets":[0,%s]}}' \
      "$i" "$bytes" "$bytes")
    { sim_le64 ${#header}; printf '%s' "$header"; } > "$dir/$name"
    truncate -s $(( 8 + ${#header} + bytes )) "$dir/$name"
    map+="\"layer.$i.weight\": \"$name\","
  done
  printf '{"metadata": {"total_size": %s}, "weight_map": {%s}}\n' "$total" "${map%,}" \
    > "$dir/model.safetensors.index.json"
  printf '{"model_max_length": 40960}\n' > "$dir/tokenizer_config.json"
}

# sim_k100_root SRC_ROOT OUT_ROOT: the 8x K100_AI tree plus the KFD record of
# a dead Qwen3-0.6B instance still holding 59.18 GiB on device 0 (seed 000).
sim_k100_root() {
  local src=$1 out=$2
  rm -rf "$out"; mkdir -p "$(dirname "$out")"; cp -r "$src" "$out"
  local gpu0
  gpu0=$(cat "$out/sys/class/kfd/kfd/topology/nodes/1/gpu_id")
  # The pid is gone for good: pid_max, which no process can have (pids stay
  # below it). An agent reading the live /proc (the demo's) would take a pid
  # some process has for a living holder's, and a pid free now can be handed
  # out again while a test runs (pid_max is 32768 in many containers).
  local dead
  dead=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
  mkdir -p "$out/sys/class/kfd/kfd/proc/$dead"
  echo "$(sim_gib 59.18)" > "$out/sys/class/kfd/kfd/proc/$dead/vram_$gpu0"
  echo "python -m vllm.entrypoints.openai.api_server --model /models/Qwen3-0.6B" \
    > "$out/sys/class/kfd/kfd/proc/$dead/.cmdline-for-people"
}

# sim_dtk ROOT: the DTK layout a Hygon host has: env.sh (what people source)
# and the library directories the recipes name.
sim_dtk() {
  local root=$1
  mkdir -p "$root/opt/dtk/lib" "$root/opt/dtk/lib64" "$root/opt/dtk/.hyhal/rocm_smi/lib" \
    "$root/opt/dtk/llvm/bin" "$root/opt/hyhal/lib" "$root/opt/hyhal/lib64"
  cat > "$root/opt/dtk/env.sh" <<'ENVSH'
# DTK environment (simulated): what /opt/dtk/env.sh exports on a Hygon host.
export ROCM_PATH=/opt/dtk
export HIP_PATH=/opt/dtk/hip
export DTK_VERSION=26.04
export LD_LIBRARY_PATH=/opt/dtk/lib:/opt/dtk/lib64:/opt/hyhal/lib:/opt/hyhal/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ENVSH
}

# sim_hip_devices COUNT TOTAL_GIB DIRTY_INDEX DIRTY_FREE_GIB ARCH FIRST_BUS:
# the FAKE_HIP_DEVICES value (bus,free,total,arch;...) the test libamdhip64 reads.
sim_hip_devices() {
  local count=$1 total_gib=$2 dirty=$3 dirty_free=$4 arch=$5 first_bus=$6 out="" i free bus
  local total; total=$(sim_gib "$total_gib")
  for i in $(seq 0 $((count - 1))); do
    bus=$(printf '0000:%02x:00.0' $((first_bus + i * 3)))
    if [ "$i" = "$dirty" ]; then free=$(sim_gib "$dirty_free"); else free=$((total - 512 * 1048576)); fi
    out+="$bus,$free,$total,$arch;"
  done
  echo "${out%;}"
}

# sim_env ENV_DIR FAKE_VLLM VLLM TORCH TRITON SCENARIO_JSON
# ENV_DIR is NODE/envs/NAME. With SIM_ENGINE_MEMORY=1 (the demo) the scenario
# gains "device_root": NODE/root, and the fake engine holds device memory
# there while it runs, as a real one does (KFD's process record, the DRM
# counter, the device's free memory: tests/fakes/fake_vllm/README.md); the
# node's agent must then read the live /proc (--proc-root /proc) and its
# memprobe get FAKE_HIP_KFD_ROOT=NODE/root.
sim_env() {
  local dir=$1 bin=$2 vllm=$3 torch=$4 triton=$5 scenario=$6
  if [ "${SIM_ENGINE_MEMORY:-0}" = 1 ]; then
    local root rest
    root="$(dirname "$(dirname "$dir")")/root"
    rest="${scenario#*\{}"
    if [ -z "${rest//[[:space:]\}]/}" ]; then
      scenario="{\"device_root\": \"$root\"}"
    else
      scenario="{\"device_root\": \"$root\", $rest"
    fi
  fi
  local tmp; tmp=$(mktemp)
  printf '%s\n' "$scenario" > "$tmp"
  "$SIM_REPO/tests/fakes/fake_vllm/make_fake_env.sh" "$dir" "$bin" --vllm "$vllm" --torch "$torch" \
    --triton "$triton" --scenario "$tmp" >/dev/null
  rm -f "$tmp"
}

# sim_seed000 DIR BUILD_DIR: node-k100 of the first incident.
#   envs/vllm-0.11.0-dtk2604   vLLM 0.11.0 + torch 2.5.1 + triton 3.1.0: head size 80
#                              without head_dim, then triton cannot target gfx928
#   envs/vllm-0.9.2-dtk2504    vLLM 0.9.2 + torch 2.5.1 + triton 3.0.0: serves
#   models/Qwen3-32B           config relabelled Qwen2ForCausalLM, head_dim removed, 17 shards, 62 GB
sim_seed000() {
  local dir=$1 build=$2 fake="$2/bin/fake_vllm"
  mkdir -p "$dir"
  sim_k100_root "$SIM_REPO/tests/fixtures/sysfs/k100ai-8x/root" "$dir/k100/root"
  sim_dtk "$dir/k100/root"
  sim_hip_devices 8 63.98 0 4.8 "gfx928:sramecc+:xnack-" 7 > "$dir/k100/hip-devices"
  sim_env "$dir/k100/envs/vllm-0.11.0-dtk2604" "$fake" 0.11.0 2.5.1 3.1.0 \
    '{"load_seconds": 1.5, "shards": 17, "dirty_devices": [0], "failures": [{"kind": "head_size_unsupported"}, {"kind": "triton_unsupported_target", "arch": "gfx928"}]}'
  sim_env "$dir/k100/envs/vllm-0.9.2-dtk2504" "$fake" 0.9.2 2.5.1 3.0.0 \
    '{"load_seconds": 3, "shards": 17, "dirty_devices": [0], "failures": [{"kind": "head_size_unsupported"}]}'
  sim_model_dir "$dir/k100/models/Qwen3-32B" \
    "$SIM_REPO/tests/data/model-configs/qwen3-32b-seed000-qwen2-no-head-dim/config.json" 17 65527752704
}

# sim_k100b DIR BUILD_DIR: node-k100b, a second 8x K100_AI with every device
# clean, Qwen3-32B (its published config) and the vLLM 0.9.2 env: where the
# demo's second replica goes, with what the first node's deploy taught.
sim_k100b() {
  local dir=$1 build=$2
  sim_k100_node "$dir" k100b
  sim_env "$dir/k100b/envs/vllm-0.9.2-dtk2504" "$build/bin/fake_vllm" 0.9.2 2.5.1 3.0.0 \
    '{"load_seconds": 3, "shards": 17, "failures": [{"kind": "head_size_unsupported"}]}'
  sim_model_dir "$dir/k100b/models/Qwen3-32B" \
    "$SIM_REPO/tests/data/model-configs/qwen3-32b/config.json" 17 65527752704
}

# sim_seed003 DIR BUILD_DIR: node-z100 of the second incident (4x Z100 gfx906,
# /opt/hyhal/lib holding a librocm_smi64 without rsmi_init).
sim_seed003() {
  local dir=$1 build=$2 fake="$2/bin/fake_vllm"
  mkdir -p "$dir/z100"
  rm -rf "$dir/z100/root"; cp -r "$SIM_REPO/tests/fixtures/sysfs/z100-4x/root" "$dir/z100/root"
  sim_dtk "$dir/z100/root"
  mkdir -p "$dir/z100/root/opt/hyhal/lib" "$dir/z100/root/opt/dtk/.hyhal/rocm_smi/lib"
  cp "$build/testlibs/rsmi_noinit/librocm_smi64.so.2" "$dir/z100/root/opt/hyhal/lib/"
  cp "$build/testlibs/rsmi_good/librocm_smi64.so.2" "$dir/z100/root/opt/dtk/.hyhal/rocm_smi/lib/"
  sim_hip_devices 4 31.98 -1 0 "gfx906:sramecc+:xnack-" 4 > "$dir/z100/hip-devices"
  sim_model_dir "$dir/z100/models/Qwen3.5-27B" \
    "$SIM_REPO/tests/data/model-configs/qwen3.5-27b-reconstructed/config.json" 11 55000000000
}

# sim_image TAG SCENARIO_JSON VLLM TRITON [make_fake_image.sh options...]:
# a `docker import`ed image of the fake server tagged TAG (needs a docker
# engine: scripts/lib/ensure-docker.sh). Built every time: an image left from
# an older scenario must never decide an outcome.
sim_image() {
  local tag=$1 scenario=$2 vllm=$3 triton=$4 build=$5; shift 5
  local tmp; tmp=$(mktemp)
  printf '%s\n' "$scenario" > "$tmp"
  "$SIM_REPO/tests/fakes/fake_vllm/make_fake_image.sh" "$tag" "$build/bin/fake_vllm" \
    --vllm "$vllm" --triton "$triton" --scenario "$tmp" "$@" >/dev/null
  rm -f "$tmp"
  # The image the tag pointed at before is now untagged: drop it (and any
  # other untagged fake image no container uses).
  docker image prune -f --filter label=dcufleet.test-image=fake-vllm >/dev/null 2>&1 || true
}

# sim_static_bash: Debian's static bash (package bash-static), which runs in
# an image that has no libc.
sim_static_bash() {
  local b
  for b in /bin/bash-static /usr/bin/bash-static; do
    if [ -x "$b" ]; then echo "$b"; return 0; fi
  done
  echo "simfleet: no static bash (apt-get install bash-static)" >&2
  return 1
}

# sim_seed003_image DIR BUILD_DIR: the second seed's image, tagged as the
# stack vllm-0.18-image-dtk2604's runtime_location. Built for gfx928, it fails
# on gfx906 as the report lists, one cause at a time:
#   import:   `undefined symbol: rsmi_init` unless DTK's rocm_smi dir is the
#             first LD_LIBRARY_PATH entry (its env.sh puts /opt/hyhal/lib
#             before it, 修改一)
#   profile:  `_rocm_C` has no `wvSplitK` unless VLLM_ROCM_USE_SKINNY_GEMM=0 (修改四)
#   KV cache: `No available memory for the cache blocks` unless
#             --kv-cache-memory-bytes is given (修改五)
# /opt/dtk/env.sh and /bin/bash are in the image: the stack's source_scripts
# run inside it.
SIM_SEED003_IMAGE="harbor.sourcefind.cn:5443/dcu/admin/base/custom:vllm018-ubuntu22.04-dtk26.04-gemma4-0413"
SIM_SEED003_LOAD_SECONDS=1
sim_seed003_image() {
  local dir=$1 build=$2 bash
  bash=$(sim_static_bash)
  mkdir -p "$dir/z100/image"
  sim_dtk "$dir/z100/image"
  sim_image "$SIM_SEED003_IMAGE" \
    "{\"load_seconds\": $SIM_SEED003_LOAD_SECONDS, \"shards\": 11, \"failures\": [{\"kind\": \"rsmi_init_undefined\"}, {\"kind\": \"wvsplitk_missing\"}, {\"kind\": \"no_cache_memory\"}]}" \
    0.18 3.4.0+git1ef59765 "$build" \
    --add "$bash:/bin/bash" --add "$dir/z100/image/opt/dtk/env.sh:/opt/dtk/env.sh"
}

# sim_k100_node DIR NAME: an 8x K100_AI node with every device clean.
sim_k100_node() {
  local dir=$1 name=$2
  rm -rf "$dir/$name/root"; mkdir -p "$dir/$name"
  cp -r "$SIM_REPO/tests/fixtures/sysfs/k100ai-8x/root" "$dir/$name/root"
  sim_dtk "$dir/$name/root"
  sim_hip_devices 8 63.98 -1 0 "gfx928:sramecc+:xnack-" 7 > "$dir/$name/hip-devices"
}

# sim_deepseek062 DIR BUILD_DIR: node-k100 with DeepSeek-R1-Distill-Qwen-32B
# (its published config: no head_dim, 5120/40 = 128 is right) for the vLLM
# 0.6.2 container of the first seed's 反证三. The image fails on head sizes
# FlashAttention does not support, so serving proves the config was sound;
# it refuses flags 0.6.2 did not have.
SIM_DEEPSEEK_IMAGE="image.sourcefind.cn:5000/dcu/admin/base/vllm:0.6.2-ubuntu22.04-dtk24.04.3-py3.10"
SIM_DEEPSEEK_LOAD_SECONDS=2
sim_deepseek062() {
  local dir=$1 build=$2
  sim_k100_node "$dir" k100
  sim_model_dir "$dir/k100/models/DeepSeek-R1-Distill-Qwen-32B" \
    "$SIM_REPO/tests/data/model-configs/deepseek-r1-distill-qwen-32b/config.json" 8 65527752704
}
sim_deepseek062_image() {
  local build=$2
  sim_image "$SIM_DEEPSEEK_IMAGE" \
    "{\"load_seconds\": $SIM_DEEPSEEK_LOAD_SECONDS, \"shards\": 8, \"reject_args\": [\"--kv-cache-memory-bytes\"], \"failures\": [{\"kind\": \"head_size_unsupported\"}]}" \
    0.6.2 3.0.0 "$build"
}

# sim_k100_pair DIR BUILD_DIR SCENARIO: node-a and node-b, 8x K100_AI each,
# both with Qwen3-32B (official config) and a vLLM 0.9.2 env whose fake
# engine follows SCENARIO (JSON; @ROOT@ becomes the node's recorded tree, as
# the agent roots recipe paths under --root).
sim_k100_pair() {
  local dir=$1 build=$2 scenario=$3 fake="$2/bin/fake_vllm" n
  for n in node-a node-b; do
    sim_k100_node "$dir" "$n"
    sim_env "$dir/$n/envs/vllm-0.9.2-dtk2504" "$fake" 0.9.2 2.5.1 3.0.0 \
      "${scenario//@ROOT@/$dir/$n/root}"
    sim_model_dir "$dir/$n/models/Qwen3-32B" \
      "$SIM_REPO/tests/data/model-configs/qwen3-32b/config.json" 17 65527752704
  done
}

# sim_twok100 DIR BUILD_DIR: the pair, with the env that serves Qwen3-32B.
SIM_TWOK100_LOAD_SECONDS=1
sim_twok100() {
  sim_k100_pair "$1" "$2" \
    "{\"load_seconds\": $SIM_TWOK100_LOAD_SECONDS, \"shards\": 17, \"failures\": [{\"kind\": \"head_size_unsupported\"}]}"
}

# sim_learnk100 DIR BUILD_DIR: the pair, but the env fails at import with
# `undefined symbol: rsmi_init` unless DTK's rocm_smi directory is first in
# LD_LIBRARY_PATH (seed 003, 修改一): a failure the recipe does not fix and
# the controller must learn (issue 15).
sim_learnk100() {
  sim_k100_pair "$1" "$2" \
    '{"load_seconds": 0.3, "shards": 4, "failures": [{"kind": "rsmi_init_undefined", "required_first_ld_library_path": "@ROOT@/opt/dtk/.hyhal/rocm_smi/lib"}]}'
}

# sim_nothing_fits DIR BUILD_DIR: node-k100 with Qwen3-32B and the vLLM 0.9.2
# env but every device's device view nearly full (memory no process on the
# node explains), and node-z100 (gfx906) with neither the model nor a stack.
sim_nothing_fits() {
  local dir=$1 build=$2 fake="$2/bin/fake_vllm" i out=""
  sim_k100_node "$dir" k100
  for i in $(seq 0 7); do
    out+="$(sim_hip_devices 8 63.98 "$i" 4.8 "gfx928:sramecc+:xnack-" 7 | cut -d';' -f$((i + 1)));"
  done
  echo "${out%;}" > "$dir/k100/hip-devices"
  sim_env "$dir/k100/envs/vllm-0.9.2-dtk2504" "$fake" 0.9.2 2.5.1 3.0.0 '{"load_seconds": 1}'
  sim_model_dir "$dir/k100/models/Qwen3-32B" \
    "$SIM_REPO/tests/data/model-configs/qwen3-32b/config.json" 17 65527752704
  rm -rf "$dir/z100/root"; mkdir -p "$dir/z100/models" "$dir/z100/envs"
  cp -r "$SIM_REPO/tests/fixtures/sysfs/z100-4x/root" "$dir/z100/root"
  sim_dtk "$dir/z100/root"
  sim_hip_devices 4 31.98 -1 0 "gfx906:sramecc+:xnack-" 4 > "$dir/z100/hip-devices"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  SIM_REPO="${SIM_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  out=$1 build=$2; shift 2
  for s in "$@"; do "sim_$s" "$out" "$build"; done
fi
