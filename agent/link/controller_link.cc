#include "agent/link/controller_link.h"

#include "agent/link/reconnect_rounds.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/input_rules.h"
#include "common/inventory_delta.h"
#include "common/leader.h"
#include "common/legacy_fields.h"
#include "common/logging.h"
#include "common/tls_config.h"
#include "dcufleet/v1/node.grpc.pb.h"

namespace dcu::agent {

using dcufleet::v1::AgentMessage;
using dcufleet::v1::ControllerMessage;

// One connected stream: serialises writes (reads happen on the link thread).
class ControllerLink::Stream {
 public:
  Stream(std::unique_ptr<grpc::ClientContext> ctx,
         std::unique_ptr<grpc::ClientReaderWriter<AgentMessage, ControllerMessage>> rw)
      : ctx_(std::move(ctx)), rw_(std::move(rw)) {}
  bool Write(const AgentMessage& m) {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    return rw_->Write(m);
  }
  // The stream's last message: written with the half-close, nothing after.
  bool WriteLast(const AgentMessage& m) {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    closed_ = true;
    grpc::WriteOptions last;
    last.set_last_message();
    return rw_->Write(m, last);
  }
  bool Read(ControllerMessage* m) { return rw_->Read(m); }
  void Cancel() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    ctx_->TryCancel();
  }
  grpc::Status Finish() { return rw_->Finish(); }
  // After Finish: the leader a standby controller named ("" otherwise).
  std::string NamedLeader() const {
    const auto& trailers = ctx_->GetServerTrailingMetadata();
    auto it = trailers.find(common::kLeaderMetadataKey);
    return it == trailers.end() ? "" : std::string(it->second.data(), it->second.length());
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<AgentMessage, ControllerMessage>> rw_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

ControllerLink::ControllerLink(Options options, LinkCallbacks callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {}

ControllerLink::~ControllerLink() { Stop(); }

void ControllerLink::Start() { thread_ = std::thread([this] { Run(); }); }

void ControllerLink::Stop() {
  if (stop_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (stream_) stream_->Cancel();
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void ControllerLink::ReportNow() {
  absl::MutexLock lock(&mu_);
  wake_.SignalAll();
}

bool ControllerLink::Leave(const std::string& reason, absl::Duration timeout) {
  leaving_ = true;
  std::shared_ptr<Stream> s;
  {
    absl::MutexLock lock(&mu_);
    s = stream_;
  }
  if (!s) return false;
  AgentMessage m;
  m.mutable_goodbye()->set_reason(reason);
  if (!s->WriteLast(m)) return false;
  // The controller records it, then ends the stream (it saw the half-close).
  const absl::Time deadline = absl::Now() + timeout;
  while (connected_ && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  return !connected_;
}

void ControllerLink::SendInstanceEvent(const dcufleet::v1::InstanceEvent& event) {
  std::shared_ptr<Stream> s;
  {
    absl::MutexLock lock(&mu_);
    s = stream_;
  }
  if (!s) return;
  AgentMessage m;
  *m.mutable_instance_event() = event;
  s->Write(m);
}

namespace {

grpc::ChannelArguments ReconnectArguments(absl::Duration initial, absl::Duration max) {
  grpc::ChannelArguments args = common::DefaultChannelArguments();
  // The channel keeps its own reconnect back-off under ours (gRPC's default
  // grows to 120 s): a Connect while the channel is in TRANSIENT_FAILURE
  // fails at once without dialling, so after a long controller outage the
  // agent came back only when gRPC's timer fired — 24 s after a 90 s
  // outage, past lost-after. The channel's back-off is bounded by the
  // agent's own, so --max-backoff is what governs reconnection.
  const int initial_ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(initial)));
  const int max_ms = static_cast<int>(std::max<int64_t>(initial_ms, absl::ToInt64Milliseconds(max)));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, initial_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  // A controller stopped (SIGSTOP, a hung host) or cut off leaves the stream
  // silent but open: without pings the agent waited on it for as long as TCP
  // keeps an idle connection — and never moved to the new leader (issue
  // 21). Unanswered for 3 s, a ping ends the stream. The controller allows
  // pings this close (ApplyServerLimits).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return args;
}

}  // namespace

void ControllerLink::Run() {
  std::mt19937_64 rng(std::random_device{}());
  // --controller a:7070,b:7070 (controllers sharing one PostgreSQL
  // database, one leading; docs/ha.md): one channel per address, tried in
  // turn (ReconnectRounds decides the order and the sleeps); a standby's
  // answer names the leader, which is dialled next.
  std::vector<std::string> listed = absl::StrSplit(options_.controller_address, ',', absl::SkipEmpty());
  if (listed.empty()) listed.push_back(options_.controller_address);
  ReconnectRounds rounds(std::move(listed), options_.initial_backoff, options_.max_backoff,
                         [&rng] { return std::uniform_real_distribution<double>(0.5, 1.0)(rng); });
  std::vector<std::unique_ptr<dcufleet::v1::NodeService::Stub>> stubs;
  auto stub_for = [&](size_t i) -> dcufleet::v1::NodeService::Stub& {
    if (stubs.size() < rounds.addresses().size()) stubs.resize(rounds.addresses().size());
    if (!stubs[i]) {
      stubs[i] = dcufleet::v1::NodeService::NewStub(grpc::CreateCustomChannel(
          rounds.addresses()[i],
          options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials(),
          ReconnectArguments(options_.initial_backoff, options_.max_backoff)));
    }
    return *stubs[i];
  };
  bool logged_down = false;
  while (!stop_) {
    const size_t current = rounds.current();
    const std::string address = rounds.addresses()[current];  // the list may grow below
    auto& stub = stub_for(current);
    auto ctx = std::make_unique<grpc::ClientContext>();
    auto rw = stub.Connect(ctx.get());
    auto stream = std::make_shared<Stream>(std::move(ctx), std::move(rw));
    AgentMessage hello;
    *hello.mutable_hello() = callbacks_.make_hello();
    // The inventory the controller holds for this stream, by digest (0: no
    // deltas on this stream).
    uint64_t sent_digest = 0;
    if (options_.inventory_delta) {
      sent_digest = common::InventoryDigest(hello.hello().inventory());
      hello.mutable_hello()->set_inventory_digest(sent_digest);
    }
    bool ok = stream->Write(hello);
    ControllerMessage msg;
    if (ok) ok = stream->Read(&msg) && msg.has_welcome();
    if (ok) {
      absl::Duration interval = options_.status_interval;
      if (msg.welcome().status_interval_ms() > 0) {
        interval = absl::Milliseconds(msg.welcome().status_interval_ms());
      }
      DCU_LOG_INFO("connected to controller ", address, " as node id '",
                   msg.welcome().node_id(), "'; reporting every ",
                   absl::FormatDuration(interval));
      logged_down = false;
      rounds.Connected();
      connected_ = true;
      {
        absl::MutexLock lock(&mu_);
        stream_ = stream;
      }
      // A controller from before issue 22 never says it accepts deltas (it
      // would keep the old inventory and never ask): full reports then.
      const bool deltas = options_.inventory_delta && msg.welcome().accepts_inventory_digest();
      // The compact form of a delta (issue 22) only to a controller that
      // says it reads it; the sources it leaves out are those of the
      // stream's previous report, the Hello's inventory first.
      const bool compact = deltas && msg.welcome().accepts_compact_figures();
      common::CompactFiguresWriter figures;
      figures.Sent(hello.hello().inventory());
      // Set by an InventoryRequest: the next report carries the inventory.
      std::atomic<bool> full_requested{false};
      // Status sender: its own thread so reads (assignments) never wait.
      std::atomic<bool> sender_stop{false};
      std::thread sender([&] {
        absl::MutexLock lock(&mu_);
        while (!stop_ && !sender_stop) {
          wake_.WaitWithTimeout(&mu_, interval);
          if (stop_ || sender_stop) break;
          mu_.Unlock();
          AgentMessage status;
          *status.mutable_status() = callbacks_.make_status();
          if (options_.inventory_delta && status.status().has_inventory()) {
            dcufleet::v1::NodeStatus* st = status.mutable_status();
            const uint64_t digest = common::InventoryDigest(st->inventory());
            st->set_inventory_digest(digest);
            const bool asked = full_requested.exchange(false);
            if (deltas && digest == sent_digest && !asked) {
              if (compact) {
                figures.MakeCompactDelta(st);
              } else {
                common::MakeDelta(st);
              }
            } else {
              sent_digest = digest;
              figures.Sent(st->inventory());
            }
          }
          bool wrote = stream->Write(status);
          mu_.Lock();
          if (!wrote) break;
        }
      });
      while (!stop_ && stream->Read(&msg)) {
        if (msg.has_assignment() && callbacks_.on_assignment) {
          // A controller of the previous version sends runtime kinds as
          // strings (common/legacy_fields.h).
          common::UpgradeLegacyFields(msg.mutable_assignment());
          // Checked here too: whatever reached the link (a compromised or
          // buggy controller) must not reach a runtime unchecked.
          if (absl::Status s = common::ValidateAssignment(msg.assignment()); !s.ok()) {
            DCU_LOG_ERROR("ignoring assignment generation ", msg.assignment().generation(),
                          " from the controller: ", s.message());
            continue;
          }
          callbacks_.on_assignment(msg.assignment());
        } else if (msg.has_inventory_request()) {
          DCU_LOG_INFO("controller asked for the full inventory: ", msg.inventory_request().reason());
          full_requested = true;
          absl::MutexLock lock(&mu_);
          wake_.SignalAll();  // the sender reports now
        } else if (msg.has_command() && callbacks_.on_command) {
          AgentMessage reply;
          *reply.mutable_command_result() = callbacks_.on_command(msg.command());
          stream->Write(reply);
        }
      }
      connected_ = false;
      {
        absl::MutexLock lock(&mu_);
        sender_stop = true;
        stream_.reset();
        wake_.SignalAll();
      }
      sender.join();
      stream->Cancel();
      grpc::Status st = stream->Finish();
      if (!stop_) {
        DCU_LOG_WARN("stream to controller ", address, " ended: ",
                     st.ok() ? "closed by controller" : st.error_message());
      }
    } else {
      stream->Cancel();
      grpc::Status st = stream->Finish();
      const std::string leader = stream->NamedLeader();
      const ReconnectRounds::Step step = rounds.Failed(leader == address ? "" : leader);
      if (step.redirected) {
        DCU_LOG_INFO("controller ", address, " is a standby; the leader is at ", leader);
        continue;
      }
      if (step.fresh_channel && current < stubs.size()) stubs[current].reset();
      if (!logged_down && !stop_) {
        if (step.takeover_under_way) {
          DCU_LOG_WARN("controller ", address, " is a standby and the leader it names (", leader,
                       ") does not answer: a takeover is under way; polling every ",
                       absl::FormatDuration(ReconnectRounds::kTakeoverPoll));
        } else {
          DCU_LOG_WARN("cannot reach controller ", address, ": ",
                       st.ok() ? "no Welcome" : st.error_message(),
                       rounds.addresses().size() > 1 ? "; trying the next with back-off"
                                                     : "; retrying with back-off");
        }
        logged_down = true;
      }
      if (stop_ || leaving_) break;
      if (step.sleep > absl::ZeroDuration()) {
        absl::MutexLock lock(&mu_);
        wake_.WaitWithTimeout(&mu_, step.sleep);
      }
      continue;
    }
    if (stop_ || leaving_) break;
    // The stream ended: on to the next address (after a round's sleep once
    // the list is through).
    const ReconnectRounds::Step step = rounds.Ended();
    if (step.sleep > absl::ZeroDuration()) {
      absl::MutexLock lock(&mu_);
      wake_.WaitWithTimeout(&mu_, step.sleep);
    }
  }
}

}  // namespace dcu::agent
