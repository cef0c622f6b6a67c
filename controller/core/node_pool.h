#pragma once

// A node pool (issue 20): where the controller provisions a node when a
// replica fits no registered one. A Slurm pool submits a batch job that
// runs dcu-agent (pointed at this controller); the job's node joins the
// fleet as NAME-JOBID once its agent says Hello, and the scheduler places
// the replica there like on any node.
//
// The pool is told, once per reconcile pass, what the fleet wants
// (SetDemand: the replicas that fit nowhere, the replicas still waiting for
// a node, the jobs whose node holds instances); its own thread
// (SyncOnce every poll interval) compares that with Slurm's queue and acts:
//   - submit a job for a replica that fits nowhere and has no live job
//     (at most max_jobs pending or running; not again within
//     resubmit_after of its last job ending);
//   - cancel a live job no waiting replica asked for whose node holds
//     nothing (the replica was deleted, scaled away, or placed elsewhere);
//   - a job that left the queue or ended (time limit, preemption,
//     scancel from outside) is reported (the job-ended handler: FleetState
//     makes its node Lost at once, and its replicas are rescheduled —
//     on the fleet or through a new job).
// Slurm is the record: jobs are found again by name after a controller
// restart, the replica each is for by its comment.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/core/batch_scheduler.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/pool.pb.h"

namespace dcu::controller {

class NodePool {
 public:
  // What one reconcile pass wants of the pools (the same for every pool).
  struct Demand {
    // Replica key -> devices: replicas that fit no node in this pass and
    // chose this pool.
    std::map<std::string, int> unplaceable;
    // Replicas without a running instance that still want one (waiting,
    // backing off): their jobs stay.
    std::set<std::string> waiting;
    // Jobs whose node holds an assigned instance: they stay.
    std::set<std::string> busy_jobs;
  };

  // Validates `config` and fills its defaults; INVALID_ARGUMENT names the
  // pool and the field.
  static absl::StatusOr<std::unique_ptr<NodePool>> Create(dcufleet::v1::SlurmPoolConfig config,
                                                         BatchScheduler* scheduler,
                                                         const common::Clock* clock);
  // Where the agents dial when the config names no controller_address
  // (the controller's own, known once it listens). Nothing is submitted
  // while neither is known.
  void SetDefaultControllerAddress(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  std::string ControllerAddress() const ABSL_LOCKS_EXCLUDED(mu_);
  ~NodePool();

  // Called (without the pool's lock) when a job's state changed, so the
  // reconciler runs; and when a job ended, with the job id and why. Set
  // before Start.
  void SetOnChange(std::function<void()> f) { on_change_ = std::move(f); }
  void SetOnJobEnded(std::function<void(const std::string& job_id, const std::string& why)> f) {
    on_job_ended_ = std::move(f);
  }

  const std::string& name() const { return config_.name(); }
  const dcufleet::v1::SlurmPoolConfig& config() const { return config_; }
  // The fleet node a job's agent registers as.
  std::string NodeName(const std::string& job_id) const { return name() + "-" + job_id; }
  // Devices a job for `spec` asks for (its TP, else the pool's default).
  int DevicesFor(const dcufleet::v1::DeploymentSpec& spec) const;
  // "" when a job of this pool can have `devices` devices; otherwise why not.
  std::string CannotProvide(int devices) const;

  // Replaces the last pass's demand; wakes the sync thread when a replica
  // newly needs a node.
  void SetDemand(Demand demand) ABSL_LOCKS_EXCLUDED(mu_);

  // What the pool does for replica `key`: its latest job (live, else the
  // last ended one), nullopt when none; `line` gets the words for the
  // deployment's message.
  std::optional<dcufleet::v1::PoolJobView> JobFor(const std::string& key, std::string* line) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // True when `key` has a pending or running job in this pool.
  bool HasLiveJob(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);

  dcufleet::v1::PoolView View() const ABSL_LOCKS_EXCLUDED(mu_);

  // One sync with Slurm (list, note ended jobs, cancel, submit). The
  // thread calls it; tests call it directly.
  void SyncOnce() ABSL_LOCKS_EXCLUDED(mu_);
  void Start();
  void Stop();

  // The job script: the agent's argv, each argument single-quoted, after
  // the pool's exports; the node name and state directory come from the
  // job's own SLURM_JOB_ID. exec, so Slurm's SIGTERM reaches the agent.
  static std::string JobScript(const dcufleet::v1::SlurmPoolConfig& config,
                               const std::string& controller_address);

 private:
  NodePool(dcufleet::v1::SlurmPoolConfig config, BatchScheduler* scheduler,
           const common::Clock* clock)
      : config_(std::move(config)), scheduler_(scheduler), clock_(clock) {}
  struct Job {
    dcufleet::v1::PoolJobView view;
    bool cancel_sent = false;
    absl::Time ended_at = absl::InfinitePast();
  };
  static bool Live(const Job& j);
  std::string LineOf(const Job& j) const;
  void Run();

  const dcufleet::v1::SlurmPoolConfig config_;
  BatchScheduler* const scheduler_;
  const common::Clock* const clock_;
  std::function<void()> on_change_;
  std::function<void(const std::string&, const std::string&)> on_job_ended_;

  mutable absl::Mutex mu_;
  Demand demand_ ABSL_GUARDED_BY(mu_);
  // Job id -> job; a job being submitted is keyed "submit:KEY" until
  // sbatch answers.
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);
  // When each replica's last job ended (resubmit_after).
  std::map<std::string, absl::Time> last_end_ ABSL_GUARDED_BY(mu_);
  // Why the last submission for a replica failed (shown in its message).
  std::map<std::string, std::string> submit_error_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::string controller_address_ ABSL_GUARDED_BY(mu_);
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace dcu::controller
