#include "dcuctl/stop_signal.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "absl/synchronization/mutex.h"

namespace dcu::dcuctl {
namespace {

absl::Mutex mu;
bool stopped ABSL_GUARDED_BY(mu) = false;
std::function<void()>* on_stop ABSL_GUARDED_BY(mu) = nullptr;

}  // namespace

void InstallStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    // Under the lock: OnStop(nullptr) returns only once a running callback
    // is done, so its captures may go away right after.
    absl::MutexLock lock(&mu);
    stopped = true;
    if (on_stop) (*on_stop)();
  }).detach();
}

bool StopRequested() {
  absl::MutexLock lock(&mu);
  return stopped;
}

bool SleepUnlessStopped(absl::Duration d) {
  absl::MutexLock lock(&mu);
  auto is_stopped = []() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopped; };
  mu.AwaitWithTimeout(absl::Condition(&is_stopped), d);
  return stopped;
}

void OnStop(std::function<void()> fn) {
  bool run_now = false;
  {
    absl::MutexLock lock(&mu);
    delete on_stop;
    on_stop = fn ? new std::function<void()>(fn) : nullptr;
    run_now = stopped && fn;
  }
  if (run_now) fn();
}

}  // namespace dcu::dcuctl
