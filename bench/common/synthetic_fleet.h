#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::bench {

// One accelerator model of the synthetic fleet. Totals are what the devices
// report (KFD mem_banks size / hipMemGetInfo total).
struct ArchProfile {
  std::string arch;
  std::string product_name;
  std::string vendor;
  int64_t total_bytes = 0;
  uint32_t pci_vendor_id = 0;
  uint32_t pci_device_id = 0;
};

// The mix used by every benchmark: 40% gfx928 (K100_AI, 64 GiB), 20% gfx906
// (Z100, 32 GiB), 20% gfx90a (MI210, 64 GiB), 20% gfx942 (MI300X, 192 GiB).
// Deterministic per node index.
const ArchProfile& ArchForNode(int node_index);

struct FleetOptions {
  int devices_per_node = 8;
  // Share of devices that hold memory no live process explains (a stranded
  // allocation or a leftover worker): the scheduler must avoid them.
  double unreclaimed_share = 0.03;
  // Share of devices already used by an unmanaged process (host view shows
  // it; device view is lower).
  double busy_share = 0.05;
  // Model directories reported by every node: (directory name, config.json).
  std::vector<std::pair<std::string, std::string>> models = {{"Qwen3-8B", ""}};
  // Runtime environments every node reports: (kind, location).
  std::vector<std::pair<std::string, std::string>> environments;
  uint64_t seed = 1;
  // Every node a K100_AI (gfx928, 64 GiB) with nothing held on any device:
  // the one job shape a side by side with Slurm needs (issue 22), where the
  // mix above would leave some jobs unplaceable by design.
  bool uniform = false;
};

// "node-00042".
std::string NodeName(int node_index);
// 42 for "node-00042"; -1 for a name NodeName did not make.
int NodeIndex(const std::string& node_name);

// The log tail of a launch that hits seed 000's triton error (see
// bench/loadgen/catalog/SOURCE.md) from the environment `env` on `arch`: the
// shipped rules classify it as triton_unsupported_gpu_target, a
// deterministic failover (dcu-loadgen's failover mode, BM_FailoverPass).
std::vector<std::string> TritonFailureLogTail(const std::string& env, const std::string& arch);

// A full inventory of one node as an agent reports it: devices with host and
// device views of memory (with sources), holders on busy devices, findings,
// model directories (with config.json) and environments.
dcufleet::v1::NodeInventory MakeInventory(int node_index, const FleetOptions& options,
                                          int64_t now_ms);

// `count` Ready nodes with inventories as above, in name order.
std::vector<dcufleet::v1::NodeView> MakeFleet(int count, const FleetOptions& options,
                                              int64_t now_ms);

// The published config.json of Qwen/Qwen3-8B (see the source note in the .cc).
const std::string& Qwen3_8BConfigJson();

}  // namespace dcu::bench
