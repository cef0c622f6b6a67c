#pragma once

// A batch scheduler that keeps its queue in memory and moves jobs only
// when the test says so (Run, End, Forget): it never decides an outcome.
// Submit, List and Cancel can be given a status to fail with.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/batch_scheduler.h"

namespace dcu::controller {

class FakeBatchScheduler : public BatchScheduler {
 public:
  absl::StatusOr<std::string> Submit(const BatchJobRequest& r) override {
    absl::MutexLock lock(&mu_);
    if (!submit_status_.ok()) return submit_status_;
    requests_.push_back(r);
    BatchJob j;
    j.id = absl::StrCat(next_id_++);
    j.state = BatchJobState::kPending;
    j.scheduler_state = "PENDING";
    j.reason = pending_reason_;
    j.comment = r.comment;
    names_[j.id] = r.name;
    jobs_[j.id] = j;
    return j.id;
  }
  absl::StatusOr<std::vector<BatchJob>> List(const std::string& name) override {
    absl::MutexLock lock(&mu_);
    ++lists_;
    if (!list_status_.ok()) return list_status_;
    std::vector<BatchJob> out;
    for (const auto& [id, j] : jobs_) {
      if (names_[id] == name) out.push_back(j);
    }
    return out;
  }
  absl::Status Cancel(const std::string& id) override {
    absl::MutexLock lock(&mu_);
    cancelled_.push_back(id);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) {
      it->second.state = BatchJobState::kEnded;
      it->second.scheduler_state = "CANCELLED";
    }
    return absl::OkStatus();
  }

  // The test moves the queue.
  void Run(const std::string& id, const std::string& nodes) {
    absl::MutexLock lock(&mu_);
    auto& j = jobs_[id];
    j.state = BatchJobState::kRunning;
    j.scheduler_state = "RUNNING";
    j.reason = "None";
    j.nodes = nodes;
  }
  void End(const std::string& id, const std::string& state) {
    absl::MutexLock lock(&mu_);
    auto& j = jobs_[id];
    j.state = BatchJobState::kEnded;
    j.scheduler_state = state;
  }
  void Forget(const std::string& id) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(id);
  }
  // A job submitted by someone else (e.g. a controller before a restart).
  void Add(const std::string& name, BatchJob j) {
    absl::MutexLock lock(&mu_);
    names_[j.id] = name;
    jobs_[j.id] = std::move(j);
  }
  void set_pending_reason(std::string r) {
    absl::MutexLock lock(&mu_);
    pending_reason_ = std::move(r);
  }
  void set_submit_status(absl::Status s) {
    absl::MutexLock lock(&mu_);
    submit_status_ = std::move(s);
  }
  void set_list_status(absl::Status s) {
    absl::MutexLock lock(&mu_);
    list_status_ = std::move(s);
  }
  std::vector<BatchJobRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  std::vector<std::string> cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

 private:
  mutable absl::Mutex mu_;
  int next_id_ ABSL_GUARDED_BY(mu_) = 100;
  int lists_ ABSL_GUARDED_BY(mu_) = 0;
  std::string pending_reason_ ABSL_GUARDED_BY(mu_) = "Priority";
  absl::Status submit_status_ ABSL_GUARDED_BY(mu_);
  absl::Status list_status_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, BatchJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> names_ ABSL_GUARDED_BY(mu_);
  std::vector<BatchJobRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::controller
