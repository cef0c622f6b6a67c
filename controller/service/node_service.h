#pragma once

#include <grpcpp/grpcpp.h>

#include "controller/core/fleet_state.h"
#include "dcufleet/v1/node.grpc.pb.h"

namespace dcu::controller {

// NodeService.Connect: one bidirectional stream per agent, as a callback
// reactor. It only translates messages and hands them to FleetState.
class NodeServiceImpl final : public dcufleet::v1::NodeService::CallbackService {
 public:
  explicit NodeServiceImpl(FleetState* fleet) : fleet_(fleet) {}

  grpc::ServerBidiReactor<dcufleet::v1::AgentMessage, dcufleet::v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  FleetState* const fleet_;
};

}  // namespace dcu::controller
