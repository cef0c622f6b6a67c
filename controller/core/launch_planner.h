#pragma once

#include <functional>
#include <string>
#include <vector>

#include "controller/core/knowledge.h"
#include "controller/core/scheduler.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::controller {

// The one merge of library search orders: `front` first, then each entry of
// `rest` not already there, in its order. Every LD_LIBRARY_PATH merge (the
// stack's env recipe, the arch recipe, remediations learned from failures,
// the rendered launch) goes through it.
std::vector<std::string> MergeLibraryOrder(const std::vector<std::string>& front,
                                           const std::vector<std::string>& rest);

// Total bytes of the placement's first device on `node` (0 when unknown).
// The memory plan (and the --kv-cache-memory-bytes it sizes) is computed
// from this figure at render time and during remediation alike.
int64_t PlacedDeviceTotal(const dcufleet::v1::NodeView& node,
                          const dcufleet::v1::Placement& placement);

// What the next launch of a deployment would be: where, with which plan, and
// the complete InstanceSpec the agent would be sent, less the per-attempt
// fields (instance_id, attempt) the caller adds when it really launches.
struct LaunchPlan {
  enum class Outcome {
    kPlanned,        // `instance` is the launch
    kUnschedulable,  // nothing fits: schedule.rejections say why per node
    kCopyFirst,      // the chosen node copies the model first (schedule.copy);
                     // the launch is planned once it reports the copy
    kModelUnusable,  // the config audit found a blocking problem: `error`
    kRenderFailed,   // the stack's template could not be rendered: `error`
  };
  Outcome outcome = Outcome::kUnschedulable;
  ScheduleResult schedule;
  ModelPreparation preparation;
  std::string error;
  dcufleet::v1::InstanceSpec instance;
};

// schedule → prepare the model → render the launch → apply the deployment's
// learned remediations. The single place a launch's InstanceSpec is
// assembled: the real launch (DeployController::TryLaunch) and the dry run
// both call it, so a dry run shows exactly what the next launch would send.
class LaunchPlanner {
 public:
  using NodeLookup = std::function<const dcufleet::v1::NodeView*(const std::string&)>;

  LaunchPlanner(ModelPreparer* preparer, LaunchRenderer* renderer)
      : preparer_(preparer), renderer_(renderer) {}

  // `in` is the scheduler's input for `d` (the caller owns the pass caches it
  // refers to); `node` resolves a placement's node to its view.
  LaunchPlan Plan(const dcufleet::v1::Deployment& d, const ScheduleInput& in,
                  const NodeLookup& node) const;

 private:
  ModelPreparer* const preparer_;
  LaunchRenderer* const renderer_;
};

}  // namespace dcu::controller
