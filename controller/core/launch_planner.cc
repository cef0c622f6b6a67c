#include "controller/core/launch_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace dcu::controller {

using dcufleet::v1::Deployment;
using dcufleet::v1::InstanceSpec;

std::vector<std::string> MergeLibraryOrder(const std::vector<std::string>& front,
                                           const std::vector<std::string>& rest) {
  std::vector<std::string> merged = front;
  for (const auto& p : rest) {
    if (std::find(merged.begin(), merged.end(), p) == merged.end()) merged.push_back(p);
  }
  return merged;
}

int64_t PlacedDeviceTotal(const dcufleet::v1::NodeView& node,
                          const dcufleet::v1::Placement& placement) {
  if (placement.device_indices().empty()) return 0;
  for (const auto& dev : node.inventory().devices()) {
    if (dev.index() == placement.device_indices(0)) return dev.total().bytes();
  }
  return 0;
}

LaunchPlan LaunchPlanner::Plan(const Deployment& d, const ScheduleInput& in,
                               const NodeLookup& node_of) const {
  LaunchPlan out;
  out.schedule = Schedule(in);
  const ScheduleResult& r = out.schedule;
  if (!r.placed) {
    out.outcome = LaunchPlan::Outcome::kUnschedulable;
    return out;
  }
  if (r.kind == PlacementKind::kCopyFirst) {
    // Nothing to prepare or render until the node has the directory.
    out.outcome = LaunchPlan::Outcome::kCopyFirst;
    return out;
  }
  const dcufleet::v1::NodeView* node = node_of(r.placement.node());
  if (!node) {
    // The scheduler places only on nodes of the same snapshot.
    out.outcome = LaunchPlan::Outcome::kUnschedulable;
    return out;
  }
  out.preparation =
      preparer_->PrepareModel(d.spec().model(), *node, r.model_path, r.plan, r.placement.tp());
  const ModelPreparation& prep = out.preparation;
  if (!prep.blocking_reason.empty()) {
    out.outcome = LaunchPlan::Outcome::kModelUnusable;
    out.error = prep.blocking_reason;
    return out;
  }
  const std::string model_path = prep.model_path.empty() ? r.model_path : prep.model_path;
  auto launch = renderer_->RenderLaunch(d.spec(), r.plan, r.placement, model_path,
                                         PlacedDeviceTotal(*node, r.placement));
  if (!launch.ok()) {
    out.outcome = LaunchPlan::Outcome::kRenderFailed;
    out.error = absl::StrCat("cannot render the launch of stack '", r.plan.stack_id(), "': ",
                             launch.status().message());
    return out;
  }
  InstanceSpec& spec = out.instance;
  spec = *std::move(launch);
  spec.set_deployment(d.spec().name());
  spec.set_model(d.spec().model());
  spec.set_port(r.placement.port());
  spec.clear_device_indices();
  for (int i : r.placement.device_indices()) spec.add_device_indices(i);
  spec.set_startup_timeout_s(d.spec().startup_timeout_s());
  if (spec.served_model_name().empty()) spec.set_served_model_name(d.spec().served_model_name());
  if (!prep.overlay_dir.empty()) {
    // The engine is given the overlay (argv); the agent builds it from the
    // user's directory, which stays the instance's model_path.
    spec.set_overlay_dir(prep.overlay_dir);
    spec.set_overlay_config_json(prep.overlay_config_json);
    spec.set_overlay_source_dir(r.model_path);
    spec.set_model_path(r.model_path);
  }
  // The config fix (--hf-overrides …), then the remediations learned from
  // earlier attempts: they come last so that they win over the template.
  for (const auto& a : prep.extra_args) spec.add_argv(a);
  const auto& st = d.status();
  for (const auto& [k, v] : st.extra_env()) (*spec.mutable_env())[k] = v;
  for (const auto& a : st.extra_args()) spec.add_argv(a);
  // A learned library order overrides the recipe's: it goes first.
  std::vector<std::string> order = MergeLibraryOrder(
      {st.ld_library_path_prefix().begin(), st.ld_library_path_prefix().end()},
      {spec.ld_library_path_prefix().begin(), spec.ld_library_path_prefix().end()});
  spec.clear_ld_library_path_prefix();
  for (const auto& p : order) spec.add_ld_library_path_prefix(p);
  out.outcome = LaunchPlan::Outcome::kPlanned;
  return out;
}

}  // namespace dcu::controller
