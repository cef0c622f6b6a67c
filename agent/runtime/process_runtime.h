#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/runtime/env_recipe.h"
#include "agent/runtime/runtime.h"
#include "common/enum_names.h"
#include "common/process_runner.h"

namespace dcu::agent {

struct ProcessRuntimeOptions {
  // Instances live in <state_dir>/instances/<id>/: state.json, spec.binpb,
  // output.log (+ rotated output.log.N), exit_status.
  std::string state_dir;
  std::string proc_root = "/proc";
  // HOME given to instances; empty means the agent's HOME, else /root.
  std::string home;
  std::string bash = "/bin/bash";
  absl::Duration source_timeout = absl::Seconds(60);
  // output.log is rotated (copy + truncate) past this size while running, and
  // at every start; keep_logs rotated files are kept.
  int64_t max_log_bytes = int64_t{64} << 20;
  int keep_logs = 3;
  // How long the marker sweep keeps killing before giving up.
  absl::Duration sweep_timeout = absl::Seconds(5);
};

// Runs an instance as a bare process from a conda env.
//
// Launch: the agent forks a small monitor (its own session, named
// "dcu-instmon") that forks the server into a new session and process group,
// waits for it and records its exit status in <dir>/exit_status. The server
// gets a clean environment (BaseProcessEnv + recipe), argv from the spec
// exec'd directly (argv[0] looked up in the env's PATH), stdin /dev/null and
// stdout/stderr appended to <dir>/output.log. Because the monitor, not the
// agent, is the parent, the exit status survives an agent restart.
//
// Identity across restarts: state.json holds pid, start time (field 22 of
// /proc/PID/stat), boot id and the marker DCUFLEET_INSTANCE=<id>; all must
// match for a process to be taken as the instance.
class ProcessRuntime final : public Runtime {
 public:
  struct LaunchPlan {
    std::string executable;
    std::vector<std::string> argv;
    EnvMap env;
    std::vector<std::string> notes;
  };

  // INVALID_ARGUMENT when state_dir is empty; INTERNAL when it cannot be
  // created. `runner` (not owned, may be null for a private SubprocessRunner)
  // runs bash to capture sourced scripts.
  static absl::StatusOr<std::unique_ptr<ProcessRuntime>> Create(
      ProcessRuntimeOptions options, common::ProcessRunner* runner = nullptr);

  std::string kind() const override {
    return std::string(common::RuntimeKindName(dcufleet::v1::RUNTIME_BARE));
  }
  absl::StatusOr<RuntimeInstance> Start(const dcufleet::v1::InstanceSpec& spec) override;
  absl::Status Stop(absl::string_view instance_id, absl::Duration grace) override;
  absl::StatusOr<RuntimeInstance> Inspect(absl::string_view instance_id) override;
  absl::StatusOr<std::vector<RuntimeInstance>> List() override;
  absl::StatusOr<std::vector<RuntimeInstance>> Recover() override;
  absl::StatusOr<std::string> ReadLogTail(absl::string_view instance_id,
                                          size_t max_bytes) override;
  // Positions are byte offsets of output.log. It is copy-truncated past
  // max_log_bytes while the instance runs: a position past its end is read
  // on in output.log.1, then from output.log's start.
  absl::StatusOr<LogChunk> ReadLogSince(absl::string_view instance_id, int64_t since_offset,
                                        size_t max_bytes) override;
  absl::Status Remove(absl::string_view instance_id) override;

  // The executable, argv and environment Start() would use; nothing is
  // launched (source scripts are run to capture their environment).
  absl::StatusOr<LaunchPlan> Render(const dcufleet::v1::InstanceSpec& spec);

  // <state_dir>/instances/<id>.
  std::string InstanceDir(absl::string_view instance_id) const;

 private:
  ProcessRuntime(ProcessRuntimeOptions options, common::ProcessRunner* runner,
                 std::unique_ptr<common::ProcessRunner> owned_runner);

  void ReapMonitors() ABSL_LOCKS_EXCLUDED(mu_);
  void RotateLogs(const std::string& dir);

  const ProcessRuntimeOptions options_;
  std::unique_ptr<common::ProcessRunner> owned_runner_;
  common::ProcessRunner* runner_;
  const std::string boot_id_;

  absl::Mutex mu_;
  // Monitors forked by this agent process (its children, to be reaped).
  std::set<int> monitors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::agent
