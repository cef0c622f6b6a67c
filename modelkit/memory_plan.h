#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::modelkit {

// Per-device memory vLLM needs besides weights and KV cache: activation peak
// of the profiling run, HIP context, non-torch allocations. The default comes
// from the first seed, where 0.9 x 63.98 GiB - weights/TP - the reported KV
// cache leaves 2.83 GiB both at TP=2 (24.24 GiB KV) and TP=4 (39.5 GiB KV).
// 2.85 GiB rounds that up a little.
inline constexpr int64_t kDefaultOverheadBytes = static_cast<int64_t>(2.85 * 1073741824.0);

// What memory planning needs to know about a model.
struct ModelShape {
  std::string name;
  int64_t weight_bytes = 0;
  int num_attention_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int attention_layers = 0;
  int dtype_bytes = 2;
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;

  // KV bytes one token takes on one device at tensor parallel size `tp`.
  int64_t KvBytesPerTokenPerDevice(int tp) const;
  // The terms of that count, as a plan keeps them (KvFormulaText writes
  // them out).
  dcufleet::v1::KvShape Kv() const;
  std::vector<int> ValidTp(int max_tp) const;
};

ModelShape ShapeFromAudit(const dcufleet::v1::AuditReport& report);
ModelShape ShapeFromCatalog(const dcufleet::v1::ModelEntry& entry);

// Plans one model on one kind of device. With request.tp = 0 the smallest
// valid TP (up to device_count, default 8) that fits is chosen, and `tried`
// says why each smaller one did not. `explanation` is the arithmetic, one
// line per step; `fits` is false with `failure_reason` when nothing fits,
// including when vLLM's start-up rule (device-view free >= utilization x
// total) fails.
dcufleet::v1::MemoryPlan PlanMemory(const ModelShape& model,
                                    const dcufleet::v1::MemoryPlanRequest& request);

// The explanation of one TP's plan, one line per step, rendered from the
// plan's figures (PlanMemory stores these lines in `explanation`; a placement
// stores only the figures). Without the start-up rule line when the plan
// assumed a clean device and the devices were checked one by one.
std::vector<std::string> ExplainMemoryPlan(const dcufleet::v1::MemoryPlan& plan,
                                           bool with_startup_rule = true);

// "2 (K,V) x 64 layers x 2 kv heads (8 / TP 4) x 128 head_dim x 2 bytes".
std::string KvFormulaText(const dcufleet::v1::KvShape& shape, int tp);

// A placement's memory lines as `dcuctl describe` shows them: the stored
// lines of documents from before stop 45, else rendered from its plan's
// figures, then the devices of the node it passed over.
std::vector<std::string> PlacementMemoryLines(const dcufleet::v1::Placement& placement);

// "device 3 runs another instance", "devices 0, 1 run other instances": the
// clause for devices a placement passed over because other instances run on
// them (the scheduler's reasons and a placement's memory lines both say it).
std::string DevicesRunningOthersText(absl::Span<const int32_t> devices);

// Why no placement goes to a device whatever it asks (the fleet's own
// instances on it aside): more memory stranded on it than tolerated, or a
// holder to reap first. The scheduler's rule, and what dcuctl's free
// capacity leaves out.
enum class DeviceBlock : uint8_t { kNone, kStrandedMemory, kHolderToReap };
// (A holder to reap: common::HolderToReap.)
DeviceBlock DeviceBlockOf(const dcufleet::v1::Device& device, int64_t unreclaimed_tolerance_bytes);

// Why no placement goes to a node whatever it asks, in the order the
// scheduler checks: not Ready, its agent drains it (a Slurm job ending),
// a person cordoned or drained it (dcuctl cordon / drain). The scheduler's
// rule, and why dcuctl counts no schedulable free memory there.
enum class NodeBlock : uint8_t { kNone, kNotReady, kAgentDrain, kCordoned };
NodeBlock NodeBlockOf(const dcufleet::v1::NodeView& node);

// "4.8", "63.98", "57.59": GiB with at most two decimals, as vLLM prints them.
std::string GiBText(int64_t bytes);

}  // namespace dcu::modelkit
