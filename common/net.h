#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

struct HostPort {
  std::string host;
  int port = 0;
};

// Parses "HOST:PORT", "[::1]:PORT". INVALID_ARGUMENT naming the text when
// malformed or the port is outside 0-65535.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// The host of a gRPC peer string: "ipv4:10.0.0.7:51234" → "10.0.0.7",
// "ipv6:[fd00::7]:51234" → "fd00::7"; "" for anything else (unix sockets,
// an unparsable peer).
std::string HostOfGrpcPeer(absl::string_view peer);
// "HOST:PORT", with an IPv6 literal in brackets.
std::string JoinHostPort(absl::string_view host, int port);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(absl::string_view host);

}  // namespace dcu::common

namespace dcu::common {
// OK when nothing listens on TCP `port` (tries to bind 0.0.0.0:port with
// SO_REUSEADDR, then releases it). FAILED_PRECONDITION with the OS's words
// ("Address already in use") otherwise.
absl::Status CheckTcpPortFree(int port);
}  // namespace dcu::common
