// dcuctl top nodes: device memory in use by both views, summed per node or
// shown per device, from what the agents reported.
#include "dcuctl/top_commands.h"

#include "common/units.h"
#include "dcuctl/node_commands.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kGiB = int64_t{1} << 30;

void Reading(dcufleet::v1::MemoryReading* r, int64_t bytes) {
  r->set_valid(true);
  r->set_bytes(bytes);
}

// A 64 GiB device: `device_free` as the device says (< 0: not read), the
// SMI's `host_free`, memory held by no live process.
dcufleet::v1::Device* AddDevice(dcufleet::v1::NodeView* node, int64_t device_free, int64_t host_free,
                                int64_t unreclaimed) {
  dcufleet::v1::Device* d = node->mutable_inventory()->add_devices();
  d->set_index(node->inventory().devices_size() - 1);
  d->set_arch("gfx928");
  Reading(d->mutable_total(), 64 * kGiB);
  if (device_free >= 0) Reading(d->mutable_device_free(), device_free);
  Reading(d->mutable_host_free(), host_free);
  d->set_unreclaimed_bytes(unreclaimed);
  return d;
}

std::string Print(const Table& t) {
  std::ostringstream out;
  t.Print(out);
  return out.str();
}

TEST(TopNodesTest, SumsBothViewsAndTheStrandedMemoryPerNode) {
  dcufleet::v1::NodeView a;
  a.set_name("node-a");
  a.set_state(dcufleet::v1::NODE_READY);
  // Seed 000's device: the SMI says free, the device says 59 GiB are held.
  AddDevice(&a, 5 * kGiB, 64 * kGiB - 2 * (int64_t{1} << 20), 59 * kGiB);
  AddDevice(&a, 63 * kGiB, 63 * kGiB, 0);
  MemoryUse m = MemoryUseOf(a.inventory());
  EXPECT_EQ(m.devices, 2);
  EXPECT_EQ(m.total, 128 * kGiB);
  EXPECT_EQ(m.used_device_view, 60 * kGiB);
  EXPECT_EQ(m.used_smi_view, kGiB + 2 * (int64_t{1} << 20));
  EXPECT_EQ(m.unreclaimed, 59 * kGiB);
  const std::string text = Print(TopNodesTable({a}, TopSort::kName));
  EXPECT_THAT(text, ::testing::ContainsRegex("node-a +2 +60\\.00 GiB +47% +1\\.00 GiB +59\\.00 GiB +0\n"))
      << text;
}

TEST(TopNodesTest, ADeviceWithoutItsOwnViewIsCountedAsUnread) {
  dcufleet::v1::NodeView a;
  a.set_name("node-a");
  a.set_state(dcufleet::v1::NODE_READY);
  AddDevice(&a, 32 * kGiB, 32 * kGiB, 0);
  AddDevice(&a, -1, 60 * kGiB, 0);
  const std::string text = Print(TopNodesTable({a}, TopSort::kName));
  EXPECT_THAT(text, HasSubstr("32.00 GiB (1 unread)   50%")) << "the share of the device read: " << text;
  dcufleet::v1::NodeView b;
  b.set_name("node-b");
  b.set_state(dcufleet::v1::NODE_READY);
  AddDevice(&b, -1, 60 * kGiB, 0);
  EXPECT_THAT(Print(TopDevicesTable(b, TopSort::kName)), ::testing::ContainsRegex("\n0 +gfx928 +- +- +4\\.00 GiB"));
}

TEST(TopNodesTest, ANodeThatIsNotReadyShowsNoFigures) {
  dcufleet::v1::NodeView a;
  a.set_name("node-a");
  a.set_state(dcufleet::v1::NODE_LOST);
  AddDevice(&a, 5 * kGiB, 5 * kGiB, 0);
  const std::string text = Print(TopNodesTable({a}, TopSort::kName));
  EXPECT_THAT(text, ::testing::ContainsRegex("node-a +1 +<unknown> +<unknown>")) << text;
  EXPECT_THAT(text, Not(HasSubstr("GiB")));
}

TEST(TopNodesTest, SortsByWhatIsUsedOrStrandedMostFirst) {
  std::vector<dcufleet::v1::NodeView> nodes(3);
  const char* names[] = {"a", "b", "c"};
  const int64_t free_gib[] = {60, 10, 40};
  const int64_t stranded_gib[] = {0, 1, 30};
  for (int i = 0; i < 3; ++i) {
    nodes[i].set_name(names[i]);
    nodes[i].set_state(dcufleet::v1::NODE_READY);
    AddDevice(&nodes[i], free_gib[i] * kGiB, 64 * kGiB, stranded_gib[i] * kGiB);
  }
  auto order = [&](TopSort sort) {
    std::string text = Print(TopNodesTable(nodes, sort)), got;
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) got += line.substr(0, 1);
    return got;
  };
  EXPECT_EQ(order(TopSort::kName), "abc");
  EXPECT_EQ(order(TopSort::kMemory), "bca");
  EXPECT_EQ(order(TopSort::kUnreclaimed), "cba");
  EXPECT_FALSE(ParseTopSort("cpu").ok());
  EXPECT_EQ(*ParseTopSort("memory"), TopSort::kMemory);
}

// get nodes -o wide's SCHEDULABLE FREE is what a new placement could use:
// a device an instance or a leftover holds, or one with stranded memory,
// adds nothing, however much it has left (before,
// a serving engine's devices added their tenth of the card each).
TEST(NodeRowTest, SchedulableFreeCountsOnlyDevicesAPlacementCouldUse) {
  dcufleet::v1::NodeView node;
  node.set_name("node-k100");
  node.set_state(dcufleet::v1::NODE_READY);
  Reading(AddDevice(&node, 60 * kGiB, 60 * kGiB, 0)->mutable_schedulable_free(), 60 * kGiB);
  dcufleet::v1::Device* serving = AddDevice(&node, 6 * kGiB, 6 * kGiB, 0);
  Reading(serving->mutable_schedulable_free(), 6 * kGiB);
  dcufleet::v1::ProcessHolder* engine = serving->add_holders();
  engine->set_pid(4242);
  engine->set_holder_class(dcufleet::v1::HOLDER_MANAGED);
  // A process dcufleet did not start leaves the device placeable (the
  // scheduler weighs its memory), so its free memory counts.
  dcufleet::v1::Device* shared = AddDevice(&node, 30 * kGiB, 30 * kGiB, 0);
  Reading(shared->mutable_schedulable_free(), 30 * kGiB);
  shared->add_holders()->set_holder_class(dcufleet::v1::HOLDER_UNMANAGED);
  // A leftover's device is skipped until it is reaped.
  dcufleet::v1::Device* stranded = AddDevice(&node, 20 * kGiB, 20 * kGiB, 0);
  Reading(stranded->mutable_schedulable_free(), 20 * kGiB);
  stranded->add_holders()->set_holder_class(dcufleet::v1::HOLDER_LEFTOVER);
  // So is one holding more stranded memory than the scheduler tolerates
  // (seed 000's device 0: 59 GiB no live process explains).
  Reading(AddDevice(&node, 5 * kGiB, 64 * kGiB, 59 * kGiB)->mutable_schedulable_free(), 5 * kGiB);
  const std::vector<std::string> row = NodeRow(node, /*wide=*/true);
  ASSERT_GT(row.size(), 6u);
  EXPECT_EQ(row[6], common::HumanBytes(90 * kGiB));
  // Cordoned (or drained): nothing is schedulable there, and STATUS says so;
  // the same for a node that is not Ready (the scheduler's NodeBlockOf).
  node.mutable_cordon()->set_reason("firmware update");
  const std::vector<std::string> cordoned = NodeRow(node, /*wide=*/true);
  EXPECT_EQ(cordoned[1], "Ready,SchedulingDisabled");
  EXPECT_EQ(cordoned[6], common::HumanBytes(0));
  node.clear_cordon();
  node.set_state(dcufleet::v1::NODE_LOST);
  EXPECT_EQ(NodeRow(node, /*wide=*/true)[6], common::HumanBytes(0));
}

}  // namespace
}  // namespace dcu::dcuctl
