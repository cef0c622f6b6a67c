#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "gateway/replica_source.h"

namespace dcu::gateway {

struct ControllerSourceOptions {
  std::string address;  // HOST:PORT or a gRPC target
  // As dcuctl: TLS with the controller's CA, and a client certificate or a
  // bearer token file; plaintext only to a loopback controller or with
  // `insecure`.
  std::string tls_ca, tls_cert, tls_key, token_file;
  bool insecure = false;
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  // Asked of the controller; a stream quiet for 3x this is taken as dead.
  absl::Duration resend_after = absl::Seconds(2);
};

// The controller's ServingSnapshot stream translated to ServingSets.
absl::StatusOr<ServingSet> ServingSetOf(const dcufleet::v1::ServingSnapshot& snapshot);

// Learns replicas from FleetService.WatchServing. While the controller is
// away it delivers nothing (the gateway serves the last set it had), retries
// with jittered exponential back-off, and logs once when the outage starts
// and once when it ends.
class ControllerReplicaSource : public ReplicaSource {
 public:
  ControllerReplicaSource(ControllerSourceOptions options,
                          std::shared_ptr<grpc::ChannelCredentials> credentials);
  ~ControllerReplicaSource() override { Stop(); }
  absl::Status Start(UpdateFn on_update) override;
  void Stop() override;

 private:
  void Run(UpdateFn on_update);
  // One stream until it ends; true when it delivered at least one snapshot.
  bool WatchOnce(const UpdateFn& on_update, std::string* why);

  const ControllerSourceOptions options_;
  std::unique_ptr<dcufleet::v1::FleetService::Stub> stub_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::CondVar wake_;
  std::thread thread_;
  // Only the source's thread touches these.
  bool in_outage_ = false;
  absl::Time outage_since_;
};

// Checks the flags and builds the source (INVALID_ARGUMENT naming the flag).
absl::StatusOr<std::unique_ptr<ReplicaSource>> MakeControllerReplicaSource(
    const ControllerSourceOptions& options);

}  // namespace dcu::gateway
