#include "controller/core/agent_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/input_rules.h"

namespace dcu::controller {

using dcufleet::v1::AgentMessage;

AgentStreamRules::AgentStreamRules(FleetState* fleet, NodeSession* session,
                                   NameCheck may_speak_for)
    : fleet_(fleet), session_(session), may_speak_for_(std::move(may_speak_for)) {}

absl::StatusOr<dcufleet::v1::Hello> AgentStreamRules::TakeHello(AgentMessage& first) {
  // What a message may say (security.md) before the fleet state sees
  // anything, so a refused message changes nothing.
  if (absl::Status s = common::ValidateAgentMessage(first); !s.ok()) return s;
  if (!first.has_hello()) {
    return absl::FailedPreconditionError("the first message on a stream must be Hello");
  }
  if (absl::Status s = may_speak_for_("hello.node_name", first.hello().node_name()); !s.ok()) {
    return s;
  }
  claimed_ = first.hello().node_name();
  dcufleet::v1::Hello hello = std::move(*first.mutable_hello());
  hello.clear_token();
  return hello;
}

void AgentStreamRules::RegisterAsync(dcufleet::v1::Hello hello,
                                     std::function<void(absl::Status)> done) {
  fleet_->OnHelloAsync(std::move(hello), session_,
                       [this, done = std::move(done)](
                           absl::StatusOr<dcufleet::v1::Welcome> welcome) {
                         if (welcome.ok()) node_ = claimed_;
                         done(welcome.status());
                       });
}

absl::Status AgentStreamRules::Register(dcufleet::v1::Hello hello) {
  absl::StatusOr<dcufleet::v1::Welcome> welcome = fleet_->OnHello(hello, session_);
  if (welcome.ok()) node_ = claimed_;
  return welcome.status();
}

absl::Status AgentStreamRules::Handle(AgentMessage& msg) {
  if (absl::Status s = common::ValidateAgentMessage(msg); !s.ok()) return s;
  switch (msg.body_case()) {
    case AgentMessage::kHello:
      return absl::FailedPreconditionError(
          absl::StrCat("node '", node_, "' sent a second Hello on the same stream"));
    case AgentMessage::kStatus:
      return fleet_->OnStatus(node_, std::move(*msg.mutable_status()), session_);
    case AgentMessage::kInstanceEvent:
      return fleet_->OnInstanceEvent(node_, msg.instance_event(), session_);
    case AgentMessage::kCommandResult:
      return fleet_->OnCommandResult(node_, msg.command_result());
    case AgentMessage::kGoodbye:
      fleet_->OnGoodbye(node_, msg.goodbye().reason(), session_);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("empty AgentMessage");
  }
}

void AgentStreamRules::Refused(const absl::Status& why) {
  const std::string& who = node_.empty() ? claimed_ : node_;
  if (!who.empty()) fleet_->OnRefused(who, std::string(why.message()));
}

void AgentStreamRules::Disconnected() {
  if (!node_.empty()) fleet_->OnDisconnect(node_, session_);
}

}  // namespace dcu::controller
