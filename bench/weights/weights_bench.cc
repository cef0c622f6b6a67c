// The weights verification (issue 19), measured on what it has to be cheap
// for: a Qwen3-32B-shaped checkpoint, 17 shards, 61 GiB, laid out as
// sparse files (real headers, every tensor name and shape of the model, the
// data a hole made by ftruncate, so nothing is written), and the sha256 of a
// real file of DCU_BENCH_SHA_MIB MiB (default 1024) in /tmp.
//
//   BM_HeaderChecks      VerifyWeights with config.json: index, 17 headers,
//                        lengths, total_size, 450 shapes. Goal: well under 1 s.
//   BM_HeaderChecksCached  the agent's rescan: WeightsAuditCache, unchanged files.
//   BM_Sha256Content     --verify-content on the real file (warm page cache:
//                        the file was just written; MB/s is the hash's).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "common/hash.h"
#include "modelkit/config_audit.h"
#include "modelkit/weights_audit.h"
#include "nlohmann/json.hpp"

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t bytes() const {
    int64_t n = 2;  // BF16
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Qwen3-32B (its published config): 64 layers, hidden 5120, 64 heads of 128,
// 8 KV heads, intermediate 25600, vocabulary 151936, untied lm_head.
constexpr int64_t kHidden = 5120, kHeads = 64, kKv = 8, kHeadDim = 128, kInter = 25600,
                  kVocab = 151936;
constexpr int kLayers = 64, kShards = 17;

std::vector<Tensor> Qwen3_32B() {
  std::vector<Tensor> t;
  t.push_back({"model.embed_tokens.weight", {kVocab, kHidden}});
  for (int l = 0; l < kLayers; ++l) {
    std::string p = absl::StrCat("model.layers.", l, ".");
    t.push_back({p + "input_layernorm.weight", {kHidden}});
    t.push_back({p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}});
    t.push_back({p + "self_attn.k_proj.weight", {kKv * kHeadDim, kHidden}});
    t.push_back({p + "self_attn.v_proj.weight", {kKv * kHeadDim, kHidden}});
    t.push_back({p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}});
    t.push_back({p + "self_attn.q_norm.weight", {kHeadDim}});
    t.push_back({p + "self_attn.k_norm.weight", {kHeadDim}});
    t.push_back({p + "mlp.gate_proj.weight", {kInter, kHidden}});
    t.push_back({p + "mlp.up_proj.weight", {kInter, kHidden}});
    t.push_back({p + "mlp.down_proj.weight", {kHidden, kInter}});
    t.push_back({p + "post_attention_layernorm.weight", {kHidden}});
  }
  t.push_back({"model.norm.weight", {kHidden}});
  t.push_back({"lm_head.weight", {kVocab, kHidden}});
  return t;
}

void WriteHeaderOnlyShard(const std::string& path, const std::vector<Tensor>& tensors) {
  ojson h;
  h["__metadata__"] = {{"format", "pt"}};
  int64_t at = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes()}}};
    at += t.bytes();
  }
  std::string json = h.dump();
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size()) ||
      ::ftruncate(fd, static_cast<off_t>(out.size()) + at) != 0) {
    std::abort();
  }
  ::close(fd);
}

// The sparse 17-shard directory, built once.
struct SparseModel {
  SparseModel() {
    char tmpl[] = "/tmp/dcu-weights-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::vector<Tensor> all = Qwen3_32B();
    int64_t total = 0;
    for (const auto& t : all) total += t.bytes();
    // Split by bytes, as save_pretrained's max_shard_size does.
    const int64_t per = total / kShards + 1;
    std::map<int, std::vector<Tensor>> shards;
    int64_t acc = 0;
    for (const auto& t : all) {
      shards[static_cast<int>(acc / per)].push_back(t);
      acc += t.bytes();
    }
    ojson index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = ojson::object();
    for (const auto& [i, tensors] : shards) {
      std::string name = absl::StrFormat("model-%05d-of-%05d.safetensors", i + 1, kShards);
      WriteHeaderOnlyShard(dir + "/" + name, tensors);
      for (const auto& t : tensors) index["weight_map"][t.name] = name;
    }
    std::ofstream(dir + "/model.safetensors.index.json") << index.dump(2);
    config = ojson{{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3"},
                   {"hidden_size", kHidden}, {"num_attention_heads", kHeads},
                   {"num_key_value_heads", kKv}, {"head_dim", kHeadDim},
                   {"intermediate_size", kInter}, {"num_hidden_layers", kLayers},
                   {"vocab_size", kVocab}, {"torch_dtype", "bfloat16"}}
                 .dump(2);
    std::ofstream(dir + "/config.json") << config;
    total_bytes = total;
  }
  ~SparseModel() { fs::remove_all(dir); }
  std::string dir, config;
  int64_t total_bytes = 0;
};

SparseModel& Model() {
  static auto* m = new SparseModel();
  return *m;
}

void BM_HeaderChecks(benchmark::State& state) {
  SparseModel& m = Model();
  auto config = dcu::modelkit::ParseModelConfig(m.config);
  dcu::modelkit::WeightsAuditOptions o;
  o.config = &*config;
  dcufleet::v1::WeightsVerification v;
  for (auto _ : state) {
    v = dcu::modelkit::VerifyWeights(m.dir, o);
    benchmark::DoNotOptimize(v);
  }
  if (v.verdict() != dcufleet::v1::WEIGHTS_CLEAN) state.SkipWithError(v.DebugString().c_str());
  state.counters["shards"] = v.shards();
  state.counters["tensors"] = static_cast<double>(v.tensors());
  state.counters["GiB"] = static_cast<double>(v.tensor_bytes()) / (1 << 30);
  state.counters["shapes"] = static_cast<double>(v.shape_checked());
}
BENCHMARK(BM_HeaderChecks)->Unit(benchmark::kMillisecond);

void BM_HeaderChecksCached(benchmark::State& state) {
  SparseModel& m = Model();
  auto config = dcu::modelkit::ParseModelConfig(m.config);
  dcu::modelkit::WeightsAuditOptions o;
  o.config = &*config;
  dcu::modelkit::WeightsAuditCache cache;
  (void)cache.Verify(m.dir, o, m.config);
  for (auto _ : state) benchmark::DoNotOptimize(cache.Verify(m.dir, o, m.config));
}
BENCHMARK(BM_HeaderChecksCached)->Unit(benchmark::kMicrosecond);

// A real (not sparse) shard of DCU_BENCH_SHA_MIB MiB and its sha256sums.
struct RealShard {
  RealShard() {
    const char* mib = std::getenv("DCU_BENCH_SHA_MIB");
    const int64_t bytes = (mib ? std::atoll(mib) : 1024) << 20;
    char tmpl[] = "/tmp/dcu-weights-sha-XXXXXX";
    dir = ::mkdtemp(tmpl);
    const int64_t elements = bytes / 2;
    ojson h = {{"w", {{"dtype", "BF16"}, {"shape", {elements}}, {"data_offsets", {0, elements * 2}}}}};
    std::string json = h.dump();
    std::string head(8, '\0');
    for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    head += json;
    const std::string path = dir + "/model.safetensors";
    std::ofstream out(path, std::ios::binary);
    out << head;
    std::string chunk(8 << 20, '\0');
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>((i * 2654435761u) >> 13);
    dcu::common::Sha256Stream sha;
    sha.Update(head);
    for (int64_t left = elements * 2; left > 0;) {
      size_t k = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(chunk.size())));
      out.write(chunk.data(), static_cast<std::streamsize>(k));
      sha.Update(absl::string_view(chunk.data(), k));
      left -= static_cast<int64_t>(k);
    }
    out.close();
    std::ofstream(dir + "/sha256sums") << sha.FinalHex() << "  model.safetensors\n";
    file_bytes = static_cast<int64_t>(fs::file_size(path));
  }
  ~RealShard() { fs::remove_all(dir); }
  std::string dir;
  int64_t file_bytes = 0;
};

void BM_Sha256Content(benchmark::State& state) {
  static auto* shard = new RealShard();
  dcu::modelkit::WeightsAuditOptions o;
  o.verify_content = true;
  dcufleet::v1::WeightsVerification v;
  for (auto _ : state) {
    v = dcu::modelkit::VerifyWeights(shard->dir, o);
    benchmark::DoNotOptimize(v);
  }
  if (v.verdict() != dcufleet::v1::WEIGHTS_CLEAN || !v.content_verified()) {
    state.SkipWithError(v.DebugString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * shard->file_bytes);
  state.counters["MiB"] = static_cast<double>(shard->file_bytes) / (1 << 20);
}
BENCHMARK(BM_Sha256Content)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
