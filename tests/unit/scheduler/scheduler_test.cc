// The pure Schedule(): the fit rule (Ready, arch with a plan, env/image,
// model directory, smallest TP whose memory plan fits, devices whose
// device-view free memory meets the plan, port), the ranking (plan rank, TP,
// the earlier name), the reasons it gives per node, and the `first_usable`
// cursor. The last tests check on random fleets that the fast path, the
// explainer (WhyNot) and the cursor agree with each other and with a brute
// force over every node.
#include "controller/core/scheduler.h"

#include "common/enum_names.h"

#include <deque>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using dcufleet::v1::Device;
using dcufleet::v1::NodeView;
using dcufleet::v1::Plan;

constexpr int64_t kGiB = 1LL << 30;

// A fleet, the knowledge about one model and one deployment's request: what
// a reconcile pass hands Schedule(). The memory plan is the vLLM start-up
// rule simplified (weights/TP + overhead must fit in utilization × total;
// each device then needs that budget free in the device view).
struct World {
  World() {
    spec.set_model(model.name);
    spec.set_gpu_memory_utilization(util);
  }

  // A node of `devices` devices of `arch`, each `total` bytes with `free`
  // bytes free in the device view (the SMI says the same unless a test
  // changes it).
  NodeView& AddNode(const std::string& name, const std::string& arch, int devices = 8,
                    int64_t total = 64 * kGiB, int64_t free = 63 * kGiB) {
    NodeView& n = views.emplace_back();
    n.set_name(name);
    n.set_state(dcufleet::v1::NODE_READY);
    for (int i = 0; i < devices; ++i) AddDevice(n, arch, total, free);
    auto* m = n.mutable_inventory()->add_models();
    m->set_name(model.name);
    m->set_path(absl::StrCat("/data/models/", model.name));
    return n;
  }
  static Device& AddDevice(NodeView& n, const std::string& arch, int64_t total, int64_t free) {
    Device* d = n.mutable_inventory()->add_devices();
    d->set_index(n.inventory().devices_size() - 1);
    d->set_arch(arch);
    d->mutable_total()->set_bytes(total);
    d->mutable_total()->set_valid(true);
    d->mutable_host_free()->set_bytes(free);
    d->mutable_host_free()->set_valid(true);
    d->mutable_device_free()->set_bytes(free);
    d->mutable_device_free()->set_valid(true);
    d->mutable_schedulable_free()->set_bytes(free);
    d->mutable_schedulable_free()->set_valid(true);
    d->mutable_schedulable_free()->set_source("hip:hipMemGetInfo");
    return *d;
  }
  NodeView& Node(const std::string& name) {
    for (auto& v : views) {
      if (v.name() == name) return v;
    }
    ADD_FAILURE() << "no node " << name;
    return views.front();
  }
  Plan& AddPlan(const std::string& arch, const std::string& stack, int rank,
                const std::string& location = "", const std::string& kind = "bare") {
    Plan& p = plans[arch].emplace_back();
    p.set_arch(arch);
    p.set_stack_id(stack);
    p.set_rank(rank);
    p.set_runtime_kind(common::ParseRuntimeKind(kind).value_or(dcufleet::v1::RUNTIME_KIND_UNSPECIFIED));
    p.set_verdict(dcufleet::v1::VERDICT_WORKS);
    p.set_runtime_location(location);
    return p;
  }
  static void AddEnvironment(NodeView& n, const std::string& kind, const std::string& location) {
    auto* e = n.mutable_inventory()->add_environments();
    e->set_kind(kind);
    e->set_location(location);
  }

  MemoryCheck Memory(int tp, int64_t total) const {
    MemoryCheck m;
    const int64_t budget = static_cast<int64_t>(util * static_cast<double>(total));
    const int64_t need = model.weight_bytes / tp + overhead;
    m.required_free_bytes = budget;
    m.fits = need <= budget;
    m.plan.set_tp(tp);
    m.plan.set_weights_per_device_bytes(model.weight_bytes / tp);
    m.plan.set_overhead_bytes(overhead);
    m.plan.set_budget_bytes(budget);
    m.plan.set_fits(m.fits);
    if (!m.fits) {
      m.reason = absl::StrCat("needs ", common::HumanBytes(need), " per device, budget ",
                              common::HumanBytes(budget));
    }
    return m;
  }

  // The scheduler's view of the fleet, with the devices and ports instances
  // already took.
  void Prepare() {
    nodes.clear();
    for (const auto& v : views) {
      ScheduleNode n = MakeScheduleNode(v);
      auto d = busy_devices.find(v.name());
      if (d != busy_devices.end()) n.busy_devices = SmallIntSet(d->second);
      auto p = busy_ports.find(v.name());
      if (p != busy_ports.end()) n.busy_ports.insert(p->second.begin(), p->second.end());
      nodes.push_back(std::move(n));
    }
  }
  // The input over `nodes` (Prepare first).
  ScheduleInput Input() const {
    ScheduleInput in;
    in.spec = spec;
    in.model = model;
    in.nodes = &nodes;
    in.first_node = first_node;
    in.plans_for_arch = [this](const std::string& arch) {
      auto set = std::make_shared<ArchPlanSet>();
      if (auto it = plans.find(arch); it != plans.end()) set->plans = it->second;
      if (auto it = excluded.find(arch); it != excluded.end()) set->excluded = it->second;
      return set;
    };
    in.memory = [this](int tp, int64_t total) {
      return std::make_shared<const MemoryCheck>(Memory(tp, total));
    };
    in.model_path_on_node = [this](const NodeView& n) {
      for (const auto& m : n.inventory().models()) {
        if (m.name() == model.name) return m.path();
      }
      return std::string();
    };
    in.excluded_stacks = excluded_stacks;
    in.avoid_devices = avoid_devices;
    in.avoid_ports = avoid_ports;
    in.max_rejections = max_rejections;
    in.max_rejections_placed = max_rejections_placed;
    in.replicas_on_node = replicas_on_node.empty() ? nullptr : &replicas_on_node;
    return in;
  }
  ScheduleResult Run() {
    Prepare();
    return Schedule(Input());
  }
  // What the reconciler does with a placement: its devices and port are taken.
  void Take(const ScheduleResult& r) {
    for (int d : r.placement.device_indices()) busy_devices[r.placement.node()].insert(d);
    busy_ports[r.placement.node()].insert(r.placement.port());
  }

  std::deque<NodeView> views;
  std::map<std::string, std::set<int>> busy_devices;
  std::map<std::string, std::set<int>> busy_ports;
  std::map<std::string, std::vector<Plan>> plans;
  std::map<std::string, std::vector<Plan>> excluded;
  ModelFacts model{"qwen3-32b", 30 * kGiB, 64, 8, {1, 2, 4, 8}, ""};
  double util = 0.9;
  int64_t overhead = 2 * kGiB;
  dcufleet::v1::DeploymentSpec spec;
  std::set<std::string> excluded_stacks;
  std::map<std::string, std::set<int>> avoid_devices;
  std::set<int> avoid_ports;
  size_t max_rejections = 50;
  size_t max_rejections_placed = 5;
  size_t first_node = 0;
  // The deployment's other replicas per node (issue 17's spread).
  std::map<std::string, int> replicas_on_node;
  std::vector<ScheduleNode> nodes;
};

std::vector<int> Devices(const ScheduleResult& r) {
  return {r.placement.device_indices().begin(), r.placement.device_indices().end()};
}

std::map<std::string, std::string> Reasons(const ScheduleResult& r) {
  std::map<std::string, std::string> why;
  for (const auto& rj : r.rejections) why[rj.node()] = rj.reason();
  return why;
}

// ---------------------------------------------------------------------------
// The fit rule.

TEST(ScheduleTest, PlacesOnTheNodeThatFits) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx906");
  w.AddNode("node-b", "gfx928");
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.placement.arch(), "gfx928");
  EXPECT_EQ(r.placement.tp(), 1);
  EXPECT_THAT(Devices(r), ElementsAre(0));
  EXPECT_EQ(r.placement.port(), 8000);
  EXPECT_EQ(r.plan.stack_id(), "vllm-bare");
  EXPECT_EQ(r.model_path, "/data/models/qwen3-32b");
  EXPECT_EQ(r.placement.memory_plan().tp(), 1) << "the memory plan of the chosen TP";
  EXPECT_EQ(r.placement.memory_plan().weights_per_device_bytes(), w.model.weight_bytes);
  EXPECT_TRUE(r.placement.memory_explanation().empty()) << "figures are stored, not lines";
}

// Issue 17: a replica goes to the node running fewest of its siblings,
// before name order and before a smaller TP; never before a better plan.
TEST(ScheduleTest, ReplicasSpreadAcrossNodesButNotOverABetterPlan) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.AddNode("node-b", "gfx928");
  w.replicas_on_node = {{"node-a", 1}};
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b") << "node-a already runs a replica";
  // Every node runs one: name order again.
  w.replicas_on_node = {{"node-a", 1}, {"node-b", 1}};
  r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
  // Spread never buys a worse plan: node-c has only a lower-ranked stack.
  World v;
  v.AddPlan("gfx928", "vllm-bare", 1);
  v.AddPlan("gfx906", "vllm-image", 2);
  v.AddNode("node-a", "gfx928");
  v.AddNode("node-c", "gfx906");
  v.replicas_on_node = {{"node-a", 3}};
  r = v.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
}

TEST(ScheduleTest, ChoosesTheSmallestTpWhoseMemoryPlanFits) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.model.weight_bytes = 100 * kGiB;  // TP=1 needs 102 GiB of a 57.6 GiB budget; TP=2 52 GiB
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.tp(), 2);
  EXPECT_THAT(Devices(r), ElementsAre(0, 1));
  EXPECT_EQ(r.placement.memory_plan().tp(), 2);
  EXPECT_EQ(r.placement.memory_plan().weights_per_device_bytes(), w.model.weight_bytes / 2);
}

TEST(ScheduleTest, TpMustDivideTheHeads) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.model.weight_bytes = 100 * kGiB;  // TP=2 would fit, but 36 heads allow 1 and 4 only
  w.model.num_attention_heads = 36;
  w.model.valid_tp = {1, 4};
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.tp(), 4);

  w.spec.set_tp(2);
  r = w.Run();
  EXPECT_FALSE(r.placed);
  EXPECT_EQ(Reasons(r)["node-a"], "TP=2 does not divide the model's attention heads (36)");
}

TEST(ScheduleTest, AskedTpIsUsedEvenWhenASmallerOneFits) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.spec.set_tp(4);
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.tp(), 4);
  EXPECT_THAT(Devices(r), ElementsAre(0, 1, 2, 3));
}

TEST(ScheduleTest, DeviceViewFreeMemoryDecidesNotTheSmi) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  NodeView& n = w.AddNode("node-a", "gfx928", 2);
  // The SMI calls device 0 empty, the device view says 4.8 GiB free.
  Device* d0 = n.mutable_inventory()->mutable_devices(0);
  d0->mutable_schedulable_free()->set_bytes(static_cast<int64_t>(4.8 * kGiB));
  d0->mutable_device_free()->set_bytes(static_cast<int64_t>(4.8 * kGiB));
  d0->mutable_host_free()->set_bytes(64 * kGiB);
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_THAT(Devices(r), ElementsAre(1));
  EXPECT_THAT(r.placement.devices_avoided(),
              ElementsAre("device 0 has 4.80 GiB free (hip:hipMemGetInfo), needs 57.60 GiB"));

  // Without the combined figure the device view still comes before the host's.
  d0->clear_schedulable_free();
  r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_THAT(Devices(r), ElementsAre(1));

  // Both devices low: the node says how many have enough, and which not.
  n.mutable_inventory()->mutable_devices(1)->mutable_schedulable_free()->set_bytes(10 * kGiB);
  w.spec.set_tp(1);
  r = w.Run();
  EXPECT_FALSE(r.placed);
  EXPECT_THAT(Reasons(r)["node-a"], HasSubstr("0 of 2 devices have ≥ 57.60 GiB free (device view) for TP=1"));
  EXPECT_THAT(Reasons(r)["node-a"], HasSubstr("device 0 has 4.80 GiB free"));
  EXPECT_THAT(Reasons(r)["node-a"], HasSubstr("device 1 has 10.00 GiB free (hip:hipMemGetInfo), needs 57.60 GiB"));
}

TEST(ScheduleTest, UnreclaimedMemoryAndLeftoverHoldersAreAvoided) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  NodeView& n = w.AddNode("node-a", "gfx928", 5);
  auto* devs = n.mutable_inventory()->mutable_devices();
  devs->Mutable(0)->set_unreclaimed_bytes(2 * kGiB);  // beyond the 1 GiB tolerance
  auto* h = devs->Mutable(0)->add_holders();
  h->set_pid(77);
  h->set_holder_class(dcufleet::v1::HOLDER_UNMANAGED);
  h->set_cmdline("python train.py");
  devs->Mutable(1)->add_holders()->set_holder_class(dcufleet::v1::HOLDER_LEFTOVER);
  devs->Mutable(1)->mutable_holders(0)->set_pid(4242);
  devs->Mutable(2)->add_holders()->set_holder_class(dcufleet::v1::HOLDER_ZOMBIE);
  devs->Mutable(2)->mutable_holders(0)->set_pid(4343);
  devs->Mutable(3)->set_unreclaimed_bytes(kGiB / 2);  // within the tolerance
  w.spec.set_tp(2);
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_THAT(Devices(r), ElementsAre(3, 4));
  const std::string avoided = absl::StrJoin(r.placement.devices_avoided(), "; ");
  EXPECT_THAT(avoided, HasSubstr("device 0 holds 2.00 GiB unreclaimed (63.00 GiB of 64.00 GiB free) "
                                 "(pid 77 `python train.py`, exited parent)"));
  EXPECT_THAT(avoided, HasSubstr("device 1 is held by leftover pid 4242"));
  EXPECT_THAT(avoided, HasSubstr("device 2 is held by leftover pid 4343"));

  w.spec.set_tp(4);
  r = w.Run();
  EXPECT_FALSE(r.placed);
  EXPECT_THAT(Reasons(r)["node-a"], HasSubstr("2 of 5 devices have ≥ 57.60 GiB free (device view) for TP=4"));
}

// Ports other services hold on a node (its agent read them from the
// kernel's socket tables) are given to no instance there, and only there.
TEST(ScheduleTest, PortsOtherServicesHoldAreSkipped) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  NodeView& a = w.AddNode("node-a", "gfx928", 4);
  for (int p : {8000, 8001, 8003}) a.mutable_inventory()->add_foreign_listen_ports(p);
  w.busy_ports["node-a"] = {8002};
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
  EXPECT_EQ(r.placement.port(), 8004);
  // Another node's listeners say nothing of node-b's ports.
  w.AddNode("node-b", "gfx928", 4);
  w.busy_devices["node-a"] = {0, 1, 2, 3};
  r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.placement.port(), 8000);
}

TEST(ScheduleTest, AvoidedDevicesAndPortsAndTakenOnesAreHonoured) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928", 4);
  w.AddNode("node-b", "gfx928", 4);
  w.avoid_devices["node-a"] = {0, 2};
  w.busy_devices["node-a"] = {1};
  w.busy_ports["node-a"] = {8001};
  w.avoid_ports = {8000, 8002};
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
  EXPECT_THAT(Devices(r), ElementsAre(3));
  EXPECT_EQ(r.placement.port(), 8003);
  EXPECT_THAT(r.placement.devices_in_use(), ElementsAre(0, 1, 2));
  EXPECT_THAT(r.placement.devices_avoided(), testing::IsEmpty());

  // Only another node has two devices left.
  w.spec.set_tp(2);
  r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_THAT(Devices(r), ElementsAre(0, 1));
  EXPECT_EQ(r.placement.port(), 8001);
}

// ---------------------------------------------------------------------------
// Why not this node: one reason per node for each cause.

TEST(ScheduleTest, SaysWhyEachNodeCannotTakeIt) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1, "/opt/conda/envs/vllm");
  w.AddPlan("gfx906", "vllm-gfx906", 1);
  Plan broken;
  broken.set_stack_id("vllm-old");
  broken.set_excluded_reason("broken on gfx942: HIP error");
  w.excluded["gfx942"] = {broken};
  auto with_env = [&](NodeView& n) -> NodeView& {
    World::AddEnvironment(n, "bare", "/opt/conda/envs/vllm");
    return n;
  };
  with_env(w.AddNode("a-notready", "gfx928")).set_state(dcufleet::v1::NODE_NOT_READY);
  w.Node("a-notready").set_state_reason("no report for 20s");
  with_env(w.AddNode("b-lost", "gfx928")).set_state(dcufleet::v1::NODE_LOST);
  w.AddNode("c-nodevices", "gfx928", 0);
  w.AddNode("d-noarch", "");
  w.AddNode("e-noplan", "gfx90a");
  w.AddNode("f-broken", "gfx942");
  w.AddNode("g-noenv", "gfx928");
  w.AddNode("h-noenv-nomodel", "gfx928").mutable_inventory()->clear_models();
  with_env(w.AddNode("i-nomodel", "gfx928")).mutable_inventory()->clear_models();
  with_env(w.AddNode("j-small", "gfx928", 8, 16 * kGiB, 16 * kGiB));
  with_env(w.AddNode("k-few", "gfx928", 1, 32 * kGiB, 32 * kGiB));
  with_env(w.AddNode("l-busy", "gfx928", 2));
  w.busy_devices["l-busy"] = {0, 1};
  // 200 GiB of weights: TP=4 and TP=8 fit 64 GiB devices, none fits 16 GiB ones.
  w.model.weight_bytes = 200 * kGiB;
  ScheduleResult r = w.Run();
  EXPECT_FALSE(r.placed);
  auto why = Reasons(r);
  EXPECT_EQ(why["a-notready"], "node is NotReady (no report for 20s)");
  EXPECT_EQ(why["b-lost"], "node is Lost");
  EXPECT_EQ(why["c-nodevices"], "no accelerators reported");
  EXPECT_EQ(why["d-noarch"], "arch of its devices is unknown (see dcuctl describe node)");
  EXPECT_EQ(why["e-noplan"], "arch gfx90a has no known stack for qwen3-32b");
  EXPECT_EQ(why["f-broken"],
            "arch gfx942 has no working stack for qwen3-32b (vllm-old: broken on gfx942: HIP error)");
  EXPECT_EQ(why["g-noenv"], "no usable stack installed (vllm-bare not installed)");
  EXPECT_EQ(why["h-noenv-nomodel"],
            "no usable stack installed (vllm-bare not installed); model qwen3-32b not found under "
            "the node's model roots");
  EXPECT_EQ(why["i-nomodel"], "model qwen3-32b not found under the node's model roots");
  EXPECT_EQ(why["j-small"], "TP=8: needs 27.00 GiB per device, budget 14.40 GiB");
  EXPECT_EQ(why["k-few"], "TP=2 needs 2 devices, node has 1");
  EXPECT_EQ(why["l-busy"], "TP=4 needs 4 devices, node has 2");
  EXPECT_EQ(r.rejections.size(), 12u);
  EXPECT_EQ(r.first_usable, 4u)
      << "e-noplan is the first Ready node with devices a TP could use (plans are not the cursor's)";

  // With fewer devices taken the last node reports its devices.
  w.model.weight_bytes = 60 * kGiB;
  w.spec.set_tp(2);
  r = w.Run();
  EXPECT_FALSE(r.placed);
  EXPECT_EQ(Reasons(r)["l-busy"],
            "0 of 2 devices have ≥ 57.60 GiB free (device view) for TP=2; device 0 runs another "
            "instance; device 1 runs another instance");
  EXPECT_EQ(Reasons(r)["k-few"], "TP=2 needs 2 devices, node has 1");

  // A pinned stack or runtime is named when nothing matches it.
  w.spec.set_stack_id("vllm-nope");
  r = w.Run();
  EXPECT_EQ(Reasons(r)["g-noenv"],
            "arch gfx928 has no working stack for qwen3-32b matching the requested stack vllm-nope");
}

TEST(ScheduleTest, NamesSomeNodesAndCountsTheRest) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  for (int i = 0; i < 6; ++i) w.AddNode(absl::StrCat("node-", i), "gfx90a");
  w.AddNode("node-6", "");
  w.max_rejections = 3;
  ScheduleResult r = w.Run();
  EXPECT_FALSE(r.placed);
  ASSERT_EQ(r.rejections.size(), 4u);
  EXPECT_EQ(r.rejections[3].node(), "(4 more nodes)");
  EXPECT_EQ(r.rejections[3].reason(), "1 arch unknown, 3 no working stack for the arch");

  World empty;
  r = empty.Run();
  ASSERT_EQ(r.rejections.size(), 1u);
  EXPECT_EQ(r.rejections[0].node(), "(fleet)");
  EXPECT_EQ(r.rejections[0].reason(), "no nodes registered");
}

// With only a NotReady node the cursor skips it (no usable device for any
// budget); the answer used to be "(fleet): no nodes registered".
TEST(ScheduleTest, NodesSkippedByTheCursorAreStillNamedWhenNothingFits) {
  World w;
  w.AddNode("node-a", "gfx928").set_state(dcufleet::v1::NODE_NOT_READY);
  w.first_node = 1;  // as the pass's cursor leaves it
  ScheduleResult r = w.Run();
  EXPECT_FALSE(r.placed);
  ASSERT_EQ(r.rejections.size(), 1u);
  EXPECT_EQ(r.rejections[0].node(), "node-a");
  EXPECT_THAT(r.rejections[0].reason(), HasSubstr("NotReady"));
}

// ---------------------------------------------------------------------------
// Ranking: plan rank, then TP, then the earlier name.

TEST(ScheduleTest, PlanRankComesFirst) {
  World w;
  w.AddPlan("gfx928", "vllm-best", 1, "/envs/best");
  w.AddPlan("gfx928", "vllm-second", 2, "/envs/second");
  World::AddEnvironment(w.AddNode("node-a", "gfx928"), "bare", "/envs/second");
  World::AddEnvironment(w.AddNode("node-b", "gfx928"), "bare", "/envs/best");
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.plan.stack_id(), "vllm-best");
  EXPECT_EQ(Reasons(r)["node-a"], "fits, but node 'node-b' ranks higher");
}

TEST(ScheduleTest, SmallerTpComesBeforeTheName) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928", 8, 32 * kGiB, 32 * kGiB);  // TP=2 (31 GiB of 28.8 for TP=1)
  w.AddNode("node-b", "gfx928", 8, 64 * kGiB, 63 * kGiB);  // TP=1
  w.model.weight_bytes = 29 * kGiB;
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.placement.tp(), 1);
  EXPECT_EQ(Reasons(r)["node-a"], "fits, but node 'node-b' ranks higher");
}

TEST(ScheduleTest, TiesGoToTheEarlierNameAndTheWalkStopsThere) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.AddNode("node-b", "gfx928");
  w.AddNode("node-c", "gfx928");
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
  EXPECT_THAT(r.rejections, IsEmpty()) << "nothing can rank higher: later nodes are not looked at";
}

TEST(ScheduleTest, NodesThatCannotRankHigherAreCountedNotChecked) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.model.weight_bytes = 29 * kGiB;
  w.AddNode("node-a", "gfx928", 8, 32 * kGiB, 32 * kGiB);  // TP=2
  w.AddNode("node-b", "gfx928", 8, 64 * kGiB, 63 * kGiB);  // would be TP=1, all taken
  w.busy_devices["node-b"] = {0, 1, 2, 3, 4, 5, 6, 7};
  w.AddNode("node-c", "gfx928", 8, 32 * kGiB, 32 * kGiB);  // TP=2 at best: no better than node-a
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-a");
  EXPECT_EQ(r.placement.tp(), 2);
  ASSERT_EQ(r.rejections.size(), 2u);
  EXPECT_EQ(r.rejections[0].node(), "node-b");
  EXPECT_THAT(r.rejections[0].reason(), HasSubstr("0 of 8 devices"));
  EXPECT_EQ(r.rejections[1].node(), "(1 more nodes)");
  EXPECT_EQ(r.rejections[1].reason(), "1 cannot rank higher than the chosen node");
}

TEST(ScheduleTest, PinnedNodeIsTheOnlyOneConsidered) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.AddNode("node-b", "gfx928");
  w.spec.set_node("node-b");
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");

  w.spec.set_node("node-z");
  r = w.Run();
  EXPECT_FALSE(r.placed);
  ASSERT_EQ(r.rejections.size(), 1u);
  EXPECT_EQ(r.rejections[0].node(), "node-z");
  EXPECT_EQ(r.rejections[0].reason(), "no such node");
}

// ---------------------------------------------------------------------------
// The first_usable cursor.

TEST(ScheduleTest, CursorSkipsThePrefixWithNoUsableDevice) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  for (int i = 0; i < 5; ++i) w.AddNode(absl::StrCat("node-", i), "gfx928", 2);
  w.busy_devices["node-0"] = {0, 1};
  w.busy_devices["node-1"] = {0, 1};
  // Avoided devices are this deployment's own: they do not move the cursor.
  w.avoid_devices["node-2"] = {0, 1};
  w.spec.set_tp(2);
  ScheduleResult r = w.Run();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-3");
  EXPECT_EQ(r.first_usable, 2u);

  w.first_node = r.first_usable;
  ScheduleResult again = w.Run();
  EXPECT_EQ(again.placement.ShortDebugString(), r.placement.ShortDebugString());

  // The next placement of a pass, from the cursor.
  w.Take(r);
  ScheduleResult next = w.Run();
  ASSERT_TRUE(next.placed);
  EXPECT_EQ(next.placement.node(), "node-4");
  EXPECT_EQ(next.first_usable, 2u);
  w.Take(next);
  next = w.Run();
  EXPECT_FALSE(next.placed);
  EXPECT_EQ(next.first_usable, 2u) << "node-2 still has devices (for another deployment)";
  w.avoid_devices.clear();
  w.busy_devices["node-2"] = {0};
  next = w.Run();
  EXPECT_FALSE(next.placed);
  EXPECT_EQ(next.first_usable, 5u);
  // Nothing fits: the nodes the cursor skipped are named with their own
  // reasons (not summed up as "2 with no free usable device").
  EXPECT_EQ(Reasons(next).count("(2 more nodes)"), 0u);
  EXPECT_FALSE(Reasons(next)["node-0"].empty());
  EXPECT_FALSE(Reasons(next)["node-1"].empty());
  EXPECT_THAT(Reasons(next)["node-2"], HasSubstr("1 of 2 devices"));
}

// ---------------------------------------------------------------------------
// Property: on random small fleets the fast path, the explainer and the
// cursor agree with each other and with a brute force over every node.

class Random {
 public:
  explicit Random(uint32_t seed) : rng_(seed) {}
  int Below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Below(static_cast<int>(v.size()))]; }

 private:
  std::mt19937 rng_;
};

World RandomWorld(Random& rnd) {
  World w;
  w.model.weight_bytes = rnd.Pick<int64_t>({8, 30, 60, 140}) * kGiB;
  w.model.valid_tp = rnd.Pick<std::vector<int>>({{1, 2, 4, 8}, {1, 2, 4}, {1, 4}, {2, 4, 8}});
  w.util = rnd.Chance(0.5) ? 0.9 : 0.6;
  w.spec.set_gpu_memory_utilization(w.util);
  w.spec.set_tp(rnd.Pick<int>({0, 0, 0, 0, 1, 2, 4, 8, 3}));
  // Plans: a few per arch with ranks that may tie, some needing an env.
  const std::vector<std::string> stacks = {"s-a", "s-b", "s-c", "s-d"};
  for (const std::string arch : {"gfx928", "gfx906", "gfx90a"}) {
    int count = arch == "gfx90a" ? rnd.Below(2) : 1 + rnd.Below(3);
    for (int i = 0; i < count; ++i) {
      const std::string& s = rnd.Pick(stacks);
      w.AddPlan(arch, s, 1 + rnd.Below(3), rnd.Chance(0.5) ? "/envs/" + s : "",
                rnd.Chance(0.7) ? "bare" : "container");
    }
    if (rnd.Chance(0.2)) {
      Plan& p = w.excluded[arch].emplace_back();
      p.set_stack_id("s-broken");
      p.set_excluded_reason("broken");
    }
  }
  if (rnd.Chance(0.15)) w.spec.set_stack_id(rnd.Pick(stacks));
  if (rnd.Chance(0.15)) w.spec.set_runtime(rnd.Chance(0.5) ? "bare" : "container");
  if (rnd.Chance(0.2)) w.excluded_stacks.insert(rnd.Pick(stacks));
  if (rnd.Chance(0.2)) w.avoid_ports.insert(8000);
  if (rnd.Chance(0.3)) w.max_rejections = 3;
  w.max_rejections_placed = rnd.Pick<size_t>({0, 1, 5});

  const int nodes = 1 + rnd.Below(16);
  for (int i = 0; i < nodes; ++i) {
    const std::string name = absl::StrCat("node-", i < 10 ? "0" : "", i);
    const std::string arch = rnd.Pick<std::string>({"gfx928", "gfx928", "gfx928", "gfx906", "gfx906", "gfx906", "gfx90a", ""});
    const int64_t total = rnd.Pick<int64_t>({32, 64}) * kGiB;
    NodeView& n = w.AddNode(name, arch, rnd.Chance(0.03) ? 0 : 1 + rnd.Below(8), total, total);
    if (rnd.Chance(0.1)) World::AddDevice(n, "gfx906", total, total);  // a second arch
    for (auto& d : *n.mutable_inventory()->mutable_devices()) {
      const int64_t free = static_cast<int64_t>(rnd.Pick<double>({1.0, 1.0, 0.97, 0.7, 0.3, 0.05}) *
                                                static_cast<double>(total));
      d.mutable_schedulable_free()->set_bytes(free);
      d.mutable_device_free()->set_bytes(free);
      if (rnd.Chance(0.1)) d.clear_schedulable_free();
      if (rnd.Chance(0.05)) {
        d.clear_schedulable_free();
        d.clear_device_free();
        d.clear_host_free();
      }
      if (rnd.Chance(0.1)) d.set_unreclaimed_bytes(rnd.Chance(0.5) ? 2 * kGiB : kGiB / 2);
      if (rnd.Chance(0.1)) {
        auto* h = d.add_holders();
        h->set_pid(1000 + d.index());
        h->set_holder_class(rnd.Pick<dcufleet::v1::HolderClass>(
            {dcufleet::v1::HOLDER_LEFTOVER, dcufleet::v1::HOLDER_ZOMBIE,
             dcufleet::v1::HOLDER_UNMANAGED, dcufleet::v1::HOLDER_MANAGED}));
      }
      if (rnd.Chance(0.15)) w.busy_devices[name].insert(d.index());
      if (rnd.Chance(0.05)) w.avoid_devices[name].insert(d.index());
    }
    const int state = rnd.Below(100);
    if (state < 6) n.set_state(dcufleet::v1::NODE_NOT_READY);
    if (state >= 6 && state < 9) n.set_state(dcufleet::v1::NODE_LOST);
    for (const std::string& s : stacks) {
      if (rnd.Chance(0.7)) World::AddEnvironment(n, rnd.Chance(0.8) ? "bare" : "container", "/envs/" + s);
    }
    if (rnd.Chance(0.1)) n.mutable_inventory()->clear_models();
    if (rnd.Chance(0.3)) w.busy_ports[name].insert(8000);
    if (rnd.Chance(0.1)) w.busy_ports[name].insert(8001);
  }
  return w;
}

// Everything a result says (for failure messages).
std::string Transcript(const ScheduleResult& r) {
  std::string s = absl::StrCat("placed=", r.placed, " first_usable=", r.first_usable, "\n");
  if (r.placed) {
    absl::StrAppend(&s, "placement ", r.placement.ShortDebugString(), "\nplan ", r.plan.ShortDebugString(),
                    "\nmodel_path ", r.model_path, "\n");
  }
  for (const auto& p : r.plans) absl::StrAppend(&s, "plans ", p.ShortDebugString(), "\n");
  for (const auto& p : r.excluded_plans) absl::StrAppend(&s, "excluded ", p.ShortDebugString(), "\n");
  for (const auto& rj : r.rejections) absl::StrAppend(&s, "rejection ", rj.node(), ": ", rj.reason(), "\n");
  return s;
}

// What a placement decides (the cursor must not change it; it does change
// what an unplaced result lists: the rejections and plans after the cursor).
std::string Placement(const ScheduleResult& r) {
  if (!r.placed) return absl::StrCat("unplaced, first_usable=", r.first_usable);
  return absl::StrCat(r.placement.ShortDebugString(), " plan ", r.plan.ShortDebugString(), " ",
                      r.model_path, " first_usable=", r.first_usable);
}

// Checks one state of a fleet.
void CheckAgreement(World& w, const std::string& label) {
  w.Prepare();
  const ScheduleInput in = w.Input();
  const ScheduleResult r = Schedule(in);
  std::string transcript = Transcript(r);
  // Brute force: every node on its own (a pinned deployment looks at that
  // node only, with no early stop and no cursor).
  std::vector<ScheduleResult> alone;
  std::vector<std::string> why_not;
  std::optional<size_t> best;
  std::tuple<int, int, size_t> best_rank;
  for (size_t i = 0; i < w.nodes.size(); ++i) {
    const std::string& name = w.nodes[i].view->name();
    ScheduleInput pin = in;
    pin.spec.set_node(name);
    alone.push_back(Schedule(pin));
    const ScheduleResult& a = alone.back();
    absl::StrAppend(&transcript, "alone ", name, " ", Transcript(a));
    why_not.push_back(WhyNot(in, w.nodes[i]));
    EXPECT_EQ(a.placed, why_not[i].empty())
        << label << " " << name << ": the fast path and the explainer disagree: " << why_not[i];
    if (!a.placed) {
      EXPECT_FALSE(a.rejections.empty()) << label << " " << name;
      if (a.rejections.empty()) continue;
      EXPECT_EQ(a.rejections[0].node(), name) << label;
      EXPECT_EQ(a.rejections[0].reason(), why_not[i]) << label << " " << name;
      continue;
    }
    EXPECT_EQ(a.placement.node(), name) << label;
    EXPECT_EQ(a.placement.device_indices_size(), a.placement.tp()) << label << " " << name;
    std::tuple<int, int, size_t> rank{a.plan.rank(), a.placement.tp(), i};
    if (!best || rank < best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  // The fast path picks the brute-force best, with the same devices, TP,
  // plan and port.
  EXPECT_EQ(r.placed, best.has_value()) << label << "\n" << transcript;
  if (best && r.placed) {
    EXPECT_EQ(r.placement.ShortDebugString(), alone[*best].placement.ShortDebugString()) << label;
    EXPECT_EQ(r.plan.ShortDebugString(), alone[*best].plan.ShortDebugString()) << label;
    EXPECT_EQ(r.model_path, alone[*best].model_path) << label;
  }
  // Every node it names is named for the reason the explainer gives (or,
  // when it fits, as outranked).
  for (const auto& rj : r.rejections) {
    if (absl::StartsWith(rj.node(), "(")) continue;
    size_t i = 0;
    while (i < w.nodes.size() && w.nodes[i].view->name() != rj.node()) ++i;
    EXPECT_LT(i, w.nodes.size()) << label << " " << rj.node();
    if (i == w.nodes.size()) continue;
    if (absl::StartsWith(rj.reason(), "fits, but")) {
      EXPECT_TRUE(alone[i].placed) << label << " " << rj.node();
    } else {
      EXPECT_EQ(rj.reason(), why_not[i]) << label << " " << rj.node();
    }
  }
  // The cursor: nothing before it fits, and starting there changes nothing.
  for (size_t i = 0; i < std::min(r.first_usable, w.nodes.size()); ++i) {
    EXPECT_FALSE(alone[i].placed) << label << " " << w.nodes[i].view->name() << " is before the cursor";
  }
  ScheduleInput from = in;
  from.first_node = r.first_usable;
  EXPECT_EQ(Placement(Schedule(from)), Placement(r)) << label;
}

TEST(SchedulePropertyTest, FastPathExplainerAndCursorAgreeOnRandomFleets) {
  Random rnd(20261201);
  int placements = 0, unschedulable = 0;
  for (int fleet = 0; fleet < 300; ++fleet) {
    World w = RandomWorld(rnd);
    // A pass placing instances one after another: each takes its devices.
    World with_cursor = w;
    for (int step = 0; step < 4; ++step) {
      const std::string label = absl::StrCat("fleet ", fleet, " step ", step);
      CheckAgreement(w, label);
      if (::testing::Test::HasFailure()) return;
      ScheduleResult r = w.Run();
      // The same pass, each placement starting at the previous cursor.
      ScheduleResult rc = with_cursor.Run();
      EXPECT_EQ(Placement(rc), Placement(r)) << label;
      with_cursor.first_node = rc.first_usable;
      if (!r.placed) {
        ++unschedulable;
        break;
      }
      ++placements;
      w.Take(r);
      with_cursor.Take(rc);
    }
  }
  // The generator makes both outcomes common.
  EXPECT_GT(placements, 300);
  EXPECT_GT(unschedulable, 100);
}

// ---------------------------------------------------------------------------
// Copy-first placements (issue 19): a node that lacks the model is chosen
// only when no node with the model fits, and only when a copy can be made.

// Copies come from node-a's directory unless `refuse` names the node.
void CopyFromNodeA(World& w, ScheduleInput& in, std::map<std::string, std::string> refuse = {}) {
  in.model_copy_to_node = [refuse](const NodeView& n) -> absl::StatusOr<ModelCopyPlan> {
    if (auto it = refuse.find(n.name()); it != refuse.end()) return absl::FailedPreconditionError(it->second);
    return ModelCopyPlan{"Qwen3-32B", "node-a", "10.0.0.1:7000", "/data/models/Qwen3-32B", "", ""};
  };
  (void)w;
}

TEST(ScheduleCopyFirstTest, NodeWithoutTheModelCopiesFirstWhenNoNodeWithItFits) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.AddNode("node-b", "gfx928").mutable_inventory()->clear_models();
  w.busy_devices["node-a"] = {0, 1, 2, 3, 4, 5, 6, 7};
  w.Prepare();
  ScheduleInput in = w.Input();
  // Without a way to copy, nothing fits.
  ScheduleResult none = Schedule(in);
  EXPECT_FALSE(none.placed);
  EXPECT_THAT(Reasons(none)["node-b"], HasSubstr("not found under the node's model roots"));

  CopyFromNodeA(w, in);
  ScheduleResult r = Schedule(in);
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.kind, PlacementKind::kCopyFirst);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.placement.tp(), 1);
  EXPECT_THAT(Devices(r), ElementsAre(0));
  EXPECT_TRUE(r.model_path.empty());
  EXPECT_EQ(r.copy.source_node, "node-a");
  EXPECT_EQ(r.reason,
            "no node that has qwen3-32b can take it; node 'node-b' can once it copies Qwen3-32B from node "
            "'node-a' (/data/models/Qwen3-32B)");
  // The node with the model is named with why it could not take it.
  EXPECT_THAT(Reasons(r)["node-a"], HasSubstr("device 0 runs another instance"));
}

TEST(ScheduleCopyFirstTest, ANodeWithTheModelAlwaysWins) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddPlan("gfx906", "vllm-906", 5);
  // node-a lacks the model but has the better plan and comes first by name:
  // it still loses to node-b, which has the model.
  w.AddNode("node-a", "gfx928").mutable_inventory()->clear_models();
  w.AddNode("node-b", "gfx906");
  w.Prepare();
  ScheduleInput in = w.Input();
  int asked = 0;
  in.model_copy_to_node = [&asked](const NodeView&) -> absl::StatusOr<ModelCopyPlan> {
    ++asked;
    return ModelCopyPlan{"Qwen3-32B", "node-b", "10.0.0.2:7000", "/data/models/Qwen3-32B", "", ""};
  };
  ScheduleResult r = Schedule(in);
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.kind, PlacementKind::kLaunch);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_EQ(r.model_path, "/data/models/qwen3-32b");
  EXPECT_EQ(asked, 0);  // no copy is planned while a node with the model fits
}

TEST(ScheduleCopyFirstTest, NodesThatCannotBeCopiedToArePassedOverWithTheReason) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928", 8, 64 * kGiB, 1 * kGiB);  // has it, too little free
  w.AddNode("node-b", "gfx928").mutable_inventory()->clear_models();
  w.AddNode("node-c", "gfx928").mutable_inventory()->clear_models();
  w.AddNode("node-d", "gfx928").mutable_inventory()->clear_models();
  w.Prepare();
  ScheduleInput in = w.Input();
  CopyFromNodeA(w, in, {{"node-b", "the copy of Qwen3-32B from node 'node-a' failed: sha256 mismatch"}});
  ScheduleResult r = Schedule(in);
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.kind, PlacementKind::kCopyFirst);
  EXPECT_EQ(r.placement.node(), "node-c");
  auto why = Reasons(r);
  EXPECT_THAT(why["node-a"], HasSubstr("has 1.00 GiB free"));
  EXPECT_THAT(why["node-b"], HasSubstr("cannot copy it here: the copy of Qwen3-32B from node 'node-a' failed: "
                                       "sha256 mismatch"));
  EXPECT_THAT(why["node-d"], HasSubstr("node 'node-c' ranks higher for a copy"));

  // No node can be copied to: unschedulable, each reason named.
  CopyFromNodeA(w, in, {{"node-b", "no"}, {"node-c", "no"}, {"node-d", "no"}});
  ScheduleResult u = Schedule(in);
  EXPECT_FALSE(u.placed);
  EXPECT_THAT(Reasons(u)["node-d"], HasSubstr("cannot copy it here: no"));
}

TEST(ScheduleCopyFirstTest, NoSourceForAnyNodeIsAskedOnce) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  for (const char* n : {"node-a", "node-b", "node-c"}) w.AddNode(n, "gfx928").mutable_inventory()->clear_models();
  w.Prepare();
  ScheduleInput in = w.Input();
  int asked = 0;
  in.model_copy_to_node = [&asked](const NodeView&) -> absl::StatusOr<ModelCopyPlan> {
    ++asked;
    return absl::NotFoundError("no node has a usable copy of qwen3-32b");
  };
  ScheduleResult r = Schedule(in);
  EXPECT_FALSE(r.placed);
  EXPECT_EQ(asked, 1);
  auto why = Reasons(r);
  EXPECT_THAT(why["node-a"], HasSubstr("cannot copy it here: no node has a usable copy of qwen3-32b"));
  EXPECT_THAT(why["node-c"], HasSubstr("not found under the node's model roots"));
}

TEST(ScheduleCopyFirstTest, TheBestPlanRankIsCopiedToFirst) {
  World w;
  w.AddPlan("gfx906", "vllm-906", 5);
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.busy_devices["node-a"] = {0, 1, 2, 3, 4, 5, 6, 7};
  w.AddNode("node-b", "gfx906").mutable_inventory()->clear_models();
  w.AddNode("node-c", "gfx928").mutable_inventory()->clear_models();
  w.Prepare();
  ScheduleInput in = w.Input();
  CopyFromNodeA(w, in);
  ScheduleResult r = Schedule(in);
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.kind, PlacementKind::kCopyFirst);
  EXPECT_EQ(r.placement.node(), "node-c");
  EXPECT_EQ(r.plan.stack_id(), "vllm-bare");
}

TEST(ScheduleCopyFirstTest, APinnedNodeWithoutTheModelCopiesFirst) {
  World w;
  w.AddPlan("gfx928", "vllm-bare", 1);
  w.AddNode("node-a", "gfx928");
  w.AddNode("node-b", "gfx928").mutable_inventory()->clear_models();
  w.spec.set_node("node-b");
  w.Prepare();
  ScheduleInput in = w.Input();
  CopyFromNodeA(w, in);
  ScheduleResult r = Schedule(in);
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.kind, PlacementKind::kCopyFirst);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_THAT(r.reason, HasSubstr("node 'node-b' lacks qwen3-32b; node 'node-b' can once it copies"));
}

}  // namespace
}  // namespace dcu::controller
