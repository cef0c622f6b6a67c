// The scheduler and the deploy reconciler on a synthetic fleet of 10,000
// nodes x 8 devices of mixed arches (gfx928 K100_AI, gfx906 Z100, gfx90a
// MI210, gfx942 MI300X) with realistic device-view free memory (3% of devices
// hold unreclaimed memory, 5% are partly used by unmanaged processes).
//
// BM_Schedule: one Schedule() per deployment of a stream of catalog-like
// models with mixed TP; each placement takes its devices, so the fleet fills
// up as the stream goes on (reset when a deployment no longer fits).
// BM_ReconcilePass: M pending deployments, one DeployController pass: every
// deployment scheduled, its intent persisted (SQLite file, WAL), assignments
// pushed to the nodes. Target: >= 20,000 persisted placements/s with 10,000
// nodes.
#include <unistd.h>

#include <google/protobuf/arena.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <unordered_map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/common/synthetic_fleet.h"
#include "benchmark/benchmark.h"
#include "common/clock.h"
#include "common/logging.h"
#include "controller/adapters/catalog_knowledge.h"
#include "controller/adapters/classifier_diagnoser.h"
#include "controller/core/remediation_policy.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "modelkit/catalog_loader.h"
#include "controller/core/deploy_controller.h"
#include "controller/core/fleet_state.h"
#include "controller/core/scheduler.h"
#include "controller/store/sqlite_catalog_store.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"
#include "tests/testing/fake_knowledge.h"

namespace dcu::bench {
namespace {

using controller::MemoryCheck;
using controller::ModelFacts;
using controller::Schedule;
using controller::ScheduleInput;

constexpr int64_t kGiB = 1LL << 30;

struct BenchModel {
  ModelFacts facts;
};

// Catalog-like models (weights from their safetensors indexes; heads from
// their config.json): the TP choices their heads allow.
const std::vector<ModelFacts>& Models() {
  static const auto* kModels = new std::vector<ModelFacts>{
      {"qwen3-8b", 16381470720, 32, 8, {1, 2, 4, 8}},
      {"qwen3-32b", 65524246528, 64, 8, {1, 2, 4, 8}},
      {"llama-3.1-70b", 141107412992, 64, 8, {1, 2, 4, 8}},
      {"qwen2.5-7b-instruct", 15231233024, 28, 4, {1, 2, 4}},
  };
  return *kModels;
}

// The vLLM start-up rule, simplified: weights/TP + 2 GiB activations + 1 GiB
// KV must fit in gpu_memory_utilization x total; each device then needs that
// budget free in the device view.
MemoryCheck Memory(const ModelFacts& m, double util, int tp, int64_t total) {
  MemoryCheck c;
  int64_t need = m.weight_bytes / tp + 3 * kGiB;
  int64_t budget = static_cast<int64_t>(util * static_cast<double>(total));
  c.required_free_bytes = budget;
  c.fits = need <= budget;
  if (!c.fits) c.reason = "weights do not fit";
  c.plan.set_tp(tp);
  c.plan.set_weights_per_device_bytes(m.weight_bytes / tp);
  c.plan.set_overhead_bytes(3 * kGiB);
  c.plan.set_budget_bytes(budget);
  c.plan.set_fits(c.fits);
  return c;
}

controller::ArchPlanSetPtr PlansForArch(const std::string& arch) {
  // Built once per arch, as a reconcile pass asks the knowledge once per
  // (model, arch).
  static auto* cache = new std::map<std::string, controller::ArchPlanSetPtr>();
  if (auto it = cache->find(arch); it != cache->end()) return it->second;
  auto set = std::make_shared<controller::ArchPlanSet>();
  (*cache)[arch] = set;
  std::vector<dcufleet::v1::Plan>* plans = &set->plans;
  int rank = 1;
  for (const char* id : {"bench-vllm-0.11.0-bare", "bench-vllm-0.9.2-bare"}) {
    dcufleet::v1::Plan p;
    p.set_rank(rank++);
    p.set_stack_id(id);
    p.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    p.set_verdict(dcufleet::v1::VERDICT_UNTESTED);
    p.set_arch(arch);
    plans->push_back(p);
  }
  return set;
}

// The TP of the i-th deployment of the stream: half choose automatically,
// the rest ask for 1, 2, 4 or 8.
int TpOf(int i) {
  static const int kTps[] = {0, 1, 0, 2, 0, 4, 0, 8, 0, 2};
  return kTps[i % 10];
}

// A TP the model's heads allow (explicit requests only ask for those).
int TpFor(const ModelFacts& m, int i) {
  int tp = TpOf(i);
  return std::find(m.valid_tp.begin(), m.valid_tp.end(), tp) == m.valid_tp.end() ? 0 : tp;
}

void BM_Schedule(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FleetOptions fo;
  std::vector<dcufleet::v1::NodeView> fleet = MakeFleet(nodes, fo, 1700000000000);
  // What a reconcile pass prepares once: the scheduler's view of each node.
  std::vector<controller::ScheduleNode> sched;
  for (const auto& n : fleet) sched.push_back(controller::MakeScheduleNode(n));
  const std::vector<controller::ScheduleNode> empty_fleet = sched;
  auto shapes = controller::FleetShapes(sched);
  std::unordered_map<std::string, size_t> index;
  for (size_t k = 0; k < sched.size(); ++k) index[sched[k].view->name()] = k;
  ScheduleInput in;
  in.nodes = &sched;
  in.shapes = &shapes;
  in.plans_for_arch = PlansForArch;
  in.model_path_on_node = [](const dcufleet::v1::NodeView& n) {
    return n.inventory().models().empty() ? std::string() : n.inventory().models(0).path();
  };
  // Where the last placement of each (model, TP) request found the first
  // usable node, as the reconciler keeps it within a pass.
  std::map<std::pair<std::string, int>, size_t> cursors;
  int i = 0;
  int64_t placed = 0, unplaced = 0;
  for (auto _ : state) {
    const ModelFacts& m = Models()[i % Models().size()];
    in.spec.set_model(m.name);
    in.spec.set_tp(TpFor(m, i));
    in.spec.set_gpu_memory_utilization(0.9);
    in.model = m;
    in.memory = [&m](int tp, int64_t total) {
      return std::make_shared<const controller::MemoryCheck>(Memory(m, 0.9, tp, total));
    };
    auto key = std::make_pair(m.name, static_cast<int>(in.spec.tp()));
    in.first_node = cursors[key];
    controller::ScheduleResult r = Schedule(in);
    cursors[key] = r.first_usable;
    if (r.placed) {
      ++placed;
      // The reconciler's bookkeeping: the placement takes its devices.
      controller::ScheduleNode* n = &sched[index.at(r.placement.node())];
      for (int d : r.placement.device_indices()) n->busy_devices.insert(d);
      n->busy_ports.insert(r.placement.port());
    } else {
      ++unplaced;
      // The fleet is full for this request: start over with an empty fleet.
      state.PauseTiming();
      sched = empty_fleet;
      cursors.clear();
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(r);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["unplaced"] = static_cast<double>(unplaced);
}
BENCHMARK(BM_Schedule)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

// A session that only counts what would go to the agent.
// Serialises what it is sent, as gRPC's write does on the sending thread:
// the pass pays for the bytes of every Assignment it pushes.
class CountingSession : public controller::NodeSession {
 public:
  bool Send(dcufleet::v1::ControllerMessage m) override {
    sent.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(static_cast<int64_t>(m.SerializeAsString().size()), std::memory_order_relaxed);
    return true;
  }
  std::string Peer() const override { return "bench"; }
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> bytes{0};
};

std::string TempDir() {
  char tmpl[] = "/tmp/dcu-bench-sched-XXXXXX";
  return mkdtemp(tmpl);
}

// The fleet a controller sees after every agent said Hello: FleetState over a
// node store (its own SQLite file).
struct Fleet {
  explicit Fleet(int nodes, const FleetOptions& fo) : dir(TempDir()) {
    store = std::move(*controller::SqliteStore::Open(dir + "/nodes.db"));
    fleet = std::make_unique<controller::FleetState>(store.get(), store.get(), &clock,
                                                     controller::FleetState::Options());
    sessions.resize(nodes);
    for (int i = 0; i < nodes; ++i) {
      dcufleet::v1::Hello h;
      h.set_node_name(NodeName(i));
      h.set_agent_version("0.1.0");
      *h.mutable_inventory() = MakeInventory(i, fo, 1700000000000);
      sessions[i] = std::make_unique<CountingSession>();
      auto w = fleet->OnHello(h, sessions[i].get());
      if (!w.ok()) std::fprintf(stderr, "hello: %s\n", std::string(w.status().message()).c_str());
    }
  }
  ~Fleet() { std::filesystem::remove_all(dir); }
  // Bytes of every message sent to the nodes so far.
  int64_t SentBytes() const {
    int64_t n = 0;
    for (const auto& s : sessions) n += s->bytes.load(std::memory_order_relaxed);
    return n;
  }
  std::string dir;
  common::FakeClock clock;
  std::unique_ptr<controller::SqliteStore> store;
  std::unique_ptr<controller::FleetState> fleet;
  std::vector<std::unique_ptr<CountingSession>> sessions;
};

// Knowledge as the reconciler tests use it, with two stacks per arch.
testing::FakeKnowledge MakeFakeKnowledge() {
  testing::FakeKnowledge k;
  for (const char* arch : {"gfx906", "gfx928", "gfx90a", "gfx942"}) {
    k.stacks.push_back({"bench-vllm-0.11.0-bare", "bare", arch, "untested", 1});
    k.stacks.push_back({"bench-vllm-0.9.2-bare", "bare", arch, "untested", 2});
  }
  k.facts = Models()[1];
  k.overhead = 3 * kGiB;
  k.model_path = "/data/models/Qwen3-32B";
  return k;
}

// A deploy controller over `fleet` as a pass benchmark needs it: its own
// SQLite file (WAL), the fake knowledge or the real one over the loadgen's
// catalog, no background thread (passes are run by the benchmark), and a
// first pass that shows the nodes to the knowledge (model directories,
// environments), as a controller sees them when they connect.
class BenchController {
 public:
  // `real_diagnosis`: the shipped rules over the real classifier, as the
  // controller runs them (the failover pass diagnoses every failed log).
  BenchController(Fleet* fleet, testing::FakeKnowledge* fake, bool real_diagnosis = false)
      : dir_(TempDir()) {
    store_ = std::move(*controller::SqliteStore::Open(dir_ + "/deploy.db"));
    deploy_store_ = std::make_unique<controller::SqliteDeploymentStore>(store_->database());
    catalog_store_ = std::make_unique<controller::SqliteCatalogStore>(store_->database());
    controller::Knowledge* knowledge = fake;
    if (fake == nullptr) {
      auto parsed = modelkit::LoadCatalogDir(absl::StrCat(DCU_SOURCE_DIR_DEFAULT, "/bench/loadgen/catalog"));
      if (!parsed.ok()) {
        error_ = std::string(parsed.status().message());
        return;
      }
      (void)catalog_store_->ImportCatalog(*parsed, 1700000000000);
      catalog_ = std::make_unique<controller::CatalogKnowledge>(catalog_store_.get(), &fleet->clock);
      knowledge = catalog_.get();
    }
    controller::Diagnoser* diagnoser = &diagnoser_;
    if (real_diagnosis) {
      auto classifier = modelkit::BuiltInClassifier(controller::RemediationPolicy::HandledActions());
      if (!classifier.ok()) {
        error_ = std::string(classifier.status().message());
        return;
      }
      real_diagnoser_ = std::make_unique<controller::ClassifierDiagnoser>(std::move(*classifier));
      diagnoser = real_diagnoser_.get();
    }
    controller::DeployController::Options o;
    o.interval = absl::ZeroDuration();
    o.jitter_seed = 7;
    dc_ = std::make_unique<controller::DeployController>(fleet->fleet.get(), knowledge, diagnoser,
                                                         deploy_store_.get(), store_.get(), &fleet->clock, o);
    (void)dc_->Load();
    dc_->ReconcileOnceForTest();
  }
  ~BenchController() {
    if (dc_) dc_->Stop();
    dc_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Deployments d-0 .. d-<n-1> of `model`, TP from the mixed stream.
  bool Submit(int n, const std::string& model) {
    for (int i = 0; i < n; ++i) {
      dcufleet::v1::DeploymentSpec s;
      s.set_name(absl::StrCat("d-", i));
      s.set_model(model);
      s.set_tp(TpOf(i));
      auto r = dc_->Deploy(s, false);
      if (!r.ok()) {
        error_ = std::string(r.status().message());
        return false;
      }
    }
    return true;
  }
  int64_t Placed() const {
    int64_t placed = 0;
    for (const auto& d : dc_->List()) placed += d.status().attempts().empty() ? 0 : 1;
    return placed;
  }
  controller::DeployController& dc() { return *dc_; }
  const std::string& error() const { return error_; }

 private:
  std::string dir_;
  std::string error_;
  std::unique_ptr<controller::SqliteStore> store_;
  std::unique_ptr<controller::SqliteDeploymentStore> deploy_store_;
  std::unique_ptr<controller::SqliteCatalogStore> catalog_store_;
  std::unique_ptr<controller::CatalogKnowledge> catalog_;
  testing::FakeDiagnoser diagnoser_;
  std::unique_ptr<controller::ClassifierDiagnoser> real_diagnoser_;
  std::unique_ptr<controller::DeployController> dc_;
};

FleetOptions BenchFleetOptions(bool catalog) {
  FleetOptions fo;
  if (catalog) {
    fo.environments = {{"bare", "/opt/conda/envs/vllm-0.11.0"}, {"bare", "/opt/conda/envs/vllm-0.9.2"}};
  }
  return fo;
}

// The pass's own breakdown (DCU_BENCH_PASS_LOG=1) on stderr, for the timed
// passes only.
void PassLogOn() {
  if (getenv("DCU_BENCH_PASS_LOG")) common::SetLogLevel(common::LogLevel::kDebug);
}
void PassLogOff() { common::SetLogLevel(common::LogLevel::kInfo); }

// One reconcile pass placing `pending` deployments on the fleet: persisted
// (deployment documents, events, node generations) on a fresh SQLite file
// in WAL mode, then pushed to the nodes' sessions.
template <bool kCatalog>
void BM_ReconcilePass(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pending = static_cast<int>(state.range(1));
  static Fleet* fleet = nullptr;
  static int fleet_nodes = 0;
  static bool fleet_catalog = false;
  if (!fleet || fleet_nodes != nodes || fleet_catalog != kCatalog) {
    delete fleet;
    fleet = new Fleet(nodes, BenchFleetOptions(kCatalog));
    fleet_nodes = nodes;
    fleet_catalog = kCatalog;
  }
  testing::FakeKnowledge fake = MakeFakeKnowledge();
  int64_t placed_total = 0;
  const int64_t bytes_before = fleet->SentBytes();
  for (auto _ : state) {
    state.PauseTiming();
    {
      BenchController bc(fleet, kCatalog ? nullptr : &fake);
      if (!bc.error().empty() || !bc.Submit(pending, kCatalog ? "qwen3-8b" : "qwen3-32b")) {
        state.SkipWithError(bc.error().c_str());
        break;
      }
      PassLogOn();
      state.ResumeTiming();
      bc.dc().ReconcileOnceForTest();
      state.PauseTiming();
      PassLogOff();
      placed_total += bc.Placed();
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(placed_total);
  state.counters["placed_per_pass"] =
      static_cast<double>(placed_total) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  // What the pushes put on the wire (CountingSession serialises each).
  state.counters["sent_bytes_per_pass"] = static_cast<double>(fleet->SentBytes() - bytes_before) /
                                          static_cast<double>(std::max<int64_t>(1, state.iterations()));
}

// A pass when (almost) nothing happened: `placed` deployments already
// placed on a fleet of `nodes`, then passes in which no report changed.
// `placed` deployments of qwen3-8b submitted and placed by one pass; false
// (and `state` skipped with the reason) when the set-up failed.
bool SubmitAndPlace(BenchController& bc, int placed, benchmark::State& state) {
  if (!bc.error().empty() || !bc.Submit(placed, "qwen3-8b")) {
    state.SkipWithError(bc.error().c_str());
    return false;
  }
  bc.dc().ReconcileOnceForTest();
  return true;
}

// What a pass costs whatever its work -- the floor every failure report
// waits behind, and what a busy fleet pays for every wake-up.
void BM_SteadyPass(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int placed = static_cast<int>(state.range(1));
  Fleet fleet(nodes, BenchFleetOptions(true));
  BenchController bc(&fleet, nullptr);
  if (!SubmitAndPlace(bc, placed, state)) return;
  bc.dc().ReconcileOnceForTest();  // settles
  PassLogOn();
  for (auto _ : state) bc.dc().ReconcileOnceForTest();
  PassLogOff();
  state.counters["placed"] = static_cast<double>(bc.Placed());
}
// The pass that acts on failures, as in `dcu-loadgen --mode failover`: a
// fleet of `nodes` with `placed` deployments serving (real catalog, the
// shipped diagnosis rules), then `failing` of them report FAILED with the
// loadgen's log tail (a triton that cannot compile for gfx928) before each
// timed pass. The pass diagnoses each, records the outcome, fails over to
// the next plan and places it: the work per failure report that the
// failover figure in BENCHMARKS.md waits behind.
// The timed pass, apart in a profile (perf: samples under TimedFailoverPass
// are the timed passes, not the set-up's).
[[gnu::noinline]] void TimedFailoverPass(controller::DeployController& dc) {
  dc.ReconcileOnceForTest();
  benchmark::ClobberMemory();  // not a tail call: the frame stays in the stack
}

void BM_FailoverPass(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int placed = static_cast<int>(state.range(1));
  const int failing = static_cast<int>(state.range(2));
  Fleet fleet(nodes, BenchFleetOptions(true));
  BenchController bc(&fleet, nullptr, /*real_diagnosis=*/true);
  if (!SubmitAndPlace(bc, placed, state)) return;
  // Every instance reports Ready; what can fail is on the first plan.
  struct Serving {
    std::string node;
    std::string instance_id;
    std::string env;
  };
  std::vector<Serving> first_plan;
  for (const auto& d : bc.dc().List()) {
    if (d.status().attempts().empty()) continue;
    const auto& a = d.status().attempts(d.status().attempts_size() - 1);
    dcufleet::v1::InstanceEvent ev;
    ev.mutable_status()->set_instance_id(a.instance().instance_id());
    ev.mutable_status()->set_phase(dcufleet::v1::INSTANCE_READY);
    ev.mutable_status()->set_port(a.placement().port());
    const int i = NodeIndex(a.placement().node());
    (void)fleet.fleet->OnInstanceEvent(a.placement().node(), ev, fleet.sessions[i].get());
    if (a.stack_id() == "bench-vllm-0.11.0-bare" && a.placement().arch() == "gfx928") {
      first_plan.push_back({a.placement().node(), a.instance().instance_id(), a.instance().runtime_location()});
    }
  }
  bc.dc().ReconcileOnceForTest();  // follows them to Ready
  size_t next = 0;
  int64_t failed_over = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (next + failing > first_plan.size()) {
      state.SkipWithError("out of instances on the first plan: fewer iterations or failures per pass");
      break;
    }
    for (int k = 0; k < failing; ++k, ++next) {
      const Serving& s = first_plan[next];
      dcufleet::v1::InstanceEvent ev;
      ev.mutable_status()->set_instance_id(s.instance_id);
      ev.mutable_status()->set_phase(dcufleet::v1::INSTANCE_FAILED);
      ev.mutable_status()->set_exit_code(1);
      ev.mutable_status()->set_message("engine core initialization failed");
      for (const auto& l : TritonFailureLogTail(s.env, "gfx928")) ev.mutable_status()->add_log_tail(l);
      (void)fleet.fleet->OnInstanceEvent(s.node, ev, fleet.sessions[NodeIndex(s.node)].get());
    }
    PassLogOn();
    state.ResumeTiming();
    TimedFailoverPass(bc.dc());
    state.PauseTiming();
    PassLogOff();
    failed_over += failing;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(failed_over);
}
// What a reader listing every deployment (`dcuctl get deployments`, a
// dashboard, dcu-loadgen waiting for READY) costs everyone else: a fleet of
// `nodes` with `placed` deployments placed (real catalog), one thread
// calling List() back to back, and the timed Get() of one deployment (it
// takes the controller's lock, as admission, the writer and the pass do).
// BM_List times List() alone.
void BM_GetWhileListing(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int placed = static_cast<int>(state.range(1));
  Fleet fleet(nodes, BenchFleetOptions(true));
  BenchController bc(&fleet, nullptr);
  if (!SubmitAndPlace(bc, placed, state)) return;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> lists{0};
  std::thread lister([&] {
    while (!stop.load()) {
      benchmark::DoNotOptimize(bc.dc().List());
      lists.fetch_add(1);
    }
  });
  while (lists.load() == 0) std::this_thread::yield();  // listing from here on
  int i = 0;
  std::vector<double> us;
  for (auto _ : state) {
    const std::string name = absl::StrCat("d-", i++ % placed);
    const absl::Time t0 = absl::Now();
    auto d = bc.dc().Get(name);
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    benchmark::DoNotOptimize(d);
  }
  stop = true;
  lister.join();
  std::sort(us.begin(), us.end());
  state.counters["lists"] = static_cast<double>(lists.load());
  state.counters["get_p50_us"] = us.empty() ? 0 : us[us.size() / 2];
  state.counters["get_p99_us"] = us.empty() ? 0 : us[us.size() * 99 / 100];
  state.counters["get_max_us"] = us.empty() ? 0 : us.back();
}
void BM_List(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int placed = static_cast<int>(state.range(1));
  Fleet fleet(nodes, BenchFleetOptions(true));
  BenchController bc(&fleet, nullptr);
  if (!SubmitAndPlace(bc, placed, state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(bc.dc().List());
  state.counters["placed"] = static_cast<double>(bc.Placed());
}
// Copying and destroying placed documents (the pass's working copy, an
// answer's, a replaced version freed), on the heap as the controller does,
// and each on an arena of its own: the alternative a profile of the wave
// suggests (BENCHMARKS.md, stop 57). Documents from a real pass with the
// real catalog knowledge. Arg: how many copies live at once before they are
// destroyed (1: a copy dropped at once, hot in cache; 20,000: as the
// controller holds a fleet's documents). Items: one copy and its
// destruction.
template <bool kArena>
void BM_DocumentCopy(benchmark::State& state) {
  const int alive = static_cast<int>(state.range(0));
  Fleet fleet(100, BenchFleetOptions(true));
  BenchController bc(&fleet, nullptr);
  if (!SubmitAndPlace(bc, 64, state)) return;
  std::vector<dcufleet::v1::Deployment> docs = bc.dc().List();
  if (docs.empty() || docs[0].status().attempts().empty()) {
    state.SkipWithError("nothing was placed");
    return;
  }
  const dcufleet::v1::Deployment& doc = docs[0];
  google::protobuf::ArenaOptions ao;
  ao.start_block_size = 4096;
  ao.max_block_size = 16384;
  for (auto _ : state) {
    if constexpr (kArena) {
      std::vector<std::unique_ptr<google::protobuf::Arena>> copies;
      copies.reserve(alive);
      for (int i = 0; i < alive; ++i) {
        copies.push_back(std::make_unique<google::protobuf::Arena>(ao));
        google::protobuf::Arena::CreateMessage<dcufleet::v1::Deployment>(copies.back().get())->CopyFrom(doc);
      }
      benchmark::DoNotOptimize(copies.data());
    } else {
      std::vector<std::unique_ptr<dcufleet::v1::Deployment>> copies;
      copies.reserve(alive);
      for (int i = 0; i < alive; ++i) copies.push_back(std::make_unique<dcufleet::v1::Deployment>(doc));
      benchmark::DoNotOptimize(copies.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * alive);
  state.counters["doc_bytes"] = static_cast<double>(doc.ByteSizeLong());
}
BENCHMARK_TEMPLATE(BM_DocumentCopy, false)->Arg(1)->Arg(20000)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_DocumentCopy, true)->Arg(1)->Arg(20000)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_GetWhileListing)->Args({1000, 2000})->Args({10000, 20000})
    ->Unit(benchmark::kMicrosecond)->MinTime(3.0);
BENCHMARK(BM_List)->Args({1000, 2000})->Args({10000, 20000})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FailoverPass)->Args({10000, 4000, 200})->Args({1000, 400, 20})
    ->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_SteadyPass)->Args({1000, 400})->Args({10000, 4000})->Args({10000, 10000})->Unit(benchmark::kMillisecond);

BENCHMARK_TEMPLATE(BM_ReconcilePass, false)
    ->Args({1000, 1000})->Args({10000, 1000})->Args({10000, 10000})
    ->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_TEMPLATE(BM_ReconcilePass, true)
    ->Args({1000, 1000})->Args({10000, 1000})->Args({10000, 10000})
    ->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace dcu::bench
