#pragma once

// BatchScheduler over Slurm's own commands (issue 20): sbatch, squeue and
// scancel run with argv (never a shell) through an injected ProcessRunner,
// with SLURM_CONF when the pool names one. docs/slurm.md has the pool's
// configuration.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/process_runner.h"
#include "controller/core/batch_scheduler.h"

namespace dcu::controller {

struct SlurmCommands {
  std::string sbatch = "sbatch";
  std::string squeue = "squeue";
  std::string scancel = "scancel";
  // SLURM_CONF for the commands; "" keeps the environment's.
  std::string slurm_conf;
  absl::Duration timeout = absl::Seconds(30);
};

class SlurmBatchScheduler : public BatchScheduler {
 public:
  SlurmBatchScheduler(SlurmCommands commands, common::ProcessRunner* runner)
      : commands_(std::move(commands)), runner_(runner) {}
  absl::StatusOr<std::string> Submit(const BatchJobRequest& request) override;
  absl::StatusOr<std::vector<BatchJob>> List(const std::string& name) override;
  absl::Status Cancel(const std::string& id) override;

  // sbatch's argv for `request` (the script goes to its stdin).
  static std::vector<std::string> SbatchArgv(const std::string& sbatch, const BatchJobRequest& request);
  // The squeue format List asks for, and the reader of its output: one job
  // per line, fields separated by '|'. INTERNAL names the line and what is
  // wrong with it.
  static constexpr const char* kSqueueFormat = "%i|%T|%r|%N|%e|%k";
  static absl::StatusOr<std::vector<BatchJob>> ParseSqueue(const std::string& text);
  // sbatch --parsable's answer ("123" or "123;cluster"): the job id.
  static absl::StatusOr<std::string> ParseSbatch(const std::string& text);

 private:
  absl::StatusOr<common::ProcessOutput> RunSlurm(const std::vector<std::string>& argv,
                                                 const std::string& stdin_data);
  const SlurmCommands commands_;
  common::ProcessRunner* const runner_;
};

}  // namespace dcu::controller
