#include "controller/service/serving_watch.h"

#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "controller/core/serving_view.h"
#include "common/logging.h"
#include "controller/service/looping_writer.h"

namespace dcu::controller {
namespace {

// The longest the loop waits for a change before it looks again: it bounds
// how late a cancellation or a due resend is noticed (a change wakes it at
// once).
constexpr absl::Duration kLookEvery = absl::Milliseconds(200);
constexpr absl::Duration kDefaultResend = absl::Seconds(5);
// The engines' loads change without any deployment changing (the agents
// report them with every status): the snapshot is rebuilt this often so
// that the gateway's picker sees them about as fresh as the agents scrape.
constexpr absl::Duration kLoadRefresh = absl::Seconds(1);

// The loop and lifetime: looping_writer.h.
class ServingWatch : public LoopingWriter<dcufleet::v1::ServingSnapshot> {
 public:
  ServingWatch(DeployController* deployments, FleetState* fleet, ApiKeyStore* api_keys,
               absl::Duration resend)
      : deployments_(deployments), fleet_(fleet), api_keys_(api_keys), resend_(resend) {}

 private:
  void Loop() override {
    // Not a serialization of any snapshot, so the first is revision 1.
    std::string last_sent = "\xff";
    absl::Time sent_at = absl::InfinitePast();
    absl::Time built_at = absl::InfinitePast();
    int64_t revision = 0;
    // The deployments are listed only when one changed (or a resend is
    // due), not on every look: List() copies every deployment under the
    // controller's lock, and each gateway holds a watch.
    int64_t seen = -1;
    while (!Cancelled()) {
      int64_t changes = 0;
      if (deployments_) {
        changes = deployments_->WaitForAnyChange(seen, kLookEvery);
      } else if (seen == 0 && CancelledWithin(kLookEvery)) {
        break;
      }
      const absl::Time now = absl::Now();
      if (changes == seen && now - sent_at < resend_ && now - built_at < kLoadRefresh) continue;
      seen = changes;
      built_at = now;
      dcufleet::v1::ServingSnapshot snapshot = ServingSnapshotOf(
          deployments_ ? deployments_->List() : std::vector<dcufleet::v1::Deployment>{},
          fleet_ ? fleet_->Snapshot()
                 : std::vector<std::shared_ptr<const dcufleet::v1::NodeView>>{});
      if (api_keys_) {
        auto keys = api_keys_->ListApiKeys();
        if (!keys.ok()) {
          DCU_LOG_WARN("serving watch: reading the API keys: ", keys.status().message(),
                       "; the snapshot waits (without them gateways would admit anyone)");
          continue;
        }
        for (auto& k : *keys) *snapshot.add_api_keys() = std::move(k);
      }
      std::string content = snapshot.SerializeAsString();
      if (content == last_sent && now - sent_at < resend_) continue;
      if (content != last_sent) ++revision;
      last_sent = std::move(content);
      sent_at = now;
      snapshot.set_revision(revision);
      out_ = std::move(snapshot);
      if (!Write(&out_)) break;
    }
    Finish(grpc::Status::OK);
  }

  DeployController* const deployments_;
  FleetState* const fleet_;
  ApiKeyStore* const api_keys_;
  const absl::Duration resend_;
  dcufleet::v1::ServingSnapshot out_;  // only the loop's thread touches it
};

}  // namespace

grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot>* StartServingWatch(
    DeployController* deployments, FleetState* fleet, ApiKeyStore* api_keys, OwnedThreads& threads,
    const dcufleet::v1::WatchServingRequest& request) {
  absl::Duration resend = request.resend_after_ms() > 0
                              ? absl::Milliseconds(request.resend_after_ms())
                              : kDefaultResend;
  // No faster than the loop looks; no slower than a minute.
  resend = std::min(std::max(resend, kLookEvery), absl::Minutes(1));
  auto* watch = new ServingWatch(deployments, fleet, api_keys, resend);
  watch->Start(threads);
  return watch;
}

}  // namespace dcu::controller
