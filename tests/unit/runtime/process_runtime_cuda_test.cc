// CUDA stacks on the bare runtime: InstanceSpec.visible_devices_env (set by
// the controller to CUDA_VISIBLE_DEVICES for sm_* arches) decides which
// variable a real launched process sees its devices in.
#include <functional>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "agent/runtime/process_runtime.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

bool WaitUntil(const std::function<bool()>& pred, absl::Duration limit = absl::Seconds(10)) {
  absl::Time deadline = absl::Now() + limit;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

dcufleet::v1::InstanceSpec Spec(const std::string& id, const std::string& visible_env) {
  dcufleet::v1::InstanceSpec s;
  s.set_instance_id(id);
  s.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  s.add_argv("/bin/sh");
  s.add_argv("-c");
  s.add_argv("echo CVD=${CUDA_VISIBLE_DEVICES-unset} HVD=${HIP_VISIBLE_DEVICES-unset} M=$DCUFLEET_INSTANCE");
  s.add_device_indices(2);
  s.add_device_indices(3);
  s.set_visible_devices_env(visible_env);
  // A stale value in the stack's env must not win over the placement.
  (*s.mutable_env())["CUDA_VISIBLE_DEVICES"] = "7";
  return s;
}

std::string RunAndRead(ProcessRuntime& rt, const dcufleet::v1::InstanceSpec& spec) {
  auto started = rt.Start(spec);
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return "";
  EXPECT_TRUE(WaitUntil([&] {
    auto i = rt.Inspect(spec.instance_id());
    return i.ok() && !i->running;
  }));
  auto log = rt.ReadLogTail(spec.instance_id(), 4096);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *log : "";
}

TEST(ProcessRuntimeCudaTest, CudaStackSeesItsDevicesInCudaVisibleDevices) {
  dcu::testing::TempDir dir;
  ProcessRuntimeOptions o;
  o.state_dir = dir.path() + "/state";
  auto rt = ProcessRuntime::Create(o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  auto spec = Spec("inst-cuda", "CUDA_VISIBLE_DEVICES");
  auto plan = (*rt)->Render(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(plan->env.count("HIP_VISIBLE_DEVICES"), 0u);
  std::string log = RunAndRead(**rt, spec);
  EXPECT_TRUE(absl::StrContains(log, "CVD=2,3 HVD=unset M=inst-cuda")) << log;
}

TEST(ProcessRuntimeCudaTest, WithoutAVariableNameTheHipOneIsUsed) {
  dcu::testing::TempDir dir;
  ProcessRuntimeOptions o;
  o.state_dir = dir.path() + "/state";
  auto rt = ProcessRuntime::Create(o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  std::string log = RunAndRead(**rt, Spec("inst-hip", ""));
  // The stack's own CUDA_VISIBLE_DEVICES stays as the stack set it.
  EXPECT_TRUE(absl::StrContains(log, "CVD=7 HVD=2,3 M=inst-hip")) << log;
}

}  // namespace
}  // namespace dcu::agent
