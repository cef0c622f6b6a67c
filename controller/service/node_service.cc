#include "controller/service/node_service.h"

#include <deque>

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

  bool Send(const ControllerMessage& message) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finishing_) return false;
    outgoing_.push_back(message);
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
      // The Hello registers the node durably: off gRPC's threads. No read is
      // outstanding meanwhile, so the stream's messages stay in order.
      blocking_->Post([this] { Continue(Handle(incoming_)); });
      return;
    }
    Continue(Handle(incoming_));
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    outgoing_.pop_front();
    if (!ok) {
      writing_ = false;
      return;
    }
    if (!outgoing_.empty() && !finishing_) {
      StartWrite(&outgoing_.front());
    } else {
      writing_ = false;
      if (finishing_ && !finished_) {
        finished_ = true;
        Finish(pending_status_);
      }
    }
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
      DCU_LOG_WARN("agent stream from ", peer_, " refused: ", s.message());
      if (!node_.empty()) fleet_->OnRefused(node_, std::string(s.message()));
      FinishOnce(ToGrpcStatus(s));
      return;
    }
    StartRead(&incoming_);
  }

 private:
  absl::Status Handle(AgentMessage& msg) {
    // Who may speak, then what they may say (security.md): both before the
    // fleet state sees anything, so a refused message changes nothing.
    if (!identity_.ok()) return identity_.status();
    if (absl::Status s = common::ValidateAgentMessage(msg); !s.ok()) return s;
    if (node_.empty()) {
      if (!msg.has_hello()) {
        return absl::FailedPreconditionError("the first message on a stream must be Hello");
      }
      if (absl::Status s = CheckNodeName(*identity_, "hello.node_name", msg.hello().node_name());
          !s.ok()) {
        return s;
      }
      // Agents authenticate with certificates; a token in Hello is never kept.
      msg.mutable_hello()->clear_token();
      auto welcome = fleet_->OnHello(msg.hello(), this);
      if (!welcome.ok()) return welcome.status();
      node_ = msg.hello().node_name();
      return absl::OkStatus();
    }
    switch (msg.body_case()) {
      case AgentMessage::kHello:
        return absl::FailedPreconditionError(
            absl::StrCat("node '", node_, "' sent a second Hello on the same stream"));
      case AgentMessage::kStatus:
        return fleet_->OnStatus(node_, std::move(*msg.mutable_status()), this);
      case AgentMessage::kInstanceEvent:
        return fleet_->OnInstanceEvent(node_, msg.instance_event(), this);
      case AgentMessage::kCommandResult:
        fleet_->OnCommandResult(node_, msg.command_result());
        return absl::OkStatus();
      default:
        return absl::InvalidArgumentError("empty AgentMessage");
    }
  }

  void FinishOnce(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    // The disconnect is recorded in OnDone, off gRPC's threads.
    absl::MutexLock lock(&mu_);
    if (finishing_) return;
    finishing_ = true;
    pending_status_ = status;
    if (!writing_) {
      finished_ = true;
      Finish(status);
    }
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
