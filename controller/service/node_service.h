#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "controller/core/fleet_state.h"
#include "controller/service/work_queue.h"
#include "dcufleet/v1/node.grpc.pb.h"

namespace dcu::controller {

// NodeService.Connect: one bidirectional stream per agent, as a callback
// reactor. It only translates messages and hands them to FleetState. What may
// wait on the database (registering a Hello, recording a disconnect) runs on
// its own threads, never on gRPC's.
class NodeServiceImpl final : public dcufleet::v1::NodeService::CallbackService {
 public:
  explicit NodeServiceImpl(FleetState* fleet)
      : fleet_(fleet), blocking_(std::make_unique<WorkQueue>(2)) {}

  grpc::ServerBidiReactor<dcufleet::v1::AgentMessage, dcufleet::v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  FleetState* const fleet_;
  std::unique_ptr<WorkQueue> blocking_;
};

}  // namespace dcu::controller
