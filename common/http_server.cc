#include "common/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/net.h"

namespace dcu::common {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

ServedResponse ServedResponse::Text(int status, std::string body) {
  ServedResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!r.body.empty() && r.body.back() != '\n') r.body += '\n';
  return r;
}

ServedResponse ServedResponse::Json(int status, std::string body) {
  ServedResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

struct Route {
  std::string prefix;
  HttpHandler handler;
};

struct HttpServer::Impl {
  HttpServerOptions options;
  std::vector<Route> routes;
  net::io_context io{};
  std::optional<tcp::acceptor> acceptor;

  // An exact route first, then the longest prefix route, then a prefix
  // route the path names without its final '/' ("/ui" for "/ui/").
  const Route* Find(const std::string& path) const {
    const Route* best = nullptr;
    for (const auto& r : routes) {
      if (r.prefix.back() != '/' && path == r.prefix) return &r;
    }
    for (const auto& r : routes) {
      if (r.prefix.back() == '/' && path.compare(0, r.prefix.size(), r.prefix) == 0 &&
          (!best || r.prefix.size() > best->prefix.size())) {
        best = &r;
      }
    }
    if (best) return best;
    for (const auto& r : routes) {
      if (r.prefix.back() == '/' && path + "/" == r.prefix) return &r;
    }
    return nullptr;
  }

  void Accept();
};

namespace {

// One connection: read a request, answer it, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl* server)
      : server_(server), stream_(std::move(socket)) {}

  void Start() { Read(); }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(server_->options.max_body_bytes);
    stream_.expires_after(absl::ToChronoMilliseconds(server_->options.read_timeout));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == beast::error::timeout ||
        ec == net::error::operation_aborted) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      return;
    }
    if (ec == http::error::body_limit) {
      return Send(ServedResponse::Text(413, absl::StrCat("request body over ",
                                                       server_->options.max_body_bytes,
                                                       " bytes")),
                  /*close=*/true, /*head=*/false);
    }
    if (ec == http::error::header_limit) {
      return Send(ServedResponse::Text(431, "request headers too large"), true, false);
    }
    if (ec) {
      return Send(ServedResponse::Text(400, absl::StrCat("malformed HTTP request: ", ec.message())),
                  true, false);
    }
    auto req = parser_->release();
    bool close = !req.keep_alive();
    bool head = req.method() == http::verb::head;
    if (req.method() != http::verb::get && !head) {
      ServedResponse r = ServedResponse::Text(
          405, absl::StrCat("method ", std::string(req.method_string()), " not allowed (read-only)"));
      r.headers.emplace_back("Allow", "GET, HEAD");
      return Send(std::move(r), close, false);
    }
    ServedRequest in;
    in.method = head ? "HEAD" : "GET";
    std::string target(req.target());
    size_t q = target.find('?');
    in.path = target.substr(0, q);
    if (q != std::string::npos) in.query = target.substr(q + 1);
    if (auto it = req.find(http::field::authorization); it != req.end()) {
      in.authorization = std::string(it->value());
    }
    if (auto it = req.find(http::field::accept); it != req.end()) in.accept = std::string(it->value());
    if (in.path.empty() || in.path[0] != '/') {
      return Send(ServedResponse::Text(400, "the request target is not an absolute path"), true, head);
    }
    const Route* route = server_->Find(in.path);
    if (!route) return Send(ServedResponse::Text(404, absl::StrCat("no route ", in.path)), close, head);
    ServedResponse out;
    try {
      out = route->handler(in);
    } catch (const std::exception& e) {
      // A handler's bug is the server's 500, never the process's end.
      DCU_LOG_ERROR(server_->options.name, ": handler for ", in.path, " threw: ", e.what());
      out = ServedResponse::Text(500, "internal error");
    }
    Send(std::move(out), close, head);
  }

  void Send(ServedResponse r, bool close, bool head) {
    response_.emplace();
    response_->version(11);
    response_->result(static_cast<unsigned>(r.status));
    response_->set(http::field::server, "dcufleet");
    response_->set(http::field::content_type, r.content_type);
    response_->set(http::field::cache_control, "no-store");
    response_->set("X-Content-Type-Options", "nosniff");
    for (auto& [k, v] : r.headers) response_->set(k, v);
    response_->keep_alive(!close);
    if (head) {
      response_->content_length(r.body.size());
    } else {
      response_->body() = std::move(r.body);
      response_->prepare_payload();
    }
    close_ = close;
    stream_.expires_after(absl::ToChronoMilliseconds(server_->options.read_timeout));
    auto write = [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->close_) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      self->Read();
    };
    // A HEAD answer: the headers (Content-Length of the GET) and no body.
    http::async_write(stream_, *response_, write);
  }

  HttpServer::Impl* const server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  bool close_ = false;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor->async_accept(net::make_strand(io), [this](boost::system::error_code ec,
                                                      tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) {
      std::make_shared<Session>(std::move(socket), this)->Start();
    } else {
      static LogLimiter limiter(/*per_window=*/1, /*window_ms=*/10000);
      int64_t suppressed = 0;
      if (limiter.Allow(&suppressed)) {
        DCU_LOG_WARN(options.name, ": accept: ", ec.message(),
                     suppressed ? absl::StrCat(" (", suppressed, " more)") : "");
      }
    }
    Accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string prefix, HttpHandler handler) {
  impl_->routes.push_back({std::move(prefix), std::move(handler)});
}

absl::Status HttpServer::Start() {
  const auto& o = impl_->options;
  boost::system::error_code ec;
  auto address = net::ip::make_address(o.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.name, ": listen address '", o.host, "' is not an IP address"));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  impl_->acceptor.emplace(impl_->io);
  impl_->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(endpoint, ec);
  if (!ec) impl_->acceptor->listen(256, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(o.name, ": listen on '", JoinHostPort(o.host, o.port), "': ", ec.message()));
  }
  bound_port_ = impl_->acceptor->local_endpoint().port();
  impl_->Accept();
  for (int i = 0; i < std::max(1, o.threads); ++i) {
    threads_.emplace_back([this] { impl_->io.run(); });
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (threads_.empty()) return;
  impl_->io.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

absl::Status ParseListenFlag(const std::string& flag, const std::string& value,
                             HttpServerOptions* options) {
  auto hp = ParseHostPort(value);
  if (!hp.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", hp.status().message()));
  options->host = hp->host == "localhost" ? "127.0.0.1" : hp->host;
  options->port = hp->port;
  return absl::OkStatus();
}

}  // namespace dcu::common
