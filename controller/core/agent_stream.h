#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/core/fleet_state.h"
#include "controller/core/node_session.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::controller {

// The rules of one agent's stream, without its transport: what a node may
// say, in what order, and where each message goes in FleetState. A stream
// opens with a Hello that registers the node; every later message is a
// report, an instance event, a command result or a Goodbye for that node;
// a message that breaks a rule ends the stream and is counted against the
// name the stream claimed.
//
// One home for those rules: controller/service/node_service.cc carries them
// over gRPC (its threads, the tarpit, the write queue), and the agent_stream
// fuzz target drives them directly, so the two cannot drift apart.
//
// Not thread-safe: the transport calls it from one reader at a time (a
// stream's reads are ordered), which is how a stream is read anyway.
class AgentStreamRules {
 public:
  // Whether the stream's caller may speak for a node of this name (the TLS
  // identity's check, which lives with the transport). `field` names where
  // the name came from, for the refusal.
  using NameCheck =
      std::function<absl::Status(absl::string_view field, absl::string_view node_name)>;

  // `session` is the stream's end the node's messages are answered on; both
  // must outlive this.
  AgentStreamRules(FleetState* fleet, NodeSession* session, NameCheck may_speak_for);

  // The stream's first message, checked: the Hello to register (its token
  // cleared: agents authenticate with certificates, and a token is never
  // kept), or why the stream ends. From here on refusals count on the name
  // it claims.
  absl::StatusOr<dcufleet::v1::Hello> TakeHello(dcufleet::v1::AgentMessage& first);
  // Registers the Hello TakeHello returned, answering through `done` (maybe
  // on another thread: FleetState::OnHelloAsync commits Hellos in groups).
  void RegisterAsync(dcufleet::v1::Hello hello, std::function<void(absl::Status)> done);
  // The same, waiting for the commit.
  absl::Status Register(dcufleet::v1::Hello hello);

  // Any message after the Hello was registered. Taken by reference because
  // a report is moved into the node's view, not copied.
  absl::Status Handle(dcufleet::v1::AgentMessage& message);

  // The stream ends because of `why`: counted against the node, or the name
  // its Hello claimed when the Hello itself was refused.
  void Refused(const absl::Status& why);
  // The stream ended; the core never touches `session` again.
  void Disconnected();

  bool registered() const { return !node_.empty(); }
  // The registered node's name; empty before.
  const std::string& node() const { return node_; }

 private:
  FleetState* const fleet_;
  NodeSession* const session_;
  const NameCheck may_speak_for_;
  // The Hello's node name once the caller may use it (before it is registered).
  std::string claimed_;
  std::string node_;
};

}  // namespace dcu::controller
