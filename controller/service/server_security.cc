#include "controller/service/server_security.h"

#include <climits>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net.h"
#include "common/status_util.h"
#include "controller/service/auth.h"

namespace dcu::controller {

void AddServerSecurityFlags(CLI::App* app, ServerSecurityOptions* o) {
  app->add_option("--tls-cert", o->tls.cert, "PEM certificate the controller presents (enables TLS)");
  app->add_option("--tls-key", o->tls.key, "PEM private key of --tls-cert (mode 0600)");
  app->add_option("--tls-client-ca", o->tls.client_ca,
                  "PEM CA that signs client certificates (agents: CN = node name, O = node; "
                  "people: O = admin or read-only)");
  app->add_option("--tokens-file", o->tokens_file,
                  "bearer tokens for dcuctl, lines 'sha256hex role name' (role admin or read-only)");
}

absl::StatusOr<ServerSecurity> ConfigureServerSecurity(const ServerSecurityOptions& o) {
  ServerSecurity out;
  if (!o.tls_enabled()) {
    if (!o.tokens_file.empty()) {
      return absl::InvalidArgumentError(
          "--tokens-file needs TLS (--tls-cert and --tls-key): bearer tokens must not travel in "
          "plaintext");
    }
    DCU_ASSIGN_OR_RETURN(common::HostPort hp, common::ParseHostPort(o.listen));
    bool loopback = common::IsLoopbackHost(hp.host);
    if (!loopback && !o.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to listen on non-loopback address '", o.listen,
          "' without TLS; pass --tls-cert/--tls-key (see docs/security.md) or --insecure"));
    }
    out.credentials = grpc::InsecureServerCredentials();
    out.summary = loopback ? "plaintext, no authentication (loopback only)"
                           : "PLAINTEXT, NO AUTHENTICATION (--insecure)";
    return out;
  }
  if (o.tls.client_ca.empty() && o.tokens_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS is on but neither --tls-client-ca nor --tokens-file is set: no agent or person could "
        "authenticate");
  }
  DCU_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                       common::MakeServerCredentials(o.tls));
  auto tokens = std::make_shared<TokenTable>();
  if (!o.tokens_file.empty()) {
    DCU_ASSIGN_OR_RETURN(*tokens, TokenTable::LoadFile(o.tokens_file));
  }
  creds->SetAuthMetadataProcessor(std::make_shared<AuthProcessor>(tokens));
  out.credentials = creds;
  out.tokens = tokens;
  out.summary = absl::StrCat(
      "TLS with certificate '", o.tls.cert, "'",
      o.tls.client_ca.empty() ? ", no client certificates (agents cannot connect)"
                              : absl::StrCat(", client certificates from CA '", o.tls.client_ca, "'"),
      o.tokens_file.empty() ? "" : absl::StrCat(", ", tokens->size(), " tokens from '", o.tokens_file, "'"));
  return out;
}

void ApplyServerLimits(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(common::kMaxRequestBytes);
  builder->SetMaxSendMessageSize(common::kMaxResponseBytes);
  // Agents ping every 5 s (agent/link/controller_link.cc) so that a stopped
  // or cut-off controller is noticed in seconds and, with several
  // controllers, the new leader is found (issue 21). gRPC's default
  // refuses pings closer than 5 min apart without data with GOAWAY.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 4000);
  // No server keepalive pings and no BDP probing (issue 22). Both re-arm a
  // timer on every read, and Debian's libgrpc 1.51 is built without NDEBUG,
  // so every timer set or cancelled also walks gRPC's debug hash of all
  // pending timers (timer_generic.cc, 1,009 buckets) under a lock: with
  // 10,000 agent streams reporting every second that was 14-18% of the
  // controller's CPU (perf, BENCHMARKS.md). What they would give is not
  // needed here: the server's keepalive pings a peer after 2 h of silence
  // while agents report every second and are declared NotReady after 15 s
  // of silence (FleetState::Tick), and their own pings find a dead
  // controller; BDP grows the receive window for bulk uploads, and what the
  // controller receives is reports, events and specs of a few KB (a 16 MiB
  // request at most, a few hundred round trips of gRPC's 64 KiB window).
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // Reads of 1 KiB first and 2 KiB at most (issue 22). Each connection
  // holds a read slice while it waits: a read that fills less of it than
  // asked leaves the rest as the buffer of the next. gRPC's default, 8 KiB
  // slices (TurnOffTcpReadChunks says why those are not used), was 78 MiB of
  // the controller's heap at 10,000 agent streams after a placement wave
  // (heaptrack, BENCHMARKS.md), for periodic reports of a few hundred bytes.
  // A bigger message still arrives whole, in more reads (about one per
  // 2 KiB: five for a 9 KB Hello).
  builder->AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE, 1024);
  builder->AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 2048);
}

std::string WithTcpReadChunksOff(absl::string_view experiments) {
  constexpr absl::string_view kExperiment = "tcp_read_chunks";
  for (absl::string_view name : absl::StrSplit(experiments, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    absl::ConsumePrefix(&name, "-");
    if (name == kExperiment) return std::string(experiments);
  }
  if (absl::StripAsciiWhitespace(experiments).empty()) return absl::StrCat("-", kExperiment);
  return absl::StrCat(experiments, ",-", kExperiment);
}

void TurnOffTcpReadChunks() {
  const char* current = std::getenv("GRPC_EXPERIMENTS");
  const std::string value = WithTcpReadChunksOff(current == nullptr ? "" : current);
  setenv("GRPC_EXPERIMENTS", value.c_str(), /*overwrite=*/1);
}

}  // namespace dcu::controller
