// The controller provisions through Slurm (issue 20): slurmctld + 2 slurmd
// on loopback (tests/testing/slurm_cluster), a real dcu-controller with a
// Slurm pool (--pools), and no agent started by the test: the controller
// submits the dcu-agent job itself (sbatch), the agent inside it reports
// only the job's devices of seed 000's simulated K100_AI node
// (scripts/lib/simfleet.sh), the replica is placed there, and the job is
// cancelled (scancel) when the deployment goes. A job cancelled from
// outside makes its node Lost within seconds and the replica comes back
// through a new job, and the first job's node is forgotten a while after
// (--forget-job-nodes-after). Other jobs occupy the cluster so that the pool's job
// waits, with Slurm's reason in `dcuctl describe deployment`. A dcu-gateway
// that learns replicas from the controller serves the model from the job's
// node, and from the second job's node after the first was cancelled.
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/gateway/gateway_fixture.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/slurm_cluster.h"

namespace dcu::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SlurmPoolTest : public ::testing::Test {
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
    std::ofstream(h_.Join("sim/k100/envs/vllm-0.9.2-dtk2504/share/fake-vllm/scenario.json"), std::ios::trunc)
        << R"({"load_seconds": 0.3, "shards": 4})";
    SlurmClusterOptions o;
    o.nodes = 2;
    o.gres_names = {"dcu"};
    auto c = SlurmCluster::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    ASSERT_TRUE(h_.StartController({"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                    "--reconcile-interval", "0.2", "--not-ready-after", "5",
                                    "--lost-after", "60", "--forget-job-nodes-after", "5",
                                    "--pools", WritePools()}))
        << h_.Logs();
  }

  // The pool a site would configure (docs/slurm.md), pointed at the test
  // cluster; the agent's flags are the simulated node's.
  std::string WritePools() {
    // A text-format string.
    auto q = [](const std::string& s) {
      return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
    };
    std::string path = h_.Join("pools.txtpb");
    std::ofstream(path) << "slurm {\n"
                        << "  name: \"hpc\"\n  partition: \"dcu\"\n  device_type: \"dcu\"\n"
                        << "  gres { key: \"dcu\" value: \"dcu\" }\n"
                        << "  time_limit_minutes: 30\n  max_jobs: 2\n"
                        << "  agent_argv: " << q(BinPath("dcu-agent")) << "\n"
                        << "  agent_argv: \"--root\"\n  agent_argv: " << q(h_.Join("sim/k100/root")) << "\n"
                        << "  agent_argv: \"--model-root\"\n  agent_argv: " << q(h_.Join("sim/k100/models")) << "\n"
                        << "  agent_argv: \"--env-root\"\n  agent_argv: " << q(h_.Join("sim/k100/envs")) << "\n"
                        << "  agent_argv: \"--hip_library\"\n  agent_argv: "
                        << q(build_ + "/testlibs/hip_good/libamdhip64.so") << "\n"
                        << "  agent_argv: \"--container-cli\"\n  agent_argv: \"none\"\n"
                        << "  agent_argv: \"--max-backoff\"\n  agent_argv: \"0.5\"\n"
                        << "  agent_env { key: \"FAKE_HIP_DEVICES\" value: "
                        << q(std::string(absl::StripAsciiWhitespace(ReadFileOrEmpty(h_.Join("sim/k100/hip-devices")))))
                        << " }\n"
                        << "  state_dir: " << q(h_.Join("state")) << "\n"
                        << "  output: " << q(h_.Join("job-%j.log")) << "\n"
                        << "  slurm_conf: " << q(cluster_->conf_path()) << "\n"
                        << "  poll_interval_ms: 500\n  resubmit_after_ms: 1000\n"
                        << "}\n";
    return path;
  }
  // The pool's jobs as squeue lists them: id -> state.
  std::map<std::string, std::string> PoolJobs() {
    std::map<std::string, std::string> out;
    CmdResult r = cluster_->Client({"squeue", "-h", "--name=dcufleet-hpc", "-o", "%i %T"});
    for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipWhitespace())) {
      std::vector<std::string> f = absl::StrSplit(absl::StripAsciiWhitespace(line), ' ');
      if (f.size() == 2) out[f[0]] = f[1];
    }
    return out;
  }
  std::string RunningPoolJob() {
    for (const auto& [id, st] : PoolJobs()) {
      if (st == "RUNNING") return id;
    }
    return "";
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
  std::string Phase() {
    return h_.Deployment("qwen3-32b")["deployment"]["status"].value("phase", "");
  }
  std::string Why() {
    std::string jobs;
    for (const auto& e : std::filesystem::directory_iterator(h_.dir())) {
      if (absl::StartsWith(e.path().filename().string(), "job-")) {
        absl::StrAppend(&jobs, "--- ", e.path().string(), "\n", ReadFileOrEmpty(e.path().string()));
      }
    }
    return absl::StrCat(jobs, "\n", h_.Logs(), "\n", h_.Dcuctl({"describe", "deployment", "qwen3-32b"}).out,
                        "\n", cluster_->Logs());
  }

  bool GatewayServes(const std::string& model) {
    auto models = g_.Get(g_.gateway_port(), "/v1/models");
    return models.ok() && absl::StrContains(models->body, "\"id\":\"" + model + "\"");
  }
  // A chat completion through the gateway: the HTTP status and the body.
  std::pair<int, std::string> Chat(const std::string& model) {
    auto resp = g_.Post(g_.gateway_port(), "/v1/chat/completions",
                        nlohmann::json({{"model", model},
                                        {"messages", {{{"role", "user"}, {"content", "1+1="}}}},
                                        {"max_tokens", 3}})
                            .dump());
    if (!resp.ok()) return {-1, std::string(resp.status().message())};
    return {resp->status, resp->body};
  }

  FleetHarness h_;
  GatewayFixture g_;
  std::string build_;
  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmPoolTest, ProvisionsAJobForAReplicaThatFitsNoNodeAndCancelsItWithTheDeployment) {
  // The cluster is busy: n1's devices 0-1 stay taken (seed 000's device 0
  // holds a dead instance's memory anyway), 2-7 and all of n2 for now.
  auto keep = cluster_->Submit({"-w", "n1", "--gres=dcu:2", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"});
  ASSERT_TRUE(keep.ok()) << keep.status();
  ASSERT_TRUE(cluster_->WaitJobState(*keep, "RUNNING", absl::Seconds(20))) << cluster_->Logs();
  auto rest = cluster_->Submit({"-w", "n1", "--gres=dcu:6", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"});
  auto other = cluster_->Submit({"-w", "n2", "--gres=dcu:8", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"});
  ASSERT_TRUE(rest.ok() && other.ok());
  ASSERT_TRUE(cluster_->WaitJobState(*rest, "RUNNING", absl::Seconds(20))) << cluster_->Logs();
  ASSERT_TRUE(cluster_->WaitJobState(*other, "RUNNING", absl::Seconds(20))) << cluster_->Logs();

  // No node is registered: the controller submits a job and it waits.
  CmdResult d = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  std::string describe;
  ASSERT_TRUE(WaitFor([&] {
    describe = h_.Dcuctl({"describe", "deployment", "qwen3-32b"}).out;
    return absl::StrContains(describe, "PENDING (Resources)");
  }, absl::Seconds(20))) << describe << Why();
  EXPECT_THAT(describe, ::testing::ContainsRegex("Phase: +Pending"));
  EXPECT_THAT(describe, ::testing::ContainsRegex("pool 'hpc': slurm job [0-9]+ PENDING \\(Resources\\)"));
  auto jobs = PoolJobs();
  ASSERT_EQ(jobs.size(), 1u) << "one job for one replica";
  const std::string first = jobs.begin()->first;
  EXPECT_EQ(jobs.begin()->second, "PENDING");

  // Room on n1: the job runs there, its agent registers with only the
  // job's two devices, and the replica serves on them.
  ASSERT_EQ(cluster_->Client({"scancel", *rest}).exit_code, 0);
  const std::string node = "hpc-" + first;
  ASSERT_TRUE(h_.WaitNodeState(node, "NODE_READY", 40)) << Why();
  nlohmann::json n = Node(node);
  EXPECT_THAT(DeviceIndices(n), ElementsAre(2, 3)) << n.dump(2);
  EXPECT_EQ(n["inventory"]["allocation"]["job_id"], first);
  ASSERT_TRUE(WaitFor([&] { return Phase() == "DEPLOYMENT_READY"; }, absl::Seconds(60))) << Why();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  auto attempts = dep["deployment"]["status"]["attempts"];
  ASSERT_FALSE(attempts.empty());
  EXPECT_EQ(attempts.back()["placement"]["node"], node);

  // Through the gateway: one endpoint, wherever Slurm put the replica.
  ASSERT_TRUE(g_.StartGateway({"--controller", h_.Addr()}, /*use_file=*/false)) << g_.Logs();
  ASSERT_TRUE(WaitFor([&] { return GatewayServes("qwen3-32b"); }, absl::Seconds(20)))
      << g_.Logs() << Why();
  auto [status, body] = Chat("qwen3-32b");
  EXPECT_EQ(status, 200) << body << g_.Logs();
  EXPECT_THAT(body, HasSubstr("chat.completion")) << body;

  CmdResult pools = h_.Dcuctl({"get", "pools"});
  EXPECT_THAT(pools.out, ::testing::ContainsRegex(absl::StrCat(first, " +RUNNING +None +n1 +", node, " +qwen3-32b +2 ")))
      << pools.out << pools.err;
  CmdResult wide = h_.Dcuctl({"get", "nodes", "-o", "wide"});
  EXPECT_THAT(wide.out, ::testing::ContainsRegex(absl::StrCat(node, " .*slurm ", first, " \\(dcu\\), 2[89]m left")))
      << wide.out;

  // scancel from outside: the node is Lost within seconds (lost-after is
  // 60 s) and the replica comes back through a new job.
  absl::Time cancelled = absl::Now();
  ASSERT_EQ(cluster_->Client({"scancel", first}).exit_code, 0);
  ASSERT_TRUE(h_.WaitNodeState(node, "NODE_LOST", 10)) << Why();
  EXPECT_LT(absl::Now() - cancelled, absl::Seconds(10));
  std::string second;
  ASSERT_TRUE(WaitFor([&] {
    second = RunningPoolJob();
    return !second.empty() && second != first;
  }, absl::Seconds(40))) << Why();
  ASSERT_TRUE(h_.WaitNodeState("hpc-" + second, "NODE_READY", 40)) << Why();
  ASSERT_TRUE(WaitFor([&] { return Phase() == "DEPLOYMENT_READY"; }, absl::Seconds(60))) << Why();
  dep = h_.Deployment("qwen3-32b");
  EXPECT_EQ(dep["deployment"]["status"]["attempts"].back()["placement"]["node"], "hpc-" + second);
  // The first job's node, Lost since its job ended, is forgotten 5 s later
  // (--forget-job-nodes-after), with an event that says why.
  EXPECT_TRUE(WaitFor([&] { return Node(node).empty(); }, absl::Seconds(15))) << Node(node).dump(2);
  CmdResult forgotten = h_.Dcuctl({"get", "events", "--for", "node/" + node});
  EXPECT_THAT(forgotten.out, ::testing::ContainsRegex(absl::StrCat(
                                 "Normal +Forgotten +node/", node,
                                 " +forgotten: Lost for [0-9.]+s inside slurm job '", first, "'")))
      << forgotten.out;
  // The same endpoint answers from the second job's node.
  std::pair<int, std::string> again;
  EXPECT_TRUE(WaitFor([&] {
    again = Chat("qwen3-32b");
    return again.first == 200;
  }, absl::Seconds(20))) << again.first << " " << again.second << g_.Logs();

  // Deleted: the job that ran it is cancelled.
  CmdResult del = h_.Dcuctl({"delete", "deployment", "qwen3-32b", "--wait"});
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  ASSERT_TRUE(cluster_->WaitJobEnded(second, absl::Seconds(30))) << Why();
  EXPECT_TRUE(WaitFor([&] { return PoolJobs().empty() || RunningPoolJob().empty(); }, absl::Seconds(10)));
  EXPECT_THAT(ReadFileOrEmpty(h_.Join("controller.log")),
              HasSubstr(absl::StrCat("cancelling slurm job '", second, "'")));
}

}  // namespace
}  // namespace dcu::testing
