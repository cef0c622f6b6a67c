#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace dcu::testing {

// A TCP port another service holds: a socket listening on `address`
// (INADDR_ANY, as a web server binds; INADDR_LOOPBACK), on the first free
// port from `first` (0: one the kernel picks, from its ephemeral range,
// where an outgoing connection may take the port after it). Closed when it
// goes.
class HeldPort {
 public:
  explicit HeldPort(in_addr_t address, int first = 0) {
    for (int port = first; port < (first ? first + 200 : 1) && port_ == 0; ++port) {
      fd_ = socket(AF_INET, SOCK_STREAM, 0);
      if (fd_ < 0) return;
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(address);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      socklen_t len = sizeof(addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 4) == 0 &&
          getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port_ = ntohs(addr.sin_port);
      } else {
        close(fd_);
        fd_ = -1;
      }
    }
  }
  ~HeldPort() {
    if (fd_ >= 0) close(fd_);
  }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;

  // 0 when the socket could not listen.
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace dcu::testing
