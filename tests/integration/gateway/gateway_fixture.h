#pragma once

// Real processes on loopback for the gateway's tests: fake_vllm replicas,
// dcu-gateway on a replicas file, and plain-socket HTTP to both.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/http_client.h"
#include "tests/testing/test_env.h"

namespace dcu::testing {

struct FakeReplica {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
};

// How a fake replica serves (fake_vllm's service model flags).
struct ReplicaSpeed {
  int ttft_ms = 0;
  int token_delay_ms = 0;
  int max_concurrency = 0;
};

// A connection that reads a response as it arrives: each Read() returns the
// bytes one recv() got, "" at the end.
class RawConnection {
 public:
  static absl::StatusOr<std::unique_ptr<RawConnection>> Open(int port);
  ~RawConnection();
  bool Send(const std::string& bytes);
  std::string Read(absl::Duration timeout = absl::Seconds(10));
  // Everything until the peer closes.
  std::string ReadAll(absl::Duration timeout = absl::Seconds(10));
  void Close();

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class GatewayFixture {
 public:
  GatewayFixture();
  ~GatewayFixture();

  // fake_vllm serving `served_name` on a free port; waits for /health.
  FakeReplica* StartReplica(const std::string& served_name, ReplicaSpeed speed = {});
  // Writes the replicas file (JSON text).
  void WriteReplicasFile(const std::string& json);
  // One model, these replicas, all ready.
  std::string ReplicasJson(const std::string& deployment, const std::string& served_name,
                           const std::vector<FakeReplica*>& replicas, bool ready = true);
  // dcu-gateway on the replicas file (or other source args) and a free port.
  bool StartGateway(std::vector<std::string> extra_args = {}, bool use_file = true);
  void StopGateway();
  int gateway_port() const { return gateway_port_; }
  ChildProcess* gateway() { return gateway_.get(); }

  absl::StatusOr<common::HttpResponse> Post(int port, const std::string& path,
                                            const std::string& body,
                                            std::vector<std::pair<std::string, std::string>> headers = {});
  absl::StatusOr<common::HttpResponse> Get(int port, const std::string& path);
  // A sample of a replica's /metrics: "vllm:request_success_total" with
  // finished_reason `reason`, or a gauge like "vllm:num_requests_running".
  double Metric(int port, const std::string& name, const std::string& finished_reason = "");

  std::string Logs() const;
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<FakeReplica>> replicas_;
  std::unique_ptr<ChildProcess> gateway_;
  std::vector<std::string> gateway_args_;
  int gateway_port_ = 0;
  int started_ = 0;
};

}  // namespace dcu::testing
