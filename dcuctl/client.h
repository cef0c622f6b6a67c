#pragma once

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {

// Global options every command sees.
struct GlobalOptions {
  std::string controller = "127.0.0.1:7070";
  // -o: table|wide|json|yaml|name|jsonpath=TEMPLATE (output.h).
  std::string output = "table";
  // --no-headers: table and wide rows without the header line.
  bool no_headers = false;
  double timeout_s = 10;
  // Security (client_security.h): TLS files, bearer token file, and
  // --insecure to allow plaintext to a non-loopback controller.
  std::string tls_ca, tls_cert, tls_key, token_file;
  bool insecure = false;
};

// A thin FleetService client. Every call gets a deadline; failures are turned
// into one line for a person plus an exit code.
class Client {
 public:
  explicit Client(const GlobalOptions& options);
  dcufleet::v1::FleetService::Stub& stub() { return *stub_; }
  // The channel, for the services besides FleetService (PoolService).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // A fresh context with the deadline applied.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // Prints the one-line error for `status` (naming the controller address
  // when unreachable) and returns the exit code.
  int Fail(const grpc::Status& status, const std::string& what, std::ostream& err) const;
  const GlobalOptions& options() const { return options_; }
  // Why the channel could not be set up (a bad TLS or token file, plaintext
  // to a remote controller); OK otherwise. Calls then fail UNAVAILABLE.
  const absl::Status& status() const { return status_; }

 private:
  GlobalOptions options_;
  absl::Status status_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<dcufleet::v1::FleetService::Stub> stub_;
};

}  // namespace dcu::dcuctl
