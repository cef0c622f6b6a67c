// dcu-agent inside a real Slurm job (issue 20): slurmctld + 2 slurmd on
// loopback (tests/testing/slurm_cluster), a real dcu-controller, and a
// batch job that runs dcu-agent on seed 000's simulated K100_AI node
// (scripts/lib/simfleet.sh: fixture root, the test libamdhip64). The job's
// allocation alone decides which of the node's 8 devices the controller
// sees; scancel makes the agent say goodbye and stop its instances, and a
// job near its time limit drains and leaves before Slurm ends it.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/slurm_cluster.h"

namespace dcu::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SlurmAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmCluster::MissingBinaries(); !why.empty()) GTEST_SKIP() << why;
    build_ = std::filesystem::path(BinDir()).parent_path().string();
    std::filesystem::create_directories(h_.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      std::filesystem::copy(SourceDir() + "/deploy/catalog/" + sub, h_.Join(std::string("catalog/") + sub),
                            std::filesystem::copy_options::recursive);
    }
    auto r = RunCmd({"/bin/bash", SourceDir() + "/scripts/lib/simfleet.sh", h_.Join("sim"), build_, "seed000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::filesystem::remove_all(h_.Join("sim/k100/envs/vllm-0.11.0-dtk2604"));
    ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                    "--reconcile-interval", "0.2", "--not-ready-after", "5", "--lost-after",
                                    "60"}))
        << h_.Logs();
    SlurmClusterOptions o;
    o.nodes = 2;
    o.gres_names = {"dcu", "gpu"};
    auto c = SlurmCluster::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }

  // The job script a site would write (docs/slurm.md): dcu-agent in the
  // foreground, named after the Slurm node, state under the job's own dir.
  std::string WriteJobScript(const std::vector<std::string>& extra = {}) {
    std::string path = h_.Join("agent-job.sh");
    auto q = [](const std::string& s) { return absl::StrCat("'", s, "'"); };
    std::ofstream script(path);
    script << "#!/bin/bash\n"
           << "exec " << q(BinPath("dcu-agent")) << " --controller " << q(h_.Addr())
           << " --node \"k100-$SLURMD_NODENAME\""
           << " --state-dir " << q(h_.Join("state")) << "/\"job-$SLURM_JOB_ID\""
           << " --root " << q(h_.Join("sim/k100/root")) << " --model-root "
           << q(h_.Join("sim/k100/models")) << " --env-root " << q(h_.Join("sim/k100/envs"))
           << " --hip_library " << q(build_ + "/testlibs/hip_good/libamdhip64.so")
           << " --container-cli none --max-backoff 0.5";
    for (const std::string& arg : extra) script << " " << q(arg);
    script << "\n";
    script.close();
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  absl::StatusOr<std::string> SubmitAgent(const std::string& node, const std::string& gres) {
    return cluster_->Submit({"-w", node, "--gres=" + gres, "-t", "30", "-J", "dcu-agent", "-o",
                             h_.Join("agent-job-%j.log"), WriteJobScript()},
                            {{"FAKE_HIP_DEVICES", ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))}});
  }
  nlohmann::json Node(const std::string& name) {
    nlohmann::json j = h_.Json({"get", "nodes"});
    if (j.is_object() && j.contains("nodes")) {
      for (const auto& n : j["nodes"]) {
        if (n["name"] == name) return n;
      }
    }
    return nlohmann::json::object();
  }
  std::vector<int> DeviceIndices(const nlohmann::json& node) {
    std::vector<int> out;
    for (const auto& d : node["inventory"]["devices"]) out.push_back(d.value("index", 0));
    return out;
  }
  // Another job holds devices 0 and 1 of `node` (seed 000's device 0 holds
  // a dead instance's 59 GiB: a TP 2 replica fits only on the next two).
  void TakeFirstTwoDevices(const std::string& node, const std::string& gres) {
    auto other = cluster_->Submit(
        {"-w", node, "--gres=" + gres + ":2", "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"});
    ASSERT_TRUE(other.ok()) << other.status();
    ASSERT_TRUE(cluster_->WaitJobState(*other, "RUNNING", absl::Seconds(20))) << cluster_->Logs();
  }
  std::string JobLog(const std::string& id) { return ReadFileOrEmpty(h_.Join("agent-job-" + id + ".log")); }
  std::string Why(const std::string& id) { return absl::StrCat(JobLog(id), "\n", h_.Logs(), "\n", cluster_->Logs()); }

  FleetHarness h_;
  std::string build_;
  std::unique_ptr<SlurmCluster> cluster_;
};

// GRES "dcu" sets no device variable: the agent asks scontrol, and reports
// only the two devices Slurm gave it after another job took three.
TEST_F(SlurmAgentTest, DcuJobReportsOnlyItsDevicesAndTheJobThenSaysGoodbyeOnScancel) {
  auto other = cluster_->Submit({"-w", "n1", "--gres=dcu:3", "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"});
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(cluster_->WaitJobState(*other, "RUNNING", absl::Seconds(20))) << cluster_->Logs();
  auto job = SubmitAgent("n1", "dcu:2");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(h_.WaitNodeState("k100-n1", "NODE_READY", 40)) << Why(*job);

  nlohmann::json n = Node("k100-n1");
  EXPECT_THAT(DeviceIndices(n), ElementsAre(3, 4)) << n.dump(2);
  const nlohmann::json& a = n["inventory"]["allocation"];
  EXPECT_EQ(a["scheduler"], "slurm");
  EXPECT_EQ(a["job_id"], *job);
  EXPECT_EQ(a["partition"], "dcu");
  EXPECT_EQ(a["scheduler_node"], "n1");
  EXPECT_EQ(a["cluster"], "dcutest");
  EXPECT_EQ(a["devices_from"], "scontrol -d show job");
  // int64 travels as a JSON string. The job's 30-minute limit from now.
  int64_t end_ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(a.value("end_time_ms", std::string()), &end_ms)) << a.dump();
  int64_t now_ms = absl::ToUnixMillis(absl::Now());
  EXPECT_GT(end_ms, now_ms + 25 * 60 * 1000);
  EXPECT_LT(end_ms, now_ms + 31 * 60 * 1000);
  CmdResult wide = h_.Dcuctl({"get", "nodes", "-o", "wide"});
  EXPECT_THAT(wide.out, ::testing::ContainsRegex(absl::StrCat("slurm ", *job, " \\(dcu\\), 2[89]m left"))) << wide.out;

  // scancel: SIGTERM to the job; the agent says goodbye, the node is Lost
  // at once (lost-after is 60 s), and the agent exits before SIGKILL.
  absl::Time cancelled = absl::Now();
  CmdResult cancel = cluster_->Client({"scancel", *job});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  ASSERT_TRUE(h_.WaitNodeState("k100-n1", "NODE_LOST", 10)) << Why(*job);
  EXPECT_LT(absl::Now() - cancelled, absl::Seconds(10));
  EXPECT_THAT(Node("k100-n1").value("state_reason", ""),
              HasSubstr(absl::StrCat("agent left: slurm job '", *job, "' was told to end (SIGTERM)")));
  ASSERT_TRUE(cluster_->WaitJobEnded(*job, absl::Seconds(20))) << Why(*job);
  EXPECT_THAT(JobLog(*job), HasSubstr("goodbye said, instances stopped")) << Why(*job);
}

// GRES "gpu": Slurm's own SLURM_JOB_GPUS names the devices; a replica
// placed on the job's node is stopped by the agent when the job is
// cancelled (its instance runs in its own session, which proctrack/pgid
// would leave running on devices the job no longer holds).
TEST_F(SlurmAgentTest, GpuJobServesOnItsDevicesAndStopsTheReplicaWhenCancelled) {
  std::ofstream(h_.Join("sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"), std::ios::trunc)
      << R"({"load_seconds": 0.3, "shards": 4})";
  // Devices 0 and 1 go to another job (seed 000's device 0 holds a dead
  // instance's 59 GiB anyway).
  ASSERT_NO_FATAL_FAILURE(TakeFirstTwoDevices("n2", "gpu"));
  auto job = SubmitAgent("n2", "gpu:2");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(h_.WaitNodeState("k100-n2", "NODE_READY", 40)) << Why(*job);
  nlohmann::json n = Node("k100-n2");
  EXPECT_THAT(DeviceIndices(n), ElementsAre(2, 3)) << n.dump(2);
  EXPECT_EQ(n["inventory"]["allocation"]["devices_from"], "SLURM_JOB_GPUS");

  // Other tests on this machine may run the same model: only the processes
  // this deployment added count.
  auto before = h_.Marked("qwen3-32b-");
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--wait", "--wait-timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Why(*job);
  std::map<int, std::string> ours;
  for (const auto& [pid, id] : h_.Marked("qwen3-32b-")) {
    if (!before.count(pid)) ours[pid] = id;
  }
  ASSERT_EQ(ours.size(), 1u);
  nlohmann::json d = h_.Deployment("qwen3-32b");
  EXPECT_EQ(d["deployment"]["status"]["phase"], "DEPLOYMENT_READY") << d.dump(2);

  ASSERT_EQ(cluster_->Client({"scancel", *job}).exit_code, 0);
  ASSERT_TRUE(h_.WaitNodeState("k100-n2", "NODE_LOST", 10)) << Why(*job);
  auto still_running = [&] {
    auto now = h_.Marked("qwen3-32b-");
    for (const auto& [pid, id] : ours) {
      if (now.count(pid) && now[pid] == id) return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitFor([&] { return !still_running(); }, absl::Seconds(20)))
      << "the replica outlived its job\n"
      << Why(*job);
  // Nowhere else to go: the deployment is no longer served.
  EXPECT_TRUE(WaitFor([&] { return h_.Deployment("qwen3-32b")["deployment"]["status"].value("phase", "") !=
                                   "DEPLOYMENT_READY"; },
                      absl::Seconds(10)))
      << h_.Deployment("qwen3-32b").dump(2);
  ASSERT_TRUE(cluster_->WaitJobEnded(*job, absl::Seconds(20))) << Why(*job);
  EXPECT_THAT(JobLog(*job), HasSubstr("goodbye said, instances stopped")) << Why(*job);
}

// The time limit as Slurm set it (a one-minute job): the agent drains
// --drain-before ahead of it while its replica, with nowhere else to go,
// keeps serving; it stops the replica --drain-stop-margin before the end
// and leaves, so Slurm never has to kill the job.
TEST_F(SlurmAgentTest, AJobNearItsTimeLimitDrainsThenLeavesBeforeSlurmEndsIt) {
  std::ofstream(h_.Join("sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"), std::ios::trunc)
      << R"({"load_seconds": 0.3, "shards": 4})";
  ASSERT_NO_FATAL_FAILURE(TakeFirstTwoDevices("n1", "dcu"));
  auto job = cluster_->Submit({"-w", "n1", "--gres=dcu:2", "-t", "1", "-J", "dcu-agent", "-o",
                               h_.Join("agent-job-%j.log"),
                               WriteJobScript({"--drain-before", "25", "--drain-stop-margin", "12"})},
                              {{"FAKE_HIP_DEVICES", ReadFileOrEmpty(h_.Join("sim/k100/hip-devices"))}});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(h_.WaitNodeState("k100-n1", "NODE_READY", 40)) << Why(*job);
  auto r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--wait", "--wait-timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Why(*job);

  // 25 s before the end Slurm gave the job, the node drains and says why.
  nlohmann::json n;
  ASSERT_TRUE(WaitFor([&] {
    n = Node("k100-n1");
    return n.contains("drain");
  }, absl::Seconds(60))) << Why(*job);
  EXPECT_THAT(n["drain"].value("reason", ""),
              ::testing::ContainsRegex(absl::StrCat("slurm job '", *job,
                                                    "' ends at 20[0-9-]+ [0-9:]+ UTC \\(time limit\\)")));
  CmdResult nodes = h_.Dcuctl({"get", "nodes"});
  EXPECT_THAT(nodes.out, ::testing::ContainsRegex("k100-n1 +Ready,Draining")) << nodes.out;
  // No other node: the replica serves on while the node drains.
  EXPECT_EQ(h_.Deployment("qwen3-32b")["deployment"]["status"].value("phase", ""), "DEPLOYMENT_READY");

  // 12 s before the end: the replica stops and the agent leaves.
  ASSERT_TRUE(h_.WaitNodeState("k100-n1", "NODE_LOST", 30)) << Why(*job);
  EXPECT_THAT(Node("k100-n1").value("state_reason", ""),
              HasSubstr("(time limit): drain deadline reached, instances stopped"));
  ASSERT_TRUE(cluster_->WaitJobEnded(*job, absl::Seconds(40))) << Why(*job);
  EXPECT_THAT(JobLog(*job), HasSubstr("goodbye said, instances stopped")) << Why(*job);
  EXPECT_THAT(JobLog(*job), ::testing::Not(HasSubstr("DUE TO TIME LIMIT"))) << Why(*job);
}

}  // namespace
}  // namespace dcu::testing
