#include "modelkit/startup_stall.h"

#include "absl/strings/str_cat.h"
#include "modelkit/startup_progress.h"

namespace dcu::modelkit {

using dcufleet::v1::StartupProgress;
using dcufleet::v1::StartupStallPolicy;

StartupStallPolicy DefaultStallPolicy() {
  StartupStallPolicy p;
  p.set_unknown_s(600);
  p.set_starting_s(600);
  p.set_distributed_init_s(300);
  p.set_loading_weights_s(900);
  p.set_weights_loaded_s(1200);
  p.set_compiling_s(1800);
  p.set_kv_cache_sized_s(1200);
  p.set_ready_s(600);
  return p;
}

StartupStallPolicy ResolveStallPolicy(const StartupStallPolicy& policy) {
  StartupStallPolicy out = DefaultStallPolicy();
  auto take = [](int32_t v, int32_t fallback) { return v > 0 ? v : fallback; };
  out.set_unknown_s(take(policy.unknown_s(), out.unknown_s()));
  out.set_starting_s(take(policy.starting_s(), out.starting_s()));
  out.set_distributed_init_s(take(policy.distributed_init_s(), out.distributed_init_s()));
  out.set_loading_weights_s(take(policy.loading_weights_s(), out.loading_weights_s()));
  out.set_weights_loaded_s(take(policy.weights_loaded_s(), out.weights_loaded_s()));
  out.set_compiling_s(take(policy.compiling_s(), out.compiling_s()));
  out.set_kv_cache_sized_s(take(policy.kv_cache_sized_s(), out.kv_cache_sized_s()));
  out.set_ready_s(take(policy.ready_s(), out.ready_s()));
  return out;
}

absl::Duration StallWindow(const StartupProgress& progress, const StartupStallPolicy& policy) {
  const StartupStallPolicy p = ResolveStallPolicy(policy);
  switch (progress.activity()) {
    case dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT:
      return absl::Seconds(p.distributed_init_s());
    case dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE:
    case dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE:
    case dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE:
      return absl::Seconds(p.compiling_s());
    case dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP:
      return absl::Seconds(p.ready_s());
    default:
      break;
  }
  dcufleet::v1::StartupPhase phase = progress.phase() == dcufleet::v1::STARTUP_FAILED
                                         ? progress.failed_in()
                                         : progress.phase();
  switch (phase) {
    case dcufleet::v1::STARTUP_STARTING:
      return absl::Seconds(p.starting_s());
    case dcufleet::v1::STARTUP_LOADING_WEIGHTS:
      return absl::Seconds(p.loading_weights_s());
    case dcufleet::v1::STARTUP_WEIGHTS_LOADED:
      return absl::Seconds(p.weights_loaded_s());
    case dcufleet::v1::STARTUP_COMPILING:
      return absl::Seconds(p.compiling_s());
    case dcufleet::v1::STARTUP_KV_CACHE_SIZED:
      return absl::Seconds(p.kv_cache_sized_s());
    case dcufleet::v1::STARTUP_READY:
      return absl::Seconds(p.ready_s());
    default:
      return absl::Seconds(p.unknown_s());
  }
}

namespace {

std::string After(const StartupProgress& progress) {
  if (progress.last_line().empty()) return " with no line of its own in the log";
  return absl::StrCat(" after `", progress.last_line(), "`");
}

}  // namespace

StallVerdict CheckStartupStall(const StartupProgress& progress, absl::Duration since_progress,
                               absl::Duration since_start, absl::Duration ceiling,
                               const StartupStallPolicy& policy) {
  StallVerdict v;
  v.window = StallWindow(progress, policy);
  if (ceiling > absl::ZeroDuration() && since_start >= ceiling) {
    v.kind = StallVerdict::Kind::kCeiling;
    v.message = absl::StrCat("not ready within the start-up ceiling of ",
                             absl::FormatDuration(ceiling), " (still progressing, at ",
                             DescribeStartupPlace(progress), ")");
    return v;
  }
  if (since_progress >= v.window) {
    v.kind = StallVerdict::Kind::kStalled;
    v.message = absl::StrCat("stuck ", absl::FormatDuration(absl::Trunc(since_progress, absl::Milliseconds(100))),
                             " at ", DescribeStartupPlace(progress), After(progress),
                             " (stall window ", absl::FormatDuration(v.window), ")");
  }
  return v;
}

}  // namespace dcu::modelkit
