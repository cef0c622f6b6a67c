#include "dcuctl/client_security.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/net.h"
#include "common/status_util.h"
#include "common/tls_config.h"

namespace dcu::dcuctl {

void AddClientSecurityFlags(CLI::App* app, GlobalOptions* o) {
  // Only the flags here: their environment variables and the context come
  // in after parsing (contexts.h ResolveConnection).
  app->add_option("--tls-ca", o->tls_ca,
                  "PEM CA that signed the controller's certificate (enables TLS; "
                  "else $DCUFLEET_TLS_CA, else the context's)");
  app->add_option("--tls-cert", o->tls_cert,
                  "PEM client certificate, O = admin or read-only (else $DCUFLEET_TLS_CERT, else the context's)");
  app->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert, mode 0600 "
                                           "(else $DCUFLEET_TLS_KEY, else the context's)");
  app->add_option("--token-file", o->token_file,
                  "file (mode 0600) holding a bearer token (else $DCUFLEET_TOKEN_FILE, else the context's)");
  app->add_flag("--insecure", o->insecure,
                "allow plaintext to a non-loopback controller (not recommended)");
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeClientCredentials(
    const GlobalOptions& o) {
  common::ClientTlsFiles files{o.tls_ca, o.tls_cert, o.tls_key};
  if (!files.enabled()) {
    if (!o.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--token-file needs TLS (--tls-ca): a bearer token must not travel in plaintext");
    }
    // unix: sockets are local; any other target that is not HOST:PORT
    // (dns:///..., ipv4:...) may be remote and needs TLS or --insecure.
    bool local = o.controller.rfind("unix:", 0) == 0;
    // A gRPC target URI (unix:, dns:///, ipv4:, ipv6:) is not a HOST:PORT.
    const bool uri = local || o.controller.find("://") != std::string::npos;
    auto hp = common::ParseHostPort(o.controller);
    if (hp.ok()) local = common::IsLoopbackHost(hp->host);
    // "--controller nonsense" is a bad address, not a plaintext question.
    if (!hp.ok() && !uri && o.controller.rfind("ipv4:", 0) != 0 &&
        o.controller.rfind("ipv6:", 0) != 0 && o.controller.rfind("dns:", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "controller address '", o.controller, "' is not HOST:PORT (",
          hp.status().message(), "); for example --controller 127.0.0.1:7070, or set "
          "$DCUFLEET_CONTROLLER"));
    }
    if (!local && !o.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to talk to controller '", o.controller,
          "' in plaintext; pass --tls-ca (and --tls-cert/--tls-key or --token-file; see "
          "docs/security.md) or --insecure"));
    }
    return grpc::InsecureChannelCredentials();
  }
  std::string token;
  if (!o.token_file.empty()) {
    DCU_ASSIGN_OR_RETURN(token, common::ReadTokenFile(o.token_file));
  }
  return common::MakeChannelCredentials(files, token);
}

}  // namespace dcu::dcuctl
