#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "common/units.h"
#include "controller/core/model_sources.h"
#include "controller/core/small_int_set.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "modelkit/memory_plan.h"

namespace dcu::controller {

// What the scheduler needs to know about the model.
struct ModelFacts {
  std::string name;
  int64_t weight_bytes = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  // TP sizes the model's heads allow, ascending.
  std::vector<int> valid_tp;
  // The catalog's Hugging Face repository ("Qwen/Qwen3-32B"): where an HTTP
  // mirror has it.
  std::string hf_repo;
};

// Result of checking one device size against the memory plan for a TP.
struct MemoryCheck {
  bool fits = false;
  // Device-view free bytes each device must have (the vLLM start-up rule:
  // gpu_memory_utilization × total, and at least weights + KV + overhead).
  int64_t required_free_bytes = 0;
  // The plan's figures, without its explanation lines (a placement carries
  // a copy; modelkit::PlacementMemoryLines renders them on read).
  dcufleet::v1::MemoryPlan plan;
  std::string reason;
};

// One node as the scheduler sees it: the view plus what every placement
// decision reads, prepared once per reconcile pass (MakeScheduleNode) so that
// a placement costs a few comparisons per node looked at, not a walk through
// its protobuf. `busy_*` change as the pass places instances.
struct ScheduleNode {
  struct Dev {
    // Why a device is unusable whatever is asked: unreclaimed memory beyond
    // the tolerance, or a leftover / zombie holder (kNo: usable).
    enum class Dead : uint8_t { kNo, kUnreclaimed, kLeftoverHolder };
    int index = 0;
    // Position in view->inventory().devices() (where the explanation reads
    // the figures it names).
    int slot = 0;
    // Device-view free bytes (schedulable, else device, host, total).
    int64_t free = 0;
    Dead dead = Dead::kNo;
  };
  const dcufleet::v1::NodeView* view = nullptr;
  bool ready = false;
  // Why nothing new goes there (modelkit::NodeBlockOf): not Ready, its
  // agent drains it (issue 20), a person cordoned or drained it.
  modelkit::NodeBlock block = modelkit::NodeBlock::kNone;
  // Arch of the node's first device with one; "" when unknown.
  std::string arch;
  // Total bytes of the first device of `arch`.
  int64_t device_total = 0;
  // Devices of `arch`, in index order (inline: copying a node per pass
  // allocates nothing for nodes of up to 8 devices).
  absl::InlinedVector<Dev, 8> devices;
  // Devices and ports taken by instances (ours and, for ports, any the node
  // reports).
  SmallIntSet busy_devices;
  SmallIntSet busy_ports;
  // When another node has the same address (two agents on one host: two
  // Slurm allocations on a node, a loopback test fleet), the ports taken on
  // any of them: their instances share one port space. Owned by the pass
  // (StepContext::shared_host_ports); null for a node alone at its address.
  absl::flat_hash_set<int>* host_ports = nullptr;
};

// Devices whose unreclaimed memory exceeds the tolerance are avoided (a
// leftover process or stranded allocation); they can be freed by reaping.
ScheduleNode MakeScheduleNode(const dcufleet::v1::NodeView& view,
                              int64_t unreclaimed_tolerance_bytes = common::kUnreclaimedToleranceBytes);

using MemoryCheckPtr = std::shared_ptr<const MemoryCheck>;

// The plans of one arch for one model, as the knowledge gives them (the
// scheduler orders them by rank), and the broken ones with their reasons.
struct ArchPlanSet {
  std::vector<dcufleet::v1::Plan> plans;
  std::vector<dcufleet::v1::Plan> excluded;
};
using ArchPlanSetPtr = std::shared_ptr<const ArchPlanSet>;

struct ScheduleInput {
  dcufleet::v1::DeploymentSpec spec;
  ModelFacts model;
  // The fleet in name order (not owned). Nodes before `first_node` are known
  // to have no usable device for this spec's gpu_memory_utilization (see
  // ScheduleResult::first_usable) and are not looked at.
  const std::vector<ScheduleNode>* nodes = nullptr;
  size_t first_node = 0;
  // Distinct (arch, device total) of the Ready nodes, when the caller keeps
  // them (computed from `nodes` otherwise).
  const std::vector<std::pair<std::string, int64_t>>* shapes = nullptr;
  // Ordered plans for an arch (verified bare, verified container, untested
  // bare, untested container) and the broken ones. Asked once per arch per
  // call; shared, not copied: a pass asks the knowledge once per (model,
  // arch) and every deployment of it reads the same set. Null: none.
  std::function<ArchPlanSetPtr(const std::string& arch)> plans_for_arch;
  // Memory plan for `tp` devices of `total` bytes. Asked once per (tp, total)
  // per call.
  // Shared, not copied (its explanation is several lines of text, and a
  // call asks for every TP on every device size). Null or unset: fits,
  // nothing required.
  std::function<MemoryCheckPtr(int tp, int64_t device_total)> memory;
  // Where the plan's env/image is on a node ("" when absent). Conda env paths
  // differ between nodes; when unset the plan's own location must be listed.
  std::function<std::string(const dcufleet::v1::Plan&, const dcufleet::v1::NodeView&)>
      runtime_on_node;
  // Where the model's weights are on a node ("" when absent).
  std::function<std::string(const dcufleet::v1::NodeView&)> model_path_on_node;
  // Why the model's directory on a node cannot be used, when it is there but
  // failed verification ("" or unset: not there). Asked only to explain.
  std::function<std::string(const dcufleet::v1::NodeView&)> model_damage_on_node;
  // How a node that lacks the model would get it before a launch: the copy
  // to make (PlanCopyBeforeLaunch), or why it cannot be copied there. Unset:
  // only nodes that have the model are placed on. Asked only when no node
  // with the model fits, for the nodes that pass every other check, best
  // first, until one can be copied to; NOT_FOUND means no source has it for
  // any node, and the rest are not asked.
  std::function<absl::StatusOr<ModelCopyPlan>(const dcufleet::v1::NodeView&)> model_copy_to_node;
  // Stacks this deployment already proved broken (failover moves past them).
  std::set<std::string> excluded_stacks;
  // This deployment's own extra exclusions (after failures on them): devices
  // per node name, and ports on every node.
  std::map<std::string, std::set<int>> avoid_devices;
  std::set<int> avoid_ports;
  int port_base = 8000;
  // How many of this deployment's other replicas each node runs (not
  // owned; null: none). A node with fewer ranks higher at the same plan
  // rank, whatever the TP: replicas spread across nodes first.
  const std::map<std::string, int>* replicas_on_node = nullptr;
  // Nodes named with their reason in `rejections` when nothing fits, and
  // when something does; the rest are counted in one summary entry.
  size_t max_rejections = 50;
  size_t max_rejections_placed = 5;
};

// What a placement asks of its node (issue 19): launch from the model
// directory it has, or first copy the model there (`ScheduleResult::copy`)
// and launch once the node reports the copy.
enum class PlacementKind : uint8_t { kLaunch, kCopyFirst };

struct ScheduleResult {
  bool placed = false;
  PlacementKind kind = PlacementKind::kLaunch;
  // kCopyFirst: the copy the node makes first; `reason` says why this node
  // ("no node with the model fits; node-b copies Qwen3-32B from node-a
  // first"), and `rejections` name the nodes with the model that could not
  // take it. `model_path` is empty.
  ModelCopyPlan copy;
  std::string reason;
  dcufleet::v1::Plan plan;
  dcufleet::v1::Placement placement;
  std::string model_path;
  // Plans for the chosen node's arch (or the first arch seen when unplaced).
  std::vector<dcufleet::v1::Plan> plans;
  std::vector<dcufleet::v1::Plan> excluded_plans;
  // Nodes that were looked at and could not take it, and why (up to
  // max_rejections, then one "(N more nodes)" entry). Nodes after the chosen
  // one are not looked at once nothing can rank higher.
  std::vector<dcufleet::v1::NodeRejection> rejections;
  // Index of the first node at or after `first_node` that is Ready with a
  // known arch and has enough free devices for some TP this spec could get
  // there (whatever this deployment avoids or finds installed); while a pass
  // only takes devices, later calls with the same model, TP request and
  // gpu_memory_utilization may start there.
  size_t first_usable = 0;
};

// A pure, deterministic function of its input: same fleet, same answer.
// Picks the node, devices, TP, plan and port for one instance of the
// deployment, or explains per node why none fits. The choice: the best plan
// rank, then the node running fewest of the deployment's replicas, then the
// smallest TP, then the first node in name order. A node that has the model
// always wins over one that lacks it; only when none fits is a node that
// passes every check but the model's chosen, by the same order, with a
// copy-first placement (the first whose `model_copy_to_node` gives a copy). The walk
// stops at the first node that reaches the best (rank, TP) any node of the
// fleet could reach, so a placement usually looks at a handful of nodes.
//
// The fit rule is one set of checks (node Ready with a known arch, a usable
// plan for the arch, its env/image on the node, the model directory, a TP
// whose memory plan fits and enough usable devices for it), each giving pass
// or a cause; the fast path, the explanations (WhyNot, `rejections`) and the
// `first_usable` cursor are all built from them.
ScheduleResult Schedule(const ScheduleInput& input);

// Why `node` cannot take one instance of the deployment, as `rejections`
// words it; "" when it can (whether or not another node ranks higher).
std::string WhyNot(const ScheduleInput& input, const ScheduleNode& node);

// Distinct (arch, device total) of the Ready nodes (ScheduleInput::shapes).
std::vector<std::pair<std::string, int64_t>> FleetShapes(const std::vector<ScheduleNode>& nodes);

}  // namespace dcu::controller
