#pragma once

// A small HTTP/1.1 server for read-only endpoints: the agent's /metrics, the
// controller's /metrics, /api/v1/ and /ui/, the gateway's /metrics listener.
// Boost.Beast/Asio (header-only, as dcu-gateway's front), one io_context on
// `threads` threads, keep-alive, every connection on its own strand.
//
// Hostile input gets a clear 4xx and the connection closed: a malformed
// request 400, headers over max_header_bytes 431, a body over max_body_bytes
// 413, a method other than GET/HEAD 405, an unknown path 404; a client
// that sends nothing for read_timeout is dropped. Handlers run on the
// server's threads and must not block long (a scrape, a JSON render).

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace dcu::common {

struct ServedRequest {
  std::string method;  // "GET" or "HEAD" (others never reach a handler)
  std::string path;    // target up to '?', undecoded
  std::string query;   // after '?', undecoded
  std::string authorization;  // the Authorization header, or ""
  std::string accept;         // the Accept header, or ""
};

struct ServedResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static ServedResponse Text(int status, std::string body);
  static ServedResponse Json(int status, std::string body);
};

using HttpHandler = std::function<ServedResponse(const ServedRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see port())
  int threads = 1;
  size_t max_header_bytes = 16u << 10;
  size_t max_body_bytes = 4u << 10;
  absl::Duration read_timeout = absl::Seconds(10);
  // For log lines: "dcu-agent metrics".
  std::string name = "http";
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes, before Start: `prefix` ending in '/' matches every path under
  // it, any other the exact path. The longest match wins.
  void Handle(std::string prefix, HttpHandler handler);

  // Binds and serves. INVALID_ARGUMENT for a host that is not an IP
  // address, UNAVAILABLE with the OS's words when it cannot bind.
  absl::Status Start();
  int port() const { return bound_port_; }
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int bound_port_ = 0;
  std::vector<std::thread> threads_;
};

// "HOST:PORT" → options.host/port (IPv6 in brackets). INVALID_ARGUMENT
// naming `flag` otherwise.
absl::Status ParseListenFlag(const std::string& flag, const std::string& value,
                             HttpServerOptions* options);

}  // namespace dcu::common
