#include "tests/testing/range_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dcu::testing {
namespace {

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

RangeHttpServer::RangeHttpServer(std::string dir) : dir_(std::move(dir)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(listen_fd_, 16) != 0) {
    std::perror("RangeHttpServer bind/listen");
    std::abort();
  }
  socklen_t len = sizeof(a);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

RangeHttpServer::~RangeHttpServer() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  thread_.join();
  ::close(listen_fd_);
}

std::vector<std::string> RangeHttpServer::Requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

void RangeHttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Handle(fd);
    ::close(fd);
  }
}

void RangeHttpServer::Handle(int fd) {
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  const std::string method = req.substr(0, req.find(' '));
  const size_t t0 = req.find(' ') + 1;
  const std::string target = req.substr(t0, req.find(' ', t0) - t0);
  int64_t from = -1;
  for (const char* h : {"\r\nRange: bytes=", "\r\nrange: bytes="}) {
    size_t r = req.find(h);
    if (r != std::string::npos) from = std::atoll(req.c_str() + r + std::strlen(h));
  }
  const std::string marker = "/resolve/main/";
  const size_t m = target.find(marker);
  const std::string file = m == std::string::npos ? "" : target.substr(m + marker.size());
  {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(method + " " + file + (from >= 0 ? " bytes=" + std::to_string(from) + "-" : ""));
  }
  auto answer = [&](const std::string& head) { SendAll(fd, head.data(), head.size()); };
  struct stat st {};
  const std::string path = dir_ + "/" + file;
  if (file.empty() || file.find("..") != std::string::npos || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    answer("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  const int64_t size = st.st_size;
  int64_t begin = 0;
  std::string head;
  if (from >= 0 && !ignore_range_) {
    if (from >= size) {
      answer("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    begin = from;
    head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(from) + "-" +
           std::to_string(size - 1) + "/" + std::to_string(size) + "\r\n";
  } else {
    head = "HTTP/1.1 200 OK\r\n";
  }
  head += "Content-Length: " + std::to_string(size - begin) + "\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n";
  answer(head);
  if (method == "HEAD") return;
  int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  int64_t cut = -1;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (file == cut_file_) {
      cut = cut_after_;
      cut_file_.clear();
    }
  }
  int64_t sent = 0;
  std::string body(1 << 20, '\0');  // large writes: the benchmark measures the client
  for (int64_t at = begin; at < size;) {
    size_t want = body.size();
    if (cut >= 0) {
      if (sent >= cut) break;
      want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(want), cut - sent));
    }
    ssize_t n = ::pread(in, body.data(), want, at);
    if (n <= 0 || !SendAll(fd, body.data(), static_cast<size_t>(n))) break;
    at += n;
    sent += n;
  }
  ::close(in);
}

}  // namespace dcu::testing
