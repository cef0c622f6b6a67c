#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "dcufleet/v1/node.pb.h"

namespace grpc {
class ChannelCredentials;
}

namespace dcu::agent {

// What the link needs from the rest of the agent. Every callback is invoked
// from the link's threads and must not block for long.
struct LinkCallbacks {
  // Builds the Hello (identity, inventory, running instances).
  std::function<dcufleet::v1::Hello()> make_hello;
  // Builds one periodic NodeStatus.
  std::function<dcufleet::v1::NodeStatus()> make_status;
  // The controller sent the node's desired instances.
  std::function<void(const dcufleet::v1::Assignment&)> on_assignment;
  // The controller sent a one-shot command; the result is sent back.
  std::function<dcufleet::v1::CommandResult(const dcufleet::v1::Command&)> on_command;
};

// The agent's one outbound stream to the controller. Dials, says Hello, sends
// NodeStatus every interval (the controller's Welcome may change it), and on
// any failure reconnects with jittered exponential back-off, forever, until
// Stop(). The controller never needs to reach the node.
class ControllerLink {
 public:
  struct Options {
    std::string controller_address;
    absl::Duration status_interval = absl::Seconds(5);
    absl::Duration initial_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(30);
    // TLS credentials (MakeAgentCredentials); null means plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    // Issue 22: reports carry the inventory's digest, and leave the
    // inventory out while it is the one last sent on the stream, when the
    // controller's Welcome accepts that and it has not asked for it.
    // false: every report carries the inventory and no digest (an agent
    // from before issue 22).
    bool inventory_delta = true;
  };

  ControllerLink(Options options, LinkCallbacks callbacks);
  ~ControllerLink();

  void Start();
  void Stop();
  // Sends an InstanceEvent now if connected (dropped otherwise: the next
  // NodeStatus carries the same state).
  void SendInstanceEvent(const dcufleet::v1::InstanceEvent& event);
  bool connected() const { return connected_; }
  // Sends a NodeStatus now rather than at the next interval (the drain
  // began: the controller should know at once).
  void ReportNow();
  // Leaving for good (the batch job ends, issue 20): sends Goodbye with
  // `reason` as the stream's last message and waits up to `timeout` for the
  // controller to end the stream; the link does not reconnect afterwards.
  // False when not connected or the controller did not end it in time.
  // Call Stop() after.
  bool Leave(const std::string& reason, absl::Duration timeout);

 private:
  class Stream;
  void Run();

  const Options options_;
  const LinkCallbacks callbacks_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> connected_{false};
  std::atomic<bool> leaving_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::shared_ptr<Stream> stream_ ABSL_GUARDED_BY(mu_);
  absl::CondVar wake_;
};

}  // namespace dcu::agent
