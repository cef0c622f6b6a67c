// The loopback Slurm cluster itself (issue 20), and what Slurm 22.05 really
// puts in a job's environment for the GRES a DCU site names. These are the
// facts agent/inventory/slurm_allocation is written against.
#include "tests/testing/slurm_cluster.h"

#include "agent/inventory/slurm_allocation.h"
#include "common/process_runner.h"

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::testing {
namespace {

using ::testing::HasSubstr;

// KEY=VALUE lines of `env` as written into a job's output file.
std::map<std::string, std::string> ParseEnv(const std::string& text) {
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

class SlurmClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmCluster::MissingBinaries(); !why.empty()) GTEST_SKIP() << why;
    SlurmClusterOptions o;
    o.nodes = 2;
    o.gres_names = {"dcu", "gpu"};
    auto c = SlurmCluster::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  // Runs `env` in a batch job with these sbatch arguments; its environment.
  std::map<std::string, std::string> JobEnv(std::vector<std::string> args, std::string* job_id) {
    std::string out = cluster_->Join("job-%j.out");
    args.insert(args.end(), {"-o", out, "--wrap", "env"});
    auto id = cluster_->Submit(args);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return {};
    *job_id = *id;
    EXPECT_TRUE(cluster_->WaitJobEnded(*id, absl::Seconds(30))) << cluster_->Logs();
    return ParseEnv(ReadFileOrEmpty(cluster_->Join("job-" + *id + ".out")));
  }
  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmClusterTest, NodesAreIdleWithTheirGres) {
  CmdResult r = cluster_->Client({"sinfo", "-h", "-N", "-o", "%N %T %G"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("n1 idle dcu:8,gpu:8"));
  EXPECT_THAT(r.out, HasSubstr("n2 idle dcu:8,gpu:8"));
}

// A GRES named "gpu" with File= entries: the gres/gpu plugin sets the
// vendor variables and SLURM_JOB_GPUS (indices into gres.conf's File list).
// HIP_VISIBLE_DEVICES is not among them.
TEST_F(SlurmClusterTest, GpuGresSetsVisibleDevicesAndJobGpus) {
  std::string id;
  auto env = JobEnv({"--gres=gpu:2"}, &id);
  EXPECT_EQ(env["SLURM_JOB_ID"], id);
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "dcu");
  EXPECT_EQ(env["SLURM_JOB_GPUS"], "0,1");
  EXPECT_EQ(env["ROCR_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["GPU_DEVICE_ORDINAL"], "0,1");
  EXPECT_EQ(env.count("HIP_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env.count("SLURM_JOB_END_TIME"), 0u) << "22.05 does not export the end time";
}

// A GRES named "dcu" (what Hygon sites call it) has no plugin in Debian's
// Slurm: the job is given the devices but its environment names none of
// them. The allocation is still readable: `scontrol -d show job` lists the
// indices per node.
TEST_F(SlurmClusterTest, DcuGresSetsNoDeviceVariablesButScontrolNamesTheIndices) {
  std::string first_out = cluster_->Join("hold-%j.out");
  auto hold = cluster_->Submit({"-w", "n1", "--gres=dcu:3", "-t", "5", "-o", first_out, "--wrap", "sleep 60"});
  ASSERT_TRUE(hold.ok()) << hold.status();
  ASSERT_TRUE(cluster_->WaitJobState(*hold, "RUNNING", absl::Seconds(20))) << cluster_->Logs();
  auto second = cluster_->Submit({"-w", "n1", "--gres=dcu:2", "-t", "5", "-o", first_out, "--wrap", "sleep 60"});
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(cluster_->WaitJobState(*second, "RUNNING", absl::Seconds(20))) << cluster_->Logs();

  CmdResult show = cluster_->Client({"scontrol", "-d", "show", "job", *second});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("Nodes=n1 CPU_IDs="));
  EXPECT_THAT(show.out, HasSubstr("GRES=dcu:2(IDX:3-4)"));

  std::string id;
  auto env = JobEnv({"-w", "n2", "--gres=dcu:2"}, &id);
  EXPECT_EQ(env["SLURM_JOB_ID"], id);
  EXPECT_EQ(env["SLURMD_NODENAME"], "n2");
  for (const char* var : {"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                          "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"}) {
    EXPECT_EQ(env.count(var), 0u) << var << "=" << env[var];
  }
  // End time: squeue with SLURM_TIME_FORMAT=%s gives epoch seconds.
  CmdResult end = RunCmd({"squeue", "-h", "-j", *second, "-o", "%e"},
                         {{"SLURM_CONF", cluster_->conf_path()}, {"SLURM_TIME_FORMAT", "%s"}});
  ASSERT_EQ(end.exit_code, 0) << end.err;
  int64_t epoch = 0;
  EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(end.out), &epoch)) << end.out;
  EXPECT_GT(epoch, 1700000000);

  // The agent's reading of the same job, through the real commands.
  dcufleet::v1::NodeAllocation a;
  a.set_scheduler("slurm");
  a.set_job_id(*second);
  a.set_scheduler_node("n1");
  common::SubprocessRunner runner;
  agent::SlurmQueryOptions q;
  q.env = cluster_->ClientEnv();
  std::vector<std::string> notes;
  ASSERT_TRUE(agent::ResolveSlurmJob(runner, q, &a, &notes).ok());
  EXPECT_THAT(notes, ::testing::IsEmpty());
  EXPECT_THAT(std::vector<int>(a.device_indices().begin(), a.device_indices().end()), ::testing::ElementsAre(3, 4));
  EXPECT_EQ(a.devices_from(), "scontrol -d show job");
  EXPECT_EQ(a.end_time_ms(), epoch * 1000);

  // A job id Slurm does not know: the devices cannot be read, said so.
  dcufleet::v1::NodeAllocation unknown;
  unknown.set_job_id("99999");
  unknown.set_scheduler_node("n1");
  notes.clear();
  absl::Status s = agent::ResolveSlurmJob(runner, q, &unknown, &notes);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("slurm job '99999': none of SLURM_STEP_GPUS"));
  EXPECT_THAT(s.message(), HasSubstr("Invalid job id specified"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("end time unknown"));
}

}  // namespace
}  // namespace dcu::testing
