#include "modelkit/startup_stall.h"

#include "gtest/gtest.h"
#include "modelkit/startup_progress.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::StartupProgress;
using dcufleet::v1::StartupStallPolicy;

StartupProgress At(dcufleet::v1::StartupPhase phase, dcufleet::v1::StartupActivity activity =
                                                         dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED) {
  StartupProgress p;
  p.set_phase(phase);
  p.set_activity(activity);
  return p;
}

TEST(StartupStallTest, WindowsDependOnThePhaseAndActivity) {
  StartupStallPolicy none;
  EXPECT_EQ(StallWindow(At(dcufleet::v1::STARTUP_STARTING,
                           dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT), none),
            absl::Minutes(5));
  EXPECT_EQ(StallWindow(At(dcufleet::v1::STARTUP_COMPILING,
                           dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE), none),
            absl::Minutes(30));
  EXPECT_EQ(StallWindow(At(dcufleet::v1::STARTUP_LOADING_WEIGHTS), none), absl::Minutes(15));
  EXPECT_EQ(StallWindow(At(dcufleet::v1::STARTUP_PHASE_UNSPECIFIED), none), absl::Minutes(10));
  StartupProgress failed = At(dcufleet::v1::STARTUP_FAILED);
  failed.set_failed_in(dcufleet::v1::STARTUP_KV_CACHE_SIZED);
  EXPECT_EQ(StallWindow(failed, none), absl::Minutes(20));
  // A stack's own windows win; unset fields keep the defaults.
  StartupStallPolicy stack;
  stack.set_distributed_init_s(2);
  EXPECT_EQ(StallWindow(At(dcufleet::v1::STARTUP_STARTING,
                           dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT), stack),
            absl::Seconds(2));
  EXPECT_EQ(ResolveStallPolicy(stack).compiling_s(), 1800);
}

TEST(StartupStallTest, StuckAtDistributedInitNamesThePhaseAndTheLastLine) {
  StartupProgress p = ParseStartupLog(
      "INFO 08-31 09:50:46 pynccl.py:63] vLLM is using nccl==2.20.5\n"
      "host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init START ncclCommInitRank\n");
  ASSERT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
  StallVerdict v = CheckStartupStall(p, absl::Minutes(4), absl::Minutes(6), absl::Hours(4), {});
  EXPECT_EQ(v.kind, StallVerdict::Kind::kProgressing);
  v = CheckStartupStall(p, absl::Minutes(10), absl::Minutes(12), absl::Hours(4), {});
  EXPECT_EQ(v.kind, StallVerdict::Kind::kStalled);
  EXPECT_EQ(v.message,
            "stuck 10m at starting (distributed init) after `host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - "
            "Init START ncclCommInitRank` (stall window 5m)");
}

TEST(StartupStallTest, ASlowButProgressingStartUpOnlyMeetsTheCeiling) {
  StartupProgress p = At(dcufleet::v1::STARTUP_COMPILING, dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE);
  // Progress a second ago, three hours in: fine.
  EXPECT_EQ(CheckStartupStall(p, absl::Seconds(1), absl::Hours(3), absl::Hours(4), {}).kind,
            StallVerdict::Kind::kProgressing);
  StallVerdict v = CheckStartupStall(p, absl::Seconds(1), absl::Hours(4), absl::Hours(4), {});
  EXPECT_EQ(v.kind, StallVerdict::Kind::kCeiling);
  EXPECT_NE(v.message.find("ceiling of 4h"), std::string::npos);
  // No ceiling: never.
  EXPECT_EQ(CheckStartupStall(p, absl::Seconds(1), absl::Hours(400), absl::ZeroDuration(), {}).kind,
            StallVerdict::Kind::kProgressing);
}

TEST(StartupStallTest, AStopTheAgentMadeBecomesAFindingWithThePhaseAndWhatToCheck) {
  // The engine ended it: nothing for this function to say.
  EXPECT_TRUE(DiagnoseStartupStop(At(dcufleet::v1::STARTUP_FAILED), "boom").failure_class().empty());

  StartupProgress nccl = At(dcufleet::v1::STARTUP_STARTING, dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
  nccl.set_stopped_by(dcufleet::v1::STARTUP_STOP_STALLED);
  nccl.set_stuck_for_ms(301500);
  nccl.set_stall_window_ms(300000);
  auto f = DiagnoseStartupStop(nccl, "stuck 5m1.5s at starting (distributed init) after `x`");
  EXPECT_EQ(f.failure_class(), "startup_stalled");
  EXPECT_EQ(f.confidence(), 1.0);
  ASSERT_EQ(f.evidence_size(), 1);
  EXPECT_EQ(f.evidence(0), "stuck 5m1.5s at starting (distributed init) after `x`");
  EXPECT_EQ(f.params().at("phase"), "starting");
  EXPECT_EQ(f.params().at("activity"), "distributed init");
  EXPECT_EQ(f.params().at("stuck_for_s"), "301");
  EXPECT_EQ(f.params().at("stall_window_s"), "300");
  EXPECT_NE(f.remediation_detail().find("NCCL_SOCKET_IFNAME"), std::string::npos);
  // Retried with back-off by the policy: no remediation kind of its own.
  EXPECT_EQ(f.remediation_kind(), dcufleet::v1::REMEDIATION_KIND_UNSPECIFIED);

  // Each place has its own advice; loading weights points at the store.
  StartupProgress shards = At(dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  shards.set_stopped_by(dcufleet::v1::STARTUP_STOP_STALLED);
  f = DiagnoseStartupStop(shards, "");
  EXPECT_EQ(f.params().at("phase"), "loading_weights");
  EXPECT_EQ(f.params().count("activity"), 0u);
  EXPECT_EQ(f.evidence(0), "start-up stalled at loading_weights");
  EXPECT_NE(f.remediation_detail().find("file system"), std::string::npos);

  StartupProgress slow = At(dcufleet::v1::STARTUP_COMPILING, dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE);
  slow.set_stopped_by(dcufleet::v1::STARTUP_STOP_CEILING);
  f = DiagnoseStartupStop(slow, "not ready within the start-up ceiling of 4h");
  EXPECT_EQ(f.failure_class(), "startup_ceiling");
  EXPECT_NE(f.remediation_detail().find("--startup-timeout"), std::string::npos);
}

}  // namespace
}  // namespace dcu::modelkit
