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

# sim_model_dir DIR CONFIG_JSON SHARDS TOTAL_BYTES
# A model directory: config.json, a safetensors index naming SHARDS shards
# and the shard files (tiny: the fake server never reads tensors).
sim_model_dir() {
  local dir=$1 config=$2 shards=$3 total=$4
  mkdir -p "$dir"
  cp "$config" "$dir/config.json"
  local map="" i name
  for i in $(seq 1 "$shards"); do
    name=$(printf 'model-%05d-of-%05d.safetensors' "$i" "$shards")
    printf 'x' > "$dir/$name"
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
  mkdir -p "$out/sys/class/kfd/kfd/proc/4121"
  echo "$(sim_gib 59.18)" > "$out/sys/class/kfd/kfd/proc/4121/vram_$gpu0"
  echo "python -m vllm.entrypoints.openai.api_server --model /models/Qwen3-0.6B" \
    > "$out/sys/class/kfd/kfd/proc/4121/.cmdline-for-people"
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
sim_env() {
  local dir=$1 bin=$2 vllm=$3 torch=$4 triton=$5 scenario=$6
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

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  SIM_REPO="${SIM_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  out=$1 build=$2; shift 2
  for s in "$@"; do "sim_$s" "$out" "$build"; done
fi
