#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/runtime/runtime.h"
#include "agent/supervisor/instance_supervisor.h"
#include "common/clock.h"
#include "common/http_client.h"

namespace dcu::agent {

// Converges the node to the desired set of instances the controller sends
// (TF Serving's AspiredVersionsManager, on instances): starts what is
// missing, stops what is extra, keeps what runs. Idempotent; a generation
// older than the last one applied is ignored. One InstanceSupervisor (one
// thread) per instance; a small housekeeping thread collects stopped ones and
// starts replacements whose id was still stopping.
class InstanceManager {
 public:
  struct Options {
    SupervisorOptions supervisor;
    // Housekeeping period; <= 0 disables the thread (tests call
    // ReconcileOnceForTest()).
    absl::Duration housekeeping_interval = absl::Milliseconds(200);
  };

  // `runtimes` maps InstanceSpec.runtime_kind ("bare", "container", "fake")
  // to a runtime; none owned, all must outlive the manager.
  InstanceManager(std::map<std::string, Runtime*> runtimes, common::HttpClient* http,
                  common::Clock* clock, Options options, InstanceStatusListener listener);
  // Detaches from every instance (they keep running) and joins the threads.
  ~InstanceManager();

  // Adopts what the runtimes found from an earlier agent (Runtime::Recover).
  // Call once, before the first Apply. Returns the first runtime error, after
  // recovering what the other runtimes could.
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);

  // The desired set for this node. Instances are identified by instance_id;
  // a spec that changed for the same id replaces the instance (stop, then
  // start). Instances not listed are stopped and removed.
  void Apply(int64_t generation, std::vector<dcufleet::v1::InstanceSpec> specs)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Statuses of every instance the manager holds (not the ones already
  // STOPPED and collected), ordered by instance id.
  std::vector<dcufleet::v1::InstanceStatus> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  int64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);

  // No instance is supervised or waiting to start (a drained node, issue 20).
  bool HoldsNothing() const ABSL_LOCKS_EXCLUDED(mu_);

  // Ends supervision, leaving every instance running (agent shutdown).
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Stops every instance and waits until all are STOPPED (or `timeout`).
  // Returns DEADLINE_EXCEEDED naming what is left.
  absl::Status StopAllAndWait(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  void ReconcileOnceForTest() ABSL_LOCKS_EXCLUDED(mu_) { Housekeep(); }

 private:
  void Housekeep() ABSL_LOCKS_EXCLUDED(mu_);
  std::unique_ptr<InstanceSupervisor> MakeSupervisor(const dcufleet::v1::InstanceSpec& spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Publish(const dcufleet::v1::InstanceStatus& status);

  const std::map<std::string, Runtime*> runtimes_;
  common::HttpClient* const http_;
  common::Clock* const clock_;
  const Options options_;
  const InstanceStatusListener listener_;

  mutable absl::Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = -1;
  std::map<std::string, std::unique_ptr<InstanceSupervisor>> supervisors_ ABSL_GUARDED_BY(mu_);
  // Specs waiting for an instance with the same id to finish stopping.
  std::map<std::string, dcufleet::v1::InstanceSpec> pending_ ABSL_GUARDED_BY(mu_);
  // Supervisors that finished and await their thread's join.
  std::vector<std::unique_ptr<InstanceSupervisor>> finished_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread housekeeper_;
};

}  // namespace dcu::agent
