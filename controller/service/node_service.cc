#include "controller/service/node_service.h"

#include <chrono>
#include <deque>

#include <grpcpp/alarm.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/ids.h"
#include "common/logging.h"
#include "controller/core/agent_stream.h"
#include "controller/service/auth.h"
#include "controller/service/status_convert.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::AgentMessage;
using dcufleet::v1::ControllerMessage;

class AgentStreamReactor final
    : public grpc::ServerBidiReactor<AgentMessage, ControllerMessage>,
      public NodeSession {
 public:
  AgentStreamReactor(grpc::CallbackServerContext* ctx, FleetState* fleet, WorkQueue* blocking)
      : ctx_(ctx),
        blocking_(blocking),
        peer_(ctx->peer()),
        identity_(CallerIdentity(*ctx)),
        rules_(fleet, this, [this](absl::string_view field, absl::string_view name) {
          return CheckNodeName(*identity_, field, name);
        }) {
    StartRead(&incoming_);
  }

  bool Send(ControllerMessage message) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finishing_) return false;
    outgoing_.push_back(std::move(message));
    if (!writing_) {
      writing_ = true;
      StartWrite(&outgoing_.front());
    }
    return true;
  }

  std::string Peer() const override { return peer_; }

  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishOnce(grpc::Status::OK);
      return;
    }
    if (!rules_.registered()) {
      // The Hello registers the node durably: off gRPC's threads, and in a
      // group with the Hellos of other streams (FleetState::OnHelloAsync).
      // No read is outstanding until it is answered, so the stream's
      // messages stay in order.
      blocking_->Post([this] { HandleHello(); });
      return;
    }
    if (incoming_.has_goodbye()) {
      // A Goodbye records the node Lost: off gRPC's threads too.
      blocking_->Post([this] { Continue(Handle(incoming_)); });
      return;
    }
    Continue(Handle(incoming_));
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::Status finish_with;
    {
      absl::MutexLock lock(&mu_);
      outgoing_.pop_front();
      if (!ok) {
        writing_ = false;
        return;
      }
      if (!outgoing_.empty() && !finishing_) {
        StartWrite(&outgoing_.front());
        return;
      }
      writing_ = false;
      if (!finishing_ || finished_) return;
      finished_ = true;
      finish_with = pending_status_;
    }
    // Outside the lock, and the last touch of `this`: once Finish is called,
    // OnDone may run on another thread and delete the reactor (measured: a
    // hostile agent reconnecting 40,000 times a second hit exactly that,
    // "Mutex unlocked when destroyed").
    Finish(finish_with);
  }

  void OnDone() override {
    // Recording the disconnect may write to the database; the reactor lives
    // until it is recorded (so no new stream can reuse its address first).
    blocking_->Post([this] {
      rules_.Disconnected();
      delete this;
    });
  }

 private:
  void Continue(const absl::Status& s) {
    if (!s.ok()) {
      // A peer can make the controller refuse as often as it likes: the
      // log says so a few times a second at most, then how many it left out.
      static common::LogLimiter limiter(5, 1000);
      int64_t suppressed = 0;
      if (limiter.Allow(&suppressed)) {
        DCU_LOG_WARN("agent stream from ", peer_, " refused: ", s.message(),
                     suppressed ? absl::StrCat(" (", suppressed, " more refusals not logged)") : "");
      }
      rules_.Refused(s);
      if (!rules_.registered()) {
        // A refused Hello is answered late (a tarpit): when the node's flood
        // penalty is over, else after a second. Refused at once, a hostile
        // agent reconnected 40,000 times a second, each a stream set up and
        // torn down, and sent 65,536-device Hellos five times a second; an
        // agent that dials again at once now cannot dial again for a while.
        // A well-behaved agent backs off longer than that anyway.
        const absl::Duration delay =
            absl::IsResourceExhausted(s) ? FleetState::kFloodPenalty : absl::Seconds(1);
        incoming_.Clear();  // nothing of it is needed while it waits
        tarpit_status_ = ToGrpcStatus(s);
        tarpit_.Set(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(absl::ToInt64Milliseconds(delay)),
                    [this](bool) { FinishOnce(tarpit_status_); });
        return;
      }
      FinishOnce(ToGrpcStatus(s));
      return;
    }
    StartRead(&incoming_);
  }

 private:
  // Who may speak (the TLS identity) before anything else; what they may
  // say and where it goes are the stream's rules (controller/core/agent_stream.h).

  // The stream's first message. Answered when its registration is committed
  // (Continue from whichever thread committed it).
  void HandleHello() {
    if (!identity_.ok()) {
      Continue(identity_.status());
      return;
    }
    absl::StatusOr<dcufleet::v1::Hello> hello = rules_.TakeHello(incoming_);
    if (!hello.ok()) {
      Continue(hello.status());
      return;
    }
    rules_.RegisterAsync(std::move(*hello), [this](absl::Status s) { Continue(s); });
  }

  absl::Status Handle(AgentMessage& msg) {
    if (!identity_.ok()) return identity_.status();
    return rules_.Handle(msg);
  }

  void FinishOnce(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    // The disconnect is recorded in OnDone, off gRPC's threads.
    {
      absl::MutexLock lock(&mu_);
      if (finishing_) return;
      finishing_ = true;
      pending_status_ = status;
      if (writing_) return;  // OnWriteDone finishes
      finished_ = true;
    }
    // Outside the lock and last: see OnWriteDone.
    Finish(status);
  }

  grpc::CallbackServerContext* ctx_;
  WorkQueue* const blocking_;
  const std::string peer_;
  // The stream's caller, fixed by its TLS handshake and AuthProcessor.
  const absl::StatusOr<Identity> identity_;
  AgentMessage incoming_;
  // Called by one reactor callback at a time (a stream's reads are ordered;
  // a Hello's answer comes before the next read is started).
  AgentStreamRules rules_;
  // Finishes a flooding node's refused Hello late (see Continue). Set at most
  // once, and the reactor is deleted only after Finish, which it calls.
  grpc::Alarm tarpit_;
  grpc::Status tarpit_status_;

  absl::Mutex mu_;
  std::deque<ControllerMessage> outgoing_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status pending_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerBidiReactor<AgentMessage, ControllerMessage>* NodeServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStreamReactor(context, fleet_, blocking_.get());
}

}  // namespace dcu::controller
