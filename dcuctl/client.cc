#include "dcuctl/client.h"

#include "absl/strings/str_cat.h"
#include "common/tls_config.h"
#include "dcuctl/client_security.h"
#include "dcuctl/exit_codes.h"

namespace dcu::dcuctl {

Client::Client(const GlobalOptions& options) : options_(options) {
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

int Client::Fail(const grpc::Status& s, const std::string& what, std::ostream& err) const {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      err << "error: cannot reach the controller at '" << options_.controller
          << "': " << s.error_message()
          << " (is dcu-controller running? set --controller or DCUFLEET_CONTROLLER"
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
