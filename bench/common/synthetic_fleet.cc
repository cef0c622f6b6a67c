#include "bench/common/synthetic_fleet.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace dcu::bench {
namespace {

constexpr int64_t kMiB = 1LL << 20;
constexpr int64_t kGiB = 1LL << 30;

// PCI ids from agent/probe/product_table.txt (their sources are listed there).
const ArchProfile kK100Ai{"gfx928", "K100_AI", "hygon", 65520 * kMiB, 0x1d94, 0x6210};
const ArchProfile kZ100{"gfx906", "Z100", "hygon", 32 * kGiB, 0x1d94, 0x54b7};
const ArchProfile kMi210{"gfx90a", "MI210", "amd", 64 * kGiB, 0x1002, 0x740f};
const ArchProfile kMi300x{"gfx942", "MI300X", "amd", 192 * kGiB, 0x1002, 0x74a1};

// splitmix64: a cheap deterministic hash so node i looks the same every run.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double Unit(uint64_t h) { return static_cast<double>(h % 1000000) / 1000000.0; }

dcufleet::v1::MemoryReading Reading(int64_t bytes, const std::string& source, int64_t now_ms) {
  dcufleet::v1::MemoryReading r;
  r.set_bytes(bytes);
  r.set_source(source);
  r.set_valid(true);
  r.set_read_at_ms(now_ms);
  return r;
}

}  // namespace

const ArchProfile& ArchForNode(int node_index) {
  switch (Mix(static_cast<uint64_t>(node_index) * 7919) % 10) {
    case 0: case 1: case 2: case 3: return kK100Ai;
    case 4: case 5: return kZ100;
    case 6: case 7: return kMi210;
    default: return kMi300x;
  }
}

std::string NodeName(int node_index) { return absl::StrFormat("node-%05d", node_index); }

int NodeIndex(const std::string& node_name) {
  absl::string_view digits = node_name;
  int i = 0;
  if (!absl::ConsumePrefix(&digits, "node-") || !absl::SimpleAtoi(digits, &i) || i < 0) return -1;
  return NodeName(i) == node_name ? i : -1;
}

std::vector<std::string> TritonFailureLogTail(const std::string& env, const std::string& arch) {
  std::string site = absl::StrCat(env, "/lib/python3.10/site-packages");
  return {
      absl::StrCat("loc(\"", site, "/vllm/attention/ops/triton_flash_attention.py\":309:0): error: "
                   "unsupported target: '", arch, "'"),
      "Traceback (most recent call last):",
      absl::StrCat("  File \"", site, "/triton/backends/amd/compiler.py\", line 186, in make_llir"),
      "    pm.run(mod)",
      "RuntimeError: PassManager::run failed",
  };
}


const std::string& Qwen3_8BConfigJson() {
  // Qwen/Qwen3-8B config.json. Fields as published for Qwen3-8B-Base
  // (https://github.com/Chen-Oliver/qwen3-8b-base/blob/main/config.json, a
  // copy of https://huggingface.co/Qwen/Qwen3-8B-Base/blob/main/config.json);
  // the post-trained Qwen3-8B differs in eos_token_id (151645, the Qwen3
  // chat models' <|im_end|>) and max_position_embeddings (40960, as the
  // catalog's fingerprint from https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json).
  static const std::string* kJson = new std::string(R"({
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
)");
  return *kJson;
}

dcufleet::v1::NodeInventory MakeInventory(int node_index, const FleetOptions& options,
                                          int64_t now_ms) {
  const ArchProfile& p = options.uniform ? kK100Ai : ArchForNode(node_index);
  dcufleet::v1::NodeInventory inv;
  inv.set_hostname(NodeName(node_index));
  inv.set_kernel_release("5.10.134-16.3.an8.x86_64");
  inv.set_driver_version(p.vendor == "hygon" ? "6.3.14-V1.12.0" : "6.8.5");
  inv.set_collected_at_ms(now_ms);
  inv.set_agent_state_dir("/var/lib/dcufleet");
  inv.set_root("/");
  inv.set_processes_scanned(1800 + static_cast<int>(Mix(node_index) % 400));
  inv.add_probe_log("sysfs_kfd: 8 devices");
  inv.add_probe_log(p.vendor == "hygon" ? "rocm_smi: /opt/dtk/.hyhal/rocm_smi/lib/librocm_smi64.so.2"
                                        : "rocm_smi: /opt/rocm/lib/librocm_smi64.so.7");
  inv.add_probe_log("hip: dcu-memprobe 8 devices");
  inv.add_probe_log("procscan: KFD processes only, 0 holders");
  for (int i = 0; i < options.devices_per_node; ++i) {
    uint64_t h = Mix((static_cast<uint64_t>(options.seed) << 40) ^ (static_cast<uint64_t>(node_index) << 8) ^ i);
    auto* d = inv.add_devices();
    d->set_index(i);
    d->set_vendor(p.vendor);
    d->set_product_name(p.product_name);
    d->set_product_name_source(absl::StrFormat("table:pci 0x%04x:0x%04x", p.pci_vendor_id, p.pci_device_id));
    d->set_arch(p.arch);
    d->set_arch_source("kfd:gfx_target_version");
    d->set_unique_id(absl::StrFormat("0x%016x", h));
    int bus = 0x1b + i * 3;
    d->set_pci_bus(absl::StrFormat("0000:%02x:00.0", bus));
    d->set_pci_vendor_id(p.pci_vendor_id);
    d->set_pci_device_id(p.pci_device_id);
    d->set_kfd_gpu_id(50000 + i * 1111);
    d->set_kfd_node(i + 1);
    d->set_drm_render_minor(128 + i);
    d->set_drm_card(absl::StrCat("card", i + 1));
    d->set_drm_match("render_minor");
    int64_t total = p.total_bytes;
    // The runtime keeps a few hundred MiB for itself on every device.
    int64_t reserved = 300 * kMiB + static_cast<int64_t>(Mix(h) % 200) * kMiB;
    int64_t used_by_others = 0;
    int64_t unreclaimed = 0;
    double u = options.uniform ? 1.0 : Unit(h);
    if (u < options.unreclaimed_share) {
      // Memory held with no live holder (a killed worker's stranded VRAM).
      unreclaimed = (8 + static_cast<int64_t>(Mix(h + 1) % 40)) * kGiB;
      if (unreclaimed > total - reserved) unreclaimed = total - reserved;
    } else if (u < options.unreclaimed_share + options.busy_share) {
      used_by_others = (2 + static_cast<int64_t>(Mix(h + 2) % 20)) * kGiB;
      auto* hold = d->add_holders();
      hold->set_pid(20000 + static_cast<int>(Mix(h + 3) % 30000));
      hold->set_ppid(1);
      hold->set_comm("python3");
      hold->set_cmdline("python3 train.py --config /data/jobs/finetune.yaml");
      hold->set_state("S");
      hold->set_holder_class(dcufleet::v1::HOLDER_UNMANAGED);
      hold->set_vram_bytes(used_by_others);
      hold->set_vram_source(absl::StrCat("kfd:proc/", hold->pid(), "/vram_", d->kfd_gpu_id()));
      hold->set_parent_alive(true);
      hold->add_device_paths("/dev/kfd");
      hold->add_device_paths(absl::StrCat("/dev/dri/renderD", 128 + i));
      hold->set_class_reason("no DCUFLEET_INSTANCE marker");
    }
    int64_t used = reserved + used_by_others + unreclaimed;
    *d->mutable_total() = Reading(total, "kfd:mem_banks/0/properties", now_ms);
    *d->mutable_host_used() = Reading(used, "rocm_smi:rsmi_dev_memory_usage_get", now_ms);
    *d->mutable_host_free() = Reading(total - used, "derived:total-host_used", now_ms);
    // The device view (hipMemGetInfo) sees a little less than the host view.
    int64_t device_free = total - used - 64 * kMiB;
    *d->mutable_device_free() = Reading(device_free, "hip:hipMemGetInfo", now_ms);
    *d->mutable_device_total() = Reading(total, "hip:hipMemGetInfo", now_ms);
    *d->mutable_schedulable_free() = Reading(device_free, "hip:hipMemGetInfo", now_ms);
    *d->mutable_holders_vram() = Reading(used_by_others, "kfd:proc/*/vram_*", now_ms);
    d->set_unreclaimed_bytes(unreclaimed);
    *d->mutable_unreclaimed() = Reading(unreclaimed, "derived:host_used-holders_vram-reserve", now_ms);
    if (unreclaimed > 0) {
      auto* f = d->add_findings();
      f->set_severity(dcufleet::v1::FINDING_WARNING);
      f->set_code("unreclaimed_memory");
      f->set_field(absl::StrCat("devices[", i, "]"));
      f->set_message(absl::StrCat(unreclaimed / kGiB, " GiB in use with no live holder"));
    }
  }
  for (const auto& [name, config] : options.models) {
    auto* m = inv.add_models();
    m->set_path(absl::StrCat("/data/models/", name));
    m->set_name(name);
    m->set_architecture("Qwen3ForCausalLM");
    m->set_config_sha256("3f0c7bde2f6a7c0e1c9f64f3b1c6d2e0a8b7c4d9e5f60718293a4b5c6d7e8f90");
    m->set_weight_bytes(16381470720);
    m->set_shards_complete(true);
    m->set_config_json(config.empty() ? Qwen3_8BConfigJson() : config);
    for (const char* e : {"config.json", "generation_config.json", "merges.txt",
                          "model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors",
                          "model-00003-of-00005.safetensors", "model-00004-of-00005.safetensors",
                          "model-00005-of-00005.safetensors", "model.safetensors.index.json",
                          "tokenizer.json", "tokenizer_config.json", "vocab.json"}) {
      m->add_entries(e);
    }
  }
  for (const auto& [kind, location] : options.environments) {
    auto* e = inv.add_environments();
    e->set_kind(kind);
    e->set_location(location);
    (*e->mutable_package_versions())["vllm"] = "0.9.2";
    (*e->mutable_package_versions())["torch"] = "2.5.1";
    (*e->mutable_package_versions())["triton"] = "3.0.0";
  }
  return inv;
}

std::vector<dcufleet::v1::NodeView> MakeFleet(int count, const FleetOptions& options,
                                              int64_t now_ms) {
  std::vector<dcufleet::v1::NodeView> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    dcufleet::v1::NodeView n;
    n.set_node_id(absl::StrFormat("node-%016x", Mix(i)));
    n.set_name(NodeName(i));
    n.set_state(dcufleet::v1::NODE_READY);
    n.set_state_reason("agent connected");
    n.set_agent_version("0.1.0");
    n.add_capabilities("inventory");
    *n.mutable_inventory() = MakeInventory(i, options, now_ms);
    n.set_registered_at_ms(now_ms - 3600000);
    n.set_last_seen_ms(now_ms);
    n.set_connected_since_ms(now_ms - 3600000);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace dcu::bench
