#pragma once

// What a standby dcu-controller (PostgreSQL, not leading; issue 21) serves
// on its gRPC port: every call, whatever the service and method, ends at
// once with UNAVAILABLE, "not the leader; the leader is at ADDR", and the
// address in the trailing metadata `dcufleet-leader` ("" when none leads),
// so that a client holding several controller addresses can go to the
// leader instead of waiting on this one. A standby holds no fleet state;
// reads are the leader's too.

#include <grpcpp/generic/async_generic_service.h>

#include <functional>
#include <string>

#include "common/leader.h"

namespace dcu::controller {

class StandbyService : public grpc::CallbackGenericService {
 public:
  // `leader`: the leader's address as last read from the lease row.
  explicit StandbyService(std::function<std::string()> leader) : leader_(std::move(leader)) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

 private:
  std::function<std::string()> leader_;
};

}  // namespace dcu::controller
