#include "modelkit/diagnosis/log_classifier.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::DiagnosisFinding;
using dcufleet::v1::DiagnosisResult;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SourceDir() {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string CorpusFile(const std::string& name) {
  return ReadFile(SourceDir() + "/tests/data/launch-logs/" + name);
}

class LogClassifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto rules = LoadDiagnosisRulesFile(SourceDir() + "/" + std::string(kDefaultDiagnosisRulesPath), AllDiagnosisActions());
    ASSERT_TRUE(rules.ok()) << rules.status();
    auto classifier = LogClassifier::Create(*rules, "rules.txtpb");
    ASSERT_TRUE(classifier.ok()) << classifier.status();
    classifier_ = new LogClassifier(std::move(*classifier));
  }
  static void TearDownTestSuite() {
    delete classifier_;
    classifier_ = nullptr;
  }

  static std::vector<std::string> Classes(const DiagnosisResult& result) {
    std::vector<std::string> classes;
    for (const auto& f : result.findings()) classes.push_back(f.failure_class());
    return classes;
  }
  static const DiagnosisFinding* Find(const DiagnosisResult& result, const std::string& cls) {
    for (const auto& f : result.findings()) {
      if (f.failure_class() == cls) return &f;
    }
    return nullptr;
  }

  static LogClassifier* classifier_;
};

LogClassifier* LogClassifierTest::classifier_ = nullptr;

// Every message the two incident reports quote (copied verbatim into the
// corpus as seed*.log, see index.tsv) lands in its class with the
// remediation the reports arrived at by hand.
// The rules built into the binary: what dcuctl and the benchmarks use away
// from the source tree. They classify the seed's triton error, and a
// program that executes no action refuses them, naming a rule.
TEST(BuiltInClassifierTest, ClassifiesAndRefusesActionsItsCallerCannotRun) {
  auto classifier = BuiltInClassifier(AllDiagnosisActions());
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  DiagnosisResult r = classifier->Classify(
      {"loc(\"/opt/conda/envs/vllm/lib/python3.10/site-packages/vllm/attention/ops/"
       "triton_flash_attention.py\":309:0): error: unsupported target: 'gfx928'"},
      {});
  ASSERT_GT(r.findings_size(), 0);
  EXPECT_EQ(r.findings(0).failure_class(), "triton_unsupported_gpu_target");
  auto refused = BuiltInClassifier(DiagnosisActionSet{});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("built-in rules"));
}


// A rules file when one is given (the source tree's, here: the same rules the
// binary embeds), the built-in rules when the path is empty; a file that is
// missing or does not parse is refused naming the file.
TEST(LoadClassifierTest, TakesTheFileWhenGivenAndTheBuiltInRulesOtherwise) {
  auto from_file = LoadClassifier(SourceDir() + "/deploy/diagnosis/rules.txtpb", AllDiagnosisActions());
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  auto built_in = LoadClassifier("", AllDiagnosisActions());
  ASSERT_TRUE(built_in.ok()) << built_in.status();
  EXPECT_EQ(from_file->rule_count(), built_in->rule_count());
  EXPECT_GT(built_in->rule_count(), 0);

  auto missing = LoadClassifier("/nonexistent/dir/rules.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/dir/rules.txtpb"));

  const std::string broken = ::testing::TempDir() + "/broken_rules.txtpb";
  std::ofstream(broken) << "rule { id: \"half\" \n";
  auto unparsable = LoadClassifier(broken, AllDiagnosisActions());
  ASSERT_FALSE(unparsable.ok());
  EXPECT_THAT(std::string(unparsable.status().message()), HasSubstr(broken));
}
TEST_F(LogClassifierTest, EverySeedMessageMapsToItsClass) {
  const std::map<std::string, std::string> expected = {
      {"seed000_free_memory.log", "startup_free_memory_below_utilization"},
      {"seed000_head_size_80.log", "unsupported_head_size"},
      {"seed000_triton_gfx928.log", "triton_unsupported_gpu_target"},
      {"seed003_rsmi_init.log", "shared_lib_undefined_symbol"},
      {"seed003_permlanex16.log", "triton_kernel_compile_failure"},
      {"seed003_invalid_device_function.log", "hip_invalid_device_function"},
      {"seed003_wvsplitk.log", "missing_custom_op"},
      {"seed003_no_cache_blocks.log", "no_cache_blocks"},
      {"seed003_gcn_arch_garbage.log", "unsupported_gpu_arch_runtime"},
  };
  for (const auto& [file, cls] : expected) {
    std::string text = CorpusFile(file);
    ASSERT_FALSE(text.empty()) << file;
    DiagnosisResult result = classifier_->ClassifyText(text);
    ASSERT_GT(result.findings_size(), 0);
    EXPECT_EQ(result.findings(0).failure_class(), cls) << file;
    EXPECT_GT(result.findings(0).confidence(), 0.5) << file;
    ASSERT_EQ(result.findings(0).evidence_size(), 1) << file;
    EXPECT_EQ(result.findings(0).evidence(0).line(), 1);
  }
}

TEST_F(LogClassifierTest, SeedRemediationsAreMachineUsable) {
  {  // rsmi_init undefined -> the DTK library-order recipe.
    auto f = classifier_->ClassifyText(CorpusFile("seed003_rsmi_init.log")).findings(0);
    EXPECT_EQ(f.remediation().kind(), dcufleet::v1::REMEDIATION_KIND_AUTO);
    EXPECT_EQ(f.remediation().action(), "prepend_ld_library_path");
    EXPECT_EQ(f.remediation().params().at("paths"),
              "/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib:/opt/dtk/lib64:/opt/hyhal/lib:"
              "/opt/hyhal/lib64");
    EXPECT_EQ(f.captures().at("symbol"), "rsmi_init");
  }
  {  // ... unless the stack has its own recipe.
    ClassifyOptions options;
    options.facts["stack.ld_library_path_recipe"] = "/opt/dtk-25.04/.hyhal/rocm_smi/lib";
    auto f = classifier_->ClassifyText(CorpusFile("seed003_rsmi_init.log"), options).findings(0);
    EXPECT_EQ(f.remediation().params().at("paths"), "/opt/dtk-25.04/.hyhal/rocm_smi/lib");
    EXPECT_EQ(f.alternatives_size(), 1);
  }
  {  // _rocm_C without wvSplitK -> VLLM_ROCM_USE_SKINNY_GEMM=0.
    auto f = classifier_->ClassifyText(CorpusFile("seed003_wvsplitk.log")).findings(0);
    EXPECT_EQ(f.rule_id(), "custom_op.rocm_skinny_gemm");
    EXPECT_EQ(f.remediation().action(), "set_env");
    EXPECT_EQ(f.remediation().params().at("VLLM_ROCM_USE_SKINNY_GEMM"), "0");
  }
  {  // Triton rejecting gfx928 -> the (stack, arch) is broken: fail over.
    auto f = classifier_->ClassifyText(CorpusFile("seed000_triton_gfx928.log")).findings(0);
    EXPECT_EQ(f.remediation().kind(), dcufleet::v1::REMEDIATION_KIND_FAILOVER);
    EXPECT_EQ(f.remediation().params().at("mark_broken"), "stack_arch");
    EXPECT_EQ(f.remediation().params().at("arch"), "gfx928");
  }
  {  // Free memory below utilisation -> re-probe, reap or move devices.
    auto f = classifier_->ClassifyText(CorpusFile("seed000_free_memory.log")).findings(0);
    EXPECT_EQ(f.remediation().action(), "reap_or_move_devices");
    EXPECT_EQ(f.remediation().params().at("free_gib"), "4.8");
    EXPECT_EQ(f.remediation().params().at("desired_gib"), "57.59");
    EXPECT_THAT(f.remediation().summary(), HasSubstr("Only 4.8 of 63.98 GiB"));
  }
  {  // Invalid device function -> fail over, mark broken.
    auto f = classifier_->ClassifyText(CorpusFile("seed003_invalid_device_function.log"))
                 .findings(0);
    EXPECT_EQ(f.remediation().action(), "failover");
    EXPECT_EQ(f.remediation().params().at("mark_broken"), "stack_arch");
  }
}

TEST_F(LogClassifierTest, HeadSizeRunsTheConfigAuditFirstThenFailsOver) {
  std::string text = CorpusFile("seed000_head_size_80.log");
  auto first = classifier_->ClassifyText(text).findings(0);
  EXPECT_EQ(first.remediation().action(), "audit_config");
  EXPECT_EQ(first.remediation().params().at("head_size"), "80");
  EXPECT_EQ(first.remediation().params().at("fix"), "config_overlay_or_hf_overrides");
  EXPECT_EQ(first.captures().at("backend"), "FlashAttention");

  ClassifyOptions audited;
  audited.facts["model.config_audit_clean"] = "true";
  audited.facts_complete = true;
  auto second = classifier_->ClassifyText(text, audited).findings(0);
  EXPECT_EQ(second.remediation().kind(), dcufleet::v1::REMEDIATION_KIND_FAILOVER);
  EXPECT_EQ(second.remediation().params().at("head_size"), "80");
}

TEST_F(LogClassifierTest, NoCacheBlocksSizesTheKvCacheFromTheMemoryPlan) {
  std::string text = CorpusFile("seed003_no_cache_blocks.log");
  {  // Offline: the preferred option, with the facts it still needs.
    auto f = classifier_->ClassifyText(text).findings(0);
    EXPECT_EQ(f.remediation().action(), "add_arg");
    EXPECT_EQ(f.remediation().params().at("flag"), "--kv-cache-memory-bytes");
    EXPECT_THAT(std::vector<std::string>(f.missing_facts().begin(), f.missing_facts().end()),
                ElementsAre("memory_plan.kv_cache_bytes", "stack.accepts_kv_cache_memory_bytes"));
  }
  {  // A DTK stack that accepts the flag: the value comes from the plan.
    ClassifyOptions options;
    options.facts_complete = true;
    options.facts["stack.accepts_kv_cache_memory_bytes"] = "true";
    options.facts["memory_plan.kv_cache_bytes"] = "1073741824";
    auto f = classifier_->ClassifyText(text, options).findings(0);
    EXPECT_EQ(f.remediation().action(), "add_arg");
    EXPECT_EQ(f.remediation().params().at("value"), "1073741824");
    EXPECT_EQ(f.missing_facts_size(), 0);
  }
  {  // A stack without the flag: plan the memory again instead.
    ClassifyOptions options;
    options.facts_complete = true;
    options.facts["stack.accepts_kv_cache_memory_bytes"] = "false";
    options.facts["memory_plan.kv_cache_bytes"] = "1073741824";
    auto f = classifier_->ClassifyText(text, options).findings(0);
    EXPECT_EQ(f.remediation().action(), "replan_memory");
    ASSERT_EQ(f.alternatives_size(), 1);
    EXPECT_EQ(f.alternatives(0).action(), "add_arg");
  }
}

// A warning printed after the real error (NCCL's shutdown warning, here a
// failed optional import) must rank below it even though it comes later.
// An exception message wrapped onto the next line (a paste, a terminal, a
// message with embedded newlines) is matched as one text: joined with a blank
// at a word break, and without one when the wrap cut a word.
TEST_F(LogClassifierTest, WrappedExceptionMessageIsMatchedAsOneText) {
  DiagnosisResult at_blank = classifier_->ClassifyText(
      "torch.OutOfMemoryError: CUDA out\n"
      "of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.55 GiB\n");
  ASSERT_GT(at_blank.findings_size(), 0);
  EXPECT_EQ(at_blank.findings(0).failure_class(), "cuda_oom_model_load");
  EXPECT_EQ(at_blank.findings(0).evidence(0).line(), 1);
  DiagnosisResult in_word = classifier_->ClassifyText(
      "ValueError: No available memory for the cache bl\n"
      "ocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n");
  ASSERT_GT(in_word.findings_size(), 0);
  EXPECT_EQ(in_word.findings(0).failure_class(), "no_cache_blocks");
  // Captures come from the joined text too.
  DiagnosisResult captured = classifier_->ClassifyText(
      "ValueError: Free memory on device (5.61/61.27 GiB) on startup is less than desired\n"
      "GPU memory utilization (0.9, 55.14 GiB). Decrease GPU memory utilization.\n");
  ASSERT_GT(captured.findings_size(), 0);
  EXPECT_EQ(captured.findings(0).failure_class(), "startup_free_memory_below_utilization");
  EXPECT_EQ(captured.findings(0).captures().at("desired_gib"), "55.14");
  // Two lines that are not one message are not joined.
  DiagnosisResult apart = classifier_->ClassifyText(
      "INFO 06-01 10:00:00 [x.py:1] CUDA out\n"
      "INFO 06-01 10:00:00 [x.py:1] of memory\n");
  EXPECT_EQ(apart.findings(0).failure_class(), "unknown");
}

// Errors that launchers raise only to report a child's earlier one (SGLang's
// bare EOFError and "Initialization failed", TGI's "Error: ShardCannotStart",
// llama-cpp-python's "Failed to create llama_context") are not the error the
// run died of: the child's is.
TEST_F(LogClassifierTest, LaunchersReportingAnEarlierErrorAreFollowOns) {
  struct Case {
    const char* log;
    const char* terminal_type;
  };
  for (const Case& c : {
           Case{"ValueError: Unsupported architectures: FooForCausalLM\n"
                "Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
                "Traceback (most recent call last):\n"
                "  File \"/x/sglang/srt/entrypoints/engine.py\", line 520, in _launch_subprocesses\n"
                "    data = scheduler_pipe_readers[i].recv()\n"
                "EOFError\n",
                "ValueError"},
           Case{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
                "RuntimeError: Initialization failed. Please see the error messages above.\n",
                "torch.OutOfMemoryError"},
           Case{"ValueError: Unsupported model type foo\n"
                "Error: ShardCannotStart\n",
                "ValueError"},
           Case{"llama_kv_cache_init: failed to allocate buffer for kv cache\n"
                "ValueError: Failed to create llama_context\n",
                "error"},
       }) {
    DiagnosisResult result = classifier_->ClassifyText(c.log);
    EXPECT_EQ(result.terminal_error().type(), c.terminal_type) << c.log;
  }
}

TEST_F(LogClassifierTest, WarningAfterTheRealErrorRanksBelowIt) {
  std::vector<std::string> lines = {
      "INFO 05-01 10:06:49 [model_runner.py:1108] Starting to load model x...",
      "Traceback (most recent call last):",
      "  File \"/usr/local/lib/python3.12/dist-packages/torch/utils/_device.py\", line 104",
      "RuntimeError: HIP error: invalid device function",
      "WARNING 05-22 08:41:53 [rocm.py:44] Failed to import from vllm._C with "
      "ImportError('/x/_C.abi3.so: undefined symbol: _ZN3c103hip19getCurrentHIPStreamEa')",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  EXPECT_THAT(Classes(result),
              ElementsAre("hip_invalid_device_function", "shared_lib_undefined_symbol"));
  EXPECT_GT(result.findings(0).confidence(), result.findings(1).confidence());
  EXPECT_EQ(result.findings(0).evidence(0).line(), 4);
}

// The real log where the warning is the NCCL shutdown notice: it must not
// even count as NCCL evidence.
TEST_F(LogClassifierTest, NcclShutdownWarningIsNotAnNcclFailure) {
  DiagnosisResult result =
      classifier_->ClassifyText(CorpusFile("rl-swarm-118_no_cache_blocks_with_nccl_warning.log"));
  EXPECT_THAT(Classes(result), ElementsAre("no_cache_blocks"));
}

// Several independent causes can be stacked (seed 000): both are reported,
// the one that ended the run first.
TEST_F(LogClassifierTest, StackedCausesAreAllReportedInOrder) {
  std::vector<std::string> lines = {
      "ERROR 07-10 10:00:00 [core.py:1] ValueError: Free memory on device (4.8/63.98 GiB) on "
      "startup is less than desired GPU memory utilization (0.9, 57.59 GiB)",
      "INFO 07-11 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
      "(EngineCore_DP0 pid=7) Traceback (most recent call last):",
      "(EngineCore_DP0 pid=7)   File \"/x/compiler.py\", line 186, in make_llir",
      "(EngineCore_DP0 pid=7) unsupported target: 'gfx928' PassManager::run failed",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  EXPECT_THAT(Classes(result), ElementsAre("triton_unsupported_gpu_target",
                                           "startup_free_memory_below_utilization"));
  // The compile-failure rule is suppressed by the more specific signature.
  EXPECT_EQ(Find(result, "triton_kernel_compile_failure"), nullptr);
}

TEST_F(LogClassifierTest, SameMessageFromEveryRankIsOneEvidenceLine) {
  std::vector<std::string> lines;
  for (int rank = 0; rank < 8; ++rank) {
    lines.push_back("(VllmWorkerProcess pid=" + std::to_string(100 + rank) +
                    ") ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] RuntimeError: NCCL "
                    "error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)");
  }
  DiagnosisResult result = classifier_->Classify(lines);
  ASSERT_EQ(result.findings_size(), 1);
  EXPECT_EQ(result.findings(0).failure_class(), "nccl_rccl_init_failure");
  ASSERT_EQ(result.findings(0).evidence_size(), 1);
  EXPECT_EQ(result.findings(0).evidence(0).text(),
            "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for "
            "details)");
  EXPECT_EQ(result.findings(0).evidence(0).line(), 8);
}

TEST_F(LogClassifierTest, AnsiColouredLinesAreClassified) {
  std::vector<std::string> lines = {
      "\x1b[1;36m(EngineCore_DP0 pid=1)\x1b[0;0m \x1b[1;31mERROR\x1b[0m 10-25 13:08:43 "
      "[core.py:708] ValueError: Total number of attention heads (\x1b[1m52\x1b[0m) must be "
      "divisible by tensor parallel size (8).",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  ASSERT_EQ(result.findings(0).failure_class(), "tp_not_divisible_heads");
  EXPECT_EQ(result.findings(0).remediation().params().at("heads"), "52");
  EXPECT_EQ(result.findings(0).remediation().params().at("tp"), "8");
}

TEST_F(LogClassifierTest, NothingMatchingIsUnknownWithTheLastErrorAsEvidence) {
  DiagnosisResult result =
      classifier_->ClassifyText(CorpusFile("sglang-2468_warmup_502_unknown.log"));
  ASSERT_EQ(result.findings_size(), 1);
  const DiagnosisFinding& f = result.findings(0);
  EXPECT_EQ(f.failure_class(), "unknown");
  EXPECT_EQ(f.remediation().kind(), dcufleet::v1::REMEDIATION_KIND_HUMAN);
  ASSERT_EQ(f.evidence_size(), 1);
  EXPECT_EQ(f.evidence(0).text(), "AssertionError: res=<Response [502]>, res.text=''");
}

TEST_F(LogClassifierTest, EmptyLogIsUnknownWithoutEvidence) {
  DiagnosisResult result = classifier_->Classify({});
  ASSERT_EQ(result.findings_size(), 1);
  EXPECT_EQ(result.findings(0).failure_class(), "unknown");
  EXPECT_EQ(result.findings(0).evidence_size(), 0);
  EXPECT_EQ(result.lines_examined(), 0);
}

TEST_F(LogClassifierTest, WrongPlatformOutranksTheLoaderFailureItCauses) {
  DiagnosisResult result =
      classifier_->ClassifyText(CorpusFile("rocm-5668_wrong_platform_cuda_wheel.log"));
  EXPECT_THAT(Classes(result), ElementsAre("wrong_platform_build", "shared_lib_undefined_symbol"));
}

// The error the run died of outranks the same words echoed earlier (an
// engine printing its config, a warning on the way): the match inside the
// terminal exception is the cause.
TEST_F(LogClassifierTest, TerminalExceptionOutranksEarlierWarningsAndEchoedConfig) {
  std::vector<std::string> lines = {
      "WARNING 05-22 08:41:53 [rocm.py:44] Failed to import from vllm._C with "
      "ImportError('/x/_C.abi3.so: undefined symbol: _ZN3c103hip19getCurrentHIPStreamEa')",
      "INFO 05-22 08:41:54 [config.py:1] hint: Free memory on device (4.8/63.98 GiB) on startup "
      "is less than desired GPU memory utilization (0.9, 57.59 GiB) would stop the launch",
      "Traceback (most recent call last):",
      "  File \"/x/vllm/v1/worker/gpu_worker.py\", line 229, in determine_available_memory",
      "    self.model_runner.profile_run()",
      "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
      "capacity of 63.98 GiB of which 1.2 GiB is free.",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  ASSERT_GE(result.findings_size(), 1);
  EXPECT_EQ(result.findings(0).failure_class(), "cuda_oom_model_load");
  EXPECT_EQ(result.findings(0).basis(), dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR);
  EXPECT_EQ(result.findings(0).evidence(0).line(), 6);
  EXPECT_EQ(result.terminal_error().type(), "torch.OutOfMemoryError");
  EXPECT_EQ(result.terminal_error().line(), 6);
  ASSERT_EQ(result.terminal_error().frames_size(), 1);
  EXPECT_EQ(result.terminal_error().frames(0).function(), "determine_available_memory");
  // The frames rule stays quiet: the error line is there.
  EXPECT_EQ(Find(result, "no_cache_blocks"), nullptr);
  for (const auto& f : result.findings()) {
    if (f.failure_class() != "cuda_oom_model_load") {
      EXPECT_EQ(f.basis(), dcufleet::v1::FINDING_BASIS_LOG_LINE) << f.failure_class();
    }
  }
}

// Worker prefixes, ANSI colour, timestamps, '\r' redraws and another
// process's INFO lines do not change the answer.
TEST_F(LogClassifierTest, LogNoiseDoesNotChangeTheAnswer) {
  std::vector<std::string> plain = {
      "Traceback (most recent call last):",
      "  File \"/x/vllm/worker/worker.py\", line 229, in determine_num_available_blocks",
      "    raise ValueError(",
      "ValueError: No available memory for the cache blocks. Try increasing "
      "`gpu_memory_utilization` when initializing the engine.",
  };
  std::vector<std::string> noisy;
  for (size_t i = 0; i < plain.size(); ++i) {
    noisy.push_back("Loading shards: 50%\r\x1b[1;36m(VllmWorkerProcess pid=" +
                    std::to_string(100 + i) + ")\x1b[0;0m [rank0]: ERROR 07-24 08:26:01 "
                    "[multiproc_worker_utils.py:226] " + plain[i]);
    noisy.push_back("(RayWorkerWrapper pid=9, ip=10.0.0.2) INFO 07-24 08:26:01 [worker.py:1] "
                    "Loading weights took 3.1 seconds");
  }
  DiagnosisResult a = classifier_->Classify(plain);
  DiagnosisResult b = classifier_->Classify(noisy);
  EXPECT_EQ(Classes(a), Classes(b));
  EXPECT_EQ(a.findings(0).failure_class(), "no_cache_blocks");
  EXPECT_EQ(a.findings(0).confidence(), b.findings(0).confidence());
  EXPECT_EQ(a.terminal_error().type(), b.terminal_error().type());
  EXPECT_EQ(a.terminal_error().message(), b.terminal_error().message());
  EXPECT_EQ(b.findings(0).basis(), dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR);
}

// A log cut inside a traceback: the frames say where it died, and the
// finding says that this is all it rests on.
TEST_F(LogClassifierTest, TracebackCutBeforeItsErrorLineGivesAFramesFinding) {
  // Cut in the KV-cache sizing itself (the eleventh rules round moved this
  // test's cut out of profile_run: see the profile_run case below).
  std::vector<std::string> lines = {
      "INFO 04-17 20:54:26 [model_runner.py:1] Starting to load model /models/Qwen3-32B...",
      "(VllmWorker rank=5 pid=3073) Traceback (most recent call last):",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/engine/core.py\", line 120, in "
      "_initialize_kv_caches",
      "(VllmWorker rank=5 pid=3073)     available_gpu_memory = self.model_executor.determine_available_memory()",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/worker/gpu_worker.py\", line 136, in "
      "determine_available_memory",
      "(VllmWorker rank=5 pid=3073)     free_gpu_memory, total_gpu_memory = torch.cuda.mem_get_info()",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  ASSERT_GE(result.findings_size(), 1);
  const DiagnosisFinding& f = result.findings(0);
  EXPECT_EQ(f.failure_class(), "no_cache_blocks");
  EXPECT_EQ(f.rule_id(), "no_cache_blocks.frames");
  EXPECT_EQ(f.basis(), dcufleet::v1::FINDING_BASIS_TRACEBACK_FRAMES);
  EXPECT_THAT(f.explanation(),
              HasSubstr("inferred from the traceback frames; the error line is missing"));
  EXPECT_LT(f.confidence(), 0.5);
  EXPECT_EQ(f.evidence(0).line(), 5);  // the innermost frame
  EXPECT_TRUE(result.terminal_error().error_line_missing());
  EXPECT_EQ(result.terminal_error().line(), 0);  // no raised error before it either

  // Cut once the sizing has called profile_run: the model's dummy forward
  // pass was running (a missing op, an OOM, a kernel build die there), and
  // the sizing errors are raised only after it returns -- no finding.
  std::vector<std::string> in_forward = {
      "(VllmWorker rank=5 pid=3073) Traceback (most recent call last):",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/worker/gpu_worker.py\", line 136, in "
      "determine_available_memory",
      "(VllmWorker rank=5 pid=3073)     self.model_runner.profile_run()",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/worker/gpu_model_runner.py\", line 1167, "
      "in profile_run",
      "(VllmWorker rank=5 pid=3073)     hidden_states = self._dummy_run(self.max_num_tokens)",
  };
  EXPECT_THAT(Classes(classifier_->Classify(in_forward)), ElementsAre("unknown"));

  // The same frames with the error line present: the error decides.
  lines.push_back("(VllmWorker rank=5 pid=3073) ValueError: Head size 80 is not supported by "
                  "FlashAttention. Supported head sizes are: [32, 64, 96, 128].");
  DiagnosisResult complete = classifier_->Classify(lines);
  EXPECT_THAT(Classes(complete), ElementsAre("unsupported_head_size"));
  EXPECT_EQ(complete.findings(0).basis(), dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR);
}

// vLLM V1: the API server's "See root cause above" is not what it died of.
TEST_F(LogClassifierTest, FollowOnErrorDoesNotHideTheRootCause) {
  std::vector<std::string> lines = {
      "(EngineCore_DP0 pid=7) ERROR 10-25 13:08:43 [core.py:708] ValueError: Total number of "
      "attention heads (40) must be divisible by tensor parallel size (3).",
      "Traceback (most recent call last):",
      "  File \"/x/vllm/v1/engine/utils.py\", line 433, in wait_for_engine_startup",
      "    raise RuntimeError(",
      "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
      "proc(s): {}",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  EXPECT_EQ(result.findings(0).failure_class(), "tp_not_divisible_heads");
  EXPECT_EQ(result.findings(0).basis(), dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR);
  EXPECT_EQ(result.terminal_error().type(), "ValueError");
  EXPECT_EQ(result.terminal_error().line(), 1);
}

// Seed 000: a damaged config.json (head size 80) hid a triton that cannot
// target gfx928. With the context that makes the second likely, both are
// listed, in the order they will bite. The arch is a typed fact: a device
// statement of the log, or the caller's (the placement's), never a line that
// merely names gfx928.
TEST_F(LogClassifierTest, HiddenCauseIsListedAfterTheCauseThatHidesIt) {
  std::vector<std::string> lines = {
      "INFO 07-10 10:00:00 [__init__.py:1] Automatically detected platform rocm.",
      "INFO 07-10 10:00:01 [env.py:1] torch 2.5.1, triton 3.1.0",
      "INFO 07-10 10:00:01 [worker.py:1] _CudaDeviceProperties(name='K100_AI', major=9, "
      "minor=2, gcnArchName='gfx928:sramecc+:xnack-', total_memory=65520MB)",
      "ERROR 07-10 10:00:09 [core.py:1] ValueError: Head size 80 is not supported by "
      "FlashAttention. Supported head sizes are: [32, 64, 96, 128, 160, 192, 224, 256].",
  };
  DiagnosisResult result = classifier_->Classify(lines);
  EXPECT_THAT(Classes(result),
              ElementsAre("unsupported_head_size", "triton_unsupported_gpu_target"));
  const DiagnosisFinding& hidden = result.findings(1);
  EXPECT_EQ(hidden.basis(), dcufleet::v1::FINDING_BASIS_EXPECTED_NEXT);
  EXPECT_THAT(hidden.explanation(), HasSubstr("expected once unsupported_head_size is fixed"));
  EXPECT_LT(hidden.confidence(), result.findings(0).confidence());
  EXPECT_EQ(hidden.remediation().action(), "failover");
  EXPECT_THAT(hidden.conditions(), ElementsAre("arch gfx928 (log L3)"));

  // Another arch: the head size alone.
  std::vector<std::string> other = lines;
  other[2] = "INFO 07-10 10:00:01 [worker.py:1] gcnArchName='gfx942:sramecc+:xnack-'";
  EXPECT_THAT(Classes(classifier_->Classify(other)), ElementsAre("unsupported_head_size"));
  // gfx928 named among supported targets is not where the launch ran.
  other[2] = "INFO 07-10 10:00:01 [env.py:1] triton targets: gfx906, gfx926, gfx928";
  EXPECT_THAT(Classes(classifier_->Classify(other)), ElementsAre("unsupported_head_size"));
}

// In the controller the log is often only the error: the placement's arch and
// the stack's triton are given as facts, and the hidden cause rests on them.
TEST_F(LogClassifierTest, HiddenCauseRestsOnTheFactsTheCallerGives) {
  const std::vector<std::string> lines = {
      "ValueError: Head size 80 is not supported by FlashAttention. Supported head sizes are: "
      "[32, 64, 96, 128, 160, 192, 224, 256]."};
  EXPECT_THAT(Classes(classifier_->Classify(lines)), ElementsAre("unsupported_head_size"));

  ClassifyOptions options;
  options.facts = {{"arch", "gfx928"}, {"stack.triton_version", "3.1.0"}};
  DiagnosisResult result = classifier_->Classify(lines, options);
  ASSERT_THAT(Classes(result),
              ElementsAre("unsupported_head_size", "triton_unsupported_gpu_target"));
  EXPECT_THAT(result.findings(1).conditions(),
              ElementsAre("arch gfx928 (given)", "triton 3.1.0 (given)"));

  // The stack that works there (triton 3.0.0), or another arch: nothing hidden.
  options.facts["stack.triton_version"] = "3.0.0";
  EXPECT_THAT(Classes(classifier_->Classify(lines, options)),
              ElementsAre("unsupported_head_size"));
  options.facts = {{"arch", "gfx906"}, {"stack.triton_version", "3.1.0"}};
  EXPECT_THAT(Classes(classifier_->Classify(lines, options)),
              ElementsAre("unsupported_head_size"));
  // The caller's arch wins over what the log says.
  std::vector<std::string> with_device = lines;
  with_device.insert(with_device.begin(), "INFO worker.py:1 gcnArchName='gfx906:sramecc+:xnack-'");
  options.facts = {{"arch", "gfx928"}, {"stack.triton_version", "3.1.0+das.opt1"}};
  result = classifier_->Classify(with_device, options);
  EXPECT_EQ(result.context().arch(), "gfx906");
  ASSERT_THAT(Classes(result),
              ElementsAre("unsupported_head_size", "triton_unsupported_gpu_target"));
  EXPECT_THAT(result.findings(1).conditions(),
              ElementsAre("arch gfx928 (given)", "triton 3.1.0+das.opt1 (given)"));
}

// Hostile input: a 10 MB line and a deep traceback classify without
// blowing up (no quadratic work per line, bounded copies).
TEST_F(LogClassifierTest, HugeLinesAndDeepTracebacksAreBounded) {
  std::string huge(10 << 20, 'x');
  std::vector<std::string> lines = {"Traceback (most recent call last):"};
  for (int i = 0; i < 5000; ++i) {
    lines.push_back("  File \"/x/a.py\", line " + std::to_string(i) + ", in f");
    lines.push_back("    g()");
  }
  lines.push_back("RuntimeError: " + huge);
  lines.push_back(huge + " HIP error: invalid device function");
  DiagnosisResult result = classifier_->Classify(lines);
  EXPECT_EQ(result.findings(0).failure_class(), "hip_invalid_device_function");
  EXPECT_LE(result.terminal_error().message().size(), 4096u);
  EXPECT_LE(result.terminal_error().frames_size(), 8);
}

TEST(SplitLogLinesTest, HandlesCrLfAndTail) {
  EXPECT_THAT(SplitLogLines("a\r\nb\nc\n"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(SplitLogLines("a\nb\nc", 2), ElementsAre("b", "c"));
  EXPECT_THAT(SplitLogLines(""), ElementsAre());
  EXPECT_THAT(SplitLogLines("\n\n"), ElementsAre("", ""));
}

// Rules are data: a user rule file classifies without recompiling, and
// `all` / `not_in_log` behave as documented.
TEST(LogClassifierCustomRulesTest, AllAndNotInLogSemantics) {
  auto rules = ParseDiagnosisRules(R"pb(
    rule {
      id: "triton.dcu"
      failure_class: "triton_unsupported_gpu_target"
      any: "PassManager::run failed"
      all: "gfx9[0-9]{2}"
      not_in_log: "enforce-eager worked"
      confidence: 0.9
      remediation {
        kind: REMEDIATION_KIND_FAILOVER
        action: "failover"
        params { key: "mark_broken" value: "stack_arch" }
      }
    }
  )pb", "custom.txtpb", AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto classifier = LogClassifier::Create(*rules, "custom.txtpb");
  ASSERT_TRUE(classifier.ok()) << classifier.status();

  auto with_arch = classifier->Classify({"arch gfx906 found", "RuntimeError: PassManager::run failed"});
  EXPECT_EQ(with_arch.findings(0).failure_class(), "triton_unsupported_gpu_target");
  EXPECT_EQ(with_arch.findings(0).evidence(0).line(), 2);
  EXPECT_EQ(with_arch.rules_source(), "custom.txtpb");

  auto without_arch = classifier->Classify({"RuntimeError: PassManager::run failed"});
  EXPECT_EQ(without_arch.findings(0).failure_class(), "unknown");
  // No "unknown" rule in this file: a built-in human remediation.
  EXPECT_EQ(without_arch.findings(0).remediation().action(), "human");

  auto suppressed = classifier->Classify(
      {"gfx906", "RuntimeError: PassManager::run failed", "enforce-eager worked"});
  EXPECT_EQ(suppressed.findings(0).failure_class(), "unknown");
}

// A rule's `when` is matched on typed facts: the caller's first, else the
// log's own context; a fact neither gives does not hold.
TEST(LogClassifierCustomRulesTest, WhenMatchesTypedContextNotText) {
  auto rules = ParseDiagnosisRules(R"pb(
    rule {
      id: "invalid_device_function.rocm"
      failure_class: "hip_invalid_device_function"
      any: "invalid device function"
      when { platform: "rocm" arch: "gfx9[0-9a-f]{2}" version { key: "engine" value: "0\\.(?:9|1[0-9])\\..*" } }
      confidence: 0.9
      remediation { kind: REMEDIATION_KIND_FAILOVER action: "failover" }
    }
  )pb", "when.txtpb", AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto classifier = LogClassifier::Create(*rules, "when.txtpb");
  ASSERT_TRUE(classifier.ok()) << classifier.status();

  const std::vector<std::string> log = {
      "INFO 01-01 00:00:00 [__init__.py:1] Automatically detected platform rocm.",
      "INFO 01-01 00:00:01 [api_server.py:1] vLLM API server version 0.9.2",
      "rocBLAS warning: for GPU arch : gfx928",
      "RuntimeError: HIP error: invalid device function",
  };
  DiagnosisResult result = classifier->Classify(log);
  EXPECT_EQ(result.findings(0).failure_class(), "hip_invalid_device_function");
  EXPECT_THAT(result.findings(0).conditions(),
              ElementsAre("arch gfx928 (log L3)", "platform rocm (log L1)",
                          "engine 0.9.2 (log L2)"));

  // The words without the facts: the arch named in text, no platform line.
  EXPECT_EQ(classifier->Classify({"built for gfx928", "RuntimeError: HIP error: invalid device function"})
                .findings(0).failure_class(),
            "unknown");
  // The caller's facts stand in for what the log does not say.
  ClassifyOptions given;
  given.facts = {{"arch", "gfx906"}, {"platform", "ROCm"}, {"stack.engine_version", "0.11.0"}};
  result = classifier->Classify({"RuntimeError: HIP error: invalid device function"}, given);
  EXPECT_EQ(result.findings(0).failure_class(), "hip_invalid_device_function");
  EXPECT_THAT(result.findings(0).conditions(),
              ElementsAre("arch gfx906 (given)", "platform rocm (given)",
                          "engine 0.11.0 (given)"));
  // An engine version outside the pattern: the rule does not fire.
  given.facts["stack.engine_version"] = "0.8.5";
  EXPECT_EQ(classifier->Classify({"RuntimeError: HIP error: invalid device function"}, given)
                .findings(0).failure_class(),
            "unknown");
}

// A bad `when` is refused at load, naming the rule and the field.
TEST(LogClassifierCustomRulesTest, BadWhenIsRefusedWithItsPlace) {
  auto bad_pattern = ParseDiagnosisRules(R"pb(
    rule {
      id: "x.y"
      failure_class: "port_in_use"
      any: "address already in use"
      when { arch: "gfx[" }
      confidence: 0.9
      remediation { kind: REMEDIATION_KIND_HUMAN action: "human" }
    }
  )pb", "bad.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_THAT(bad_pattern.status().message(),
              HasSubstr("bad.txtpb: rule 'x.y': when.arch[0] 'gfx[' is not a valid RE2 pattern"));
  auto bad_component = ParseDiagnosisRules(R"pb(
    rule {
      id: "x.y"
      failure_class: "port_in_use"
      any: "address already in use"
      hidden_cause {
        failure_class: "no_cache_blocks"
        confidence: 0.5
        when { version { key: "cuda" value: "12.*" } }
      }
      confidence: 0.9
      remediation { kind: REMEDIATION_KIND_HUMAN action: "human" }
    }
  )pb", "bad.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(bad_component.ok());
  EXPECT_THAT(bad_component.status().message(),
              HasSubstr("rule 'x.y': hidden_cause[0]: when.version names 'cuda', not one of "
                        "engine, dtk, torch, triton, flash_attn, python"));
}

// A scoped pattern counts only on its part of the log.
TEST(LogClassifierCustomRulesTest, ScopesRestrictWhereAPatternCounts) {
  auto rules = ParseDiagnosisRules(R"pb(
    rule {
      id: "by_type"
      failure_class: "cuda_oom_model_load"
      any: "^torch\\.(?:cuda\\.)?OutOfMemoryError$"
      scope: MATCH_SCOPE_EXCEPTION_TYPE
      confidence: 0.9
      remediation { kind: REMEDIATION_KIND_HUMAN action: "human" }
    }
    rule {
      id: "by_message"
      failure_class: "model_path_not_found"
      any: "/models/missing"
      scope: MATCH_SCOPE_EXCEPTION_MESSAGE
      confidence: 0.9
      remediation { kind: REMEDIATION_KIND_HUMAN action: "human" }
    }
  )pb", "scoped.txtpb", AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto classifier = LogClassifier::Create(*rules, "scoped.txtpb");
  ASSERT_TRUE(classifier.ok()) << classifier.status();

  // The words alone, outside a raised error: neither counts.
  auto loose = classifier->Classify({"INFO loading /models/missing",
                                     "hint: torch.OutOfMemoryError is raised when ..."});
  EXPECT_EQ(loose.findings(0).failure_class(), "unknown");

  auto raised = classifier->Classify({"Traceback (most recent call last):",
                                      "  File \"/x.py\", line 1, in f",
                                      "    g()",
                                      "OSError: cannot open",
                                      "/models/missing (continuation of the message)"});
  ASSERT_EQ(raised.findings_size(), 1);
  EXPECT_EQ(raised.findings(0).failure_class(), "model_path_not_found");
  EXPECT_EQ(raised.findings(0).evidence(0).line(), 5);

  auto typed = classifier->Classify({"torch.OutOfMemoryError: HIP out of memory."});
  EXPECT_EQ(typed.findings(0).failure_class(), "cuda_oom_model_load");
  EXPECT_EQ(typed.findings(0).evidence(0).line(), 1);
  // A type pattern matches the type, not the message.
  auto other_type = classifier->Classify({"ValueError: torch.OutOfMemoryError"});
  EXPECT_EQ(other_type.findings(0).failure_class(), "unknown");
}

// Issue 15: the context that qualifies an error, read as typed facts with
// their lines (log_context.h), from the wordings engines print.
TEST_F(LogClassifierTest, ContextVllmOnRocmWithTheArchTheErrorNames) {
  DiagnosisResult r = classifier_->Classify({
      "INFO 05-09 08:19:28 [__init__.py:239] Automatically detected platform rocm.",
      "INFO 05-09 08:19:31 [api_server.py:1043] vLLM API server version 0.8.5.post1",
      "WARNING 05-09 08:19:31 supported targets: gfx900 gfx906 gfx908 gfx90a",
      "loc(\"/opt/conda/lib/python3.10/site-packages/vllm/attention/ops/prefix_prefill.py\":36:0): "
      "error: unsupported target: 'gfx928'",
  });
  ASSERT_TRUE(r.has_context());
  EXPECT_EQ(r.context().engine(), "vllm");
  EXPECT_EQ(r.context().engine_version(), "0.8.5.post1");
  EXPECT_EQ(r.context().engine_line(), 2);
  EXPECT_EQ(r.context().platform(), "rocm");
  EXPECT_EQ(r.context().platform_line(), 1);
  EXPECT_EQ(r.context().arch(), "gfx928") << "not a target of the list on line 3";
  EXPECT_EQ(r.context().arch_line(), 4);
}

TEST_F(LogClassifierTest, ContextIsTheSameUnderProcessPrefixesAndColour) {
  DiagnosisResult plain = classifier_->Classify({
      "INFO 08-01 10:00:00 [__init__.py:235] Automatically detected platform cuda.",
      "INFO 08-01 10:00:02 [core.py:69] Initializing a V1 LLM engine (v0.10.0) with config: model='Qwen/Qwen3-8B'",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
  });
  DiagnosisResult noisy = classifier_->Classify({
      "\x1b[32mINFO\x1b[0m 08-01 10:00:00 [__init__.py:235] Automatically detected platform cuda.",
      "(EngineCore_0 pid=4242) INFO 08-01 10:00:02 [core.py:69] Initializing a V1 LLM engine (v0.10.0) "
      "with config: model='Qwen/Qwen3-8B'",
      "(EngineCore_0 pid=4242) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
  });
  ASSERT_TRUE(plain.has_context());
  EXPECT_EQ(plain.context().engine_version(), "0.10.0");
  EXPECT_EQ(plain.context().platform(), "cuda");
  EXPECT_EQ(plain.context().arch(), "");
  EXPECT_EQ(plain.context().SerializeAsString(), noisy.context().SerializeAsString())
      << plain.context().ShortDebugString() << " vs " << noisy.context().ShortDebugString();
}

TEST_F(LogClassifierTest, ContextLlamaCppDeviceListGivesPlatformAndComputeCapability) {
  DiagnosisResult r = classifier_->Classify({
      "build: 3923 (becfd387) with cc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0 for x86_64-linux-gnu",
      "ggml_cuda_init: found 2 CUDA devices:",
      "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes",
      "  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
      "llama_model_load: error loading model: unknown model architecture: 'qwen3'",
  });
  ASSERT_TRUE(r.has_context());
  EXPECT_EQ(r.context().engine(), "llama.cpp");
  EXPECT_EQ(r.context().engine_version(), "3923 (becfd387)");
  EXPECT_EQ(r.context().engine_line(), 1);
  EXPECT_EQ(r.context().platform(), "cuda");
  EXPECT_EQ(r.context().arch(), "sm_89") << "the first device";
  EXPECT_EQ(r.context().arch_line(), 3);
}

TEST_F(LogClassifierTest, ContextTakesTheDeviceNotARequirementNorAnAmbiguousCapability) {
  // vLLM's bf16 refusal names the requirement first, then the device.
  DiagnosisResult r = classifier_->Classify({
      "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
      "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly "
      "setting the `dtype` flag in CLI, for example: --dtype=half.",
  });
  EXPECT_EQ(r.context().arch(), "sm_75");
  r = classifier_->Classify({"ValueError: FP8 needs compute capability 8.9 or higher"});
  EXPECT_EQ(r.context().arch(), "") << "a requirement says nothing of the device";
  // Old llama.cpp ROCm builds print gfx1100 as "compute capability 11.0".
  r = classifier_->Classify({
      "ggml_cuda_init: found 1 ROCm devices:",
      "  Device 0: Radeon RX 7900 XTX, compute capability 11.0, VMM: no",
  });
  EXPECT_EQ(r.context().platform(), "rocm");
  EXPECT_EQ(r.context().arch(), "");
}

TEST_F(LogClassifierTest, ContextRefusesGarbageAndListsAndIsAbsentWhenTheLogSaysNothing) {
  // Seed 003's garbage arch string, and a list of targets: no arch.
  DiagnosisResult r = classifier_->Classify({
      "GCN arch gfx18446744073709551615",
      "ERROR: this build supports gfx906, gfx926, gfx928 only",
  });
  EXPECT_EQ(r.context().arch(), "");
  r = classifier_->Classify({"RuntimeError: something failed", "  in a frame"});
  EXPECT_FALSE(r.has_context());
}

TEST_F(LogClassifierTest, ContextValuesAreBoundedAndAscii) {
  DiagnosisResult r = classifier_->Classify({
      "vLLM API server version 1" + std::string(100000, 'a'),
      "Automatically detected platform \xff\xfe",
  });
  EXPECT_LE(r.context().engine_version().size(), 64u);
  EXPECT_EQ(r.context().platform(), "");
  std::string wire;
  EXPECT_TRUE(r.SerializeToString(&wire));
}

TEST_F(LogClassifierTest, ContextPrefersADeviceStatementToAnErrorsMention) {
  DiagnosisResult r = classifier_->Classify({
      "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or "
      "directory for GPU arch : gfx1036",
      "RuntimeError: the kernels here were built for gfx1030",
  });
  EXPECT_EQ(r.context().arch(), "gfx1036");
  EXPECT_EQ(r.context().arch_line(), 1);
}

}  // namespace
}  // namespace dcu::modelkit
