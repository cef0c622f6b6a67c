#pragma once

// The agent's side of TLS: flags and channel credentials for ControllerLink.
//   dcu-agent --tls-ca ca.crt --tls-cert node.crt --tls-key node.key
// The node certificate's CN must be the node name and its O "node"
// (dcuctl pki issue node NAME makes one); the agent checks that at start-up
// so a wrong certificate is reported here, not as a refusal by the
// controller on every reconnect.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/tls_config.h"

namespace CLI {
class App;
}

namespace dcu::agent {

struct AgentSecurityOptions {
  common::ClientTlsFiles tls;
  // Dial a non-loopback controller in plaintext anyway.
  bool insecure = false;
};

// Adds --tls-ca, --tls-cert, --tls-key and --insecure to `app`.
void AddAgentSecurityFlags(CLI::App* app, AgentSecurityOptions* options);

// Credentials for dialing `controller` as node `node`. Without TLS flags:
// plaintext credentials for a loopback controller, INVALID_ARGUMENT for any
// other address unless --insecure. With them: all three files are required,
// checked (readable, unexpired, key 0600 and matching), and the certificate
// must name `node` (CN) with O=node; INVALID_ARGUMENT otherwise.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeAgentCredentials(
    const AgentSecurityOptions& options, const std::string& node, const std::string& controller);

}  // namespace dcu::agent
