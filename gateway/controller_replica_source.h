#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "gateway/replica_source.h"

namespace dcu::gateway {

struct ControllerSourceOptions {
  // HOST:PORT or a gRPC target; several, comma-separated, for controllers
  // sharing one PostgreSQL database (issue 21): the source follows the
  // leader a standby names, else tries the next.
  std::string address;
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
// and once when it ends. Given several controllers it watches one at a
// time: a standby's answer names the leader (common/leader.h), which is
// dialled at once, without back-off; any other failure moves to the next
// address.
class ControllerReplicaSource : public ReplicaSource {
 public:
  ControllerReplicaSource(ControllerSourceOptions options,
                          std::shared_ptr<grpc::ChannelCredentials> credentials);
  ~ControllerReplicaSource() override { Stop(); }
  absl::Status Start(UpdateFn on_update) override;
  void Stop() override;

 private:
  void Run(UpdateFn on_update);
  // One stream to addresses_[current_] until it ends; true when it
  // delivered at least one snapshot. `leader`: the address a standby named.
  bool WatchOnce(const UpdateFn& on_update, std::string* why, std::string* leader);
  // The index of `address` in addresses_, dialling it first when new.
  size_t IndexOf(const std::string& address);

  const ControllerSourceOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  // Only the source's thread touches these after construction.
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<dcufleet::v1::FleetService::Stub>> stubs_;
  size_t current_ = 0;
  std::string delivering_from_;
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
