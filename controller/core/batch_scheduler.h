#pragma once

// The controller's seam to a batch scheduler (issue 20): submit a job,
// list this pool's jobs, cancel one. The core decides when (node_pool.h);
// SlurmBatchScheduler (controller/adapters/slurm_batch_scheduler.h) runs
// Slurm's own commands; FakeBatchScheduler (tests/testing/) keeps a queue
// whose jobs the test moves.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dcu::controller {

struct BatchJobRequest {
  // Slurm --job-name: how List finds this pool's jobs again (after a
  // controller restart too).
  std::string name;
  // Slurm --comment: the replica the job is for.
  std::string comment;
  std::string partition;
  std::string account;  // "" = none
  std::string qos;      // "" = none
  std::string gres;     // e.g. "dcu"
  int gres_count = 0;
  absl::Duration time_limit = absl::ZeroDuration();  // 0 = the partition's default
  std::string output;                                // --output
  // The job script (a shell script, as Slurm requires); sbatch reads it
  // from stdin, so no file is left behind.
  std::string script;
};

enum class BatchJobState { kPending, kRunning, kEnded };

struct BatchJob {
  std::string id;
  BatchJobState state = BatchJobState::kPending;
  // The scheduler's own words: PENDING, RUNNING, CANCELLED, TIMEOUT, ...
  std::string scheduler_state;
  // Why it waits (Resources, Priority, ...); "None" when it does not.
  std::string reason;
  std::string nodes;    // "" while pending
  std::string comment;  // BatchJobRequest::comment
  absl::Time end_time = absl::InfinitePast();  // InfinitePast: unknown
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  // Submits a job; returns its id. INVALID_ARGUMENT / FAILED_PRECONDITION
  // with the scheduler's words when it refuses (unknown partition, more
  // GRES than any node has), UNAVAILABLE when it cannot be reached.
  virtual absl::StatusOr<std::string> Submit(const BatchJobRequest& request) = 0;
  // Every job named `name` the scheduler still lists (pending, running and
  // recently ended ones). UNAVAILABLE when it cannot be reached, INTERNAL
  // (naming the line) when its answer cannot be read.
  virtual absl::StatusOr<std::vector<BatchJob>> List(const std::string& name) = 0;
  // Cancels a job; a job already gone is not an error.
  virtual absl::Status Cancel(const std::string& id) = 0;
};

}  // namespace dcu::controller
