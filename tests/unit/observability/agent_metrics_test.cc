// agent/metrics: the families rendered from a NodeStatus like seed 000's
// node-k100 (device 0: the SMI says empty, the device says 4.8 GiB free,
// 59.18 GiB held by a dead process).
#include "agent/metrics/agent_metrics.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kGiB = 1024LL * 1024 * 1024;

void Set(dcufleet::v1::MemoryReading* r, int64_t bytes) {
  r->set_bytes(bytes);
  r->set_valid(true);
}

dcufleet::v1::NodeStatus Seed000Like() {
  dcufleet::v1::NodeStatus s;
  auto* inv = s.mutable_inventory();
  inv->set_collected_at_ms(1700000000000);
  for (int i = 0; i < 2; ++i) {
    auto* d = inv->add_devices();
    d->set_index(i);
    d->set_arch("gfx928");
    d->set_product_name("K100_AI");
    d->set_pci_bus(i == 0 ? "0000:07:00.0" : "0000:0a:00.0");
    Set(d->mutable_total(), 64 * kGiB);
    Set(d->mutable_host_used(), 0);
    Set(d->mutable_host_free(), 64 * kGiB);
    Set(d->mutable_device_total(), 64 * kGiB);
    Set(d->mutable_device_free(), i == 0 ? 4 * kGiB : 63 * kGiB);
    d->set_unreclaimed_bytes(i == 0 ? 59 * kGiB : 0);
    Set(d->mutable_schedulable_free(), i == 0 ? 0 : 63 * kGiB);
  }
  auto* h = inv->mutable_devices(1)->add_holders();
  h->set_pid(77);
  h->set_holder_class(dcufleet::v1::HOLDER_LEFTOVER);
  h->set_vram_bytes(2 * kGiB);
  auto* st = s.add_instances();
  st->set_instance_id("qwen-1");
  st->set_phase(dcufleet::v1::INSTANCE_READY);
  return s;
}

std::string Text(const dcufleet::v1::NodeStatus& s) {
  return common::RenderMetricsText(NodeStatusFamilies("node-k100", s));
}

TEST(AgentMetrics, MemoryByViewAndKindUnreclaimedAndSchedulable) {
  std::string t = Text(Seed000Like());
  EXPECT_THAT(t, HasSubstr(absl::StrCat(
                     R"(dcu_device_memory_bytes{node="node-k100",device="0",view="device",kind="free"} )",
                     4 * kGiB, "\n")));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_memory_bytes{node="node-k100",device="0",view="host",kind="used"} 0)"));
  EXPECT_THAT(t, HasSubstr(absl::StrCat(
                     R"(dcu_device_memory_bytes{node="node-k100",device="0",view="device",kind="used"} )",
                     60 * kGiB, "\n")));
  EXPECT_THAT(t, HasSubstr(absl::StrCat(R"(dcu_device_unreclaimed_bytes{node="node-k100",device="0"} )",
                                        59 * kGiB, "\n")));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_unreclaimed_bytes{node="node-k100",device="1"} 0)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_schedulable_free_bytes{node="node-k100",device="0"} 0)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_info{node="node-k100",device="0",arch="gfx928",product="K100_AI",pci_bus="0000:07:00.0",vendor=""} 1)"));
}

TEST(AgentMetrics, HoldersByClassAndInstancePhases) {
  dcufleet::v1::NodeStatus s = Seed000Like();
  // Seed 000's device 0: KFD's record of a process gone from /proc.
  auto* gone = s.mutable_inventory()->mutable_devices(0)->add_holders();
  gone->set_pid(32768);
  gone->set_state("?");
  gone->set_holder_class(dcufleet::v1::HOLDER_EXITED);
  gone->set_vram_bytes(59 * kGiB);
  std::string t = Text(s);
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_holders{node="node-k100",device="0",class="exited"} 1)"));
  EXPECT_THAT(t, HasSubstr(absl::StrCat(
                     R"(dcu_device_holder_memory_bytes{node="node-k100",device="0",class="exited"} )",
                     59 * kGiB, "\n")));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_holders{node="node-k100",device="0",class="unmanaged"} 0)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_holders{node="node-k100",device="1",class="leftover"} 1)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_holders{node="node-k100",device="1",class="managed"} 0)"));
  EXPECT_THAT(t, HasSubstr(absl::StrCat(
                     R"(dcu_device_holder_memory_bytes{node="node-k100",device="1",class="leftover"} )",
                     2 * kGiB, "\n")));
  EXPECT_THAT(t, HasSubstr(R"(dcu_instance_phase{node="node-k100",instance="qwen-1",phase="ready"} 1)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_instance_phase{node="node-k100",instance="qwen-1",phase="failed"} 0)"));
}

TEST(AgentMetrics, InvalidReadingsAreLeftOutNotPublishedAsZero) {
  dcufleet::v1::NodeStatus s = Seed000Like();
  s.mutable_inventory()->mutable_devices(0)->mutable_device_free()->set_valid(false);
  std::string t = Text(s);
  EXPECT_THAT(t, Not(HasSubstr(R"(device="0",view="device",kind="free")")));
  EXPECT_THAT(t, Not(HasSubstr(R"(device="0",view="device",kind="used")")));
  EXPECT_THAT(t, HasSubstr(R"(device="1",view="device",kind="free")"));
}

TEST(AgentMetrics, EngineFiguresCarryDeploymentReplicaAndNode) {
  dcufleet::v1::NodeStatus s = Seed000Like();
  auto* st = s.mutable_instances(0);
  st->set_instance_id("qwen-r2-3-a1b2c3");
  st->mutable_load()->set_running(3);
  st->mutable_load()->set_waiting(1);
  st->mutable_load()->set_kv_cache_usage(0.25);
  st->mutable_load()->set_scraped_at_ms(1700000000500);
  auto* unscraped = s.add_instances();  // no load: no engine series, not zeros
  unscraped->set_instance_id("other-1-ffffff");
  std::vector<dcufleet::v1::InstanceSpec> specs(2);
  specs[0].set_instance_id("qwen-r2-3-a1b2c3");
  specs[0].set_deployment("qwen");
  specs[1].set_instance_id("other-1-ffffff");
  specs[1].set_deployment("other");
  InstanceOwners owners = OwnersOf(specs);
  EXPECT_EQ(owners["qwen-r2-3-a1b2c3"].replica, 2);
  EXPECT_EQ(owners["other-1-ffffff"].replica, 0);
  std::string t = common::RenderMetricsText(NodeStatusFamilies("node-k100", s, owners));
  EXPECT_THAT(t, HasSubstr(R"(dcu_engine_requests_running{node="node-k100",instance="qwen-r2-3-a1b2c3",deployment="qwen",replica="2"} 3)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_engine_requests_waiting{node="node-k100",instance="qwen-r2-3-a1b2c3",deployment="qwen",replica="2"} 1)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_engine_kv_cache_usage_ratio{node="node-k100",instance="qwen-r2-3-a1b2c3",deployment="qwen",replica="2"} 0.25)"));
  EXPECT_THAT(t, Not(HasSubstr(R"(dcu_engine_requests_running{node="node-k100",instance="other-1-ffffff")")));
}

TEST(AgentMetrics, ReplicaIsReadOnlyAfterTheKnownDeploymentName) {
  std::vector<dcufleet::v1::InstanceSpec> specs(2);
  // A deployment whose own name ends in "-r5": its replica 0 is not replica 5.
  specs[0].set_instance_id("model-r5-1-abcdef");
  specs[0].set_deployment("model-r5");
  specs[1].set_instance_id("model-r5-r3-2-abcdef");
  specs[1].set_deployment("model-r5");
  InstanceOwners owners = OwnersOf(specs);
  EXPECT_EQ(owners["model-r5-1-abcdef"].replica, 0);
  EXPECT_EQ(owners["model-r5-r3-2-abcdef"].replica, 3);
}

TEST(AgentMetrics, ScrapeServesTheLastReportAndCountsProbeFailures) {
  AgentMetrics m("node-k100");
  EXPECT_THAT(m.Scrape().body, Not(HasSubstr("dcu_device_unreclaimed_bytes{")));
  m.OnReport(Seed000Like(), {{"sysfs_kfd", absl::Milliseconds(3), true},
                             {"hip", absl::Milliseconds(40), false}},
             absl::Milliseconds(50));
  m.OnReport(Seed000Like(), {{"sysfs_kfd", absl::Milliseconds(3), true},
                             {"hip", absl::Milliseconds(40), false}},
             absl::Milliseconds(50));
  std::string t = m.Scrape().body;
  EXPECT_THAT(t, HasSubstr(R"(dcu_device_unreclaimed_bytes{node="node-k100",device="0"})"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_agent_probe_failures_total{backend="hip",node="node-k100"} 2)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_agent_probe_failures_total{backend="sysfs_kfd",node="node-k100"} 0)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_agent_probe_duration_seconds_count{backend="hip",node="node-k100"} 2)"));
  EXPECT_THAT(t, HasSubstr(R"(dcu_agent_reports_total{node="node-k100"} 2)"));
}

}  // namespace
}  // namespace dcu::agent
