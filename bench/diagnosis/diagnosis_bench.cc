// Classifying a 10,000-line launch log (issue 6: under 10 ms), including
// the log-structure reading (terminal error, traceback frames) of issue 15.
//
// The log is built from the real corpus (tests/data/launch-logs) and noise
// shaped like a vLLM start-up (worker prefixes, ANSI colours, progress
// lines): every corpus line appears, so the RE2::Set matches often, which is
// harder than a real tail where one error sits at the end.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/embedded_rules.h"
#include "modelkit/diagnosis/fallback_model.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "modelkit/diagnosis/log_normalizer.h"

namespace dcu::modelkit {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  return dir != nullptr ? dir : DCU_SOURCE_DIR_DEFAULT;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

const LogClassifier& Classifier() {
  static const LogClassifier* classifier = [] {
    auto rules = LoadDiagnosisRulesFile(SourceDir() + "/" + std::string(kDefaultDiagnosisRulesPath), AllDiagnosisActions());
    if (!rules.ok()) {
      std::fprintf(stderr, "%s\n", std::string(rules.status().message()).c_str());
      std::abort();
    }
    auto c = LogClassifier::Create(*rules);
    if (!c.ok()) std::abort();
    // With the learned fallback on, as dcuctl runs it
    // (DCU_BENCH_NO_FALLBACK=1: the rules alone, to compare).
    if (std::getenv("DCU_BENCH_NO_FALLBACK") != nullptr) return new LogClassifier(std::move(*c));
    auto model = FallbackModel::Parse(EmbeddedFallbackModelText(), kEmbeddedFallbackModelName);
    if (!model.ok()) std::abort();
    c->SetFallback(std::make_shared<const FallbackModel>(std::move(*model)), "built-in");
    return new LogClassifier(std::move(*c));
  }();
  return *classifier;
}

std::vector<std::string> CorpusLines() {
  std::vector<std::string> lines;
  std::string dir = SourceDir() + "/tests/data/launch-logs";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    for (std::string& line : SplitLogLines(ReadFile(f))) lines.push_back(std::move(line));
  }
  return lines;
}

std::string Noise(int i) {
  switch (i % 5) {
    case 0:
      return absl::StrCat("\x1b[1;36m(VllmWorkerProcess pid=", 3300 + i % 8,
                          ")\x1b[0;0m INFO 04-17 20:54:26 [multiproc_worker_utils.py:225] "
                          "Worker ready; awaiting tasks");
    case 1:
      return absl::StrCat("Loading safetensors checkpoint shards:  ", i % 100,
                          "% Completed | ", i % 17, "/17 [00:12<00:13,  1.52s/it]");
    case 2:
      return absl::StrCat("(RayWorkerWrapper pid=", 206994 + i % 4,
                          ", ip=192.168.10.25) INFO 03-27 10:29:13 [model_runner.py:1110] "
                          "Starting to load model /models/Qwen3-32B...");
    case 3:
      return "INFO 04-17 20:54:32 [pynccl.py:69] vLLM is using nccl==2.26.2";
    default:
      return absl::StrCat("[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) DEBUG 02-24 02:39:34 "
                          "[v1/worker/gpu_model_runner.py:4758] ubatch_slices: None, step ",
                          i);
  }
}

// 10,000 lines: noise with every corpus line spread through it.
std::vector<std::string> CorpusMixLog(int total) {
  std::vector<std::string> corpus = CorpusLines();
  std::vector<std::string> log;
  log.reserve(total);
  size_t next = 0;
  int every = corpus.empty() ? total + 1 : std::max(1, total / static_cast<int>(corpus.size()));
  for (int i = 0; i < total; ++i) {
    if (i % every == 0 && next < corpus.size()) {
      log.push_back(corpus[next++]);
    } else {
      log.push_back(Noise(i));
    }
  }
  return log;
}

// 10,000 lines of start-up noise ending in the seed's triton failure.
std::vector<std::string> NoiseWithTailErrorLog(int total) {
  std::vector<std::string> log;
  log.reserve(total);
  for (int i = 0; i < total - 3; ++i) log.push_back(Noise(i));
  log.push_back("(EngineCore_DP0 pid=7) Traceback (most recent call last):");
  log.push_back("(EngineCore_DP0 pid=7)   File \"/x/triton/backends/amd/compiler.py\", line 186, "
                "in make_llir");
  log.push_back("(EngineCore_DP0 pid=7) unsupported target: 'gfx928' PassManager::run failed");
  return log;
}

void BM_Classify10kLinesCorpusMix(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log = CorpusMixLog(10000);
  size_t bytes = 0;
  for (const auto& l : log) bytes += l.size() + 1;
  int findings = 0;
  for (auto _ : state) {
    auto result = classifier.Classify(log);
    findings = result.findings_size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["findings"] = findings;
  state.counters["lines"] = static_cast<double>(log.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Classify10kLinesCorpusMix)->Unit(benchmark::kMillisecond);

void BM_Classify10kLinesNoiseWithTailError(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log = NoiseWithTailErrorLog(10000);
  size_t bytes = 0;
  for (const auto& l : log) bytes += l.size() + 1;
  for (auto _ : state) {
    auto result = classifier.Classify(log);
    if (result.findings(0).failure_class() != "triton_unsupported_gpu_target") {
      state.SkipWithError("wrong class");
    }
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Classify10kLinesNoiseWithTailError)->Unit(benchmark::kMillisecond);

// 10,000 lines of INFO noise and error-ish lines no rule knows, ending in
// an exception no rule knows: the learned fallback is consulted (its worst
// case: every line is read for error-ish words, from the end).
void BM_Classify10kLinesUnrecognisedFallback(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log;
  for (int i = 0; i < 9990; ++i) {
    log.push_back(i % 3 == 0 ? absl::StrCat("ERROR 04-17 20:54:26 [frobnicator.py:", i,
                                            "] frobnicator step ", i, " failed, retrying")
                             : absl::StrCat("INFO 04-17 20:54:26 [worker.py:", i,
                                            "] Worker ready; awaiting tasks ", i));
  }
  log.push_back("Traceback (most recent call last):");
  log.push_back("  File \"/opt/venv/lib/python3.12/site-packages/frob/core.py\", line 7, in run");
  log.push_back("    frobnicate()");
  log.push_back("frob.FrobnicationError: the quux at 0x7f00 refused 'bar' (code 12)");
  for (auto _ : state) {
    auto result = classifier.Classify(log);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_Classify10kLinesUnrecognisedFallback)->Unit(benchmark::kMillisecond);

// 10,000 lines that are nearly all traceback: eight ranks printing the same
// deep traceback, interleaved, ending in an OOM. The structure reader's
// worst realistic case (every line is a frame, a source line or a marker).
std::vector<std::string> TracebackHeavyLog(int total) {
  std::vector<std::string> log;
  log.reserve(total);
  for (int rank = 0; rank < 8; ++rank) {
    log.push_back(absl::StrCat("(VllmWorker rank=", rank, " pid=", 3000 + rank,
                               ") Traceback (most recent call last):"));
  }
  for (int i = 0; static_cast<int>(log.size()) < total - 8; ++i) {
    std::string prefix = absl::StrCat("(VllmWorker rank=", i % 8, " pid=", 3000 + i % 8, ") ");
    log.push_back(absl::StrCat(prefix, "  File \"/opt/venv/lib/python3.12/site-packages/vllm/",
                               "model_executor/layers/linear.py\", line ", i % 900,
                               ", in weight_loader"));
    log.push_back(absl::StrCat(prefix, "    param.data.copy_(loaded_weight)"));
    log.push_back(absl::StrCat(prefix, "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"));
  }
  while (static_cast<int>(log.size()) < total) {
    log.push_back(absl::StrCat("(VllmWorker rank=", log.size() % 8,
                               ") torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                               "2.00 GiB. GPU 0 has a total capacity of 79.3 GiB"));
  }
  return log;
}

void BM_Classify10kLinesTracebackHeavy(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log = TracebackHeavyLog(10000);
  size_t bytes = 0;
  for (const auto& l : log) bytes += l.size() + 1;
  for (auto _ : state) {
    auto result = classifier.Classify(log);
    if (result.findings(0).failure_class() != "cuda_oom_model_load") {
      state.SkipWithError("wrong class");
    }
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Classify10kLinesTracebackHeavy)->Unit(benchmark::kMillisecond);

// Hostile input: one 10 MB line (a binary blob or a runaway progress bar).
void BM_ClassifyOne10MbLine(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log = {"Traceback (most recent call last):",
                                  "ValueError: " + std::string(10 << 20, 'x')};
  for (auto _ : state) benchmark::DoNotOptimize(classifier.Classify(log));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (10 << 20)));
}
BENCHMARK(BM_ClassifyOne10MbLine)->Unit(benchmark::kMillisecond);

void BM_ClassifyTail300Lines(benchmark::State& state) {
  const LogClassifier& classifier = Classifier();
  std::vector<std::string> log = CorpusMixLog(300);
  for (auto _ : state) benchmark::DoNotOptimize(classifier.Classify(log));
}
BENCHMARK(BM_ClassifyTail300Lines)->Unit(benchmark::kMicrosecond);

void BM_NormalizeLine(benchmark::State& state) {
  std::string line =
      "\x1b[1;36m(EngineCore_DP0 pid=223840)\x1b[0;0m ERROR 10-25 13:08:43 [core.py:708] "
      "ValueError: No available memory for the cache blocks. Try increasing "
      "`gpu_memory_utilization` when initializing the engine.";
  for (auto _ : state) benchmark::DoNotOptimize(NormalizeLogLine(line));
}
BENCHMARK(BM_NormalizeLine);

void BM_LoadAndCompileRules(benchmark::State& state) {
  std::string path = SourceDir() + "/" + std::string(kDefaultDiagnosisRulesPath);
  for (auto _ : state) {
    auto rules = LoadDiagnosisRulesFile(path, AllDiagnosisActions());
    auto classifier = LogClassifier::Create(*rules);
    benchmark::DoNotOptimize(classifier);
  }
}
BENCHMARK(BM_LoadAndCompileRules)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dcu::modelkit
