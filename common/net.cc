#include "common/net.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dcu::common {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  HostPort hp;
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("address '", text, "' is not HOST:PORT"));
  }
  hp.host = std::string(text.substr(0, colon));
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  if (!absl::SimpleAtoi(text.substr(colon + 1), &hp.port) || hp.port < 0 || hp.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", text, "' has an invalid port (0-65535)"));
  }
  return hp;
}

bool IsLoopbackHost(absl::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr addr4;
  std::string h(host);
  if (inet_pton(AF_INET, h.c_str(), &addr4) == 1) {
    return (ntohl(addr4.s_addr) >> 24) == 127;
  }
  return false;
}

}  // namespace dcu::common

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dcu::common {

absl::Status CheckTcpPortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(fd);
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("port ", port, " on this node: [Errno ", err, "] ", strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace dcu::common

namespace dcu::common {

std::string HostOfGrpcPeer(absl::string_view peer) {
  absl::string_view rest;
  if (absl::StartsWith(peer, "ipv4:")) {
    rest = peer.substr(5);
    size_t colon = rest.rfind(':');
    return colon == absl::string_view::npos ? "" : std::string(rest.substr(0, colon));
  }
  if (absl::StartsWith(peer, "ipv6:")) {
    rest = peer.substr(5);
    // "[addr]:port"; a percent-encoded zone ("%25eth0") is dropped.
    if (rest.empty() || rest[0] != '[') return "";
    size_t close = rest.find(']');
    if (close == absl::string_view::npos) return "";
    absl::string_view host = rest.substr(1, close - 1);
    size_t zone = host.find('%');
    if (zone != absl::string_view::npos) host = host.substr(0, zone);
    return std::string(host);
  }
  return "";
}

std::string JoinHostPort(absl::string_view host, int port) {
  if (host.find(':') != absl::string_view::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace dcu::common
