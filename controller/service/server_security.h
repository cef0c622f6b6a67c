#pragma once

// The controller's listening credentials, chosen from its flags:
//   dcu-controller --tls-cert F --tls-key F [--tls-client-ca F] [--tokens-file F]
// With TLS every call is authenticated and authorized (auth.h). Without it
// the controller listens in plaintext on loopback only (or anywhere with
// --insecure) and trusts every caller, as the demo does.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tls_config.h"
#include "controller/service/auth.h"

namespace CLI {
class App;
}

namespace dcu::controller {

struct ServerSecurityOptions {
  std::string listen;
  bool insecure = false;
  common::ServerTlsFiles tls;
  std::string tokens_file;
  bool tls_enabled() const { return tls.enabled(); }
};

// Adds --tls-cert, --tls-key, --tls-client-ca and --tokens-file to `app`.
void AddServerSecurityFlags(CLI::App* app, ServerSecurityOptions* options);

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // With TLS, the bearer tokens (possibly none): the HTTP listener checks
  // the same ones (http_api.h). nullptr without TLS: every caller trusted.
  std::shared_ptr<const TokenTable> tokens;
  // One line for the start-up log: "TLS, client certificates from 'ca.crt',
  // 3 tokens from 'tokens'" or "plaintext (loopback only)".
  std::string summary;
};

// Loads and checks every file, builds credentials with the AuthProcessor
// installed. INVALID_ARGUMENT / FAILED_PRECONDITION naming the flag and file:
// TLS half configured, a key readable by others, an expired certificate, a
// bad tokens file, a tokens file without TLS (tokens must not travel in
// plaintext), TLS with neither a client CA nor tokens (nobody could
// authenticate), or a non-loopback listen address without TLS or --insecure.
absl::StatusOr<ServerSecurity> ConfigureServerSecurity(const ServerSecurityOptions& options);

// Sets the message size limits on a server builder (common::kMaxRequestBytes)
// and the transport settings for many long-lived agent streams.
void ApplyServerLimits(grpc::ServerBuilder* builder);

// `experiments` (the value of GRPC_EXPERIMENTS, possibly empty) with gRPC's
// `tcp_read_chunks` experiment turned off, unless it already names that
// experiment either way (the operator's word stands).
std::string WithTcpReadChunksOff(absl::string_view experiments);

// Sets GRPC_EXPERIMENTS to WithTcpReadChunksOff of its value. Call first
// in main, before anything touches gRPC: gRPC reads it once. Why: the
// experiment, on by default in gRPC 1.51, reads into fixed 8 KiB slices and
// ignores the read-size settings ApplyServerLimits makes (issue 22).
void TurnOffTcpReadChunks();

}  // namespace dcu::controller
