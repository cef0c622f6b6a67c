#include "controller/core/node_pool.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_batch_scheduler.h"

namespace dcu::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

dcufleet::v1::SlurmPoolConfig Config() {
  dcufleet::v1::SlurmPoolConfig c;
  c.set_name("hpc");
  c.set_partition("dcu");
  c.set_account("proj1");
  c.set_time_limit_minutes(60);
  c.set_max_jobs(2);
  c.add_agent_argv("/opt/dcufleet/bin/dcu-agent");
  c.add_agent_argv("--model-root");
  c.add_agent_argv("/public/home/it's/models");
  (*c.mutable_agent_env())["FAKE_HIP_DEVICES"] = "a b";
  c.set_resubmit_after_ms(5000);
  return c;
}

class NodePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = NodePool::Create(Config(), &slurm_, &clock_);
    ASSERT_TRUE(p.ok()) << p.status();
    pool_ = std::move(*p);
    pool_->SetDefaultControllerAddress("ctl.example.org:7070");
    pool_->SetOnJobEnded([this](const std::string& id, const std::string& why) {
      ended_.push_back(id + ": " + why);
    });
  }
  NodePool::Demand Want(std::map<std::string, int> keys) {
    NodePool::Demand d;
    d.unplaceable = keys;
    for (const auto& [k, n] : keys) d.waiting.insert(k);
    return d;
  }
  common::FakeClock clock_;
  FakeBatchScheduler slurm_;
  std::unique_ptr<NodePool> pool_;
  std::vector<std::string> ended_;
};

TEST_F(NodePoolTest, SubmitsOneJobPerReplicaThatFitsNowhere) {
  pool_->SetDemand(Want({{"qwen", 4}}));
  pool_->SyncOnce();
  pool_->SyncOnce();
  ASSERT_EQ(slurm_.requests().size(), 1u);
  const BatchJobRequest r = slurm_.requests()[0];
  EXPECT_EQ(r.name, "dcufleet-hpc");
  EXPECT_EQ(r.comment, "qwen");
  EXPECT_EQ(r.partition, "dcu");
  EXPECT_EQ(r.account, "proj1");
  EXPECT_EQ(r.gres, "dcu");
  EXPECT_EQ(r.gres_count, 4);
  EXPECT_EQ(r.time_limit, absl::Minutes(60));
  std::string line;
  auto job = pool_->JobFor("qwen", &line);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state(), dcufleet::v1::POOL_JOB_PENDING);
  EXPECT_EQ(job->reason(), "Priority");
  EXPECT_EQ(job->node(), "hpc-100");
  EXPECT_EQ(line, "pool 'hpc': slurm job 100 PENDING (Priority)");
}

TEST_F(NodePoolTest, GresNameComesFromTheDeviceTypeMap) {
  auto c = Config();
  c.set_device_type("gpu");
  (*c.mutable_gres())["gpu"] = "dcu_k100";
  auto p = NodePool::Create(c, &slurm_, &clock_);
  ASSERT_TRUE(p.ok());
  (*p)->SetDefaultControllerAddress("x:1");
  (*p)->SetDemand(Want({{"a", 2}}));
  (*p)->SyncOnce();
  ASSERT_EQ(slurm_.requests().size(), 1u);
  EXPECT_EQ(slurm_.requests()[0].gres, "dcu_k100");
}

TEST_F(NodePoolTest, RespectsMaxJobs) {
  pool_->SetDemand(Want({{"a", 1}, {"b", 1}, {"c", 1}}));
  pool_->SyncOnce();
  EXPECT_EQ(slurm_.requests().size(), 2u);
  std::string line;
  EXPECT_FALSE(pool_->JobFor("c", &line).has_value());
  EXPECT_EQ(line, "pool 'hpc' is at its limit of 2 jobs");
}

TEST_F(NodePoolTest, CancelsAJobNobodyWaitsForUnlessItsNodeHoldsInstances) {
  pool_->SetDemand(Want({{"a", 1}, {"b", 1}}));
  pool_->SyncOnce();
  slurm_.Run("100", "n1");
  slurm_.Run("101", "n2");
  // Both replicas were placed on their jobs' nodes; then "b" is deleted.
  NodePool::Demand d;
  d.busy_jobs = {"100"};
  pool_->SetDemand(d);
  pool_->SyncOnce();
  EXPECT_THAT(slurm_.cancelled(), ElementsAre("101"));
  pool_->SyncOnce();
  EXPECT_THAT(slurm_.cancelled(), ElementsAre("101")) << "cancelled once";
}

TEST_F(NodePoolTest, AJobThatEndsIsReportedAndResubmittedAfterTheGrace) {
  pool_->SetDemand(Want({{"a", 2}}));
  pool_->SyncOnce();
  slurm_.Run("100", "n1");
  pool_->SyncOnce();
  slurm_.End("100", "TIMEOUT");
  pool_->SyncOnce();
  EXPECT_THAT(ended_, ElementsAre("100: slurm job '100' ended (TIMEOUT)"));
  EXPECT_EQ(slurm_.requests().size(), 1u) << "not again within resubmit_after";
  clock_.Advance(absl::Seconds(6));
  pool_->SyncOnce();
  EXPECT_EQ(slurm_.requests().size(), 2u);
  // A job that leaves the queue unseen (MinJobAge passed) has ended too.
  slurm_.Forget("101");
  pool_->SyncOnce();
  EXPECT_THAT(ended_, ElementsAre("100: slurm job '100' ended (TIMEOUT)",
                                  "101: slurm job '101' is no longer in the queue"));
}

TEST_F(NodePoolTest, WithoutSlurmsAnswerNothingIsDecided) {
  pool_->SetDemand(Want({{"a", 2}}));
  pool_->SyncOnce();
  slurm_.set_list_status(absl::UnavailableError("squeue: slurm_load_jobs error: Unable to contact"));
  slurm_.Forget("100");
  pool_->SyncOnce();
  EXPECT_THAT(ended_, IsEmpty());
  EXPECT_EQ(slurm_.requests().size(), 1u);
  EXPECT_THAT(pool_->View().error(), HasSubstr("Unable to contact"));
}

TEST_F(NodePoolTest, ASubmissionRefusedIsShownAndNotRetriedAtOnce) {
  slurm_.set_submit_status(absl::FailedPreconditionError(
      "sbatch refused (exit 1): Requested node configuration is not available"));
  pool_->SetDemand(Want({{"a", 16}}));
  pool_->SyncOnce();
  pool_->SyncOnce();
  std::string line;
  EXPECT_FALSE(pool_->JobFor("a", &line).has_value());
  EXPECT_THAT(line, HasSubstr("sbatch failed: sbatch refused (exit 1): Requested node configuration"));
}

TEST_F(NodePoolTest, FindsItsJobsAgainAfterARestart) {
  BatchJob j;
  j.id = "77";
  j.state = BatchJobState::kRunning;
  j.scheduler_state = "RUNNING";
  j.comment = "a";
  j.nodes = "n1";
  slurm_.Add("dcufleet-hpc", j);
  pool_->SetDemand(Want({{"a", 2}}));
  pool_->SyncOnce();
  EXPECT_THAT(slurm_.requests(), IsEmpty());
  std::string line;
  auto v = pool_->JobFor("a", &line);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->job_id(), "77");
  EXPECT_EQ(line, "pool 'hpc': slurm job 77 RUNNING on n1, waiting for node 'hpc-77'");
}

TEST_F(NodePoolTest, JobScriptQuotesEveryArgumentAndNamesTheNodeAfterTheJob) {
  std::string s = NodePool::JobScript(pool_->config(), pool_->ControllerAddress());
  EXPECT_THAT(s, HasSubstr("export FAKE_HIP_DEVICES='a b'\n"));
  EXPECT_THAT(s, HasSubstr("exec '/opt/dcufleet/bin/dcu-agent' '--model-root' "
                           "'/public/home/it'\\''s/models' --controller 'ctl.example.org:7070' "
                           "--node \"hpc-$SLURM_JOB_ID\" --state-dir \"${SLURM_TMPDIR:-/tmp}/hpc-$SLURM_JOB_ID\"\n"));
}

TEST(NodePoolConfigTest, BadConfigNamesThePoolAndField) {
  FakeBatchScheduler s;
  common::FakeClock clock;
  auto c = Config();
  c.set_partition("dcu --wrap=x");
  EXPECT_THAT(NodePool::Create(c, &s, &clock).status().message(),
              HasSubstr("slurm pool 'hpc': partition: required, a Slurm name"));
  c = Config();
  c.add_agent_argv("--node=x");
  EXPECT_THAT(NodePool::Create(c, &s, &clock).status().message(),
              HasSubstr("agent_argv: '--node=x' is set by the controller"));
  c = Config();
  c.set_name("Bad_Name");
  EXPECT_THAT(NodePool::Create(c, &s, &clock).status().message(), HasSubstr("name: must be"));
  c = Config();
  c.clear_agent_argv();
  EXPECT_THAT(NodePool::Create(c, &s, &clock).status().message(), HasSubstr("agent_argv: required"));
  c = Config();
  auto p = NodePool::Create(c, &s, &clock);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->CannotProvide(8), "");
  EXPECT_EQ((*p)->CannotProvide(9), "pool 'hpc' gives a job at most 8 devices, 9 needed");
}

}  // namespace
}  // namespace dcu::controller
