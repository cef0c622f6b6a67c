// SocketHttpClient against a real listening socket in the test.
#include "common/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

// Accepts one connection, reads the request, writes `answer`, closes.
class OneShotServer {
 public:
  explicit OneShotServer(std::string answer, bool answer_at_all = true) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 1);
    thread_ = std::thread([this, answer, answer_at_all] {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      ssize_t n = read(c, buf, sizeof(buf));
      if (n > 0) request_.assign(buf, n);
      if (answer_at_all) {
        ssize_t w = write(c, answer.data(), answer.size());
        (void)w;
      } else {
        absl::SleepFor(absl::Milliseconds(600));
      }
      close(c);
    });
  }
  ~OneShotServer() {
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  const std::string& request() const { return request_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

TEST(HttpClientTest, ContentLengthAndRequestShape) {
  HttpResponse resp;
  std::string request;
  {
    OneShotServer server("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhelloEXTRA");
    SocketHttpClient http;
    HttpRequest req;
    req.port = server.port();
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"max_tokens": 1})";
    auto r = http.Send(req);
    ASSERT_TRUE(r.ok()) << r.status();
    resp = *r;
  }
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "hello");
}

TEST(HttpClientTest, ChunkedBody) {
  OneShotServer server(
      "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n");
  SocketHttpClient http;
  HttpRequest req;
  req.port = server.port();
  auto r = http.Send(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "Wikipedia");
  EXPECT_EQ(r->headers["transfer-encoding"], "chunked");
}

TEST(HttpClientTest, RefusedTimeoutAndGarbage) {
  SocketHttpClient http;
  HttpRequest req;
  {
    // A port that was just closed: refused.
    OneShotServer probe("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    req.port = probe.port();
    ASSERT_TRUE(http.Send(req).ok());
  }
  auto refused = http.Send(req);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);

  OneShotServer silent("", /*answer_at_all=*/false);
  req.port = silent.port();
  req.timeout = absl::Milliseconds(200);
  EXPECT_EQ(http.Send(req).status().code(), absl::StatusCode::kDeadlineExceeded);

  OneShotServer garbage("SSH-2.0-OpenSSH_9.2\r\n\r\n");
  req.port = garbage.port();
  req.timeout = absl::Seconds(2);
  EXPECT_EQ(http.Send(req).status().code(), absl::StatusCode::kDataLoss);

  req.host = "example.com";
  EXPECT_EQ(http.Send(req).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcu::common
