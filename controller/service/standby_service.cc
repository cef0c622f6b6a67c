#include "controller/service/standby_service.h"

#include "absl/strings/str_cat.h"

namespace dcu::controller {

grpc::ServerGenericBidiReactor* StandbyService::CreateReactor(
    grpc::GenericCallbackServerContext* ctx) {
  const std::string leader = leader_();
  ctx->AddTrailingMetadata(common::kLeaderMetadataKey, leader);
  class Refuse : public grpc::ServerGenericBidiReactor {
   public:
    explicit Refuse(const std::string& leader) {
      Finish(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat("this dcu-controller is a standby, not the leader; ",
                       leader.empty() ? std::string("no controller leads at the moment")
                                      : absl::StrCat("the leader is at ", leader))));
    }
    void OnDone() override { delete this; }
  };
  return new Refuse(leader);
}

}  // namespace dcu::controller
