// Durable writes of the controller's store on a temp file in WAL mode
// (synchronous=NORMAL, as dcu-controller opens it): node registration and
// deployment documents, one transaction per write vs many in one transaction.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/common/synthetic_fleet.h"
#include "benchmark/benchmark.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"

namespace dcu::bench {
namespace {

struct TempDb {
  TempDb() {
    char tmpl[] = "/tmp/dcu-bench-store-XXXXXX";
    dir = mkdtemp(tmpl);
    store = std::move(*controller::SqliteStore::Open(dir + "/dcufleet.db"));
    deployments = std::make_unique<controller::SqliteDeploymentStore>(store->database());
  }
  ~TempDb() {
    deployments.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
  std::unique_ptr<controller::SqliteStore> store;
  std::unique_ptr<controller::SqliteDeploymentStore> deployments;
};

// A deployment document as the reconciler writes it right after placing it:
// spec with defaults, two plans, one attempt with its rendered launch.
dcufleet::v1::Deployment MakeDeployment(int i) {
  dcufleet::v1::Deployment d;
  auto* s = d.mutable_spec();
  s->set_name(absl::StrCat("qwen3-8b-", i));
  s->set_model("qwen3-8b");
  s->set_tp(2);
  s->set_replicas(1);
  s->set_max_model_len(8192);
  s->set_max_num_seqs(16);
  s->set_gpu_memory_utilization(0.9);
  s->set_backoff_initial_s(10);
  s->set_backoff_max_s(300);
  s->set_startup_timeout_s(1800);
  s->set_max_attempts_per_plan(3);
  s->set_served_model_name("qwen3-8b");
  auto* st = d.mutable_status();
  st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
  st->set_message(absl::StrCat("attempt 1: bench-vllm-0.11.0-bare on '", NodeName(i % 10000), "'"));
  for (int r = 1; r <= 2; ++r) {
    auto* p = st->add_plans();
    p->set_rank(r);
    p->set_stack_id(r == 1 ? "bench-vllm-0.11.0-bare" : "bench-vllm-0.9.2-bare");
    p->set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    p->set_verdict(dcufleet::v1::VERDICT_UNTESTED);
    p->set_arch("gfx928");
    p->set_runtime_location(r == 1 ? "/opt/conda/envs/vllm-0.11.0" : "/opt/conda/envs/vllm-0.9.2");
  }
  st->set_created_at_ms(1700000000000 + i);
  st->set_updated_at_ms(1700000000000 + i);
  auto* a = st->add_attempts();
  a->set_number(1);
  a->set_instance_id(absl::StrCat(s->name(), "-1-a1b2c3"));
  a->set_stack_id("bench-vllm-0.11.0-bare");
  a->set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  auto* pl = a->mutable_placement();
  pl->set_node(NodeName(i % 10000));
  pl->set_arch("gfx928");
  pl->add_device_indices(0);
  pl->add_device_indices(1);
  pl->set_tp(2);
  pl->set_port(8000);
  // The figures a placement keeps of its memory plan (stop 45).
  auto* mp = pl->mutable_memory_plan();
  mp->mutable_request()->set_max_model_len(8192);
  mp->mutable_request()->set_max_num_seqs(16);
  mp->mutable_request()->set_gpu_memory_utilization(0.9);
  mp->mutable_request()->set_device_total_bytes(68698592870);
  mp->mutable_request()->set_device_free_bytes(68698592870);
  mp->mutable_request()->set_tp(2);
  mp->mutable_request()->set_device_count(2);
  mp->set_tp(2);
  mp->set_model_weight_bytes(16384000000);
  mp->set_weights_per_device_bytes(8192000000);
  mp->set_kv_bytes_per_token_per_device(73728);
  mp->set_kv_min_bytes(603979776);
  mp->set_kv_target_bytes(9663676416);
  mp->set_overhead_bytes(3060164198);
  mp->set_budget_bytes(61828733583);
  mp->set_kv_available_bytes(50576569385);
  mp->set_max_tokens_in_kv(685987);
  mp->set_startup_ok(true);
  mp->set_fits(true);
  mp->mutable_kv_shape()->set_attention_layers(36);
  mp->mutable_kv_shape()->set_kv_heads(8);
  mp->mutable_kv_shape()->set_head_dim(128);
  mp->mutable_kv_shape()->set_dtype_bytes(2);
  a->set_phase(dcufleet::v1::INSTANCE_PENDING);
  a->set_created_at_ms(1700000000000 + i);
  auto* in = a->mutable_instance();
  in->set_instance_id(a->instance_id());
  in->set_deployment(s->name());
  in->set_model("qwen3-8b");
  in->set_model_path("/data/models/Qwen3-8B");
  in->set_stack_id("bench-vllm-0.11.0-bare");
  in->set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  in->set_runtime_location("/opt/conda/envs/vllm-0.11.0");
  in->add_device_indices(0);
  in->add_device_indices(1);
  in->set_port(8000);
  for (const char* arg : {"/opt/conda/envs/vllm-0.11.0/bin/python", "-m",
                          "vllm.entrypoints.openai.api_server", "--model", "/data/models/Qwen3-8B",
                          "--served-model-name", "qwen3-8b", "--host", "0.0.0.0", "--port", "8000",
                          "--tensor-parallel-size", "2", "--max-model-len", "8192",
                          "--max-num-seqs", "16", "--gpu-memory-utilization", "0.9", "--dtype",
                          "auto"}) {
    in->add_argv(arg);
  }
  in->add_source_scripts("/opt/dtk/env.sh");
  in->set_startup_timeout_s(1800);
  in->set_served_model_name("qwen3-8b");
  in->set_attempt(1);
  in->set_visible_devices_env("HIP_VISIBLE_DEVICES");
  d.set_revision(2);
  return d;
}

controller::NodeRecord MakeNode(int i) {
  controller::NodeRecord r;
  r.name = NodeName(i);
  r.agent_version = "0.1.0";
  r.capabilities = {"inventory"};
  r.inventory = MakeInventory(i, FleetOptions(), 1700000000000);
  r.state = "Ready";
  r.state_reason = "agent connected";
  r.registered_at_ms = 1700000000000;
  r.last_seen_ms = 1700000000000;
  return r;
}

void BM_RegisterNode(benchmark::State& state) {
  TempDb db;
  std::vector<controller::NodeRecord> nodes;
  for (int i = 0; i < 1000; ++i) nodes.push_back(MakeNode(i));
  int64_t i = 0;
  for (auto _ : state) {
    // New names first, then re-registrations (the upsert path) of the same.
    controller::NodeRecord& r = nodes[i % nodes.size()];
    r.name = NodeName(static_cast<int>(i % 20000));
    auto s = db.store->RegisterNode(r);
    if (!s.ok()) state.SkipWithError(std::string(s.status().message()).c_str());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * nodes[0].inventory.ByteSizeLong());
}
BENCHMARK(BM_RegisterNode)->Unit(benchmark::kMicrosecond);

// One transaction per document (what Deploy() and Delete() do).
void BM_PutDeployment_OneByOne(benchmark::State& state) {
  TempDb db;
  std::vector<dcufleet::v1::Deployment> docs;
  for (int i = 0; i < 10000; ++i) docs.push_back(MakeDeployment(i));
  int64_t i = 0;
  for (auto _ : state) {
    absl::Status s = db.deployments->PutDeployment(docs[i % docs.size()]);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * docs[0].ByteSizeLong());
}
BENCHMARK(BM_PutDeployment_OneByOne)->Unit(benchmark::kMicrosecond);

// A reconcile pass's documents in one transaction (PutDeployments).
void BM_PutDeployments_Batched(benchmark::State& state) {
  TempDb db;
  const int batch = static_cast<int>(state.range(0));
  std::vector<std::vector<dcufleet::v1::Deployment>> batches(10);
  for (int b = 0; b < 10; ++b) {
    for (int i = 0; i < batch; ++i) batches[b].push_back(MakeDeployment(b * batch + i));
  }
  int64_t n = 0;
  for (auto _ : state) {
    absl::Status s = db.deployments->PutDeployments(batches[n % batches.size()]);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    ++n;
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetBytesProcessed(state.iterations() * batch * batches[0][0].ByteSizeLong());
}
BENCHMARK(BM_PutDeployments_Batched)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

// Events, one transaction each (what the reconciler and FleetState do per event).
void BM_AppendEvent(benchmark::State& state) {
  TempDb db;
  int64_t i = 0;
  for (auto _ : state) {
    controller::Event e{0, 1700000000000 + i, "deployment", absl::StrCat("qwen3-8b-", i % 10000),
                        "Normal", "Scheduled",
                        "attempt 1: node 'node-00042' (gfx928) devices [0,1] TP=2 port 8000, plan 1 "
                        "bench-vllm-0.11.0-bare (bare, untested)"};
    absl::Status s = db.store->AppendEvent(e);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AppendEvent)->Unit(benchmark::kMicrosecond);

void BM_UpdateInventory(benchmark::State& state) {
  TempDb db;
  for (int i = 0; i < 1000; ++i) (void)db.store->RegisterNode(MakeNode(i));
  auto inv = MakeInventory(7, FleetOptions(), 1700000000000);
  int64_t i = 0;
  for (auto _ : state) {
    absl::Status s = db.store->UpdateInventory(NodeName(static_cast<int>(i % 1000)), inv, 1700000000000 + i);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * inv.ByteSizeLong());
}
BENCHMARK(BM_UpdateInventory)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dcu::bench
