#pragma once

#include <functional>
#include <list>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace dcu::controller {

// One thread per task, owned: for service work that blocks for long and must
// not run on gRPC's callback threads (an agent round trip waits up to 120 s
// for its node; a watch stream lives as long as its client). A fixed pool
// would queue a logs request behind unrelated slow reaps; a detached thread
// could outlive the objects it uses. Here a finished thread is joined by the
// next Run, and the destructor waits for every task still running and joins
// it, so no thread outlives its owner.
class OwnedThreads {
 public:
  OwnedThreads() = default;
  ~OwnedThreads() ABSL_LOCKS_EXCLUDED(mu_) {
    std::list<std::thread> finished;
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_.empty(); };
      mu_.Await(absl::Condition(&idle));
      finished.swap(finished_);
    }
    for (auto& t : finished) t.join();
  }
  OwnedThreads(const OwnedThreads&) = delete;
  OwnedThreads& operator=(const OwnedThreads&) = delete;

  // Runs `task` on a new thread. Must not be called once destruction began.
  void Run(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_) {
    std::list<std::thread> finished;
    {
      absl::MutexLock lock(&mu_);
      finished.swap(finished_);
      running_.emplace_front();
      auto self = running_.begin();
      // The new thread moves its own entry to finished_ under mu_, which is
      // held here until the entry holds it: it never sees an empty entry.
      *self = std::thread([this, self, task = std::move(task)] {
        task();
        absl::MutexLock lock(&mu_);
        finished_.splice(finished_.end(), running_, self);
      });
    }
    // These have returned from their task; joining them waits only for the
    // thread's exit.
    for (auto& t : finished) t.join();
  }

  // Tasks that have not returned yet.
  size_t RunningForTest() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return running_.size();
  }

 private:
  mutable absl::Mutex mu_;
  // std::list: an entry moves between the two lists by splice, so the thread
  // object never moves while its thread runs.
  std::list<std::thread> running_ ABSL_GUARDED_BY(mu_);
  std::list<std::thread> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::controller
