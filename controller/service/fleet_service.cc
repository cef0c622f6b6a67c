#include "controller/service/fleet_service.h"

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/version.h"
#include "controller/service/status_convert.h"

namespace dcu::controller {
namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* FleetServiceImpl::GetVersion(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::GetVersionRequest*,
                                                       dcufleet::v1::GetVersionResponse* resp) {
  resp->set_version(common::kVersion);
  resp->set_schema_version(deps_.schema_version);
  resp->set_db_path(deps_.db_path);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListNodes(grpc::CallbackServerContext* ctx,
                                                      const dcufleet::v1::ListNodesRequest*,
                                                      dcufleet::v1::ListNodesResponse* resp) {
  for (auto& n : deps_.fleet->ListNodes()) *resp->add_nodes() = std::move(n);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetNode(grpc::CallbackServerContext* ctx,
                                                    const dcufleet::v1::GetNodeRequest* req,
                                                    dcufleet::v1::NodeView* resp) {
  std::string why = common::ValidateName("name", req->name());
  if (!why.empty()) return Done(ctx, absl::InvalidArgumentError(why));
  auto node = deps_.fleet->GetNode(req->name());
  if (!node) {
    return Done(ctx, absl::NotFoundError(absl::StrCat("node '", req->name(), "' not found")));
  }
  *resp = std::move(*node);
  return Done(ctx, absl::OkStatus());
}

}  // namespace dcu::controller
