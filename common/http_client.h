#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dcu::common {

struct HttpRequest {
  std::string method = "GET";
  // An IPv4 literal or "localhost".
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // The whole exchange (connect, send, receive) must finish within this.
  absl::Duration timeout = absl::Seconds(5);
};

struct HttpResponse {
  int status = 0;
  // Header names in lower case.
  std::map<std::string, std::string> headers;
  std::string body;
};

// One HTTP/1.1 exchange per call (Connection: close). Behind an interface so
// the supervisor's tests can answer without sockets where that is the point.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Returns the response whatever its status code. UNAVAILABLE when the
  // connection is refused or reset, DEADLINE_EXCEEDED on timeout, DATA_LOSS
  // for a malformed response, INVALID_ARGUMENT for an unusable host or port.
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
};

// Plain sockets, no TLS: the supervisor talks to instances on loopback only.
class SocketHttpClient : public HttpClient {
 public:
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
};

// Parses a complete HTTP/1.x response (status line, headers, body with
// Content-Length, chunked encoding, or up to EOF). Exposed for tests.
absl::StatusOr<HttpResponse> ParseHttpResponse(const std::string& raw);

}  // namespace dcu::common
