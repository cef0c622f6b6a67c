#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "controller/core/fleet_state.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::controller {

struct FleetServiceDeps {
  FleetState* fleet = nullptr;
  std::string db_path;
  int schema_version = 0;
};

// FleetService: translates dcuctl's requests to the core and back.
class FleetServiceImpl final : public dcufleet::v1::FleetService::CallbackService {
 public:
  explicit FleetServiceImpl(FleetServiceDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx,
                                       const dcufleet::v1::GetVersionRequest* req,
                                       dcufleet::v1::GetVersionResponse* resp) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const dcufleet::v1::ListNodesRequest* req,
                                      dcufleet::v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* ctx,
                                    const dcufleet::v1::GetNodeRequest* req,
                                    dcufleet::v1::NodeView* resp) override;

 private:
  FleetServiceDeps deps_;
};

}  // namespace dcu::controller
