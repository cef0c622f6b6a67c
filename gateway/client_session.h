#pragma once

#include <array>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/time/time.h"
#include "gateway/proxy_server.h"
#include "gateway/serving_set.h"

namespace dcu::gateway {

// One client connection: reads requests (keep-alive), answers the gateway's
// own routes, and proxies inference requests to a picked replica, relaying
// the answer chunk by chunk as it arrives. Every handler runs on the one
// thread of the io_context that accepted the connection, so the members
// need no lock.
//
// Life of an inference request:
//   parse & route -> pick (or wait in the queue) -> connect, send, read the
//   head -> [failed before the first byte: retry once on another replica]
//   -> relay body -> next request.
// While the upstream works, a read on the client socket watches for the
// client leaving; if it does, the upstream connection is closed, which is how
// vLLM learns to abort the request.
class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  // Sockets and timers bound to their io_context's executor type, not the
  // type-erased any_io_executor: no executor copies and type dispatch on
  // every operation. Plain sockets, not beast::tcp_stream: the timeouts are
  // timers of this class's own (a tcp_stream arms and cancels one around
  // each operation).
  using Executor = boost::asio::io_context::executor_type;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
  using Timer = boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                                  boost::asio::wait_traits<std::chrono::steady_clock>,
                                                  Executor>;

  ClientSession(boost::asio::io_context& io, ProxyContext* context);
  // The socket the acceptor accepts into, before Start().
  Socket& socket() { return client_; }
  void Start();

 private:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  void ReadRequest();
  void OnHeader(boost::beast::error_code ec);
  void OnRequest(boost::beast::error_code ec);
  void Dispatch();
  void HandleInference();
  void TryPick();
  void StartAttempt(const Replica& replica);
  void OnConnected(boost::beast::error_code ec);
  void OnUpstreamWritten(boost::beast::error_code ec);
  void OnUpstreamHeader(boost::beast::error_code ec);
  void WriteRelayHead();
  void ReadUpstreamBody();
  void OnUpstreamBody(boost::beast::error_code ec);
  void OnClientBodyWritten(boost::beast::error_code ec);
  void OnResponseDone(boost::beast::error_code ec);
  void AttemptFailed(const std::string& why);
  void AbortForClientGone();
  void Watch();
  void OnWatch(boost::beast::error_code ec, size_t n);
  void EndExchange();
  void LeaveQueue();

  void SendJson(unsigned status, std::string body, bool close,
                const std::string& retry_after = "");
  void SendError(unsigned status, const std::string& message, const std::string& type,
                 const std::string& code, bool close, const std::string& retry_after = "");
  void CloseGracefully();
  void Drain();
  // The client's connection is closed if `after` passes before the next
  // ArmClientTimer or CancelClientTimer (an idle keep-alive connection, a
  // client that does not read its answer).
  void ArmClientTimer(std::chrono::steady_clock::duration after);
  void CancelClientTimer();
  // The upstream socket is closed if `after` passes first: the pending
  // connect, write or read fails. Re-arming replaces the deadline.
  void ArmUpstreamDeadline(std::chrono::steady_clock::duration after);

  ProxyContext* const ctx_;
  Socket client_;
  Timer client_timer_;
  uint64_t client_timer_generation_ = 0;
  boost::beast::flat_buffer client_buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Request request_;
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> simple_response_;

  // The inference request under way.
  std::string requested_model_;
  std::string upstream_body_;
  std::set<std::string> tried_;
  int attempts_ = 0;
  std::string last_failure_;
  bool queued_ = false;
  absl::Time queue_deadline_;
  Timer queue_timer_;
  Timer upstream_deadline_;
  uint64_t upstream_deadline_generation_ = 0;
  bool upstream_timed_out_ = false;
  std::string replica_key_;
  absl::Time attempt_started_;
  std::optional<boost::asio::ip::tcp::resolver> resolver_;
  std::optional<Socket> upstream_;
  Request upstream_request_;
  boost::beast::flat_buffer upstream_buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> upstream_parser_;
  std::optional<boost::beast::http::response<boost::beast::http::buffer_body>> relay_response_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::buffer_body>> relay_serializer_;
  std::array<char, 16384> relay_chunk_;  // not zeroed: 22 KB of memset per connection
  bool head_sent_ = false;
  bool exchange_open_ = false;

  // Metrics of the inference request under way (gateway_metrics.h).
  void CountDone(const std::string& code);
  bool counting_ = false;  // an inference request not yet counted
  std::string metrics_model_;
  absl::Time request_started_;
  absl::Time queued_at_;
  unsigned relay_status_ = 0;

  // The client watch (see the class comment).
  bool watching_ = false;
  bool read_next_after_watch_ = false;
  bool drain_after_watch_ = false;
  bool client_gone_ = false;
  std::array<char, 2048> watch_bytes_;
  std::array<char, 4096> drain_bytes_;
};

}  // namespace dcu::gateway
