#pragma once

// dcuctl's side of TLS and authentication.
//   dcuctl --tls-ca ca.crt --tls-cert alice.crt --tls-key alice.key get nodes
//   dcuctl --tls-ca ca.crt --token-file ~/.dcufleet/token get nodes
// Environment defaults: DCUFLEET_TLS_CA, DCUFLEET_TLS_CERT, DCUFLEET_TLS_KEY,
// DCUFLEET_TOKEN_FILE. A token is only ever read from a file (0600): a token
// on a command line would show in `ps` and shell history.

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "dcuctl/client.h"

namespace CLI {
class App;
}

namespace dcu::dcuctl {

// Adds --tls-ca, --tls-cert, --tls-key, --token-file and --insecure to `app`
// (the environment and the context fill in what is not given: contexts.h).
void AddClientSecurityFlags(CLI::App* app, GlobalOptions* options);

// Channel credentials for `options`: TLS (with the token, when given) or
// plaintext to a loopback controller. INVALID_ARGUMENT / FAILED_PRECONDITION
// naming the flag and file: a token without TLS, a key or token file others
// can read, an expired certificate, plaintext to a remote controller
// without --insecure.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeClientCredentials(
    const GlobalOptions& options);

}  // namespace dcu::dcuctl
