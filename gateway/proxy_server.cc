#include "gateway/proxy_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "gateway/client_session.h"

namespace dcu::gateway {

namespace net = boost::asio;
using tcp = net::ip::tcp;

struct ProxyServer::Impl {
  net::io_context io{};
  std::optional<tcp::acceptor> acceptor;

  void Accept(ProxyContext* ctx) {
    acceptor->async_accept(net::make_strand(io), [this, ctx](boost::system::error_code ec,
                                                             tcp::socket socket) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) {
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<ClientSession>(std::move(socket), ctx)->Start();
      } else {
        // Out of descriptors and the like: keep accepting, the next one may work.
        static common::LogLimiter limiter(/*per_window=*/1, /*window_ms=*/10000);
        int64_t suppressed = 0;
        if (limiter.Allow(&suppressed)) {
          DCU_LOG_WARN("accept: ", ec.message(), suppressed ? absl::StrCat(" (", suppressed, " more)") : "");
        }
      }
      Accept(ctx);
    });
  }
};

ProxyServer::ProxyServer(ProxyOptions options, ServingTable* table, ReplicaPicker* picker,
                         const ApiKeyStore* api_keys, GatewayMetrics* metrics)
    : impl_(std::make_unique<Impl>()) {
  context_.metrics = metrics;
  context_.options = std::move(options);
  context_.table = table;
  context_.picker = picker;
  context_.api_keys = api_keys;
}

ProxyServer::~ProxyServer() { Stop(); }

absl::Status ProxyServer::Start() {
  boost::system::error_code ec;
  auto address = net::ip::make_address(context_.options.listen_host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", context_.options.listen_host, "' is not an IP address"));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(context_.options.listen_port));
  impl_->acceptor.emplace(impl_->io);
  impl_->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(endpoint, ec);
  if (!ec) impl_->acceptor->listen(1024, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("listen on '", context_.options.listen_host, ":",
                                               context_.options.listen_port, "': ", ec.message()));
  }
  bound_port_ = impl_->acceptor->local_endpoint().port();
  impl_->Accept(&context_);
  int n = std::max(1, context_.options.threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { impl_->io.run(); });
  return absl::OkStatus();
}

void ProxyServer::Stop() {
  if (threads_.empty()) return;
  impl_->io.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace dcu::gateway
