#include "modelkit/startup_stall.h"

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
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

namespace {

// What a person should look at when a start-up went silent in `progress`'s
// place. The windows themselves are the stack's (catalog startup_stall).
std::string StallAdvice(const StartupProgress& p) {
  const dcufleet::v1::StartupPhase phase =
      p.phase() == dcufleet::v1::STARTUP_FAILED ? p.failed_in() : p.phase();
  switch (p.activity()) {
    case dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT:
      return "a rank waits for a peer that never joined: check that the ranks reach each other on "
             "the interface NCCL/RCCL chose (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, a firewall), "
             "that no stale process holds one of the devices (dcuctl describe node), and rerun with "
             "NCCL_DEBUG=INFO to see which call waits";
    case dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE:
    case dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE:
    case dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE:
      return "compilation went silent (no new Triton cache file, graph or line): a compiler or "
             "kernel hang, or a compile slower than the window; if it was progressing out of "
             "sight, raise the stack's startup_stall.compiling_s";
    case dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP:
      return "the API server began but never said it was up: check the instance log "
             "(dcuctl logs) and that nothing else serves its port";
    default:
      break;
  }
  switch (phase) {
    case dcufleet::v1::STARTUP_LOADING_WEIGHTS:
      return "no shard loaded within the window: the model directory's file system is slow or "
             "hung (a network mount); time a read of one shard on the node, or raise the stack's "
             "startup_stall.loading_weights_s for a slow store";
    case dcufleet::v1::STARTUP_WEIGHTS_LOADED:
    case dcufleet::v1::STARTUP_KV_CACHE_SIZED:
      return "the profile run or warm-up after the weights went silent: a device kernel may hang; "
             "check the devices (dcuctl describe node) and the instance log";
    case dcufleet::v1::STARTUP_READY:
      return "the log says the server is up but the health chain (/health, /v1/models, one token) "
             "never passed: check that the agent reaches the port and that the first completion "
             "does not fail";
    case dcufleet::v1::STARTUP_STARTING:
    case dcufleet::v1::STARTUP_PHASE_UNSPECIFIED:
    default:
      return "the engine went silent before loading the model: python imports from a cold env on "
             "a slow file system, or a wait before its first line; read the instance log "
             "(dcuctl logs)";
  }
}

}  // namespace

dcufleet::v1::AttemptFinding DiagnoseStartupStop(const StartupProgress& progress,
                                                 absl::string_view message) {
  dcufleet::v1::AttemptFinding f;
  if (progress.stopped_by() == dcufleet::v1::STARTUP_STOP_UNSPECIFIED) return f;
  const bool ceiling = progress.stopped_by() == dcufleet::v1::STARTUP_STOP_CEILING;
  f.set_failure_class(ceiling ? "startup_ceiling" : "startup_stalled");
  // The agent measured it; nothing here is inferred from text.
  f.set_confidence(1.0);
  f.add_evidence(message.empty() ? absl::StrCat(ceiling ? "start-up ceiling reached at "
                                                        : "start-up stalled at ",
                                                DescribeStartupPlace(progress))
                                 : std::string(message));
  const dcufleet::v1::StartupPhase phase = progress.phase() == dcufleet::v1::STARTUP_FAILED
                                               ? progress.failed_in()
                                               : progress.phase();
  (*f.mutable_params())["phase"] = std::string(common::StartupPhaseName(phase));
  if (progress.activity() != dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED) {
    (*f.mutable_params())["activity"] = std::string(common::StartupActivityName(progress.activity()));
  }
  if (progress.stuck_for_ms() > 0) {
    (*f.mutable_params())["stuck_for_s"] = absl::StrCat(progress.stuck_for_ms() / 1000);
  }
  if (progress.stall_window_ms() > 0) {
    (*f.mutable_params())["stall_window_s"] = absl::StrCat(progress.stall_window_ms() / 1000);
  }
  f.set_remediation_detail(
      ceiling ? "it was still making progress: raise the deployment's --startup-timeout (the "
                "per-phase stall windows still catch a real hang); retried with back-off"
              : absl::StrCat(StallAdvice(progress), "; retried with back-off"));
  return f;
}

}  // namespace dcu::modelkit
