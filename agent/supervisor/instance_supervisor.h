#pragma once

#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/runtime/runtime.h"
#include "agent/supervisor/file_counter.h"
#include "common/clock.h"
#include "common/http_client.h"
#include "modelkit/startup_progress.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// Receives every change of an instance's status (phase, progress, pid…).
// Called from supervisor threads, never with a supervisor lock held; must be
// thread-safe and quick (the controller link queues and forwards).
using InstanceStatusListener = std::function<void(const dcufleet::v1::InstanceStatus&)>;

struct SupervisorOptions {
  // How often the instance is inspected and health-checked while starting.
  absl::Duration poll_interval = absl::Milliseconds(500);
  // The start-up ceiling when spec.startup_timeout_s is 0: a last resort.
  // A start-up fails sooner when it stops progressing, by the stall windows
  // of its stack (spec.startup_stall, modelkit/startup_stall.h).
  absl::Duration default_startup_timeout = absl::Hours(4);
  // Counts files in the instance's TRITON_CACHE_DIR (bare instances whose
  // env sets it). Null: a DirectoryFileCounter.
  FileCounter* file_counter = nullptr;
  // Used when spec.stop_grace_s is 0.
  absl::Duration default_stop_grace = absl::Seconds(30);
  absl::Duration http_timeout = absl::Seconds(5);
  // The one-token completion may compile kernels on first use.
  absl::Duration completion_timeout = absl::Seconds(120);
  // Log lines sent with a failure (the diagnosis classifies them).
  int log_tail_lines = 200;
  size_t log_tail_bytes = 256 << 10;
  // While READY: /health every ready_check_interval; this many consecutive
  // failures mark the instance FAILED (and stop it).
  absl::Duration ready_check_interval = absl::Seconds(10);
  int unhealthy_threshold = 3;
  std::string health_host = "127.0.0.1";
};

// Supervises one instance on its own thread:
//   PENDING → (Runtime::Start) → STARTING → LOADING (weights in the log)
//   → HEALTH_CHECKING (GET /health is 200) → READY (GET /v1/models lists the
//   served name and POST /v1/completions of max_tokens 1 answers 200).
// While starting, InstanceStatus.startup carries the start-up phase and
// figures read from the log (modelkit/startup_progress.h). Exit, start
// failure, a stall (no progress within the window of its phase,
// modelkit/startup_stall.h), the start-up ceiling or lasting unhealthiness →
// FAILED with exit code and the last log lines; the process is stopped. RequestStop() →
// STOPPING → STOPPED (Runtime::Stop then Runtime::Remove). Detach() ends
// supervision and leaves the instance running (agent shutdown/restart).
class InstanceSupervisor {
 public:
  // `runtime` may be null: the instance then fails at once with `no_runtime_reason`.
  InstanceSupervisor(dcufleet::v1::InstanceSpec spec, Runtime* runtime, common::HttpClient* http,
                     common::Clock* clock, SupervisorOptions options,
                     InstanceStatusListener listener, std::string no_runtime_reason = "");
  ~InstanceSupervisor();

  InstanceSupervisor(const InstanceSupervisor&) = delete;
  InstanceSupervisor& operator=(const InstanceSupervisor&) = delete;

  // Starts the supervision thread. With `adopted`, the instance was found by
  // Runtime::Recover (or already running): it is not started again.
  void Begin(std::optional<RuntimeInstance> adopted = std::nullopt) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the thread to stop the instance; returns at once.
  void RequestStop() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the thread to end without touching the instance; returns at once.
  void Detach() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for the thread to end (after RequestStop or Detach).
  void Join();

  dcufleet::v1::InstanceStatus status() const ABSL_LOCKS_EXCLUDED(mu_);
  const dcufleet::v1::InstanceSpec& spec() const { return spec_; }
  // True once the thread has finished.
  bool done() const ABSL_LOCKS_EXCLUDED(mu_);
  bool stop_requested() const ABSL_LOCKS_EXCLUDED(mu_);
  void set_generation(int64_t generation) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class Signal { kNone, kStop, kDetach };

  void Run(std::optional<RuntimeInstance> adopted);
  // Waits up to `d` for a stop/detach request; returns the request.
  Signal WaitFor(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies `mutate` to the status and publishes it when it changed.
  void Update(const std::function<void(dcufleet::v1::InstanceStatus*)>& mutate)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(const std::string& message, bool stop_instance, const RuntimeInstance* exited);
  // One pass of the health sequence; true when READY.
  bool CheckHealth();
  // Reads the log (and Triton's cache) into progress_ without publishing.
  void AdvanceProgress();
  // AdvanceProgress, then publishes the result.
  void UpdateProgress();
  void PublishProgress();
  // What a status shows of progress_ (startup, shards), for every update
  // that carries it.
  void ShowProgress(dcufleet::v1::InstanceStatus* s) const;
  std::vector<std::string> LogTail();
  void DoStop();
  // After FAILED: wait for stop or detach.
  void ParkUntilSignal();

  const dcufleet::v1::InstanceSpec spec_;
  Runtime* const runtime_;
  common::HttpClient* const http_;
  common::Clock* const clock_;
  const SupervisorOptions options_;
  const InstanceStatusListener listener_;
  const std::string no_runtime_reason_;
  std::string served_name_;
  int unhealthy_streak_ = 0;
  // Start-up progress, owned by the supervision thread; published (less
  // last_line, which changes with every line) through Update.
  DirectoryFileCounter default_file_counter_;
  dcufleet::v1::StartupProgress progress_;
  modelkit::StartupLogFollower log_follower_;
  // Where the next read of the log starts (Runtime::ReadLogSince); none
  // once the runtime said its logs have no positions: tails, then.
  std::optional<int64_t> log_position_ = 0;
  absl::Time last_progress_ = absl::InfinitePast();
  std::string triton_cache_dir_;

  mutable absl::Mutex mu_;
  dcufleet::v1::InstanceStatus status_ ABSL_GUARDED_BY(mu_);
  Signal signal_ ABSL_GUARDED_BY(mu_) = Signal::kNone;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace dcu::agent
