// The Slurm job's environment and outputs as the agent reads them (issue
// 20). The texts are what Slurm 22.05 printed in
// tests/integration/slurm/slurm_cluster_test; that test also runs
// ResolveSlurmJob against the real squeue and scontrol.
#include "agent/inventory/slurm_allocation.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int> Indices(const dcufleet::v1::NodeAllocation& a) {
  return {a.device_indices().begin(), a.device_indices().end()};
}

TEST(DeviceIndexListTest, ListsAndRanges) {
  EXPECT_THAT(*ParseDeviceIndexList("0,1", "X"), ElementsAre(0, 1));
  EXPECT_THAT(*ParseDeviceIndexList("3-5", "X"), ElementsAre(3, 4, 5));
  EXPECT_THAT(*ParseDeviceIndexList("0,2-3,7", "X"), ElementsAre(0, 2, 3, 7));
  EXPECT_THAT(*ParseDeviceIndexList(" 4 ", "X"), ElementsAre(4));
}

TEST(DeviceIndexListTest, HostileValuesNameTheVariableAndItem) {
  struct Case {
    const char* value;
    const char* says;
  };
  for (const Case& c : {Case{"", "item '' is not a device index"}, Case{"0,,1", "item ''"},
                        Case{"-1", "item '-1'"}, Case{"1024", "item '1024'"}, Case{"5-3", "item '5-3'"},
                        Case{"0,0", "device 0 named twice"}, Case{"1-3,2", "device 2 named twice"},
                        Case{"0;rm -rf /", "item '0;rm -rf /'"}, Case{"99999999999999999999", "is not a device"},
                        Case{"GPU-5e1c7b3a-aaaa", "device UUIDs are not supported"},
                        Case{"0x1", "item '0x1'"}, Case{"+1", "item '+1'"}}) {
    auto r = ParseDeviceIndexList(c.value, "SLURM_JOB_GPUS");
    ASSERT_FALSE(r.ok()) << c.value;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("SLURM_JOB_GPUS")) << c.value;
    EXPECT_THAT(r.status().message(), HasSubstr(c.says)) << c.value;
  }
  auto huge = ParseDeviceIndexList(std::string(5000, '1'), "ROCR_VISIBLE_DEVICES");
  EXPECT_THAT(huge.status().message(), HasSubstr("5000 characters"));
  auto control = ParseDeviceIndexList(std::string("1\x1b[2J"), "X");
  EXPECT_THAT(control.status().message(), HasSubstr("'1?[2J'"));
}

TEST(SlurmEnvironmentTest, NotInAJob) {
  auto a = ParseSlurmEnvironment({{"HIP_VISIBLE_DEVICES", "0"}});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
}

// What a --gres=gpu:2 batch job saw (slurm_cluster_test).
TEST(SlurmEnvironmentTest, GpuGresJob) {
  auto a = ParseSlurmEnvironment({{"SLURM_JOB_ID", "6"},
                                  {"SLURM_JOB_PARTITION", "dcu"},
                                  {"SLURMD_NODENAME", "n1"},
                                  {"SLURM_CLUSTER_NAME", "dcutest"},
                                  {"SLURM_JOB_GPUS", "2,3"},
                                  {"ROCR_VISIBLE_DEVICES", "2,3"},
                                  {"CUDA_VISIBLE_DEVICES", "2,3"},
                                  {"GPU_DEVICE_ORDINAL", "2,3"}});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  const auto& j = **a;
  EXPECT_EQ(j.scheduler(), "slurm");
  EXPECT_EQ(j.job_id(), "6");
  EXPECT_EQ(j.partition(), "dcu");
  EXPECT_EQ(j.scheduler_node(), "n1");
  EXPECT_EQ(j.cluster(), "dcutest");
  EXPECT_THAT(Indices(j), ElementsAre(2, 3));
  EXPECT_EQ(j.devices_from(), "SLURM_JOB_GPUS");
  EXPECT_EQ(j.end_time_ms(), 0);
}

TEST(SlurmEnvironmentTest, StepGpusWinInsideSrunAndVendorVariablesAreTheFallback) {
  auto step = ParseSlurmEnvironment({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_GPUS", "0,1,2"}, {"SLURM_STEP_GPUS", "1"}});
  EXPECT_THAT(Indices(**step), ElementsAre(1));
  EXPECT_EQ((*step)->devices_from(), "SLURM_STEP_GPUS");
  // A site plugin that sets only HIP_VISIBLE_DEVICES.
  auto hip = ParseSlurmEnvironment({{"SLURM_JOB_ID", "8"}, {"HIP_VISIBLE_DEVICES", "4-7"}});
  EXPECT_THAT(Indices(**hip), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ((*hip)->devices_from(), "HIP_VISIBLE_DEVICES");
  // GRES without device files: Slurm's placeholder names nothing.
  auto nodev = ParseSlurmEnvironment({{"SLURM_JOB_ID", "9"}, {"CUDA_VISIBLE_DEVICES", "NoDevFiles"}});
  EXPECT_THAT(Indices(**nodev), IsEmpty());
  EXPECT_EQ((*nodev)->devices_from(), "");
}

TEST(SlurmEnvironmentTest, EndTimeFromTheEnvironment) {
  auto a = ParseSlurmEnvironment({{"SLURM_JOB_ID", "9"}, {"SLURM_JOB_END_TIME", "1796191255"}});
  EXPECT_EQ((*a)->end_time_ms(), 1796191255000);
}

TEST(SlurmEnvironmentTest, HostileValuesAreRefusedByName) {
  struct Case {
    std::map<std::string, std::string> env;
    const char* says;
  };
  for (const Case& c : {Case{{{"SLURM_JOB_ID", "12; reboot"}}, "SLURM_JOB_ID '12; reboot': not a number"},
                        Case{{{"SLURM_JOB_ID", ""}}, "SLURM_JOB_ID '': empty"},
                        Case{{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_PARTITION", "a b"}},
                             "SLURM_JOB_PARTITION 'a b': not a Slurm name"},
                        Case{{{"SLURM_JOB_ID", "1"}, {"SLURMD_NODENAME", "../etc"}}, "SLURMD_NODENAME '../etc'"},
                        Case{{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_END_TIME", "tomorrow"}},
                             "SLURM_JOB_END_TIME 'tomorrow': not a time"},
                        Case{{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_GPUS", "0,x"}}, "SLURM_JOB_GPUS '0,x': item 'x'"}}) {
    auto a = ParseSlurmEnvironment(c.env);
    ASSERT_FALSE(a.ok()) << c.says;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(a.status().message(), HasSubstr(c.says));
  }
}

// `scontrol -d show job` of a 22.05 job with --gres=dcu:2 on n1.
constexpr char kScontrolDcu[] = R"(JobId=9 JobName=wrap
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=n1
   BatchHost=n1
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   JOB_GRES=dcu:2
     Nodes=n1 CPU_IDs=1 Mem=0 GRES=dcu:2(IDX:3-4)
   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0
   TresPerNode=gres:dcu:2
)";

TEST(ScontrolGresTest, IndicesOfThisNode) {
  EXPECT_THAT(*ParseScontrolGresIndices(kScontrolDcu, "n1"), ElementsAre(3, 4));
  EXPECT_THAT(*ParseScontrolGresIndices(kScontrolDcu, "n1", "dcu"), ElementsAre(3, 4));
  EXPECT_TRUE(absl::IsNotFound(ParseScontrolGresIndices(kScontrolDcu, "n2").status()));
  EXPECT_TRUE(absl::IsNotFound(ParseScontrolGresIndices(kScontrolDcu, "n1", "gpu").status()));
  EXPECT_THAT(*ParseScontrolGresIndices("     Nodes=n3 CPU_IDs=0-1 Mem=0 GRES=dcu:2(IDX:0,6),gpu:1(IDX:2)\n", "n3"),
              ElementsAre(0, 2, 6));
  // Typed GRES: "dcu:k100:2(IDX:0-1)".
  EXPECT_THAT(*ParseScontrolGresIndices("Nodes=n1 CPU_IDs=0 Mem=0 GRES=dcu:k100:2(IDX:0-1)", "n1", "dcu"),
              ElementsAre(0, 1));
  // No GRES on the node: nothing indexed.
  EXPECT_TRUE(absl::IsNotFound(ParseScontrolGresIndices("Nodes=n1 CPU_IDs=0 Mem=0 GRES=", "n1").status()));
  auto bad = ParseScontrolGresIndices("Nodes=n1 CPU_IDs=0 Mem=0 GRES=dcu:2(IDX:0-x)", "n1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("scontrol GRES dcu IDX '0-x'"));
  auto open = ParseScontrolGresIndices("Nodes=n1 CPU_IDs=0 Mem=0 GRES=dcu:2(IDX:0-1", "n1");
  EXPECT_THAT(open.status().message(), HasSubstr("unclosed"));
}

TEST(SlurmEpochTest, Values) {
  EXPECT_EQ(*ParseSlurmEpoch("1796191255\n", "squeue"), 1796191255);
  EXPECT_EQ(*ParseSlurmEpoch("N/A", "squeue"), 0);
  EXPECT_EQ(*ParseSlurmEpoch("Unknown", "squeue"), 0);
  EXPECT_THAT(ParseSlurmEpoch("2026-12-02T06:00:55", "squeue %e").status().message(),
              HasSubstr("squeue %e '2026-12-02T06:00:55': not a time in epoch seconds"));
  EXPECT_FALSE(ParseSlurmEpoch("-5", "x").ok());
}

}  // namespace
}  // namespace dcu::agent
