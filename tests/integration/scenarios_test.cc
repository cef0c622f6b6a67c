// The seed incidents replayed end to end (issue 7): real dcu-controller,
// dcu-agent and dcuctl processes on loopback; simulated nodes built by
// scripts/lib/simfleet.sh from recorded sysfs trees, a test-built
// libamdhip64 for the device view, and fake conda envs whose fake vLLM fails
// exactly as the reports describe. The controller starts with the seed
// stacks and models but none of the seeds' evidence: it has to learn.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/http_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using testing::FleetHarness;

std::string Sha(const std::string& path) { return testing::ReadFileOrEmpty(path); }

class ScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string sim = testing::SourceDir() + "/scripts/lib/simfleet.sh";
    build_ = std::filesystem::path(testing::BinDir()).parent_path().string();
    // The replay catalog: the seeds' stacks and models, no evidence.
    std::filesystem::create_directories(h_.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      std::filesystem::copy(testing::SourceDir() + "/deploy/catalog/" + sub,
                            h_.Join(std::string("catalog/") + sub),
                            std::filesystem::copy_options::recursive);
    }
    sim_ = sim;
  }
  bool BuildSim(const std::string& scenario) {
    auto r = testing::RunCmd({"/bin/bash", sim_, h_.Join("sim"), build_, scenario});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0;
  }
  std::vector<std::string> K100Args() {
    return {"--root", h_.Join("sim/k100/root"), "--model-root", h_.Join("sim/k100/models"),
            "--env-root", h_.Join("sim/k100/envs"), "--hip_library",
            build_ + "/testlibs/hip_good/libamdhip64.so", "--container-cli", "none",
            "--status-interval", "0.5"};
  }
  std::map<std::string, std::string> K100Env() {
    return {{"FAKE_HIP_DEVICES", testing::ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))}};
  }

  FleetHarness h_;
  std::string build_, sim_;
};

TEST_F(ScenarioTest, Seed000Qwen3_32bOnK100AiReachesServingWithNoHumanStep) {
  ASSERT_TRUE(BuildSim("seed000"));
  ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.5",
                                  "--reconcile-interval", "0.2"}));
  h_.StartAgent("node-k100", K100Args(), K100Env());
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 20)) << h_.Logs();
  std::string config = h_.Join("sim/k100/models/Qwen3-32B/config.json");
  std::string config_before = Sha(config);

  // The node as the agent sees it: device 0's device view says 4.8 GiB free
  // while the host view says empty; the gap is unreclaimed and explained.
  testing::CmdResult node = h_.Dcuctl({"describe", "node", "node-k100"});
  EXPECT_THAT(node.out, HasSubstr("4.80 GiB"));
  EXPECT_THAT(node.out, HasSubstr("59.18 GiB"));

  absl::Time start = absl::Now();
  testing::CmdResult deploy = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "4", "--watch",
                                         "--wait-timeout", "120"});
  absl::Duration took = absl::Now() - start;
  ASSERT_EQ(deploy.exit_code, 0) << deploy.out << deploy.err << h_.Logs();
  EXPECT_THAT(deploy.out, HasSubstr("is ready"));

  nlohmann::json d = h_.Deployment("qwen3-32b");
  const auto& st = d["deployment"]["status"];
  ASSERT_EQ(st["phase"], "DEPLOYMENT_READY");
  ASSERT_EQ(st["attempts"].size(), 2u) << d.dump(2);
  // Attempt 1: vLLM 0.11.0 with triton 3.1.0 cannot target gfx928.
  EXPECT_EQ(st["attempts"][0]["stack_id"], "vllm-0.11.0-bare-dtk2604");
  EXPECT_EQ(st["attempts"][0]["findings"][0]["failure_class"], "triton_unsupported_gpu_target");
  // Attempt 2: failover straight to vLLM 0.9.2 bare, which serves.
  EXPECT_EQ(st["attempts"][1]["stack_id"], "vllm-0.9.2-bare-dtk2504");
  EXPECT_EQ(st["attempts"][1]["phase"], "INSTANCE_READY");
  // Device 0 (59 GiB stranded) avoided; TP=4 as asked.
  std::vector<int> devices = st["attempts"][1]["placement"]["device_indices"];
  EXPECT_EQ(devices.size(), 4u);
  EXPECT_EQ(std::count(devices.begin(), devices.end(), 0), 0);
  // The config was flagged and remediated without touching the user's file.
  EXPECT_EQ(st["attempts"][1]["config_remediation"], "overlay_dir");
  EXPECT_EQ(Sha(config), config_before);
  std::vector<std::string> reasons;
  for (const auto& e : d["events"]) reasons.push_back(e["reason"]);
  EXPECT_THAT(reasons, ::testing::IsSupersetOf({"Created", "ConfigAudit", "ConfigRemediated",
                                                "Scheduled", "Failed", "Failover", "Ready"}));
  // The story is told in the order it happened.
  auto pos = [&](const std::string& r) {
    return std::find(reasons.begin(), reasons.end(), r) - reasons.begin();
  };
  EXPECT_LT(pos("Created"), pos("Scheduled"));
  EXPECT_LT(pos("Failed"), pos("Failover"));
  EXPECT_LT(pos("Failover"), pos("Ready"));

  // A completion through the instance's own port.
  int port = st["attempts"][1]["placement"]["port"];
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.method = "POST";
  req.host = "127.0.0.1";
  req.port = port;
  req.path = "/v1/completions";
  req.body = R"({"model":"qwen3-32b","prompt":"1+1=","max_tokens":5})";
  req.headers.push_back({"Content-Type", "application/json"});
  auto resp = http.Send(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200);
  EXPECT_THAT(resp->body, HasSubstr("text_completion"));

  // The matrix learned: 0.11.0 is broken on gfx928, 0.9.2 works.
  testing::CmdResult stacks = h_.Dcuctl({"get", "stacks", "--arch", "gfx928"});
  EXPECT_THAT(stacks.out, HasSubstr("broken"));

  // A second deployment of the same model goes straight to the working plan.
  testing::CmdResult again = h_.Dcuctl({"deploy", "qwen3-32b", "--name", "qwen3-32b-b", "--tp",
                                        "2", "--wait", "--wait-timeout", "120"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err << h_.Logs();
  nlohmann::json d2 = h_.Deployment("qwen3-32b-b");
  ASSERT_EQ(d2["deployment"]["status"]["attempts"].size(), 1u);
  EXPECT_EQ(d2["deployment"]["status"]["attempts"][0]["stack_id"], "vllm-0.9.2-bare-dtk2504");

  // Control-plane time: the fake server simulates 1.5 s + 3 s of loading.
  std::cout << "[scenario 1] deploy to ready: " << absl::FormatDuration(took)
            << " wall (fake server load included)\n";

  // Delete: nothing of ours left running.
  testing::CmdResult del = h_.Dcuctl({"delete", "deployment", "qwen3-32b", "--wait"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  testing::CmdResult del2 = h_.Dcuctl({"delete", "deployment", "qwen3-32b-b", "--wait"});
  EXPECT_EQ(del2.exit_code, 0) << del2.err;
  bool gone = testing::WaitFor([] { return testing::MarkedProcesses("qwen3-32b").empty(); },
                               absl::Seconds(20));
  std::string left;
  for (const auto& [pid, id] : testing::MarkedProcesses("qwen3-32b")) {
    absl::StrAppend(&left, pid, " ", id, " ", testing::ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline")), "\n");
  }
  EXPECT_TRUE(gone) << left << h_.Logs();
}

}  // namespace
}  // namespace dcu
