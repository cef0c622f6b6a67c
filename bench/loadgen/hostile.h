#pragma once

// A hostile agent for the trust checks (issue 14): real gRPC streams that
// speak as a node but say what no node can. Run beside the simulated fleet
// by dcu-loadgen --hostile, so the fleet's ingest latency is measured while
// the controller is under attack.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "dcufleet/v1/node.grpc.pb.h"

namespace dcu::bench {

struct HostileCounts {
  std::atomic<int64_t> events_sent{0};       // InstanceEvents written for unknown instances
  std::atomic<int64_t> streams{0};           // streams opened by the event flooder
  std::atomic<int64_t> streams_refused{0};   // ...that the controller ended with an error
  std::atomic<int64_t> hello_refused{0};     // of those, refused at Hello (flood penalty)
  std::atomic<int64_t> huge_hellos{0};       // Hello with a 65,536-device inventory sent
  std::atomic<int64_t> huge_refused{0};      // ...refused (as they must be)
  std::atomic<int64_t> huge_welcomed{0};     // ...welcomed (a failure of the controller)
};

class HostileAgent {
 public:
  // `node` is the name it claims; the streams go to `stub`.
  HostileAgent(std::string node, dcufleet::v1::NodeService::Stub* stub);
  ~HostileAgent();
  void Start();
  void Stop();
  const HostileCounts& counts() const { return counts_; }
  const std::string& node() const { return node_; }

 private:
  // Hello, then InstanceEvents for instances the node never ran, as fast as
  // the stream takes them; when the controller ends the stream, at once again.
  void FloodEvents();
  // Hello with 65,536 devices, again and again.
  void HugeInventories();

  const std::string node_;
  dcufleet::v1::NodeService::Stub* const stub_;
  std::atomic<bool> stop_{false};
  HostileCounts counts_;
  std::thread flood_, huge_;
};

}  // namespace dcu::bench
