#include "controller/service/serving_watch.h"

#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "controller/core/serving_view.h"

namespace dcu::controller {
namespace {

// How often the loop looks for a change: the gateway learns of a replica
// turning ready or not ready at most this late.
constexpr absl::Duration kLookEvery = absl::Milliseconds(200);
constexpr absl::Duration kDefaultResend = absl::Seconds(5);

// Deleted by whichever of OnDone and the loop's end comes last (as the
// deployment watch in fleet_service.cc).
class ServingWatch : public grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot> {
 public:
  ServingWatch(DeployController* deployments, FleetState* fleet, absl::Duration resend)
      : deployments_(deployments), fleet_(fleet), resend_(resend) {}

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
  void OnDone() override {
    if (Release()) delete this;
  }

 private:
  bool Release() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return ++released_ == 2;
  }

  void Loop() ABSL_LOCKS_EXCLUDED(mu_) {
    // Not a serialization of any snapshot, so the first is revision 1.
    std::string last_sent = "\xff";
    absl::Time sent_at = absl::InfinitePast();
    int64_t revision = 0;
    while (true) {
      dcufleet::v1::ServingSnapshot snapshot = ServingSnapshotOf(
          deployments_ ? deployments_->List() : std::vector<dcufleet::v1::Deployment>{},
          fleet_ ? fleet_->Snapshot()
                 : std::vector<std::shared_ptr<const dcufleet::v1::NodeView>>{});
      std::string content = snapshot.SerializeAsString();
      absl::Time now = absl::Now();
      if (content != last_sent || now - sent_at >= resend_) {
        if (content != last_sent) ++revision;
        last_sent = std::move(content);
        sent_at = now;
        snapshot.set_revision(revision);
        out_ = std::move(snapshot);
        {
          absl::MutexLock lock(&mu_);
          if (cancelled_) break;
          writing_ = true;
        }
        StartWrite(&out_);
        absl::MutexLock lock(&mu_);
        auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_ || cancelled_; };
        mu_.Await(absl::Condition(&done));
        if (cancelled_) break;
      }
      absl::MutexLock lock(&mu_);
      auto cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancelled_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&cancelled), kLookEvery)) break;
    }
    Finish(grpc::Status::OK);
  }

  DeployController* const deployments_;
  FleetState* const fleet_;
  const absl::Duration resend_;
  dcufleet::v1::ServingSnapshot out_;  // only the loop's thread touches it
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int released_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot>* StartServingWatch(
    DeployController* deployments, FleetState* fleet, OwnedThreads& threads,
    const dcufleet::v1::WatchServingRequest& request) {
  absl::Duration resend = request.resend_after_ms() > 0
                              ? absl::Milliseconds(request.resend_after_ms())
                              : kDefaultResend;
  // No faster than the loop looks; no slower than a minute.
  resend = std::min(std::max(resend, kLookEvery), absl::Minutes(1));
  auto* watch = new ServingWatch(deployments, fleet, resend);
  watch->Start(threads);
  return watch;
}

}  // namespace dcu::controller
