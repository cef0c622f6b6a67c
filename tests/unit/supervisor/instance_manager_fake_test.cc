// InstanceManager logic with FakeRuntime and a scripted HTTP client: the
// generation rules, replacement and the health sequence's answers.
#include <functional>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent/runtime/fake_runtime.h"
#include "agent/supervisor/instance_manager.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::InstanceSpec;
using dcufleet::v1::InstanceStatus;
using ::testing::HasSubstr;

// Answers like a vLLM server whose /v1/models lists `listed`.
class ScriptedHttp : public common::HttpClient {
 public:
  absl::StatusOr<common::HttpResponse> Send(const common::HttpRequest& req) override {
    absl::MutexLock lock(&mu_);
    paths.push_back(req.method + " " + req.path);
    common::HttpResponse r;
    if (!up) return absl::UnavailableError("connection refused");
    if (on_first_answer) {
      on_first_answer();
      on_first_answer = nullptr;
    }
    r.status = 200;
    if (req.path == "/v1/models") r.body = R"({"object":"list","data":[{"id":")" + listed + R"("}]})";
    if (req.path == "/v1/completions") r.body = R"({"choices":[{"text":"x"}]})";
    return r;
  }
  absl::Mutex mu_;
  bool up = true;
  // Runs once, before the first request that is answered: what the engine
  // does in the moment between the agent's last log read and its answer.
  std::function<void()> on_first_answer;
  std::string listed = "qwen3-32b";
  std::vector<std::string> paths;
};

class FakeManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InstanceManager::Options o;
    o.supervisor.poll_interval = absl::Milliseconds(10);
    o.supervisor.ready_check_interval = absl::Milliseconds(10);
    o.housekeeping_interval = absl::Milliseconds(10);
    manager_ = std::make_unique<InstanceManager>(
        std::map<std::string, Runtime*>{{"bare", &runtime_}}, &http_, &common::RealClock::Get(), o,
        [this](const InstanceStatus& s) {
          absl::MutexLock lock(&mu_);
          latest_[s.instance_id()] = s;
        });
  }
  InstanceSpec Spec(const std::string& id) {
    InstanceSpec s;
    s.set_instance_id(id);
    s.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    s.set_port(9000);
    s.set_served_model_name("qwen3-32b");
    s.set_startup_timeout_s(1);
    s.add_argv("python");
    return s;
  }
  std::optional<InstanceStatus> Wait(const std::string& id, dcufleet::v1::InstancePhase phase) {
    absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline) {
      {
        absl::MutexLock lock(&mu_);
        auto it = latest_.find(id);
        if (it != latest_.end() && it->second.phase() == phase) return it->second;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return std::nullopt;
  }

  FakeRuntime runtime_{"bare"};
  ScriptedHttp http_;
  absl::Mutex mu_;
  std::map<std::string, InstanceStatus> latest_;
  std::unique_ptr<InstanceManager> manager_;
};

TEST_F(FakeManagerTest, IdempotentAndOlderGenerationsIgnored) {
  manager_->Apply(5, {Spec("a")});
  ASSERT_TRUE(Wait("a", dcufleet::v1::INSTANCE_READY));
  manager_->Apply(5, {Spec("a")});
  manager_->Apply(6, {Spec("a")});
  manager_->Apply(4, {});  // stale: must not stop "a"
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(runtime_.start_calls(), 1);
  EXPECT_EQ(runtime_.stop_calls(), 0);
  EXPECT_EQ(manager_->generation(), 6);
  EXPECT_EQ(manager_->Snapshot()[0].generation(), 6);
}

TEST_F(FakeManagerTest, ChangedSpecReplacesTheInstance) {
  manager_->Apply(1, {Spec("a")});
  ASSERT_TRUE(Wait("a", dcufleet::v1::INSTANCE_READY));
  InstanceSpec changed = Spec("a");
  (*changed.mutable_env())["VLLM_ROCM_USE_SKINNY_GEMM"] = "0";
  manager_->Apply(2, {changed});
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (runtime_.start_calls() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(runtime_.start_calls(), 2);
  EXPECT_EQ(runtime_.stop_calls(), 1);
  ASSERT_TRUE(Wait("a", dcufleet::v1::INSTANCE_READY));
  auto ri = runtime_.Inspect("a");
  ASSERT_TRUE(ri.ok());
  EXPECT_EQ(ri->spec.env().at("VLLM_ROCM_USE_SKINNY_GEMM"), "0");
}

TEST_F(FakeManagerTest, ServedNameNotListedTimesOutWithTheReason) {
  http_.listed = "something-else";
  manager_->Apply(1, {Spec("a")});
  auto failed = Wait("a", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(failed);
  EXPECT_THAT(failed->message(), HasSubstr("'qwen3-32b' not listed (listed: something-else)"));
  EXPECT_GE(runtime_.stop_calls(), 1);
}

TEST_F(FakeManagerTest, StartErrorAndUnknownRuntimeAreFailures) {
  runtime_.set_start_status(absl::NotFoundError("conda env '/opt/envs/x' not found"));
  manager_->Apply(1, {Spec("a")});
  auto failed = Wait("a", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(failed);
  EXPECT_THAT(failed->message(), HasSubstr("start failed: conda env '/opt/envs/x' not found"));
  // Nothing ran, so there is no log: the controller diagnoses the message.
  EXPECT_THAT(failed->log_tail(), ::testing::IsEmpty());
  InstanceSpec other = Spec("b");
  other.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
  manager_->Apply(2, {Spec("a"), other});
  auto no_rt = Wait("b", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(no_rt);
  EXPECT_THAT(no_rt->message(), HasSubstr("no runtime 'container' on this node"));
}

TEST_F(FakeManagerTest, UnspecifiedOrUnknownRuntimeKindIsRefusedNotRunAsBare) {
  // The only runtime here is the bare one: a kind the spec does not name must
  // not end up on it.
  InstanceSpec unspecified = Spec("u");
  unspecified.clear_runtime_kind();
  InstanceSpec unknown = Spec("k");
  unknown.set_runtime_kind(static_cast<dcufleet::v1::RuntimeKind>(9));
  manager_->Apply(1, {unspecified, unknown});
  auto u = Wait("u", dcufleet::v1::INSTANCE_FAILED);
  auto k = Wait("k", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(u);
  ASSERT_TRUE(k);
  EXPECT_THAT(u->message(), HasSubstr("runtime_kind unspecified (0) of instance 'u'"));
  EXPECT_THAT(u->message(), HasSubstr("must be 'bare' or 'container'; refusing to guess"));
  EXPECT_THAT(k->message(), HasSubstr("runtime_kind unknown (9) of instance 'k'"));
  EXPECT_EQ(runtime_.start_calls(), 0);
  // A spec that names its kind runs on the same manager.
  manager_->Apply(2, {Spec("v")});
  EXPECT_TRUE(Wait("v", dcufleet::v1::INSTANCE_READY));
  EXPECT_EQ(runtime_.start_calls(), 1);
}

TEST_F(FakeManagerTest, UnhealthyWhileReadyFails) {
  manager_->Apply(1, {Spec("a")});
  ASSERT_TRUE(Wait("a", dcufleet::v1::INSTANCE_READY));
  {
    absl::MutexLock lock(&http_.mu_);
    http_.up = false;
  }
  auto failed = Wait("a", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(failed);
  EXPECT_THAT(failed->message(), HasSubstr("failed health checks in a row"));
}

TEST_F(FakeManagerTest, ExitWhileStartingCarriesLogTail) {
  manager_->Apply(1, {Spec("a")});
  absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (runtime_.start_calls() < 1 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  {
    absl::MutexLock lock(&http_.mu_);
    http_.up = false;
  }
  runtime_.AppendLog("a", "\rLoading safetensors checkpoint shards:  41% Completed | 7/17 [00:10<00:14]\nImportError: x\n");
  runtime_.SetExited("a", 1);
  auto failed = Wait("a", dcufleet::v1::INSTANCE_FAILED);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->exit_code(), 1);
  EXPECT_THAT(failed->log_tail(), ::testing::Contains("ImportError: x"));
  EXPECT_EQ(failed->shards_loaded(), 7);
  EXPECT_EQ(failed->shards_total(), 17);
}

// The engine logs its last shard and starts listening between the agent's
// log read and its health check: READY must still show every shard (the
// race the real-process test saw as "3 of 4").
TEST_F(FakeManagerTest, ReadyShowsTheShardsTheEngineLoggedBeforeItAnswered) {
  {
    absl::MutexLock lock(&http_.mu_);
    http_.up = false;
  }
  manager_->Apply(1, {Spec("a")});
  absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (runtime_.start_calls() < 1 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  runtime_.AppendLog("a", "\rLoading safetensors checkpoint shards:  75% Completed | 3/4 [00:03<00:01]");
  auto loading = Wait("a", dcufleet::v1::INSTANCE_LOADING);
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->shards_loaded(), 3);
  {
    absl::MutexLock lock(&http_.mu_);
    http_.on_first_answer = [this] {
      runtime_.AppendLog("a", "\rLoading safetensors checkpoint shards: 100% Completed | 4/4 [00:04<00:00]\n");
    };
    http_.up = true;
  }
  auto ready = Wait("a", dcufleet::v1::INSTANCE_READY);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->shards_loaded(), 4);
  EXPECT_EQ(ready->shards_total(), 4);
  EXPECT_EQ(ready->startup().shards_loaded(), 4);
}

}  // namespace
}  // namespace dcu::agent
