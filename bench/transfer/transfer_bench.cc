// Node-to-node model copy throughput on loopback (issue 19): a real
// ModelTransferService (gRPC, 1 MiB chunks) serving a model directory,
// PeerModelSource + ModelFetcher on the other side writing into a second
// model root (fdatasync per file, header checks, VerifyWeights, rename).
// The model: DCU_BENCH_TRANSFER_MIB (default 1024) in 256 MiB safetensors
// shards with real headers and real (non-sparse) data. `WithSha256` adds a
// sha256sums manifest, so every shard is hashed as it arrives.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "agent/fetch/http_model_source.h"
#include "agent/fetch/model_fetch.h"
#include "agent/transfer/transfer_service.h"
#include "common/hash.h"
#include "tests/testing/range_http_server.h"

namespace {
namespace fs = std::filesystem;

int64_t ModelMiB() {
  const char* v = std::getenv("DCU_BENCH_TRANSFER_MIB");
  return v ? std::max<int64_t>(1, std::atoll(v)) : 1024;
}

// Writes <root>/Bench: shards of one U8 tensor each, an index, config.json.
void WriteModel(const std::string& dir, bool manifest) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int64_t total = ModelMiB() << 20;
  const int64_t per = std::min<int64_t>(total, 256ll << 20);
  const int shards = static_cast<int>((total + per - 1) / per);
  std::string map, sums;
  std::string block(1 << 20, '\0');
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>((i * 2654435761u) >> 13);
  for (int i = 1; i <= shards; ++i) {
    const int64_t bytes = i < shards ? per : total - per * (shards - 1);
    char name[64];
    snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", i, shards);
    const std::string header = absl::StrCat("{\"layer.", i, ".weight\":{\"dtype\":\"U8\",\"shape\":[", bytes,
                                            "],\"data_offsets\":[0,", bytes, "]}}");
    std::string content;
    uint64_t n = header.size();
    for (int b = 0; b < 8; ++b) content.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
    content += header;
    {
      std::ofstream out(dir + "/" + name, std::ios::binary);
      out << content;
      for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(block.size())) {
        out.write(block.data(), std::min<int64_t>(left, block.size()));
      }
    }
    if (manifest) {
      std::ifstream in(dir + "/" + name, std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      absl::StrAppend(&sums, dcu::common::Sha256Hex(all), "  ", name, "\n");
    }
    absl::StrAppend(&map, map.empty() ? "" : ",", "\"layer.", i, ".weight\":\"", name, "\"");
  }
  std::ofstream(dir + "/model.safetensors.index.json")
      << "{\"metadata\":{\"total_size\":" << total << "},\"weight_map\":{" << map << "}}";
  std::ofstream(dir + "/config.json") << "{\"architectures\":[\"Bench\"]}";
  if (manifest) std::ofstream(dir + "/sha256sums") << sums;
}

void Run(benchmark::State& state, bool manifest) {
  const std::string base = (fs::temp_directory_path() / absl::StrCat("transfer-bench-", getpid())).string();
  WriteModel(base + "/a/Bench", manifest);
  fs::create_directories(base + "/b");
  dcu::agent::ModelTransferServiceImpl service("node-a", {base + "/a"}, /*require_node_peer=*/false);
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&service);
  b.SetMaxSendMessageSize(16 << 20);
  auto server = b.BuildAndStart();
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(base + "/b/Bench");
    state.ResumeTiming();
    dcu::agent::PeerModelSource peer(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    dcu::agent::ModelFetcher fetcher(base + "/b");
    dcu::agent::FetchOptions o;
    o.reserve_bytes = 0;
    auto r = fetcher.Fetch(peer, "Bench", o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      break;
    }
    bytes += r->bytes_copied;
  }
  state.SetBytesProcessed(bytes);
  server->Shutdown();
  fs::remove_all(base);
}

// The same model from an HTTP mirror laid out like the Hugging Face hub
// (tests/testing RangeHttpServer on 127.0.0.1, 1 MiB writes) through
// HttpModelSource (Boost.Beast, 1 MiB reads) + ModelFetcher.
void RunHttp(benchmark::State& state, bool manifest) {
  const std::string base = (fs::temp_directory_path() / absl::StrCat("transfer-bench-http-", getpid())).string();
  WriteModel(base + "/mirror/Bench", manifest);
  fs::create_directories(base + "/b");
  dcu::testing::RangeHttpServer mirror(base + "/mirror/Bench");
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(base + "/b/Bench");
    state.ResumeTiming();
    auto source = dcu::agent::HttpModelSource::Create(mirror.url(), "org/Bench");
    dcu::agent::ModelFetcher fetcher(base + "/b");
    dcu::agent::FetchOptions o;
    o.reserve_bytes = 0;
    auto r = fetcher.Fetch(**source, "Bench", o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      break;
    }
    bytes += r->bytes_copied;
  }
  state.SetBytesProcessed(bytes);
  fs::remove_all(base);
}

void BM_FetchFromHttpMirror(benchmark::State& state) { RunHttp(state, /*manifest=*/false); }
void BM_FetchFromHttpMirrorWithSha256(benchmark::State& state) { RunHttp(state, /*manifest=*/true); }
BENCHMARK(BM_FetchFromHttpMirror)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FetchFromHttpMirrorWithSha256)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FetchFromPeer(benchmark::State& state) { Run(state, /*manifest=*/false); }
void BM_FetchFromPeerWithSha256(benchmark::State& state) { Run(state, /*manifest=*/true); }
BENCHMARK(BM_FetchFromPeer)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FetchFromPeerWithSha256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
