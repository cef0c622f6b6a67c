#include "gateway/client_session.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/address.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "gateway/openai_errors.h"
#include "gateway/serving_table.h"
#include "nlohmann/json.hpp"

namespace dcu::gateway {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

bool IsInferencePath(const std::string& path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" ||
         path == "/v1/embeddings";
}

// Headers worth passing to the engine; the client's Authorization is the
// gateway's business, not the engine's.
const char* const kForwardedHeaders[] = {"accept", "user-agent", "x-request-id"};

std::string RetryAfterSeconds(absl::Duration d) {
  return absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1)))));
}

}  // namespace

ClientSession::ClientSession(net::io_context& io, ProxyContext* context)
    : ctx_(context),
      client_(io.get_executor()),
      client_timer_(io.get_executor()),
      queue_timer_(io.get_executor()),
      upstream_deadline_(io.get_executor()) {}

void ClientSession::ArmClientTimer(std::chrono::steady_clock::duration after) {
  const uint64_t generation = ++client_timer_generation_;
  client_timer_.expires_after(after);
  // Weak: a pending timer does not keep a finished session alive.
  client_timer_.async_wait([weak = weak_from_this(), generation](beast::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || generation != self->client_timer_generation_) return;
    beast::error_code ignored;
    self->client_.close(ignored);  // the pending read or write fails
  });
}

void ClientSession::CancelClientTimer() {
  ++client_timer_generation_;
  client_timer_.cancel();
}

void ClientSession::ArmUpstreamDeadline(std::chrono::steady_clock::duration after) {
  const uint64_t generation = ++upstream_deadline_generation_;
  upstream_deadline_.expires_after(after);
  upstream_deadline_.async_wait([weak = weak_from_this(), generation](beast::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || generation != self->upstream_deadline_generation_ || !self->upstream_) {
      return;
    }
    self->upstream_timed_out_ = true;
    beast::error_code ignored;
    self->upstream_->close(ignored);  // the pending operation fails
  });
}

void ClientSession::Start() {
  net::dispatch(client_.get_executor(), [self = shared_from_this()] { self->ReadRequest(); });
}

// ------------------------------------------------------------------ requests

void ClientSession::ReadRequest() {
  parser_.emplace();
  parser_->body_limit(ctx_->options.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(ctx_->options.max_header_bytes));
  ArmClientTimer(ToChrono(ctx_->options.client_idle_timeout));
  http::async_read_header(client_, client_buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            self->OnHeader(ec);
                          });
}

void ClientSession::OnHeader(beast::error_code ec) {
  if (ec) return OnRequest(ec);
  auto read_body = [self = shared_from_this()] {
    http::async_read(self->client_, self->client_buffer_, *self->parser_,
                     [self](beast::error_code ec, size_t) { self->OnRequest(ec); });
  };
  auto expect = parser_->get().find(http::field::expect);
  if (expect != parser_->get().end() && beast::iequals(expect->value(), "100-continue")) {
    // curl and others wait for this before sending a large body.
    static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(client_, net::buffer(kContinue, sizeof(kContinue) - 1),
                     [self = shared_from_this(), read_body](beast::error_code ec, size_t) {
                       if (ec) return self->OnRequest(ec);
                       read_body();
                     });
    return;
  }
  read_body();
}

void ClientSession::OnRequest(beast::error_code ec) {
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == beast::error::timeout ||
      ec == net::error::operation_aborted) {
    beast::error_code ignored;
    CancelClientTimer();
    client_.shutdown(tcp::socket::shutdown_both, ignored);
    return;
  }
  if (ec == http::error::body_limit) {
    SendError(413,
              absl::StrCat("request body exceeds the gateway's limit of ",
                           ctx_->options.max_body_bytes, " bytes"),
              "invalid_request_error", "request_too_large", /*close=*/true);
    return;
  }
  if (ec == http::error::header_limit) {
    SendError(431, "request headers too large", "invalid_request_error", "headers_too_large",
              /*close=*/true);
    return;
  }
  if (ec) {
    SendError(400, absl::StrCat("malformed HTTP request: ", ec.message()),
              "invalid_request_error", "bad_request", /*close=*/true);
    return;
  }
  request_ = parser_->release();
  CancelClientTimer();
  Dispatch();
}

void ClientSession::Dispatch() {
  std::string target(request_.target());
  std::string path = target.substr(0, target.find('?'));
  bool is_get = request_.method() == http::verb::get;
  bool is_post = request_.method() == http::verb::post;
  if (path == "/healthz" && is_get) {
    SendJson(200, R"({"status":"ok"})", !request_.keep_alive());
    return;
  }
  if (path == "/v1/models" && is_get) {
    auto set = ctx_->table->Current();
    // With keys in force, a caller sees only the models its key may use.
    const ApiKeyStore* file_keys = ctx_->api_keys;
    const ApiKeyStore* managed_keys = set->managed_keys.get();
    const bool keyed = file_keys != nullptr || managed_keys != nullptr;
    auto auth = request_.find(http::field::authorization);
    const std::string header = auth == request_.end() ? "" : std::string(auth->value());
    if (keyed) {
      auto v = ApiKeyStore::CheckEither(file_keys, managed_keys, header, {}, nullptr);
      if (v == ApiKeyStore::Verdict::kMissing || v == ApiKeyStore::Verdict::kUnknown) {
        SendError(401,
                  v == ApiKeyStore::Verdict::kMissing
                      ? "no API key: send \"Authorization: Bearer KEY\""
                      : "the API key is not valid",
                  "invalid_request_error", "invalid_api_key", !request_.keep_alive());
        return;
      }
    }
    nlohmann::json data = nlohmann::json::array();
    for (const auto& m : set->models) {
      if (!m.AnyReady()) continue;
      if (keyed && ApiKeyStore::CheckEither(file_keys, managed_keys, header,
                                            {m.deployment, m.served_model_name},
                                            nullptr) != ApiKeyStore::Verdict::kAllowed) {
        continue;
      }
      int ready = 0;
      for (const auto& r : m.replicas) ready += r.ready ? 1 : 0;
      data.push_back({{"id", m.deployment}, {"object", "model"}, {"created", 0},
                      {"owned_by", "dcufleet"}, {"root", m.EngineModelName()},
                      {"ready_replicas", ready}});
    }
    SendJson(200, nlohmann::json({{"object", "list"}, {"data", data}}).dump(),
             !request_.keep_alive());
    return;
  }
  if (IsInferencePath(path) && is_post) {
    HandleInference();
    return;
  }
  if (IsInferencePath(path) || path == "/v1/models" || path == "/healthz") {
    SendError(405, absl::StrCat("method ", std::string(request_.method_string()),
                                " not allowed on ", path),
              "invalid_request_error", "method_not_allowed", !request_.keep_alive());
    return;
  }
  SendError(404, absl::StrCat("no route ", path), "invalid_request_error", "not_found",
            !request_.keep_alive());
}

void ClientSession::HandleInference() {
  counting_ = ctx_->metrics != nullptr;
  metrics_model_ = "unknown";
  request_started_ = absl::Now();
  relay_status_ = 0;
  replica_key_.clear();
  nlohmann::json body = nlohmann::json::parse(request_.body(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    SendError(400, "the request body is not a JSON object", "invalid_request_error",
              "invalid_json", !request_.keep_alive());
    return;
  }
  auto model_it = body.find("model");
  if (model_it == body.end() || !model_it->is_string() || model_it->get<std::string>().empty()) {
    SendError(400, "the request has no \"model\" (a string naming the model to use)",
              "invalid_request_error", "missing_model", !request_.keep_alive());
    return;
  }
  requested_model_ = model_it->get<std::string>();
  auto set = ctx_->table->Current();
  const ServedModel* model = ServingTable::Find(*set, requested_model_);
  // Keys before models: a caller without a valid key learns nothing of
  // what is served, not even through the 404's list.
  const ApiKeyStore* file_keys = ctx_->api_keys;
  const ApiKeyStore* managed_keys = set->managed_keys.get();
  if (file_keys != nullptr || managed_keys != nullptr) {
    std::string key_name;
    auto auth = request_.find(http::field::authorization);
    std::string header = auth == request_.end() ? "" : std::string(auth->value());
    std::vector<std::string> names;
    if (model != nullptr) names = {model->deployment, model->served_model_name};
    auto verdict = ApiKeyStore::CheckEither(file_keys, managed_keys, header, names, &key_name);
    if (verdict == ApiKeyStore::Verdict::kMissing || verdict == ApiKeyStore::Verdict::kUnknown) {
      SendError(401,
                verdict == ApiKeyStore::Verdict::kMissing
                    ? "no API key: send \"Authorization: Bearer KEY\""
                    : "the API key is not valid",
                "invalid_request_error", "invalid_api_key", !request_.keep_alive());
      return;
    }
    if (verdict == ApiKeyStore::Verdict::kOutOfScope && model != nullptr) {
      SendError(403, absl::StrCat("API key '", key_name, "' may not use model '",
                                  requested_model_, "'"),
                "invalid_request_error", "model_not_allowed", !request_.keep_alive());
      return;
    }
  }
  if (model == nullptr) {
    if (counting_) ctx_->metrics->OnRejected("model_not_found");
    SendJson(404, UnknownModelBody(requested_model_, ServingTable::Names(*set)),
             !request_.keep_alive());
    return;
  }
  metrics_model_ = model->deployment;
  // The engine knows the model by its served name only.
  if (requested_model_ != model->EngineModelName()) {
    body["model"] = model->EngineModelName();
    upstream_body_ = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    upstream_body_ = std::move(request_.body());
  }
  tried_.clear();
  attempts_ = 0;
  last_failure_.clear();
  head_sent_ = false;
  client_gone_ = false;
  exchange_open_ = true;
  TryPick();
}

// ------------------------------------------------------------------ picking

void ClientSession::TryPick() {
  if (client_gone_) {
    LeaveQueue();
    return;
  }
  absl::Time now = absl::Now();
  auto set = ctx_->table->Current();
  const ServedModel* model = ServingTable::Find(*set, requested_model_);
  if (model != nullptr) {
    auto index = ctx_->picker->Pick(model->replicas, tried_, now);
    if (index) {
      LeaveQueue();
      StartAttempt(model->replicas[*index]);
      return;
    }
    if (model->scaled_to_zero && attempts_ == 0) {
      LeaveQueue();
      SendError(503,
                absl::StrCat("model '", requested_model_, "' is scaled to zero: no replica runs. "
                             "Scale it up: dcuctl scale deployment ", model->deployment,
                             " --replicas 1"),
                "server_error", "model_scaled_to_zero", !request_.keep_alive());
      return;
    }
  }
  if (attempts_ > 0) {
    // The retry found no other ready replica.
    LeaveQueue();
    SendError(502, absl::StrCat("model '", requested_model_, "': ", last_failure_),
              "server_error", "upstream_failed", !request_.keep_alive());
    return;
  }
  if (!queued_) {
    if (ctx_->queued.fetch_add(1) >= ctx_->options.queue_size) {
      ctx_->queued.fetch_sub(1);
      SendError(503,
                absl::StrCat("model '", requested_model_,
                             "' has no ready replica and the wait queue is full"),
                "server_error", "queue_full", !request_.keep_alive(),
                RetryAfterSeconds(ctx_->options.queue_timeout));
      return;
    }
    queued_ = true;
    queued_at_ = now;
    queue_deadline_ = now + ctx_->options.queue_timeout;
    Watch();
  }
  if (now >= queue_deadline_) {
    LeaveQueue();
    SendError(503,
              absl::StrCat("model '", requested_model_, "' had no ready replica within ",
                           absl::FormatDuration(ctx_->options.queue_timeout)),
              "server_error", "no_ready_replica", !request_.keep_alive(),
              RetryAfterSeconds(ctx_->options.queue_timeout));
    return;
  }
  // Replicas come and go with snapshots; a short poll keeps this simple and
  // costs nothing when nobody waits.
  queue_timer_.expires_after(std::chrono::milliseconds(20));
  queue_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec == net::error::operation_aborted && !self->client_gone_) return;
    self->TryPick();
  });
}

void ClientSession::LeaveQueue() {
  if (!queued_) return;
  queued_ = false;
  ctx_->queued.fetch_sub(1);
  if (ctx_->metrics) ctx_->metrics->OnQueueLeft(absl::Now() - queued_at_);
}

void ClientSession::CountDone(const std::string& code) {
  if (!counting_) return;
  counting_ = false;
  ctx_->metrics->OnRequestDone(metrics_model_, replica_key_.empty() ? "none" : replica_key_, code,
                               absl::Now() - request_started_);
}

// ------------------------------------------------------------------ upstream

void ClientSession::StartAttempt(const Replica& replica) {
  ++attempts_;
  replica_key_ = replica.Key();
  tried_.insert(replica_key_);
  attempt_started_ = absl::Now();
  upstream_.emplace(client_.get_executor());
  upstream_timed_out_ = false;
  upstream_buffer_.clear();

  upstream_request_ = {};
  upstream_request_.method(request_.method());
  upstream_request_.target(request_.target());
  upstream_request_.version(11);
  upstream_request_.set(http::field::host, replica_key_);
  upstream_request_.set(http::field::content_type, "application/json");
  upstream_request_.keep_alive(false);
  for (const char* name : kForwardedHeaders) {
    auto it = request_.find(name);
    if (it != request_.end()) upstream_request_.set(name, it->value());
  }
  upstream_request_.body() = upstream_body_;
  upstream_request_.prepare_payload();

  Watch();
  beast::error_code ec;
  auto address = net::ip::make_address(replica.host == "localhost" ? "127.0.0.1" : replica.host, ec);
  ArmUpstreamDeadline(ToChrono(ctx_->options.connect_timeout));
  if (!ec) {
    upstream_->async_connect(tcp::endpoint(address, static_cast<unsigned short>(replica.port)),
                             [self = shared_from_this()](beast::error_code ec) {
                               self->OnConnected(ec);
                             });
    return;
  }
  // A node name (the controller's endpoints name nodes): resolved without
  // blocking the I/O thread.
  resolver_.emplace(client_.get_executor());
  resolver_->async_resolve(
      replica.host, std::to_string(replica.port),
      [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
        if (self->client_gone_) return self->AbortForClientGone();
        if (ec) {
          return self->AttemptFailed(
              absl::StrCat("resolve '", self->replica_key_, "': ", ec.message()));
        }
        if (self->upstream_timed_out_) {
          // The connect deadline covers the resolve too.
          return self->AttemptFailed(absl::StrCat(
              "resolve '", self->replica_key_, "': timed out after ",
              absl::FormatDuration(self->ctx_->options.connect_timeout)));
        }
        net::async_connect(*self->upstream_, results,
                           [self](beast::error_code ec, const tcp::endpoint&) {
                             self->OnConnected(ec);
                           });
      });
}

void ClientSession::OnConnected(beast::error_code ec) {
  if (client_gone_) return AbortForClientGone();
  if (ec) {
    return AttemptFailed(absl::StrCat(
        "connect to '", replica_key_, "': ",
        upstream_timed_out_
            ? absl::StrCat("timed out after ", absl::FormatDuration(ctx_->options.connect_timeout))
            : ec.message()));
  }
  // Head and body go out in separate writes: without this, Nagle holds the
  // body until the engine's delayed ACK (tens of ms per request).
  beast::error_code ignored;
  upstream_->set_option(tcp::no_delay(true), ignored);
  // One deadline for the whole exchange, armed once (not around each read
  // and write of a long stream).
  ArmUpstreamDeadline(ToChrono(ctx_->options.upstream_timeout));
  http::async_write(*upstream_, upstream_request_,
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      self->OnUpstreamWritten(ec);
                    });
}

void ClientSession::OnUpstreamWritten(beast::error_code ec) {
  if (client_gone_) return AbortForClientGone();
  if (ec) return AttemptFailed(absl::StrCat("send to '", replica_key_, "': ", ec.message()));
  upstream_parser_.emplace();
  // Unlimited (the engine is trusted with its answer). Not boost::none: Boost
  // 1.74 compares a Content-Length against an empty optional as "too big".
  upstream_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  http::async_read_header(*upstream_, upstream_buffer_, *upstream_parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            self->OnUpstreamHeader(ec);
                          });
}

void ClientSession::OnUpstreamHeader(beast::error_code ec) {
  if (client_gone_) return AbortForClientGone();
  if (ec) {
    return AttemptFailed(absl::StrCat("'", replica_key_, "' broke off before answering: ",
                                      ec.message()));
  }
  auto& head = upstream_parser_->get();
  unsigned status = head.result_int();
  if (status == 502 || status == 503) {
    return AttemptFailed(absl::StrCat("'", replica_key_, "' answered ", status));
  }
  relay_status_ = status;
  if (counting_) ctx_->metrics->OnFirstByte(metrics_model_, absl::Now() - request_started_);
  relay_response_.emplace();
  relay_response_->result(status);
  relay_response_->version(11);
  for (http::field f : {http::field::content_type, http::field::cache_control,
                        http::field::retry_after}) {
    auto it = head.find(f);
    if (it != head.end()) relay_response_->set(f, it->value());
  }
  relay_response_->set(http::field::server, "dcu-gateway");
  relay_response_->keep_alive(request_.keep_alive());
  if (auto length = upstream_parser_->content_length()) {
    relay_response_->content_length(*length);
  } else {
    // Unknown length (a stream): chunked, each upstream read one chunk out.
    relay_response_->chunked(true);
  }
  relay_response_->body().data = nullptr;
  relay_response_->body().more = true;
  relay_serializer_.emplace(*relay_response_);
  head_sent_ = true;
  if (upstream_buffer_.size() > 0 || upstream_parser_->is_done()) {
    // The body (or some of it) came with the head, as it does from an engine
    // answering at once: head and body go out in one write, not two.
    return ReadUpstreamBody();
  }
  // Nothing more yet (a stream before its first token): the head goes out
  // now, on its own.
  WriteRelayHead();
}

void ClientSession::WriteRelayHead() {
  http::async_write_header(client_, *relay_serializer_,
                           [self = shared_from_this()](beast::error_code ec, size_t) {
                             if (ec) return self->AbortForClientGone();
                             self->ReadUpstreamBody();
                           });
}

void ClientSession::ReadUpstreamBody() {
  if (client_gone_) return AbortForClientGone();
  if (upstream_parser_->is_done()) {
    relay_response_->body().data = nullptr;
    relay_response_->body().size = 0;
    relay_response_->body().more = false;
    http::async_write(client_, *relay_serializer_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->OnResponseDone(ec);
                      });
    return;
  }
  upstream_parser_->get().body().data = relay_chunk_.data();
  upstream_parser_->get().body().size = relay_chunk_.size();
  http::async_read_some(*upstream_, upstream_buffer_, *upstream_parser_,
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          self->OnUpstreamBody(ec);
                        });
}

void ClientSession::OnUpstreamBody(beast::error_code ec) {
  if (client_gone_) return AbortForClientGone();
  if (ec == http::error::need_buffer) ec = {};
  if (ec) {
    // The answer has started: it cannot be replayed elsewhere. Cut the
    // client's connection so it sees a truncated answer, not a clean end.
    DCU_LOG_WARN("replica '", replica_key_, "' broke off mid-answer: ", ec.message());
    ++upstream_deadline_generation_;
    upstream_deadline_.cancel();
    ctx_->picker->Finish(replica_key_, absl::Now() - attempt_started_, /*completed=*/false);
    exchange_open_ = false;
    CountDone(absl::StrCat(relay_status_));
    beast::error_code ignored;
    upstream_->close(ignored);
    client_.close(ignored);
    return;
  }
  size_t got = relay_chunk_.size() - upstream_parser_->get().body().size;
  if (got == 0 && !upstream_parser_->is_done() && !relay_serializer_->is_header_done()) {
    // What came with the head held no body bytes after all (a chunk's
    // framing alone): the head goes out now rather than wait for them.
    return WriteRelayHead();
  }
  if (got == 0) return ReadUpstreamBody();
  relay_response_->body().data = relay_chunk_.data();
  relay_response_->body().size = got;
  if (upstream_parser_->is_done()) {
    // The last piece: it goes out with the end of the answer (the last
    // chunk of a chunked one) in the same write.
    relay_response_->body().more = false;
    http::async_write(client_, *relay_serializer_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->OnResponseDone(ec);
                      });
    return;
  }
  relay_response_->body().more = true;
  http::async_write(client_, *relay_serializer_,
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      self->OnClientBodyWritten(ec);
                    });
}

void ClientSession::OnClientBodyWritten(beast::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return AbortForClientGone();
  ReadUpstreamBody();
}

void ClientSession::OnResponseDone(beast::error_code ec) {
  ++upstream_deadline_generation_;
  upstream_deadline_.cancel();
  ctx_->picker->Finish(replica_key_, absl::Now() - attempt_started_, /*completed=*/!ec);
  exchange_open_ = false;
  CountDone(ec ? "499" : absl::StrCat(relay_status_));
  beast::error_code ignored;
  upstream_->close(ignored);
  if (ec || !request_.keep_alive()) {
    client_.shutdown(tcp::socket::shutdown_both, ignored);
    client_.close(ignored);
    return;
  }
  EndExchange();
}

void ClientSession::AttemptFailed(const std::string& why) {
  ++upstream_deadline_generation_;
  upstream_deadline_.cancel();
  ctx_->picker->Finish(replica_key_, absl::Now() - attempt_started_, /*completed=*/false);
  ctx_->picker->Eject(replica_key_, absl::Now() + ctx_->options.eject_for);
  beast::error_code ignored;
  if (upstream_) upstream_->close(ignored);
  last_failure_ = why;
  DCU_LOG_DEBUG("attempt ", attempts_, " for model '", requested_model_, "' failed: ", why);
  if (attempts_ < 2 && counting_) ctx_->metrics->OnRetry(metrics_model_);
  if (attempts_ >= 2) {
    SendError(502, absl::StrCat("model '", requested_model_, "': ", why), "server_error",
              "upstream_failed", !request_.keep_alive());
    return;
  }
  TryPick();
}

void ClientSession::AbortForClientGone() {
  client_gone_ = true;
  CountDone("499");
  ++upstream_deadline_generation_;
  upstream_deadline_.cancel();
  LeaveQueue();
  if (exchange_open_ && !replica_key_.empty() && upstream_) {
    ctx_->picker->Finish(replica_key_, absl::Now() - attempt_started_, /*completed=*/false);
  }
  exchange_open_ = false;
  beast::error_code ignored;
  // Closing the upstream socket is the cancellation: the engine sees its
  // client leave and aborts the request.
  if (upstream_) upstream_->close(ignored);
  queue_timer_.cancel();
  client_.close(ignored);
}

// ------------------------------------------------------------------ client watch

void ClientSession::Watch() {
  if (watching_) return;
  watching_ = true;
  client_.async_read_some(net::buffer(watch_bytes_),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->OnWatch(ec, n);
                          });
}

void ClientSession::OnWatch(beast::error_code ec, size_t n) {
  watching_ = false;
  if (drain_after_watch_) {
    drain_after_watch_ = false;
    if (!ec || ec == net::error::operation_aborted) Drain();
    return;
  }
  if (n > 0) {
    // A pipelined next request: keep it for the next read.
    auto dst = client_buffer_.prepare(n);
    net::buffer_copy(dst, net::buffer(watch_bytes_.data(), n));
    client_buffer_.commit(n);
  }
  if (read_next_after_watch_) {
    read_next_after_watch_ = false;
    if (ec && ec != net::error::operation_aborted) return;  // gone after its answer
    ReadRequest();
    return;
  }
  if (ec == net::error::operation_aborted) return;
  if (ec) {
    // The client left while its request was queued or upstream.
    if (exchange_open_ || queued_) {
      AbortForClientGone();
      queue_timer_.cancel();
    }
    return;
  }
  if (exchange_open_ || queued_) Watch();
}

void ClientSession::EndExchange() {
  if (watching_) {
    read_next_after_watch_ = true;
    beast::error_code ignored;
    client_.cancel(ignored);
    return;
  }
  ReadRequest();
}

// ------------------------------------------------------------------ simple answers

void ClientSession::SendError(unsigned status, const std::string& message,
                              const std::string& type, const std::string& code, bool close,
                              const std::string& retry_after) {
  // Refused by the gateway (a replica's own errors are relayed, not sent here).
  if (counting_ && status != 502) ctx_->metrics->OnRejected(code);
  SendJson(status, OpenAiErrorBody(message, type, code), close, retry_after);
}

void ClientSession::SendJson(unsigned status, std::string body, bool close,
                             const std::string& retry_after) {
  exchange_open_ = false;
  CountDone(absl::StrCat(status));
  simple_response_.emplace();
  simple_response_->result(status);
  simple_response_->version(11);
  simple_response_->set(http::field::server, "dcu-gateway");
  simple_response_->set(http::field::content_type, "application/json");
  if (!retry_after.empty()) simple_response_->set(http::field::retry_after, retry_after);
  simple_response_->keep_alive(!close);
  simple_response_->body() = std::move(body);
  simple_response_->prepare_payload();
  ArmClientTimer(ToChrono(ctx_->options.client_idle_timeout));
  http::async_write(client_, *simple_response_,
                    [self = shared_from_this(), close](beast::error_code ec, size_t) {
                      if (ec) {
                        beast::error_code ignored;
                        self->client_.close(ignored);
                        return;
                      }
                      if (close) return self->CloseGracefully();
                      self->EndExchange();
                    });
}

// Half-closes, then reads and drops what the client still sends (the body
// of a refused request) for a moment, so that closing does not reset the
// connection before the client has read the error.
void ClientSession::CloseGracefully() {
  beast::error_code ignored;
  client_.shutdown(tcp::socket::shutdown_send, ignored);
  ArmClientTimer(std::chrono::seconds(2));
  if (watching_) {
    // One read at a time: the watch's handler starts the drain.
    drain_after_watch_ = true;
    client_.cancel(ignored);
    return;
  }
  Drain();
}

void ClientSession::Drain() {
  client_.async_read_some(net::buffer(drain_bytes_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) {
                              beast::error_code ignored;
                              self->client_.close(ignored);
                              return;
                            }
                            self->Drain();
                          });
}

}  // namespace dcu::gateway
