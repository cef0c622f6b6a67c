#include "agent/link/link_security.h"

#include <CLI/CLI.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net.h"
#include "common/status_util.h"

namespace dcu::agent {

void AddAgentSecurityFlags(CLI::App* app, AgentSecurityOptions* o) {
  app->add_option("--tls-ca", o->tls.ca, "PEM CA that signed the controller's certificate (enables TLS)");
  app->add_option("--tls-cert", o->tls.cert, "PEM node certificate: CN = node name, O = node");
  app->add_option("--tls-key", o->tls.key, "PEM private key of --tls-cert (mode 0600)");
  app->add_flag("--insecure", o->insecure,
                "allow dialing a non-loopback controller without TLS (not recommended)");
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeAgentCredentials(
    const AgentSecurityOptions& o, const std::string& node, const std::string& controller) {
  if (!o.tls.enabled()) {
    // unix: sockets are local; any other target that is not HOST:PORT
    // (dns:///..., ipv4:...) may be remote and needs TLS or --insecure.
    // --controller a,b,…: every address must be local for plaintext.
    bool local = true;
    for (absl::string_view one : absl::StrSplit(controller, ',', absl::SkipEmpty())) {
      bool this_local = absl::StartsWith(one, "unix:");
      auto hp = common::ParseHostPort(one);
      if (hp.ok()) this_local = common::IsLoopbackHost(hp->host);
      local = local && this_local;
    }
    if (!local && !o.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to dial non-loopback controller '", controller,
          "' without TLS; pass --tls-ca/--tls-cert/--tls-key (see docs/security.md) or --insecure"));
    }
    return grpc::InsecureChannelCredentials();
  }
  if (o.tls.ca.empty() || o.tls.cert.empty() || o.tls.key.empty()) {
    return absl::InvalidArgumentError(
        "an agent with TLS needs all of --tls-ca, --tls-cert and --tls-key (the controller admits "
        "nodes by their certificate)");
  }
  DCU_ASSIGN_OR_RETURN(std::string cert, common::ReadCertificatePem(o.tls.cert, "--tls-cert"));
  DCU_ASSIGN_OR_RETURN(common::CertificateInfo info, common::InspectCertificate(cert));
  if (info.common_name != node) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert '", o.tls.cert, "' is for node '", info.common_name, "' but this agent is node '",
        node, "'; the controller admits a node only under its certificate's name (set --node or "
        "issue a certificate with 'dcuctl pki issue node ", node, "')"));
  }
  if (info.organization != "node") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert '", o.tls.cert, "' is not a node certificate (O='", info.organization,
        "', expected O=node; issue one with 'dcuctl pki issue node ", node, "')"));
  }
  return common::MakeChannelCredentials(o.tls);
}

}  // namespace dcu::agent
