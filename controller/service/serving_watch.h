#pragma once

#include <grpcpp/grpcpp.h>

#include "controller/core/deploy_controller.h"
#include "controller/core/fleet_state.h"
#include "controller/service/owned_threads.h"
#include "controller/store/api_key_store.h"
#include "dcufleet/v1/serving.pb.h"

namespace dcu::controller {

// FleetService.WatchServing: the ServingSnapshot (controller/core/
// serving_view.h) now, then whenever it changes, and again after
// `resend_after` of quiet so the gateway can tell silence from a dead link.
// The loop runs on a thread of `threads` (it sleeps between looks). The
// snapshot carries `api_keys`' keys (hashes); when they cannot be read, no
// snapshot is sent (one without keys would open every gateway).
grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot>* StartServingWatch(
    DeployController* deployments, FleetState* fleet, ApiKeyStore* api_keys, OwnedThreads& threads,
    const dcufleet::v1::WatchServingRequest& request);

}  // namespace dcu::controller
