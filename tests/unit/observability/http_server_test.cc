// common/http_server: a real listener on loopback, driven with raw bytes so
// that hostile requests (malformed, oversized, wrong method) are what the
// server really receives.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sends `bytes`, half-closes, reads the whole answer (the server closes or
// the 2 s receive timeout ends it).
std::string Exchange(int port, const std::string& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "connect failed";
  }
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading it all
    off += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.max_header_bytes = 1024;
    o.max_body_bytes = 64;
    server_ = std::make_unique<HttpServer>(o);
    server_->Handle("/metrics", [](const ServedRequest& r) {
      ServedResponse resp = ServedResponse::Text(200, "m " + r.method + " q=" + r.query);
      return resp;
    });
    server_->Handle("/ui/", [](const ServedRequest& r) {
      return ServedResponse::Text(200, "ui " + r.path);
    });
    server_->Handle("/ui/deep/", [](const ServedRequest& r) {
      return ServedResponse::Text(200, "deep " + r.path);
    });
    server_->Handle("/auth", [](const ServedRequest& r) {
      return ServedResponse::Text(200, "auth=" + r.authorization);
    });
    server_->Handle("/boom", [](const ServedRequest&) -> ServedResponse {
      throw std::runtime_error("handler bug");
    });
    ASSERT_TRUE(server_->Start().ok());
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }
  std::string Get(const std::string& target, const std::string& extra = "") {
    return Exchange(port_, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                               extra + "\r\n");
  }
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpServerTest, ExactAndPrefixRoutesWithTheLongestMatch) {
  std::string r = Get("/metrics?x=1");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(r, HasSubstr("m GET q=x=1"));
  EXPECT_THAT(Get("/metrics/more"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get("/ui/app.js"), HasSubstr("ui /ui/app.js"));
  EXPECT_THAT(Get("/ui"), HasSubstr("ui /ui"));
  EXPECT_THAT(Get("/ui/deep/x"), HasSubstr("deep /ui/deep/x"));
  EXPECT_THAT(Get("/nothing"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get("/auth", "Authorization: Bearer abc\r\n"), HasSubstr("auth=Bearer abc"));
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string r = Exchange(port_,
                           "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                           "GET /metrics?2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(r, HasSubstr("q=\n"));
  EXPECT_THAT(r, HasSubstr("q=2"));
}

TEST_F(HttpServerTest, HeadHasTheHeadersAndNoBody) {
  std::string r = Exchange(port_, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(r, HasSubstr("Content-Length: 10"));  // of "m HEAD q=\n", the GET's body
  EXPECT_THAT(r, ::testing::Not(HasSubstr("m HEAD")));
}

TEST_F(HttpServerTest, HostileRequestsGetA4xxAndTheServerKeepsServing) {
  EXPECT_THAT(Exchange(port_, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"),
              StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(Exchange(port_, "DELETE /ui/ HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(Exchange(port_, "\x01\x02garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Exchange(port_, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                  std::string(4096, 'a') + "\r\n\r\n"),
              StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(Exchange(port_, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" +
                                  std::string(1000, 'b')),
              StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(Exchange(port_, "GET metrics HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Get("/boom"), StartsWith("HTTP/1.1 500"));
  // A client that connects and says nothing does not stop the others.
  int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_THAT(Get("/metrics"), StartsWith("HTTP/1.1 200"));
  close(idle);
}

TEST(HttpServerStart, RefusesABadAddressAndAPortInUse) {
  HttpServerOptions o;
  o.host = "not-an-ip";
  HttpServer bad(o);
  EXPECT_EQ(bad.Start().code(), absl::StatusCode::kInvalidArgument);
  HttpServer first(HttpServerOptions{});
  ASSERT_TRUE(first.Start().ok());
  HttpServerOptions same;
  same.port = first.port();
  HttpServer second(same);
  absl::Status s = second.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("in use"));
}

TEST(ParseListenFlag, ParsesHostPortAndNamesTheFlagOnError) {
  HttpServerOptions o;
  ASSERT_TRUE(ParseListenFlag("--metrics-listen", "127.0.0.1:9100", &o).ok());
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 9100);
  ASSERT_TRUE(ParseListenFlag("--metrics-listen", "localhost:0", &o).ok());
  EXPECT_EQ(o.host, "127.0.0.1");
  absl::Status s = ParseListenFlag("--metrics-listen", "nonsense", &o);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("--metrics-listen"));
}

}  // namespace
}  // namespace dcu::common
