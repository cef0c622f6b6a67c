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

// What a port-squatting or broken peer answers a health check or a
// /metrics scrape with. Each is refused with what was wrong, and nothing
// decoded is larger than what arrived.
TEST(ParseHttpResponseTest, HostileChunkSizesAndLengthsAreRefused) {
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  // 2^64 - 2: the sum wrapped to the line's own end, the check passed, the
  // whole rest of the body was taken as the chunk and the next line read as
  // the next size, so each line copied the rest again (these 18 KB: 9 MB
  // copied; the 64 MiB answer the client accepts: ~10^14 bytes).
  std::string wrapping = head;
  for (int i = 0; i < 1000; ++i) wrapping += "fffffffffffffffe\r\n";
  auto r = ParseHttpResponse(wrapping);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), testing::HasSubstr("truncated chunk: 18446744073709551614 bytes announced"));

  // A size that ends exactly at the body's end, with no CRLF after it.
  r = ParseHttpResponse(head + "4\r\nWiki");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), testing::HasSubstr("chunk of 4 bytes at body offset 3 not followed by CRLF"));
  // A chunk longer than it says.
  r = ParseHttpResponse(head + "4\r\nWikipedia\r\n0\r\n\r\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), testing::HasSubstr("not followed by CRLF"));
  r = ParseHttpResponse(head + "zz\r\nWiki\r\n0\r\n\r\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), testing::HasSubstr("bad chunk size 'zz'"));

  // A Content-Length near SIZE_MAX is a truncated body, not a wrapped one.
  r = ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nabc");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), testing::HasSubstr("truncated body"));

  // The well-formed answer next to them still reads.
  r = ParseHttpResponse(head + "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "Wikipedia");
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
