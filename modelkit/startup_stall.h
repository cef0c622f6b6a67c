#pragma once

#include <string>

#include "absl/time/time.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::modelkit {

// The one stall policy of a start-up (issue 23): an instance fails its
// start-up when it makes no progress for the window of the phase it is in,
// not after one fixed timeout. A 70B model on a slow file system takes an
// hour to load and compile and is fine as long as shards, cache files or
// lines keep coming; a hang at NCCL/RCCL init is failed in minutes. The
// overall ceiling (the deployment's startup_timeout_s) stays as a last
// resort. Pure: the agent's supervisor measures the times and calls it.

// The default windows (documented in docs/architecture.md, "Start-up
// phases and stall detection"). Why these sizes:
//   unknown          10 min  no line of the engine's own yet (python imports
//                            on a cold conda env over NFS are silent)
//   starting         10 min  imports, platform, arguments, model config
//   distributed init  5 min  NCCL/RCCL init takes seconds when it works; a
//                            peer that never joins hangs it forever
//   loading_weights  15 min  between two shards (a 10 GB shard over a slow
//                            network file system)
//   weights_loaded   20 min  the profile run after the weights is silent
//   compiling        30 min  Dynamo/Inductor can be silent for long; Triton
//                            cache files and graph-capture k/n show progress
//   kv_cache_sized   20 min  graph capture and warm-up follow
//   ready            10 min  the log says the server is up, but the health
//                            chain (/health, /v1/models, one token) has not
//                            passed: the first completion may compile kernels
dcufleet::v1::StartupStallPolicy DefaultStallPolicy();

// `policy` with every 0 (unset) field taken from DefaultStallPolicy().
dcufleet::v1::StartupStallPolicy ResolveStallPolicy(const dcufleet::v1::StartupStallPolicy& policy);

// The window that applies to `progress` (its activity first: distributed
// init and compilation have their own; then its phase; FAILED uses the
// phase it failed in, for an engine that hangs after its error).
absl::Duration StallWindow(const dcufleet::v1::StartupProgress& progress,
                           const dcufleet::v1::StartupStallPolicy& policy);

struct StallVerdict {
  enum class Kind { kProgressing, kStalled, kCeiling };
  Kind kind = Kind::kProgressing;
  absl::Duration window;
  // For kStalled / kCeiling: the failure message, e.g. "stuck 5m at
  // starting (distributed init) after `NCCL INFO ncclCommInitRank comm …`
  // (stall window 5m)". Names the phase, so the diagnosis shows it.
  std::string message;
};

// `since_progress`: time since the start-up last advanced
// (StartupAdvanced); `since_start`: since the process started; `ceiling`:
// the last resort (<= 0: none).
StallVerdict CheckStartupStall(const dcufleet::v1::StartupProgress& progress,
                               absl::Duration since_progress, absl::Duration since_start,
                               absl::Duration ceiling,
                               const dcufleet::v1::StartupStallPolicy& policy);

// The diagnosis of a start-up the agent ended itself (progress.stopped_by
// set): class "startup_stalled" or "startup_ceiling", the agent's message
// (which names the phase and the last line) as evidence, the phase and
// activity as params, and what to look at for that phase. Neither class
// implicates the stack (modelkit/verdict.h): a hang at distributed init is
// a peer or a network, a silent file system is the node's; the deployment
// backs off and fails over after its attempts like any node-state failure.
// `message`: the attempt's message. Returns a finding with an empty class
// when the engine ended the start-up (stopped_by unset).
dcufleet::v1::AttemptFinding DiagnoseStartupStop(const dcufleet::v1::StartupProgress& progress,
                                                 absl::string_view message);

}  // namespace dcu::modelkit
