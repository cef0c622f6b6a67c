#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::controller {

// What the scheduler needs to know about the model.
struct ModelFacts {
  std::string name;
  int64_t weight_bytes = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  // TP sizes the model's heads allow, ascending.
  std::vector<int> valid_tp;
};

// Result of checking one device size against the memory plan for a TP.
struct MemoryCheck {
  bool fits = false;
  // Device-view free bytes each device must have (the vLLM start-up rule:
  // gpu_memory_utilization × total, and at least weights + KV + overhead).
  int64_t required_free_bytes = 0;
  std::vector<std::string> explanation;
  std::string reason;
};

struct ScheduleInput {
  dcufleet::v1::DeploymentSpec spec;
  ModelFacts model;
  std::vector<dcufleet::v1::NodeView> nodes;
  // Ordered plans for an arch (verified bare, verified container, untested
  // bare, untested container); broken ones come back in `excluded`.
  std::function<void(const std::string& arch, std::vector<dcufleet::v1::Plan>* plans,
                     std::vector<dcufleet::v1::Plan>* excluded)>
      plans_for_arch;
  // Memory plan for `tp` devices of `total` bytes.
  std::function<MemoryCheck(int tp, int64_t device_total)> memory;
  // Where the plan's env/image is on a node ("" when absent). Conda env paths
  // differ between nodes; when unset the plan's own location must be listed.
  std::function<std::string(const dcufleet::v1::Plan&, const dcufleet::v1::NodeView&)>
      runtime_on_node;
  // Where the model's weights are on a node ("" when absent).
  std::function<std::string(const dcufleet::v1::NodeView&)> model_path_on_node;
  // Stacks this deployment already proved broken (failover moves past them).
  std::set<std::string> excluded_stacks;
  // Devices and ports taken by other instances, per node.
  std::map<std::string, std::set<int>> busy_devices;
  std::map<std::string, std::set<int>> busy_ports;
  int port_base = 8000;
  // Devices whose unreclaimed memory exceeds this are avoided (a leftover
  // process or stranded allocation); they can be freed by reaping.
  int64_t unreclaimed_tolerance_bytes = 1LL << 30;
};

struct ScheduleResult {
  bool placed = false;
  dcufleet::v1::Plan plan;
  dcufleet::v1::Placement placement;
  std::string model_path;
  // Plans for the chosen node's arch (or the first arch seen when unplaced).
  std::vector<dcufleet::v1::Plan> plans;
  std::vector<dcufleet::v1::Plan> excluded_plans;
  // Every node that was not chosen, and why (all of them when unplaced).
  std::vector<dcufleet::v1::NodeRejection> rejections;
};

// A pure, deterministic function of its input: same fleet, same answer.
// Picks the node, devices, TP, plan and port for one instance of the
// deployment, or explains per node why none fits.
ScheduleResult Schedule(const ScheduleInput& input);

}  // namespace dcu::controller
