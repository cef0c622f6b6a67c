#include "controller/service/pool_service.h"

namespace dcu::controller {

grpc::ServerUnaryReactor* PoolServiceImpl::ListPools(grpc::CallbackServerContext* ctx,
                                                     const dcufleet::v1::ListPoolsRequest*,
                                                     dcufleet::v1::ListPoolsResponse* resp) {
  for (const NodePool* p : pools_) *resp->add_pools() = p->View();
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace dcu::controller
