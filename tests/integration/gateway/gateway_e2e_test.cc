// dcu-gateway with real processes on loopback: fake_vllm replicas (their
// service-time model makes a replica slow or a stream long), the gateway on a
// replicas file, clients on plain sockets. No assertion is about how fast
// anything is: speed is for bench/gateway.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_vllm/fake_env.h"
#include "tests/integration/gateway/gateway_fixture.h"

namespace dcu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kServed[] = "org/tiny-model";

std::string ChatBody(const std::string& model, int max_tokens, bool stream = false) {
  return nlohmann::json({{"model", model},
                         {"messages", {{{"role", "user"}, {"content", "hello there"}}}},
                         {"max_tokens", max_tokens},
                         {"stream", stream}})
      .dump();
}

std::string ErrorCode(const common::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("error")) return "<not an OpenAI error: " + r.body + ">";
  return j["error"].value("code", "");
}

class GatewayE2ETest : public ::testing::Test {
 protected:
  FakeReplica* Replica(ReplicaSpeed speed = {}) {
    FakeReplica* r = f_.StartReplica(kServed, speed);
    EXPECT_NE(r, nullptr) << f_.Logs();
    return r;
  }
  void Serve(const std::vector<FakeReplica*>& replicas, std::vector<std::string> args = {}) {
    f_.WriteReplicasFile(f_.ReplicasJson("tiny", kServed, replicas));
    ASSERT_TRUE(f_.StartGateway(std::move(args))) << f_.Logs();
  }
  GatewayFixture f_;
};

TEST_F(GatewayE2ETest, RoutesByDeploymentOrServedNameAndListsReadyModels) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  Serve({r});
  for (const std::string name : {"tiny", kServed}) {
    auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody(name, 3));
    ASSERT_TRUE(resp.ok()) << resp.status();
    ASSERT_EQ(resp->status, 200) << resp->body;
    auto j = nlohmann::json::parse(resp->body);
    EXPECT_EQ(j["object"], "chat.completion");
    // The engine was asked for its own name.
    EXPECT_EQ(j["model"], kServed);
  }
  auto completion = f_.Post(f_.gateway_port(), "/v1/completions",
                            R"({"model": "tiny", "prompt": "1 2 3", "max_tokens": 2})");
  ASSERT_TRUE(completion.ok());
  EXPECT_EQ(nlohmann::json::parse(completion->body)["object"], "text_completion");
  auto embedding = f_.Post(f_.gateway_port(), "/v1/embeddings",
                           R"({"model": "tiny", "input": "a b"})");
  ASSERT_TRUE(embedding.ok());
  EXPECT_EQ(nlohmann::json::parse(embedding->body)["data"][0]["object"], "embedding");

  auto models = f_.Get(f_.gateway_port(), "/v1/models");
  ASSERT_TRUE(models.ok());
  auto list = nlohmann::json::parse(models->body);
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "tiny");
  EXPECT_EQ(f_.Get(f_.gateway_port(), "/healthz")->status, 200);
}

TEST_F(GatewayE2ETest, StreamArrivesChunkByChunkWhileTheEngineIsStillGenerating) {
  // 20 tokens, 150 ms apart: the engine works for about 3 s.
  FakeReplica* r = Replica({.ttft_ms = 0, .token_delay_ms = 150});
  ASSERT_NE(r, nullptr);
  Serve({r});
  auto conn = RawConnection::Open(f_.gateway_port());
  ASSERT_TRUE(conn.ok());
  std::string body = ChatBody("tiny", 20, /*stream=*/true);
  ASSERT_TRUE((*conn)->Send(absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                         "Content-Type: application/json\r\nContent-Length: ",
                                         body.size(), "\r\n\r\n", body)));
  std::string seen;
  while (!absl::StrContains(seen, "\"content\":\" the\"")) {
    std::string got = (*conn)->Read();
    ASSERT_FALSE(got.empty()) << "stream ended before its first token: " << seen << f_.Logs();
    seen += got;
  }
  EXPECT_THAT(seen, HasSubstr("text/event-stream"));
  // The first token is here and the engine is still on this request: the
  // gateway forwarded it without waiting for the rest.
  EXPECT_EQ(f_.Metric(r->port, "vllm:num_requests_running"), 1);
  EXPECT_EQ(f_.Metric(r->port, "vllm:request_success_total", "length"), 0);
  EXPECT_THAT(seen, Not(HasSubstr("[DONE]")));
  int reads = 1;
  while (!absl::StrContains(seen, "data: [DONE]")) {
    std::string got = (*conn)->Read();
    ASSERT_FALSE(got.empty()) << "stream cut short: " << seen;
    seen += got;
    ++reads;
  }
  // Chunks came one by one, not as one buffered answer.
  EXPECT_GT(reads, 10);
  // The engine counts the request after it has written the stream's end,
  // as vLLM does, so the count may trail [DONE] by a moment (one suite run
  // read 0 here).
  EXPECT_TRUE(WaitFor([&] { return f_.Metric(r->port, "vllm:request_success_total", "length") == 1; },
                      absl::Seconds(5)));
}

TEST_F(GatewayE2ETest, ClientThatLeavesMidStreamCancelsTheEngineRequest) {
  FakeReplica* r = Replica({.ttft_ms = 0, .token_delay_ms = 200});
  ASSERT_NE(r, nullptr);
  Serve({r});
  auto conn = RawConnection::Open(f_.gateway_port());
  ASSERT_TRUE(conn.ok());
  std::string body = ChatBody("tiny", 200, /*stream=*/true);  // 40 s if nobody stops it
  ASSERT_TRUE((*conn)->Send(absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                         "Content-Length: ", body.size(), "\r\n\r\n", body)));
  std::string seen;
  while (!absl::StrContains(seen, "\"content\":\" the\"")) {
    std::string got = (*conn)->Read();
    ASSERT_FALSE(got.empty()) << f_.Logs();
    seen += got;
  }
  (*conn)->Close();
  EXPECT_TRUE(WaitFor([&] { return f_.Metric(r->port, "vllm:request_success_total", "abort") == 1; },
                      absl::Seconds(10)))
      << f_.Logs();
  EXPECT_EQ(f_.Metric(r->port, "vllm:num_requests_running"), 0);
}

TEST_F(GatewayE2ETest, LoadAwarePickingSendsLessToASlowReplicaThanRoundRobin) {
  FakeReplica* fast = Replica({.ttft_ms = 5, .token_delay_ms = 2});
  FakeReplica* slow = Replica({.ttft_ms = 20, .token_delay_ms = 8});  // 4x
  ASSERT_TRUE(fast && slow);
  auto share_of_slow = [&](const std::string& policy) {
    f_.StopGateway();
    Serve({fast, slow}, {"--pick", policy});
    double fast0 = f_.Metric(fast->port, "vllm:request_success_total", "length");
    double slow0 = f_.Metric(slow->port, "vllm:request_success_total", "length");
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c) {
      clients.emplace_back([&] {
        for (int i = 0; i < 12; ++i) {
          auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 10));
          if (!resp.ok() || resp->status != 200) ++failed;
        }
      });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(failed.load(), 0) << policy;
    // Each engine counts a request just after its answer is written.
    double to_fast = 0, to_slow = 0;
    EXPECT_TRUE(WaitFor(
        [&] {
          to_fast = f_.Metric(fast->port, "vllm:request_success_total", "length") - fast0;
          to_slow = f_.Metric(slow->port, "vllm:request_success_total", "length") - slow0;
          return to_fast + to_slow >= 96;
        },
        absl::Seconds(5)));
    EXPECT_EQ(to_fast + to_slow, 96) << policy;
    return to_slow / (to_fast + to_slow);
  };
  double rr = share_of_slow("round-robin");
  double least = share_of_slow("least-score");
  EXPECT_NEAR(rr, 0.5, 0.05);
  EXPECT_LT(least, rr);
  EXPECT_LT(least, 0.35) << "least-score sent " << least << " of the requests to the slow replica";
}

TEST_F(GatewayE2ETest, ReplicaKilledUnderLoadFailsNoRequestWhileAnotherIsReady) {
  FakeReplica* a = Replica({.ttft_ms = 20, .token_delay_ms = 1});
  FakeReplica* b = Replica({.ttft_ms = 20, .token_delay_ms = 1});
  ASSERT_TRUE(a && b);
  Serve({a, b});
  std::atomic<int> done{0}, failed{0};
  std::atomic<bool> stop{false};
  std::string first_failure;
  std::mutex mu;
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&] {
      while (!stop.load()) {
        auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 4));
        if (!resp.ok() || resp->status != 200) {
          std::lock_guard<std::mutex> l(mu);
          if (failed++ == 0) {
            first_failure = resp.ok() ? resp->body : std::string(resp.status().message());
          }
        }
        ++done;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() >= 60; }, absl::Seconds(30)));
  a->process->Signal(SIGKILL);
  int at_kill = done.load();
  ASSERT_TRUE(WaitFor([&] { return done.load() >= at_kill + 120; }, absl::Seconds(60)));
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0) << first_failure << f_.Logs();
  EXPECT_GT(f_.Metric(b->port, "vllm:request_success_total", "length"), 120);
}

TEST_F(GatewayE2ETest, UnknownModelIs404ListingServedModels) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  Serve({r});
  auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("gpt-5", 3));
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 404);
  EXPECT_EQ(ErrorCode(*resp), "model_not_found");
  EXPECT_THAT(resp->body, HasSubstr("tiny"));
  EXPECT_THAT(resp->body, HasSubstr(kServed));
}

TEST_F(GatewayE2ETest, BadRequestsGetCleanOpenAiErrors) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  Serve({r}, {"--max-body-bytes", "4096"});
  auto big = f_.Post(f_.gateway_port(), "/v1/chat/completions",
                     ChatBody("tiny", 3).insert(1, "\"pad\": \"" + std::string(8000, 'x') + "\","));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(ErrorCode(*big), "request_too_large");

  auto bad_json = f_.Post(f_.gateway_port(), "/v1/chat/completions", "{\"model\": ");
  ASSERT_TRUE(bad_json.ok());
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_EQ(ErrorCode(*bad_json), "invalid_json");

  auto no_model = f_.Post(f_.gateway_port(), "/v1/completions", R"({"prompt": "x"})");
  ASSERT_TRUE(no_model.ok());
  EXPECT_EQ(no_model->status, 400);
  EXPECT_EQ(ErrorCode(*no_model), "missing_model");

  // Not HTTP at all, and headers beyond the limit: 4xx, and the gateway lives on.
  for (const std::string& junk :
       {std::string("HELLO\r\n\r\n"), std::string("GET /healthz HTTP/1.1\r\nX-Big: ") +
                                          std::string(64 << 10, 'a') + "\r\n\r\n"}) {
    auto conn = RawConnection::Open(f_.gateway_port());
    ASSERT_TRUE(conn.ok());
    (*conn)->Send(junk);
    std::string answer = (*conn)->ReadAll();
    EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 4")) << answer.substr(0, 200);
  }
  EXPECT_TRUE(f_.gateway()->Running());
  EXPECT_EQ(f_.Get(f_.gateway_port(), "/healthz")->status, 200);
}

TEST_F(GatewayE2ETest, NoReadyReplicaWaitsInTheQueueThen503WithRetryAfter) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  f_.WriteReplicasFile(f_.ReplicasJson("tiny", kServed, {r}, /*ready=*/false));
  ASSERT_TRUE(f_.StartGateway({"--queue-timeout", "1"})) << f_.Logs();
  auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 3));
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 503);
  EXPECT_EQ(ErrorCode(*resp), "no_ready_replica");
  EXPECT_EQ(resp->headers["retry-after"], "1");
  EXPECT_EQ(f_.Metric(r->port, "vllm:request_success_total", "length"), 0);
}

TEST_F(GatewayE2ETest, QueuedRequestIsServedWhenAReplicaBecomesReady) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  f_.WriteReplicasFile(f_.ReplicasJson("tiny", kServed, {r}, /*ready=*/false));
  ASSERT_TRUE(f_.StartGateway({"--queue-timeout", "60"})) << f_.Logs();
  absl::StatusOr<common::HttpResponse> resp;
  std::thread client(
      [&] { resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 3)); });
  // The request is held (nothing reached the engine) until the replica is ready.
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(f_.Metric(r->port, "vllm:request_success_total", "length"), 0);
  f_.WriteReplicasFile(f_.ReplicasJson("tiny", kServed, {r}, /*ready=*/true));
  client.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200) << resp->body;
  EXPECT_EQ(f_.Metric(r->port, "vllm:request_success_total", "length"), 1);
}

TEST_F(GatewayE2ETest, RefusedConnectionIsRetriedOnAnotherReplica) {
  FakeReplica* live = Replica();
  ASSERT_NE(live, nullptr);
  FakeReplica dead;
  dead.port = PickFreePort();  // nothing listens there
  f_.WriteReplicasFile(f_.ReplicasJson("tiny", kServed, {&dead, live}));
  ASSERT_TRUE(f_.StartGateway({"--pick", "round-robin"})) << f_.Logs();
  for (int i = 0; i < 4; ++i) {
    auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 2));
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(resp->status, 200) << resp->body;
  }
  EXPECT_EQ(f_.Metric(live->port, "vllm:request_success_total", "length"), 4);
}

TEST_F(GatewayE2ETest, ApiKeysAreCheckedAndScoped) {
  FakeReplica* r = Replica();
  ASSERT_NE(r, nullptr);
  // sha256("sk-good") and sha256("sk-other"), written as an operator would.
  auto keys = common::Sha256Hex("sk-good") + " tiny\n";
  std::string path = f_.dir() + "/keys";
  std::ofstream(path) << "good " << keys << "other " << common::Sha256Hex("sk-other") << " some-other-model\n";
  Serve({r}, {"--api-keys", path});
  auto none = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 2));
  EXPECT_EQ(none->status, 401);
  auto wrong = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 2),
                       {{"Authorization", "Bearer sk-bad"}});
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(ErrorCode(*wrong), "invalid_api_key");
  auto scoped = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 2),
                        {{"Authorization", "Bearer sk-other"}});
  EXPECT_EQ(scoped->status, 403);
  auto good = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody(kServed, 2),
                      {{"Authorization", "Bearer sk-good"}});
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_THAT(f_.gateway()->Log(), Not(HasSubstr("sk-good")));
}

TEST_F(GatewayE2ETest, QueueTheEngineReportsSteersRequestsAwayFromItsReplica) {
  // Replica a runs one request at a time and is kept busy by clients that
  // bypass the gateway: only its /metrics tells the gateway.
  FakeReplica* a = Replica({.ttft_ms = 0, .token_delay_ms = 50, .max_concurrency = 1});
  FakeReplica* b = Replica({.ttft_ms = 5, .token_delay_ms = 1});
  ASSERT_TRUE(a && b);
  std::vector<std::unique_ptr<RawConnection>> direct;
  std::string body = ChatBody(kServed, 200, /*stream=*/true);  // ~10 s each
  for (int i = 0; i < 3; ++i) {
    auto conn = RawConnection::Open(a->port);
    ASSERT_TRUE(conn.ok());
    (*conn)->Send(absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: ",
                               body.size(), "\r\n\r\n", body));
    direct.push_back(*std::move(conn));
  }
  ASSERT_TRUE(WaitFor([&] { return f_.Metric(a->port, "vllm:num_requests_waiting") == 2; },
                      absl::Seconds(10)));
  Serve({a, b}, {"--scrape-engine-metrics", "100"});
  // Ten scrape periods: the gateway has seen a's queue (nothing outside the
  // gateway shows when it scraped; a missed scrape fails the test, never
  // passes it).
  absl::SleepFor(absl::Milliseconds(1000));
  for (int i = 0; i < 10; ++i) {
    auto resp = f_.Post(f_.gateway_port(), "/v1/chat/completions", ChatBody("tiny", 2));
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(resp->status, 200) << resp->body;
  }
  EXPECT_EQ(f_.Metric(b->port, "vllm:request_success_total", "length"), 10) << f_.Logs();
  EXPECT_EQ(f_.Metric(a->port, "vllm:request_success_total", "length"), 0);
}

}  // namespace
}  // namespace dcu::testing
