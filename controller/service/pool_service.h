#pragma once

#include <vector>

#include "controller/core/node_pool.h"
#include "dcufleet/v1/pool.grpc.pb.h"

namespace dcu::controller {

// PoolService: the node pools and their jobs (issue 20), from
// NodePool::View (no gRPC in the core).
class PoolServiceImpl : public dcufleet::v1::PoolService::CallbackService {
 public:
  explicit PoolServiceImpl(std::vector<NodePool*> pools) : pools_(std::move(pools)) {}
  grpc::ServerUnaryReactor* ListPools(grpc::CallbackServerContext* ctx,
                                      const dcufleet::v1::ListPoolsRequest* req,
                                      dcufleet::v1::ListPoolsResponse* resp) override;

 private:
  const std::vector<NodePool*> pools_;
};

}  // namespace dcu::controller
