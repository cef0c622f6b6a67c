#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/runtime/runtime.h"

namespace dcu::agent {

// A stateful in-memory Runtime for tests of the layers above (supervisor,
// agent loop). Statuses can be injected per method; instances can be made to
// exit and to print logs. Nothing is launched.
class FakeRuntime final : public Runtime {
 public:
  explicit FakeRuntime(std::string kind = "fake") : kind_(std::move(kind)) {}

  std::string kind() const override { return kind_; }
  absl::StatusOr<RuntimeInstance> Start(const dcufleet::v1::InstanceSpec& spec) override;
  absl::Status Stop(absl::string_view instance_id, absl::Duration grace) override;
  absl::StatusOr<RuntimeInstance> Inspect(absl::string_view instance_id) override;
  absl::StatusOr<std::vector<RuntimeInstance>> List() override;
  absl::StatusOr<std::vector<RuntimeInstance>> Recover() override;
  absl::StatusOr<std::string> ReadLogTail(absl::string_view instance_id,
                                          size_t max_bytes) override;
  absl::Status Remove(absl::string_view instance_id) override;

  // Injected failures: returned by the next calls until reset to OK.
  void set_start_status(absl::Status s) ABSL_LOCKS_EXCLUDED(mu_);
  void set_stop_status(absl::Status s) ABSL_LOCKS_EXCLUDED(mu_);
  void set_inspect_status(absl::Status s) ABSL_LOCKS_EXCLUDED(mu_);

  // Makes a running instance end with an exit code (or a signal).
  void SetExited(absl::string_view instance_id, int exit_code, int term_signal = 0)
      ABSL_LOCKS_EXCLUDED(mu_);
  void AppendLog(absl::string_view instance_id, absl::string_view text) ABSL_LOCKS_EXCLUDED(mu_);
  // Puts an instance in the runtime as if an earlier agent had started it.
  void AddExisting(RuntimeInstance instance) ABSL_LOCKS_EXCLUDED(mu_);

  int start_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  int stop_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> started_ids() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string kind_;
  mutable absl::Mutex mu_;
  std::map<std::string, RuntimeInstance> instances_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> logs_ ABSL_GUARDED_BY(mu_);
  absl::Status start_status_ ABSL_GUARDED_BY(mu_);
  absl::Status stop_status_ ABSL_GUARDED_BY(mu_);
  absl::Status inspect_status_ ABSL_GUARDED_BY(mu_);
  int start_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int stop_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int next_pid_ ABSL_GUARDED_BY(mu_) = 10000;
  std::vector<std::string> started_ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::agent
