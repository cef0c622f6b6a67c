#pragma once

// A server-streaming reactor whose writes come from a loop on a thread of
// the service's own (OwnedThreads), because the loop blocks (waiting for a
// change) and gRPC's callback threads must not. The one home of the
// lifetime and write hand-shake both streaming RPCs share (WatchDeployment,
// WatchServing): the reactor is deleted by whichever of OnDone and the end
// of the loop comes last, so neither waits for the other.

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/service/owned_threads.h"

namespace dcu::controller {

template <typename Response>
class LoopingWriter : public grpc::ServerWriteReactor<Response> {
 public:
  // Starts Loop(); call once, right after construction.
  void Start(OwnedThreads& threads) {
    threads.Run([this] {
      Loop();
      if (Release()) delete this;
    });
  }
  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) cancelled_ = true;
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  // gRPC calls it after Finish, which only the loop calls.
  void OnDone() override {
    if (Release()) delete this;
  }

 protected:
  // Writes until the client goes away, then calls Finish (once).
  virtual void Loop() = 0;

  // Writes `*message` (which must live until the write is done; the loop
  // owns it) and waits for the write. False when the client went away.
  bool Write(const Response* message) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return false;
      writing_ = true;
    }
    this->StartWrite(message);
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_ || cancelled_; };
    mu_.Await(absl::Condition(&done));
    return !cancelled_;
  }
  bool Cancelled() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }
  // Sleeps up to `d`; true when the client went away meanwhile.
  bool CancelledWithin(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancelled_; };
    return mu_.AwaitWithTimeout(absl::Condition(&cancelled), d);
  }

 private:
  // True for the second of the two callers (OnDone, the loop's end).
  bool Release() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return ++released_ == 2;
  }

  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int released_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dcu::controller
