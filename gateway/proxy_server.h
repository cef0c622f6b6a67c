#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gateway/api_keys.h"
#include "gateway/gateway_metrics.h"
#include "gateway/replica_picker.h"
#include "gateway/serving_table.h"

namespace dcu::gateway {

struct ProxyOptions {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;  // 0: any free port (see ProxyServer::port())
  int threads = 2;
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  // Requests for a model with no ready replica wait here, at most
  // queue_size of them at once, each at most queue_timeout.
  int queue_size = 256;
  absl::Duration queue_timeout = absl::Seconds(10);
  absl::Duration connect_timeout = absl::Seconds(2);
  // Whole upstream exchange; a streamed answer may take long.
  absl::Duration upstream_timeout = absl::Minutes(10);
  // A connection idle this long between requests is closed.
  absl::Duration client_idle_timeout = absl::Seconds(60);
  // A replica that failed before answering is passed over this long.
  absl::Duration eject_for = absl::Seconds(2);
};

// What every connection shares. Owned by ProxyServer.
struct ProxyContext {
  ProxyOptions options;
  ServingTable* table = nullptr;
  ReplicaPicker* picker = nullptr;
  const ApiKeyStore* api_keys = nullptr;  // nullptr: no keys required
  GatewayMetrics* metrics = nullptr;      // nullptr: nothing counted
  std::atomic<int> queued{0};
};

// The OpenAI-compatible front: accepts connections, one ClientSession each,
// on `threads` threads, each running an Asio io_context of its own with its
// own acceptor on the shared listening socket; a connection stays on the
// thread that accepted it (proxy_server.cc).
class ProxyServer {
 public:
  ProxyServer(ProxyOptions options, ServingTable* table, ReplicaPicker* picker,
              const ApiKeyStore* api_keys, GatewayMetrics* metrics = nullptr);
  // The wait queue's depth now.
  int queued() const { return context_.queued.load(); }
  ~ProxyServer();
  // Binds and starts serving. UNAVAILABLE with the OS's words when the
  // address cannot be bound.
  absl::Status Start();
  int port() const { return bound_port_; }
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ProxyContext context_;
  int bound_port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace dcu::gateway
