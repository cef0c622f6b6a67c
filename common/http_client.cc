#include "common/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace dcu::common {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int MillisLeft(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

// Where the message body ends, or npos when more bytes are needed.
size_t BodyEnd(const std::string& raw, size_t header_end, const std::string& head_lower) {
  size_t body_start = header_end + 4;
  size_t cl = head_lower.find("\r\ncontent-length:");
  if (cl != std::string::npos) {
    size_t eol = head_lower.find("\r\n", cl + 2);
    size_t n = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(
                             head_lower.substr(cl + 17, eol == std::string::npos
                                                            ? std::string::npos
                                                            : eol - (cl + 17))),
                         &n)) {
      // Compared without adding: a Content-Length near SIZE_MAX would wrap.
      return raw.size() - body_start >= n ? body_start + n : std::string::npos;
    }
  }
  if (head_lower.find("transfer-encoding: chunked") != std::string::npos) {
    return raw.find("\r\n0\r\n\r\n", header_end) != std::string::npos ||
                   raw.compare(body_start, 5, "0\r\n\r\n") == 0
               ? raw.size()
               : std::string::npos;
  }
  return std::string::npos;  // read to EOF
}

}  // namespace

absl::StatusOr<HttpResponse> ParseHttpResponse(const std::string& raw) {
  size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos) return absl::DataLossError("HTTP response without header end");
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, header_end), "\r\n");
  if (lines.empty() || !absl::StartsWith(lines[0], "HTTP/1.")) {
    return absl::DataLossError(absl::StrCat("bad HTTP status line '", lines.empty() ? "" : lines[0], "'"));
  }
  std::vector<std::string> status_parts = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  HttpResponse resp;
  if (status_parts.size() < 2 || !absl::SimpleAtoi(status_parts[1], &resp.status)) {
    return absl::DataLossError(absl::StrCat("bad HTTP status line '", lines[0], "'"));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    resp.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  std::string body = raw.substr(header_end + 4);
  auto te = resp.headers.find("transfer-encoding");
  if (te != resp.headers.end() && absl::AsciiStrToLower(te->second) == "chunked") {
    std::string decoded;
    size_t pos = 0;
    for (;;) {
      size_t eol = body.find("\r\n", pos);
      if (eol == std::string::npos) return absl::DataLossError("truncated chunked body");
      std::string size_text = body.substr(pos, eol - pos);
      size_text = size_text.substr(0, size_text.find(';'));
      size_t n = 0;
      if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(size_text), &n)) {
        return absl::DataLossError(absl::StrCat("bad chunk size '", size_text, "'"));
      }
      if (n == 0) break;
      // Compared without adding: a chunk size near SIZE_MAX wrapped the
      // sum, passed the check and took the rest of the body as the chunk,
      // once for each such line (a body of them grew quadratically).
      const size_t data_at = eol + 2;
      if (n > body.size() - data_at) {
        return absl::DataLossError(absl::StrCat("truncated chunk: ", n, " bytes announced, ",
                                                body.size() - data_at, " left"));
      }
      if (body.compare(data_at + n, 2, "\r\n") != 0) {
        return absl::DataLossError(
            absl::StrCat("chunk of ", n, " bytes at body offset ", data_at, " not followed by CRLF"));
      }
      decoded.append(body, data_at, n);
      pos = data_at + n + 2;
    }
    body = std::move(decoded);
  } else if (auto cl = resp.headers.find("content-length"); cl != resp.headers.end()) {
    size_t n = 0;
    if (!absl::SimpleAtoi(cl->second, &n)) {
      return absl::DataLossError(absl::StrCat("bad content-length '", cl->second, "'"));
    }
    if (body.size() < n) return absl::DataLossError("truncated body");
    body.resize(n);
  }
  resp.body = std::move(body);
  return resp;
}

absl::StatusOr<HttpResponse> SocketHttpClient::Send(const HttpRequest& request) {
  if (request.port <= 0 || request.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad port ", request.port));
  }
  std::string host = request.host == "localhost" ? "127.0.0.1" : request.host;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(request.port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("host '", request.host, "' is not an IPv4 address"));
  }
  std::string where = absl::StrCat(request.method, " http://", host, ":", request.port, request.path);
  absl::Time deadline = absl::Now() + request.timeout;
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      return absl::UnavailableError(absl::StrCat(where, ": ", strerror(errno)));
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = poll(&p, 1, MillisLeft(deadline));
    if (rc == 0) return absl::DeadlineExceededError(absl::StrCat(where, ": connect timed out"));
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (rc < 0 || err != 0) {
      return absl::UnavailableError(absl::StrCat(where, ": ", strerror(err ? err : errno)));
    }
  }
  std::string msg = absl::StrCat(request.method, " ", request.path, " HTTP/1.1\r\nHost: ", host,
                                 ":", request.port, "\r\nConnection: close\r\nUser-Agent: dcu-agent\r\n");
  bool has_ct = false;
  for (const auto& [k, v] : request.headers) {
    absl::StrAppend(&msg, k, ": ", v, "\r\n");
    if (absl::AsciiStrToLower(k) == "content-type") has_ct = true;
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    if (!has_ct) absl::StrAppend(&msg, "Content-Type: application/json\r\n");
    absl::StrAppend(&msg, "Content-Length: ", request.body.size(), "\r\n");
  }
  absl::StrAppend(&msg, "\r\n", request.body);
  size_t off = 0;
  while (off < msg.size()) {
    ssize_t n = send(fd.get(), msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      pollfd p{fd.get(), POLLOUT, 0};
      if (poll(&p, 1, MillisLeft(deadline)) <= 0) {
        return absl::DeadlineExceededError(absl::StrCat(where, ": send timed out"));
      }
      continue;
    }
    return absl::UnavailableError(absl::StrCat(where, ": send: ", strerror(errno)));
  }
  std::string raw;
  char buf[16384];
  for (;;) {
    size_t header_end = raw.find("\r\n\r\n");
    if (header_end != std::string::npos) {
      std::string head_lower = absl::AsciiStrToLower(raw.substr(0, header_end + 2));
      if (BodyEnd(raw, header_end, absl::StrCat("\r\n", head_lower)) != std::string::npos) break;
    }
    pollfd p{fd.get(), POLLIN, 0};
    int rc = poll(&p, 1, MillisLeft(deadline));
    if (rc == 0) return absl::DeadlineExceededError(absl::StrCat(where, ": no complete answer in time"));
    if (rc < 0 && errno == EINTR) continue;
    ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (raw.empty()) return absl::UnavailableError(absl::StrCat(where, ": recv: ", strerror(errno)));
      break;
    }
    raw.append(buf, static_cast<size_t>(n));
    if (raw.size() > (64u << 20)) return absl::DataLossError(absl::StrCat(where, ": response too large"));
  }
  if (raw.empty()) return absl::UnavailableError(absl::StrCat(where, ": connection closed without answer"));
  auto resp = ParseHttpResponse(raw);
  if (!resp.ok()) return absl::DataLossError(absl::StrCat(where, ": ", resp.status().message()));
  return resp;
}

}  // namespace dcu::common
