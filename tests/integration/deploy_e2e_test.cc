// Deploy durability with real processes (issue 5): the agent SIGKILLed while
// serving, the controller SIGKILLed in the middle of a deploy, a crash
// retried with back-off. Simulated K100_AI node from scripts/lib/simfleet.sh.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using testing::FleetHarness;

class DeployE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    build_ = std::filesystem::path(testing::BinDir()).parent_path().string();
    std::filesystem::create_directories(h_.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      std::filesystem::copy(testing::SourceDir() + "/deploy/catalog/" + sub,
                            h_.Join(std::string("catalog/") + sub),
                            std::filesystem::copy_options::recursive);
    }
    auto r = testing::RunCmd({"/bin/bash", testing::SourceDir() + "/scripts/lib/simfleet.sh",
                              h_.Join("sim"), build_, "seed000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Only the working env: these tests are about durability, not failover.
    std::filesystem::remove_all(h_.Join("sim/k100/envs/vllm-0.11.0-dtk2604"));
  }
  void StartController() {
    ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                    "--reconcile-interval", "0.2", "--not-ready-after", "5"}));
  }
  void StartAgent() {
    h_.StartAgent("node-k100",
                  {"--root", h_.Join("sim/k100/root"), "--model-root", h_.Join("sim/k100/models"),
                   "--env-root", h_.Join("sim/k100/envs"), "--hip_library",
                   build_ + "/testlibs/hip_good/libamdhip64.so", "--container-cli", "none"},
                  {{"FAKE_HIP_DEVICES", testing::ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))}});
  }
  std::string Phase(const std::string& name) {
    nlohmann::json d = h_.Deployment(name);
    if (!d.contains("deployment")) return "";
    return d["deployment"]["status"].value("phase", "");
  }
  void SetScenario(const std::string& json) {
    std::ofstream(h_.Join("sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"),
                  std::ios::trunc)
        << json;
  }
  FleetHarness h_;
  std::string build_;
};

TEST_F(DeployE2ETest, AgentKilledWhileServingReadoptsWithoutDuplicate) {
  SetScenario(R"({"load_seconds": 0.3, "shards": 4})");
  StartController();
  StartAgent();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--wait", "--wait-timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  auto before = h_.Marked("qwen3-32b-");
  ASSERT_EQ(before.size(), 1u);

  h_.StopAgent("node-k100", SIGKILL);
  // The instance lives on in its own session.
  EXPECT_EQ(h_.Marked("qwen3-32b-"), before);
  StartAgent();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  // Several reconcile passes and status reports later: same pid, one process,
  // still one attempt, still ready.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(h_.Marked("qwen3-32b-"), before);
  nlohmann::json d = h_.Deployment("qwen3-32b");
  EXPECT_EQ(d["deployment"]["status"]["phase"], "DEPLOYMENT_READY");
  EXPECT_EQ(d["deployment"]["status"]["attempts"].size(), 1u);
  EXPECT_THAT(testing::ReadFileOrEmpty(h_.Join("node-k100.log")), HasSubstr("re-adopted"));
}

TEST_F(DeployE2ETest, ControllerKilledMidDeployCompletesOnce) {
  // Loading takes a while, so the kill lands while the instance loads.
  SetScenario(R"({"load_seconds": 3, "shards": 8})");
  StartController();
  StartAgent();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(testing::WaitFor([&] { return !h_.Marked("qwen3-32b-").empty(); },
                               absl::Seconds(20)))
      << h_.Logs();
  h_.KillController(SIGKILL);
  StartController();
  ASSERT_TRUE(testing::WaitFor([&] { return Phase("qwen3-32b") == "DEPLOYMENT_READY"; },
                               absl::Seconds(60)))
      << h_.Logs();
  nlohmann::json d = h_.Deployment("qwen3-32b");
  EXPECT_EQ(d["deployment"]["status"]["attempts"].size(), 1u) << d.dump(2);
  EXPECT_EQ(h_.Marked("qwen3-32b-").size(), 1u);
}

TEST_F(DeployE2ETest, CrashIsRetriedWithBackOffThenServes) {
  // Every launch dies 1 s after it serves, killed with no explanation (as
  // the OOM killer does): a signal death while serving, retried with
  // back-off and never held against the stack.
  SetScenario(R"({"load_seconds": 0.2, "shards": 2,
                 "crash": {"after_seconds": 1, "signal": 9, "lines": ["Killed"]}})");
  StartController();
  StartAgent();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--backoff", "1", "--backoff-max", "2",
                      "--wait", "--wait-timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  // Now it will crash; the reconciler backs off and relaunches.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        nlohmann::json d = h_.Deployment("qwen3-32b");
        return d.contains("deployment") && d["deployment"]["status"]["attempts"].size() >= 2;
      },
      absl::Seconds(30)))
      << h_.Logs();
  nlohmann::json d = h_.Deployment("qwen3-32b");
  std::vector<std::string> reasons;
  for (const auto& e : d["events"]) reasons.push_back(e["reason"]);
  EXPECT_THAT(reasons, ::testing::Contains("BackOff"));
  // A signal death of a server that was Ready, told by the real agent's
  // typed signal (this read "unknown" while the controller matched the
  // message's wording, which the agent prefixes with "process ").
  const auto& a0 = d["deployment"]["status"]["attempts"][0];
  EXPECT_EQ(a0["findings"][0]["failure_class"], "signal_while_serving") << a0.dump(2);
  EXPECT_EQ(a0.value("term_signal", 0), 9) << a0.dump(2);
  EXPECT_EQ(d["deployment"]["status"]["attempts"][1]["stack_id"], "vllm-0.9.2-bare-dtk2504");
}

// Issue 23, end to end: an engine that hangs at NCCL init is failed by the
// agent within the stack's stall window (2 s here, not the 600 s ceiling),
// and the controller's diagnosis names the phase it was stuck in.
TEST_F(DeployE2ETest, HangAtDistributedInitIsDiagnosedWithItsPhaseWithinTheStallWindow) {
  // The stack's own window at distributed init (catalog Stack.startup_stall).
  const std::string stack_file = h_.Join("catalog/stacks/vllm-0.9.2-bare-dtk2504.txtpb");
  std::string text = testing::ReadFileOrEmpty(stack_file);
  const size_t close = text.rfind('}');
  ASSERT_NE(close, std::string::npos);
  text.insert(close, "  startup_stall { distributed_init_s: 2 }\n");
  std::ofstream(stack_file, std::ios::trunc) << text;
  SetScenario(R"({"load_seconds": 0.2, "shards": 2, "hang_at": "distributed_init"})");
  StartController();
  StartAgent();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  const absl::Time t0 = absl::Now();
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--startup-timeout", "600",
                      "--backoff", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json first;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        nlohmann::json d = h_.Deployment("qwen3-32b");
        if (!d.contains("deployment")) return false;
        const auto& attempts = d["deployment"]["status"]["attempts"];
        if (attempts.empty() || !attempts[0].contains("findings") || attempts[0]["findings"].empty()) {
          return false;
        }
        first = attempts[0];
        return true;
      },
      absl::Seconds(40)))
      << h_.Logs();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(30)) << "failed by the ceiling, not the stall window";
  ASSERT_GE(first["findings"].size(), 1u) << first.dump(2);
  const auto& f = first["findings"][0];
  EXPECT_EQ(f["failure_class"], "startup_stalled") << first.dump(2);
  EXPECT_EQ(f["params"]["phase"], "starting");
  EXPECT_EQ(f["params"]["activity"], "distributed init");
  EXPECT_THAT(f["evidence"][0].get<std::string>(), HasSubstr("at starting (distributed init) after `"));
  EXPECT_THAT(f["evidence"][0].get<std::string>(), HasSubstr("ncclCommInitRank"));
  EXPECT_THAT(f["evidence"][0].get<std::string>(), HasSubstr("(stall window 2s)"));
  // Backing off on the same stack, which stays untouched by the evidence.
  auto stacks = h_.Dcuctl({"get", "stacks", "--arch", "gfx928", "-o", "json"});
  EXPECT_EQ(stacks.out.find("broken"), std::string::npos) << stacks.out;
}

}  // namespace
}  // namespace dcu
