#include "dcuctl/client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/leader.h"
#include "common/tls_config.h"
#include "dcuctl/client_security.h"
#include "dcuctl/exit_codes.h"

namespace dcu::dcuctl {

namespace {

// --controller a:7070,b:7070 (controllers sharing one PostgreSQL database,
// one leading; docs/ha.md): the first that answers as a server, or the
// leader a standby names (common/leader.h). When none answers, the first,
// so that the command's own call reports it by address.
std::string PickController(const GlobalOptions& options, const std::vector<std::string>& list) {
  for (const std::string& address : list) {
    GlobalOptions one = options;
    one.controller = address;
    auto creds = MakeClientCredentials(one);
    if (!creds.ok()) continue;
    auto channel = grpc::CreateCustomChannel(address, *creds,
                                             common::DefaultChannelArguments(common::kMaxResponseBytes));
    auto stub = dcufleet::v1::FleetService::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(std::min(3.0, options.timeout_s) * 1000)));
    dcufleet::v1::GetVersionResponse resp;
    grpc::Status s = stub->GetVersion(&ctx, dcufleet::v1::GetVersionRequest(), &resp);
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
        s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return address;  // a leader (even one that wants a token first)
    }
    const auto& trailers = ctx.GetServerTrailingMetadata();
    auto it = trailers.find(common::kLeaderMetadataKey);
    if (it != trailers.end() && it->second.length() > 0) {
      return std::string(it->second.data(), it->second.length());
    }
  }
  return list.front();
}

}  // namespace

Client::Client(const GlobalOptions& options) : options_(options) {
  std::vector<std::string> list = absl::StrSplit(options_.controller, ',', absl::SkipEmpty());
  if (list.size() > 1) options_.controller = PickController(options_, list);
  auto creds = MakeClientCredentials(options_);
  if (!creds.ok()) {
    status_ = creds.status();
    // A channel that fails every call; main prints status() first.
    creds = grpc::InsecureChannelCredentials();
    options_.controller = "unix:/nonexistent/dcuctl-not-configured";
  }
  channel_ = grpc::CreateCustomChannel(options_.controller, *creds,
                                       common::DefaultChannelArguments(common::kMaxResponseBytes));
  stub_ = dcufleet::v1::FleetService::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000)));
  return ctx;
}

namespace {

// What the gRPC library says when the address answers but not as a gRPC
// server (an HTTP/1 server, a TLS-only port) or not as a dcufleet
// controller (another gRPC service: an agent, a gateway).
bool NotAController(const grpc::Status& s) {
  const std::string& m = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      return true;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
      return absl::StrContains(m, "http1") || absl::StrContains(m, "HTTP") ||
             absl::StrContains(m, "http2 header") || absl::StrContains(m, "Stream removed") ||
             absl::StrContains(m, "protocol error") || absl::StrContains(m, "PROTOCOL_ERROR") ||
             absl::StrContains(m, "Unexpected") || absl::StrContains(m, "frame");
    default:
      return false;
  }
}

}  // namespace

int Client::Fail(const grpc::Status& s, const std::string& what, std::ostream& err) const {
  if (NotAController(s)) {
    err << "error: '" << options_.controller << "' answers, but not as a dcufleet controller ("
        << (s.error_message().empty() ? "it does not serve dcufleet.v1.FleetService"
                                      : s.error_message())
        << ", while " << what
        << "): check --controller / $DCUFLEET_CONTROLLER / the context (dcuctl version shows "
           "which is used); an older controller may lack this call\n";
    return kExitUnreachable;
  }
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY) {
        // The controller answered: what is away is behind it (a node a
        // command or log read goes to), not the controller.
        err << "error: " << what << ": " << s.error_message()
            << " (the controller answered; dcuctl get nodes shows which nodes are connected)\n";
        return kExitUnreachable;
      }
      err << "error: cannot reach the controller at '" << options_.controller
          << "': " << s.error_message()
          << " (is dcu-controller running? set --controller, DCUFLEET_CONTROLLER or a context: dcuctl config --help"
          << (options_.tls_ca.empty() ? ""
                                      : "; with TLS: is --tls-ca the CA that signed the controller's "
                                        "certificate, and is your certificate signed by its "
                                        "--tls-client-ca and unexpired?")
          << ")\n";
      return kExitUnreachable;
    case grpc::StatusCode::NOT_FOUND:
      err << "error: " << s.error_message() << "\n";
      return kExitNotFound;
    case grpc::StatusCode::INVALID_ARGUMENT:
      err << "error: " << what << ": " << s.error_message() << "\n";
      return kExitUsage;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      err << "error: " << what << " refused: " << s.error_message() << "\n";
      return kExitDenied;
    default:
      err << "error: " << what << ": " << s.error_message() << "\n";
      return kExitFailed;
  }
}

}  // namespace dcu::dcuctl
