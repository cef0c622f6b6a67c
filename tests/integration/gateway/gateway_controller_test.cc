// The gateway fed by a real dcu-controller: a simulated K100_AI node (real
// dcu-agent, fake_vllm in a fake conda env, scripts/lib/simfleet.sh seed000)
// serves qwen3-32b; the gateway learns it over WatchServing, serves it, and
// keeps serving while the controller is SIGKILLed and restarted.
//
// The node is called "localhost": the controller's endpoints name the node
// ("NODE:PORT"), and the gateway must be able to resolve that name.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/hash.h"
#include "absl/time/clock.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/gateway/gateway_fixture.h"
#include "tests/testing/fleet_harness.h"

namespace dcu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNode[] = "localhost";

class GatewayControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    build_ = std::filesystem::path(BinDir()).parent_path().string();
    std::filesystem::create_directories(h_.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      std::filesystem::copy(SourceDir() + "/deploy/catalog/" + sub,
                            h_.Join(std::string("catalog/") + sub),
                            std::filesystem::copy_options::recursive);
    }
    auto r = RunCmd({"/bin/bash", SourceDir() + "/scripts/lib/simfleet.sh", h_.Join("sim"), build_,
                     "seed000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::filesystem::remove_all(h_.Join("sim/k100/envs/vllm-0.11.0-dtk2604"));
    std::ofstream(h_.Join("sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"),
                  std::ios::trunc)
        << R"({"load_seconds": 0.2, "shards": 2})";
  }
  void StartController() {
    ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                    "--reconcile-interval", "0.2", "--not-ready-after", "5"}));
  }
  void StartAgent() {
    h_.StartAgent(kNode,
                  {"--root", h_.Join("sim/k100/root"), "--model-root", h_.Join("sim/k100/models"),
                   "--env-root", h_.Join("sim/k100/envs"), "--hip_library",
                   build_ + "/testlibs/hip_good/libamdhip64.so", "--container-cli", "none"},
                  {{"FAKE_HIP_DEVICES", ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))}});
  }
  void DeployQwen() {
    StartController();
    StartAgent();
    ASSERT_TRUE(h_.WaitNodeState(kNode, "NODE_READY", 30)) << h_.Logs();
    auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--wait", "--wait-timeout", "90"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  }
  bool GatewayServes(const std::string& model) {
    auto models = g_.Get(g_.gateway_port(), "/v1/models");
    return models.ok() && absl::StrContains(models->body, "\"id\":\"" + model + "\"");
  }
  int Chat(const std::string& model, const std::string& key = "") {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!key.empty()) headers.push_back({"Authorization", "Bearer " + key});
    auto resp = g_.Post(g_.gateway_port(), "/v1/chat/completions",
                        nlohmann::json({{"model", model},
                                        {"messages", {{{"role", "user"}, {"content", "1+1="}}}},
                                        {"max_tokens", 3}})
                            .dump(),
                        headers);
    return resp.ok() ? resp->status : -1;
  }

  FleetHarness h_;
  GatewayFixture g_;
  std::string build_;
};

TEST_F(GatewayControllerTest, WatchServingStreamsTheReadyDeploymentAsAReplica) {
  DeployQwen();
  auto channel = grpc::CreateChannel(h_.Addr(), grpc::InsecureChannelCredentials());
  auto stub = dcufleet::v1::FleetService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  dcufleet::v1::WatchServingRequest req;
  req.set_resend_after_ms(300);
  auto reader = stub->WatchServing(&ctx, req);
  dcufleet::v1::ServingSnapshot first, again;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_EQ(first.models_size(), 1) << first.DebugString();
  const auto& model = first.models(0);
  EXPECT_EQ(model.deployment(), "qwen3-32b");
  ASSERT_EQ(model.replicas_size(), 1);
  EXPECT_TRUE(model.replicas(0).ready());
  // The host is the address the agent connected from (loopback here), not
  // the node's name.
  EXPECT_EQ(model.replicas(0).host(), "127.0.0.1");
  EXPECT_EQ(model.replicas(0).node(), kNode);
  nlohmann::json d = h_.Deployment("qwen3-32b");
  EXPECT_EQ(absl::StrCat("127.0.0.1:", model.replicas(0).port()),
            d["deployment"]["status"]["endpoint"].get<std::string>());
  // The agent scrapes the engine's /metrics and reports its load with its
  // status; the watch carries it to the gateway (fake_vllm publishes vLLM's
  // gauges, idle here: zero requests running, some KV cache in use).
  bool loaded = false;
  for (int i = 0; i < 30 && !loaded; ++i) {
    ASSERT_TRUE(reader->Read(&again));
    ASSERT_EQ(again.models_size(), 1);
    ASSERT_EQ(again.models(0).replicas_size(), 1);
    EXPECT_EQ(again.models(0).replicas(0).port(), model.replicas(0).port());
    loaded = again.models(0).replicas(0).load().scraped_at_ms() > 0;
  }
  EXPECT_TRUE(loaded) << again.DebugString() << h_.Logs();
  EXPECT_GE(again.revision(), first.revision());
  EXPECT_EQ(again.models(0).replicas(0).load().running(), 0);
  ctx.TryCancel();
}

TEST_F(GatewayControllerTest, ServesFromTheControllerAndKeepsServingWhileItIsDown) {
  DeployQwen();
  ASSERT_TRUE(g_.StartGateway({"--controller", h_.Addr()}, /*use_file=*/false)) << g_.Logs();
  ASSERT_TRUE(WaitFor([&] { return GatewayServes("qwen3-32b"); }, absl::Seconds(20)))
      << g_.Logs() << h_.Logs();
  EXPECT_EQ(Chat("qwen3-32b"), 200) << g_.Logs();

  // A streamed answer through the gateway.
  auto conn = RawConnection::Open(g_.gateway_port());
  ASSERT_TRUE(conn.ok());
  std::string body = R"({"model": "qwen3-32b", "messages": [{"role": "user", "content": "hi"}],)"
                     R"( "max_tokens": 4, "stream": true})";
  (*conn)->Send(absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\nConnection: close\r\n"
                             "Content-Length: ", body.size(), "\r\n\r\n", body));
  std::string streamed = (*conn)->ReadAll();
  EXPECT_THAT(streamed, HasSubstr("chat.completion.chunk"));
  EXPECT_THAT(streamed, HasSubstr("data: [DONE]"));

  h_.KillController(SIGKILL);
  int failed = 0;
  for (int i = 0; i < 20; ++i) {
    if (Chat("qwen3-32b") != 200) ++failed;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(failed, 0) << g_.Logs();
  EXPECT_TRUE(GatewayServes("qwen3-32b"));
  // The outage is logged once however many retries it took.
  std::string log = g_.gateway()->Log();
  size_t lost = 0;
  for (size_t at = log.find("lost the controller"); at != std::string::npos;
       at = log.find("lost the controller", at + 1)) {
    ++lost;
  }
  EXPECT_EQ(lost, 1u) << log;

  StartController();
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(g_.gateway()->Log(), "is back after"); },
                      absl::Seconds(20)))
      << g_.Logs();
  EXPECT_EQ(Chat("qwen3-32b"), 200);
}

// Issue 20: an agent inside a Slurm job near its time limit drains. The
// controller starts a replacement on another node, takes the old replica
// out of the gateway's rotation once the replacement is Ready, then stops
// it; the agent leaves once it runs nothing. Requests through the gateway
// keep being answered all along. (The job is described to the agent by the
// variables Slurm sets, with the end time newer Slurm exports; the real
// slurmctld runs in tests/integration/slurm.)
TEST_F(GatewayControllerTest, ADrainingSlurmNodeHandsItsReplicaOverWithoutAFailedRequest) {
  auto sim = RunCmd({"/bin/bash", SourceDir() + "/scripts/lib/simfleet.sh", h_.Join("sim-b"), build_,
                     "seed000"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  std::filesystem::remove_all(h_.Join("sim-b/k100/envs/vllm-0.11.0-dtk2604"));
  std::ofstream(h_.Join("sim-b/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"),
                std::ios::trunc)
      << R"({"load_seconds": 0.2, "shards": 2})";
  ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                  "--reconcile-interval", "0.2", "--not-ready-after", "5",
                                  "--serving-drain", "1"}));
  // Inside job 41 until 50 s from now: it drains 25 s before (at most half
  // its time), so it serves first.
  const int64_t end_s = absl::ToUnixSeconds(absl::Now()) + 50;
  ChildProcess* job_agent = h_.StartAgent(
      kNode,
      {"--root", h_.Join("sim/k100/root"), "--model-root", h_.Join("sim/k100/models"), "--env-root",
       h_.Join("sim/k100/envs"), "--hip_library", build_ + "/testlibs/hip_good/libamdhip64.so",
       "--container-cli", "none", "--drain-before", "25", "--drain-stop-margin", "2"},
      {{"FAKE_HIP_DEVICES", ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))},
       {"SLURM_JOB_ID", "41"},
       {"SLURM_JOB_PARTITION", "dcu"},
       {"SLURMD_NODENAME", "n1"},
       {"ROCR_VISIBLE_DEVICES", "0,1,2,3"},
       {"SLURM_JOB_END_TIME", absl::StrCat(end_s)}});
  ASSERT_TRUE(h_.WaitNodeState(kNode, "NODE_READY", 30)) << h_.Logs();
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--wait", "--wait-timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  ASSERT_EQ(h_.Deployment("qwen3-32b")["deployment"]["replicas"][0]["node"], kNode);
  // The other node, outside any job.
  h_.StartAgent("node-b",
                {"--root", h_.Join("sim-b/k100/root"), "--model-root", h_.Join("sim-b/k100/models"),
                 "--env-root", h_.Join("sim-b/k100/envs"), "--hip_library",
                 build_ + "/testlibs/hip_good/libamdhip64.so", "--container-cli", "none"},
                {{"FAKE_HIP_DEVICES", ReadFileOrEmpty(h_.Join("sim-b/k100/hip-devices"))}});
  ASSERT_TRUE(h_.WaitNodeState("node-b", "NODE_READY", 30)) << h_.Logs();
  ASSERT_TRUE(g_.StartGateway({"--controller", h_.Addr()}, /*use_file=*/false)) << g_.Logs();
  ASSERT_TRUE(WaitFor([&] { return GatewayServes("qwen3-32b"); }, absl::Seconds(20)))
      << g_.Logs() << h_.Logs();

  int answered = 0, failed = 0;
  bool shown_draining = false;
  const absl::Time give_up = absl::Now() + absl::Seconds(90);
  absl::Time next_look;
  std::string failures;
  while (job_agent->Running() && absl::Now() < give_up) {
    const int status = Chat("qwen3-32b");
    (status == 200 ? answered : failed)++;
    if (status != 200) {
      absl::StrAppend(&failures, absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()),
                      " HTTP ", status, "\n");
    }
    if (absl::Now() >= next_look) {
      next_look = absl::Now() + absl::Seconds(1);
      auto nodes = h_.Dcuctl({"get", "nodes"});
      shown_draining |= absl::StrContains(nodes.out, "Ready,Draining");
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_FALSE(job_agent->Running()) << "the drained agent leaves\n" << h_.Logs();
  EXPECT_EQ(job_agent->Wait(absl::Seconds(5)), 0);
  EXPECT_THAT(job_agent->Log(), HasSubstr("draining: slurm job '41' ends at "));
  EXPECT_THAT(job_agent->Log(), HasSubstr("drained, nothing runs here any more"));
  EXPECT_TRUE(shown_draining) << "dcuctl get nodes shows the drain";
  EXPECT_EQ(failed, 0) << answered << " answered; failed:\n" << failures << g_.Logs() << h_.Logs();
  EXPECT_GT(answered, 20);
  // The replica serves from the other node, and kept serving.
  nlohmann::json d = h_.Deployment("qwen3-32b");
  ASSERT_EQ(d["deployment"]["replicas"].size(), 1u) << d.dump(1);
  EXPECT_EQ(d["deployment"]["replicas"][0]["node"], "node-b");
  EXPECT_EQ(Chat("qwen3-32b"), 200);
  EXPECT_TRUE(h_.WaitNodeState(kNode, "NODE_LOST", 10));
  auto node = h_.Json({"get", "node", kNode});
  EXPECT_THAT(node.dump(), HasSubstr("drained"));
  // Every step is an event a person can read.
  auto events = h_.Dcuctl({"describe", "deployment", "qwen3-32b"});
  EXPECT_THAT(events.out, HasSubstr("ReplicaMoved"));
  EXPECT_THAT(events.out, HasSubstr("out of rotation"));
}

// dcuctl apikey: keys kept by the controller as hashes, enforced by every
// gateway within a second of being created or revoked.
TEST_F(GatewayControllerTest, ApiKeysMadeWithDcuctlAreEnforcedByTheGatewayAndRevoked) {
  DeployQwen();
  ASSERT_TRUE(g_.StartGateway({"--controller", h_.Addr()}, /*use_file=*/false)) << g_.Logs();
  ASSERT_TRUE(WaitFor([&] { return GatewayServes("qwen3-32b"); }, absl::Seconds(20))) << g_.Logs();
  EXPECT_EQ(Chat("qwen3-32b"), 200) << "no key exists yet: open";

  auto made = h_.Dcuctl({"apikey", "create", "app", "--models", "qwen3-32b"});
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  std::vector<std::string> lines = absl::StrSplit(made.out, '\n');
  ASSERT_GE(lines.size(), 2u);
  const std::string key = lines[1];
  ASSERT_TRUE(absl::StartsWith(key, "dcu-")) << made.out;
  auto other = h_.Dcuctl({"apikey", "create", "other", "--models", "some-other-model", "-o", "json"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  const std::string other_key = nlohmann::json::parse(other.out)["secret"].get<std::string>();
  EXPECT_EQ(h_.Dcuctl({"apikey", "create", "app"}).exit_code, 1) << "the name is taken";
  EXPECT_EQ(h_.Dcuctl({"apikey", "create", "bad name"}).exit_code, 2);

  ASSERT_TRUE(WaitFor([&] { return Chat("qwen3-32b") == 401; }, absl::Seconds(10)))
      << "a key exists: a request without one is refused";
  EXPECT_EQ(Chat("qwen3-32b", key), 200);
  EXPECT_EQ(Chat("qwen3-32b", other_key), 403) << "out of its scope";
  EXPECT_EQ(Chat("qwen3-32b", "dcu-not-a-key"), 401);
  EXPECT_EQ(Chat("nonexistent", "dcu-not-a-key"), 401) << "no model list for a bad key";
  auto models = g_.Get(g_.gateway_port(), "/v1/models");
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->status, 401);

  auto list = h_.Dcuctl({"apikey", "list", "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("\"app\""));
  EXPECT_THAT(list.out, Not(HasSubstr(key)));
  EXPECT_THAT(list.out, Not(HasSubstr(common::Sha256Hex(key))));

  ASSERT_EQ(h_.Dcuctl({"apikey", "revoke", "app"}).exit_code, 0);
  EXPECT_EQ(h_.Dcuctl({"apikey", "revoke", "app"}).exit_code, 3);
  EXPECT_TRUE(WaitFor([&] { return Chat("qwen3-32b", key) == 401; }, absl::Seconds(10)));
  EXPECT_THAT(g_.gateway()->Log(), Not(HasSubstr(key)));
  EXPECT_THAT(h_.Logs(), Not(HasSubstr(key)));
}

// kubectl's scale to zero, end to end: the engine process stops, the
// gateway refuses a request for the model at once (not after its queue
// timeout, not 404) saying how to scale it up; `get` shows 0/0; a scale up
// serves again under the same deployment.
TEST_F(GatewayControllerTest, ScaledToZeroTheEngineStopsTheGatewayRefusesAtOnceAndAScaleUpServes) {
  DeployQwen();
  // A queue timeout far beyond the test's: a refusal that comes is the
  // scaled-to-zero one, not the queue's.
  ASSERT_TRUE(g_.StartGateway({"--controller", h_.Addr(), "--queue-timeout", "600"},
                              /*use_file=*/false))
      << g_.Logs();
  ASSERT_TRUE(WaitFor([&] { return GatewayServes("qwen3-32b"); }, absl::Seconds(20))) << g_.Logs();
  EXPECT_EQ(Chat("qwen3-32b"), 200) << g_.Logs();
  nlohmann::json before = h_.Deployment("qwen3-32b");
  const std::string uid = before["deployment"]["uid"].get<std::string>();
  const std::string endpoint = before["deployment"]["status"]["endpoint"].get<std::string>();
  const int engine_port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  ASSERT_EQ(g_.Get(engine_port, "/health")->status, 200);

  auto zero = h_.Dcuctl({"scale", "deployment", "qwen3-32b", "--replicas", "0", "--wait", "--timeout", "60"});
  ASSERT_EQ(zero.exit_code, 0) << zero.out << zero.err << h_.Logs();
  EXPECT_THAT(zero.out, HasSubstr("scaled to zero (no instance runs)"));
  // The engine's process is gone: its port answers nothing.
  EXPECT_FALSE(g_.Get(engine_port, "/health").ok()) << "the engine still answers on " << engine_port;
  auto get = h_.Dcuctl({"get", "deployments"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("0/0"));
  EXPECT_THAT(get.out, HasSubstr("ScaledToZero"));
  // Its last instance's log went with it: not there (3), saying why and
  // what starts one, not "try the node again" (4) as before.
  auto logs = h_.Dcuctl({"logs", "qwen3-32b", "--tail", "5"});
  EXPECT_EQ(logs.exit_code, 3) << logs.out << logs.err;
  EXPECT_THAT(logs.err, HasSubstr("deployment 'qwen3-32b' is scaled to zero"));
  EXPECT_THAT(logs.err, HasSubstr("'dcuctl scale deployment qwen3-32b --replicas 1' starts one again"));
  EXPECT_EQ(h_.Dcuctl({"logs", "qwen3-32b", "-f"}, 20).exit_code, 3) << "-f has nothing to follow";

  // /v1/models lists what serves; the gateway still knows the name, and
  // says why it does not serve it (not 404, not a wait in the queue).
  EXPECT_TRUE(WaitFor([&] { return !GatewayServes("qwen3-32b"); }, absl::Seconds(20)));
  common::HttpResponse refused;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = g_.Post(g_.gateway_port(), "/v1/chat/completions",
                         R"({"model": "qwen3-32b", "messages": [{"role": "user", "content": "hi"}]})");
        if (!r.ok()) return false;
        refused = *r;
        return r->status == 503;
      },
      absl::Seconds(20)))
      << g_.Logs();
  auto error = nlohmann::json::parse(refused.body, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << refused.body;
  EXPECT_EQ(error["error"]["code"], "model_scaled_to_zero") << refused.body;
  EXPECT_THAT(error["error"]["message"].get<std::string>(),
              HasSubstr("dcuctl scale deployment qwen3-32b --replicas 1"));

  auto up = h_.Dcuctl({"scale", "deployment", "qwen3-32b", "--replicas", "1", "--wait", "--timeout", "90"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err << h_.Logs();
  EXPECT_TRUE(WaitFor([&] { return Chat("qwen3-32b") == 200; }, absl::Seconds(20))) << g_.Logs();
  nlohmann::json after = h_.Deployment("qwen3-32b");
  EXPECT_EQ(after["deployment"]["uid"].get<std::string>(), uid);
  EXPECT_EQ(after["deployment"]["status"]["phase"], "DEPLOYMENT_READY");
}

}  // namespace
}  // namespace dcu::testing
