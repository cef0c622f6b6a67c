#pragma once

// The controller's HTTP listener (dcu-controller --http-listen ADDR):
//   /metrics              Prometheus text (controller_metrics.h)
//   /api/v1/nodes         ListNodesResponse as JSON
//   /api/v1/deployments   ListDeploymentsResponse
//   /api/v1/deployments/NAME   GetDeploymentResponse (with its events)
//   /api/v1/stacks        ListStacksResponse (optional ?arch=)
//   /api/v1/events        ListEventsResponse (?kind=&name=&limit=)
//   /ui/                  the dashboard (embedded files, no external asset)
//   /healthz              "ok"
// The JSON is the FleetService response message itself (protobuf's JSON
// mapping), produced by the functions the RPC handlers call (fleet_reads.h).
//
// Auth: with a tokens file (the controller's --tokens-file) every /api/ and
// /metrics request needs "Authorization: Bearer TOKEN" of an admin or
// read-only token, as the read RPCs do; 401 otherwise. The dashboard's
// files carry no data and are served to anyone (the page asks for the
// token and keeps it in the browser session). Without a tokens file
// (loopback demo) nothing is asked, as on the gRPC port.

#include <memory>
#include <optional>

#include "common/http_server.h"
#include "controller/service/auth.h"
#include "controller/service/controller_metrics.h"
#include "controller/service/fleet_reads.h"

namespace dcu::controller {

struct HttpApiDeps {
  FleetServiceDeps reads;
  ControllerMetrics* metrics = nullptr;  // nullptr: no /metrics
  std::shared_ptr<const TokenTable> tokens;  // nullptr: no auth (plaintext loopback)
};

void InstallHttpApi(common::HttpServer* server, HttpApiDeps deps);

// "a=1&b=x%20y" → value of `key` (percent-decoded, '+' as space); nullopt
// when absent; INVALID_ARGUMENT for a bad escape.
absl::StatusOr<std::optional<std::string>> QueryParam(const std::string& query,
                                                      const std::string& key);

}  // namespace dcu::controller
