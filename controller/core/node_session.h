#pragma once

#include "dcufleet/v1/node.pb.h"

namespace dcu::controller {

// The controller's end of one agent's stream, as the core sees it. The gRPC
// reactor implements it; tests use a recording fake. Send only queues: it
// never blocks on the network.
class NodeSession {
 public:
  virtual ~NodeSession() = default;
  // Queues a message for the agent (taken by value: a caller done with it
  // moves it in, and the queue keeps it without a copy). Returns false when
  // the stream is closed.
  virtual bool Send(dcufleet::v1::ControllerMessage message) = 0;
  // Peer address, for logs.
  virtual std::string Peer() const = 0;
};

}  // namespace dcu::controller
