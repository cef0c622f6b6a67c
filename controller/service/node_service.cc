#include "controller/service/node_service.h"

#include <chrono>
#include <deque>

#include <grpcpp/alarm.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "common/logging.h"
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
        fleet_(fleet),
        blocking_(blocking),
        peer_(ctx->peer()),
        identity_(CallerIdentity(*ctx)) {
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
    if (node_.empty()) {
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
      if (!node_.empty()) fleet_->OnDisconnect(node_, this);
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
      const std::string& who = node_.empty() ? claimed_ : node_;
      if (!who.empty()) fleet_->OnRefused(who, std::string(s.message()));
      if (node_.empty()) {
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
  // Who may speak, then what they may say (security.md): both before the
  // fleet state sees anything, so a refused message changes nothing.
  absl::Status CheckCaller(const AgentMessage& msg) const {
    if (!identity_.ok()) return identity_.status();
    return common::ValidateAgentMessage(msg);
  }

  // The stream's first message. Answered when its registration is committed
  // (Continue from whichever thread committed it).
  void HandleHello() {
    absl::Status s = CheckCaller(incoming_);
    if (s.ok() && !incoming_.has_hello()) {
      s = absl::FailedPreconditionError("the first message on a stream must be Hello");
    }
    if (s.ok()) s = CheckNodeName(*identity_, "hello.node_name", incoming_.hello().node_name());
    if (!s.ok()) {
      Continue(s);
      return;
    }
    // The name this stream may speak for: refusals from here on count on it.
    claimed_ = incoming_.hello().node_name();
    // Agents authenticate with certificates; a token in Hello is never kept.
    incoming_.mutable_hello()->clear_token();
    fleet_->OnHelloAsync(std::move(*incoming_.mutable_hello()), this,
                         [this](absl::StatusOr<dcufleet::v1::Welcome> welcome) {
                           if (welcome.ok()) node_ = claimed_;
                           Continue(welcome.status());
                         });
  }

  absl::Status Handle(AgentMessage& msg) {
    if (absl::Status s = CheckCaller(msg); !s.ok()) return s;
    switch (msg.body_case()) {
      case AgentMessage::kHello:
        return absl::FailedPreconditionError(
            absl::StrCat("node '", node_, "' sent a second Hello on the same stream"));
      case AgentMessage::kStatus:
        return fleet_->OnStatus(node_, std::move(*msg.mutable_status()), this);
      case AgentMessage::kInstanceEvent:
        return fleet_->OnInstanceEvent(node_, msg.instance_event(), this);
      case AgentMessage::kCommandResult:
        return fleet_->OnCommandResult(node_, msg.command_result());
      case AgentMessage::kGoodbye:
        fleet_->OnGoodbye(node_, msg.goodbye().reason(), this);
        return absl::OkStatus();
      default:
        return absl::InvalidArgumentError("empty AgentMessage");
    }
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
  FleetState* const fleet_;
  WorkQueue* const blocking_;
  const std::string peer_;
  // The stream's caller, fixed by its TLS handshake and AuthProcessor.
  const absl::StatusOr<Identity> identity_;
  AgentMessage incoming_;
  // Set once by the reading side; read only by reactor callbacks.
  std::string node_;
  // The Hello's node name once the caller may use it (before OnHello accepts).
  std::string claimed_;
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
