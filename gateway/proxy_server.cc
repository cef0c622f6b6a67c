#include "gateway/proxy_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "gateway/client_session.h"

namespace dcu::gateway {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// One io_context per thread, each run by its thread alone (concurrency hint
// 1), each with an acceptor of its own on a dup() of the one listening
// socket. A connection lives on the io_context that accepted it: no strand,
// no handler ever hops threads, no lock in the reactor's fast path. The
// kernel wakes the acceptors of every idle thread on a new connection; the
// first to accept() takes it, the others find nothing and wait again, so an
// idle thread takes the next connection before a busy one does. (Not
// SO_REUSEPORT: it would let a second gateway, or anything of the same user,
// bind the port beside this one and take half its connections silently.)
struct ProxyServer::Impl {
  struct Loop {
    net::io_context io{1};
    std::optional<tcp::acceptor> acceptor;
  };
  std::vector<std::unique_ptr<Loop>> loops;

  static void Accept(Loop* loop, ProxyContext* ctx) {
    // The session first, so that the connection is accepted straight into
    // its socket (of the io_context's own executor type).
    auto session = std::make_shared<ClientSession>(loop->io, ctx);
    loop->acceptor->async_accept(session->socket(), [loop, ctx, session](
                                                        boost::system::error_code ec) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) {
        boost::system::error_code ignored;
        session->socket().set_option(tcp::no_delay(true), ignored);
        session->Start();
      } else if (ec != net::error::would_block && ec != net::error::try_again) {
        // Out of descriptors and the like: keep accepting, the next one may work.
        static common::LogLimiter limiter(/*per_window=*/1, /*window_ms=*/10000);
        int64_t suppressed = 0;
        if (limiter.Allow(&suppressed)) {
          DCU_LOG_WARN("accept: ", ec.message(), suppressed ? absl::StrCat(" (", suppressed, " more)") : "");
        }
      }
      Accept(loop, ctx);
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
  const int n = std::max(1, context_.options.threads);
  for (int i = 0; i < n; ++i) impl_->loops.push_back(std::make_unique<Impl::Loop>());
  auto& first = impl_->loops.front()->acceptor;
  first.emplace(impl_->loops.front()->io);
  first->open(endpoint.protocol(), ec);
  if (!ec) first->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) first->bind(endpoint, ec);
  if (!ec) first->listen(1024, ec);
  if (ec) {
    impl_->loops.clear();
    return absl::UnavailableError(absl::StrCat("listen on '", context_.options.listen_host, ":",
                                               context_.options.listen_port, "': ", ec.message()));
  }
  bound_port_ = first->local_endpoint().port();
  for (int i = 1; i < n; ++i) {
    int fd = ::fcntl(first->native_handle(), F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) {
      impl_->loops[i]->acceptor.emplace(impl_->loops[i]->io);
      impl_->loops[i]->acceptor->assign(endpoint.protocol(), fd, ec);
    }
    if (fd < 0 || ec) {
      std::string why = fd < 0 ? std::strerror(errno) : ec.message();
      if (fd >= 0 && !impl_->loops[i]->acceptor->is_open()) ::close(fd);
      impl_->loops.clear();
      return absl::UnavailableError(absl::StrCat("listen on '", context_.options.listen_host, ":",
                                                 context_.options.listen_port,
                                                 "': duplicating the socket: ", why));
    }
  }
  for (auto& loop : impl_->loops) {
    Impl::Accept(loop.get(), &context_);
  }
  for (auto& loop : impl_->loops) {
    threads_.emplace_back([io = &loop->io] { io->run(); });
  }
  return absl::OkStatus();
}

void ProxyServer::Stop() {
  if (threads_.empty()) return;
  for (auto& loop : impl_->loops) loop->io.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  impl_->loops.clear();
}

}  // namespace dcu::gateway
