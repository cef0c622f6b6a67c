// The prefixes below are copied from real logs of the corpus
// (tests/data/launch-logs); the test checks each is removed and the level
// kept.

#include "modelkit/diagnosis/log_normalizer.h"

#include "gtest/gtest.h"

namespace dcu::modelkit {
namespace {

TEST(StripCaretNotationTest, RemovesCaretAnsiCodesAndTrailingCaretM) {
  EXPECT_EQ(StripCaretNotation("^[[0;36m(Worker_TP0 pid=1)^[[0;0m ERROR x^M"),
            "(Worker_TP0 pid=1) ERROR x");
  EXPECT_EQ(StripCaretNotation("    ^^^^^^^^^^^^^^^^^^"), "    ^^^^^^^^^^^^^^^^^^");
  EXPECT_EQ(StripCaretNotation("a ^[[ b"), "a ^[[ b");
  NormalizedLine line = NormalizeLogLine(
      "^[[0;36m(Worker_TP0 pid=46727)^[[0;0m ERROR 02-09 08:08:26 [multiproc_executor.py:824]   "
      "File \"/x/triton/compiler/compiler.py\", line 490, in launch_metadata^M");
  EXPECT_EQ(line.text, "File \"/x/triton/compiler/compiler.py\", line 490, in launch_metadata");
}

TEST(StripAnsiTest, RemovesCsiOscAndControlCharacters) {
  EXPECT_EQ(StripAnsi("\x1b[1;31mERROR\x1b[0m boom"), "ERROR boom");
  EXPECT_EQ(StripAnsi("\x1b[36m(EngineCore_DP0 pid=1)\x1b[0;0m x"), "(EngineCore_DP0 pid=1) x");
  EXPECT_EQ(StripAnsi("\x1b]0;title\x07" "after"), "after");
  EXPECT_EQ(StripAnsi("\x1b]8;;http://x\x1b\\link"), "link");
  EXPECT_EQ(StripAnsi("50%\r100%"), "50% 100%");
  EXPECT_EQ(StripAnsi("tab\tkept"), "tab\tkept");
  // A lone ESC at the end (a cut line) must not read past the end.
  EXPECT_EQ(StripAnsi("cut\x1b"), "cut");
  EXPECT_EQ(StripAnsi("cut\x1b["), "cut");
}

struct Case {
  const char* raw;
  const char* text;
  LineSeverity severity;
  bool exception;
};

class NormalizeLogLineTest : public ::testing::TestWithParam<Case> {};

TEST_P(NormalizeLogLineTest, StripsPrefixesAndKeepsLevel) {
  const Case& c = GetParam();
  NormalizedLine line = NormalizeLogLine(c.raw);
  EXPECT_EQ(line.text, c.text) << c.raw;
  EXPECT_EQ(line.severity, c.severity) << c.raw;
  EXPECT_EQ(line.exception, c.exception) << c.raw;
}

INSTANTIATE_TEST_SUITE_P(
    RealPrefixes, NormalizeLogLineTest,
    ::testing::Values(
        // vLLM V1 engine core, ANSI-coloured prefix as vLLM prints it on a tty.
        Case{"\x1b[1;36m(EngineCore_DP0 pid=223840)\x1b[0;0m ERROR 10-25 13:08:43 [core.py:708] "
             "ValueError: No available memory for the cache blocks.",
             "ValueError: No available memory for the cache blocks.", LineSeverity::kError, true},
        // Ray workers with an ip and the "repeated" suffix.
        Case{"(RayWorkerWrapper pid=880) ERROR 04-16 01:01:44 [worker_base.py:620] RuntimeError: "
             "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details) "
             "[repeated 6x across cluster]",
             "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
             "details)",
             LineSeverity::kError, true},
        Case{"(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 "
             "[worker_base.py:620]     return self.forward(*args, **kwargs)",
             "return self.forward(*args, **kwargs)", LineSeverity::kError, false},
        // vLLM V0 worker, old level prefix without '['.
        Case{"(VllmWorkerProcess pid=760) ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] "
             "RuntimeError: NCCL error: unhandled cuda error",
             "RuntimeError: NCCL error: unhandled cuda error", LineSeverity::kError, true},
        Case{"INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256",
             "# GPU blocks: 0, # CPU blocks: 256", LineSeverity::kDebugInfo, false},
        // CI timestamp + engine prefix.
        Case{"[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: Free memory on device "
             "cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory utilization "
             "(0.9, 19.84 GiB).",
             "ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than "
             "desired GPU memory utilization (0.9, 19.84 GiB).",
             LineSeverity::kError, true},
        // docker compose.
        Case{"vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory",
             "ValueError: No available memory", LineSeverity::kError, true},
        // torch c10 log after a rank prefix: a warning.
        Case{"[rank0]:[W409 11:42:27.776885251 ProcessGroupNCCL.cpp:1250] Warning: WARNING: "
             "process group has NOT been destroyed",
             "Warning: WARNING: process group has NOT been destroyed", LineSeverity::kWarning,
             false},
        Case{"[rank0]: RuntimeError: CUDA error: no kernel image is available",
             "RuntimeError: CUDA error: no kernel image is available", LineSeverity::kError, true},
        // SGLang.
        Case{"[2025-03-10 14:17:52 TP6] Ignore import error when loading sglang.srt.models.x",
             "Ignore import error when loading sglang.srt.models.x", LineSeverity::kUnknown, false},
        Case{"[2024-12-13 01:47:34] Initialization failed. warmup error: Traceback (most recent "
             "call last):",
             "Initialization failed. warmup error: Traceback (most recent call last):",
             LineSeverity::kError, false},
        // A launcher's timestamp and tags before vLLM's own prefixes.
        Case{"2026-05-08 11:47:02.257 [Error] (Process) (EngineCore pid=2651) ERROR 05-08 "
             "11:47:02 [core.py:1136] torch.OutOfMemoryError: HIP out of memory.",
             "torch.OutOfMemoryError: HIP out of memory.", LineSeverity::kError, true},
        Case{"2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):",
             "Traceback (most recent call last):", LineSeverity::kError, false},
        Case{"2025-12-11 10:34:03.939481+08:00 - gpustack.worker.backends.base - INFO - "
             "Preparing model files...",
             "Preparing model files...", LineSeverity::kDebugInfo, false},
        Case{"[vllm]: [rank0]: RuntimeError: NCCL error: unhandled syst",
             "RuntimeError: NCCL error: unhandled syst", LineSeverity::kError, true},
        Case{"(Worker pid=2291010) [Stage-0] INFO 03-12 08:22:28 [multiproc_executor.py:749] "
             "Parent process exited, terminating worker",
             "Parent process exited, terminating worker", LineSeverity::kDebugInfo, false},
        Case{"[multiproc_executor.py:492] ValueError: Free memory on device (31.44/47.38 GiB)",
             "ValueError: Free memory on device (31.44/47.38 GiB)", LineSeverity::kError, true},
        // uvicorn.
        Case{"ERROR:    [Errno 98] error while attempting to bind on address ('::', 2242, 0, 0): "
             "address already in use",
             "[Errno 98] error while attempting to bind on address ('::', 2242, 0, 0): address "
             "already in use",
             LineSeverity::kError, false},
        Case{"ERROR (uvicorn.error):  [Errno 98] error while attempting to bind",
             "[Errno 98] error while attempting to bind", LineSeverity::kError, false},
        Case{"WARNING 05-22 08:41:53 [rocm.py:44] Failed to import from vllm._C with ImportError",
             "Failed to import from vllm._C with ImportError", LineSeverity::kWarning, false},
        // Lines that only look like prefixes are left alone.
        Case{"  File \"/usr/lib/python3.10/runpy.py\", line 196, in _run_module_as_main",
             "File \"/usr/lib/python3.10/runpy.py\", line 196, in _run_module_as_main",
             LineSeverity::kUnknown, false},
        Case{"[New LWP 252]", "[New LWP 252]", LineSeverity::kUnknown, false},
        Case{"(base) [root@localhost opt]# rocminfo", "(base) [root@localhost opt]# rocminfo",
             LineSeverity::kUnknown, false},
        Case{"LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.permlanex16",
             "LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.permlanex16",
             LineSeverity::kError, true},
        Case{"    Found GPU1 Tesla V100-PCIE-16GB which is of cuda capability 7.0.",
             "Found GPU1 Tesla V100-PCIE-16GB which is of cuda capability 7.0.",
             LineSeverity::kUnknown, false},
        Case{"/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:262: UserWarning: ",
             "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:262: UserWarning:",
             LineSeverity::kWarning, false},
        // journald (dev: ollama-6144), Go slog (dev: ollama-14028), buildkite (dev: vllm-14574).
        Case{"Aug  2 20:05:50 ollama-ubuntu-jammy-2 ollama[447]: rocBLAS error: Could not "
             "initialize Tensile host: No devices found",
             "rocBLAS error: Could not initialize Tensile host: No devices found",
             LineSeverity::kError, false},
        Case{"time=2026-02-02T12:29:02.735Z level=INFO source=server.go:1339 msg=\"llama runner "
             "started in 29.96 seconds\"",
             "\"llama runner started in 29.96 seconds\"", LineSeverity::kDebugInfo, false},
        Case{"  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] ValueError: No "
             "available memory for the cache blocks.",
             "ValueError: No available memory for the cache blocks.", LineSeverity::kError, true},
        // A progress bar redrawn with '\r', then the error printed over it.
        Case{"Loading shards:  50%|#####     | 1/2\rLoading shards: 100%|##########| 2/2\r"
             "torch.OutOfMemoryError: HIP out of memory.\r",
             "torch.OutOfMemoryError: HIP out of memory.", LineSeverity::kError, true},
        Case{"", "", LineSeverity::kUnknown, false}));

TEST(NormalizeLogLineTest, LevelFromPrefixIsKnown) {
  EXPECT_TRUE(NormalizeLogLine("INFO 04-27 10:11:03 llm_engine.py:70] x").level_from_prefix);
  EXPECT_FALSE(NormalizeLogLine("UserWarning: x").level_from_prefix);
  EXPECT_FALSE(NormalizeLogLine("ValueError: x").level_from_prefix);
}

// glog's own prefix without brackets (lmdeploy's turbomind, TensorFlow/XLA,
// any C++ server using glog or absl log): "<L>MMDD HH:MM:SS.micro thread
// file:line] ". The level letter is kept; 'F' (LOG(FATAL), CHECK) is marked.
TEST(NormalizeLogLineTest, GlogPrefixWithoutBrackets) {
  NormalizedLine fatal =
      NormalizeLogLine("F1204 12:34:56.789012  4242 llama_model.cc:88] Check failed: n_head % tp == 0");
  EXPECT_EQ(fatal.text, "Check failed: n_head % tp == 0");
  EXPECT_EQ(fatal.severity, LineSeverity::kError);
  EXPECT_TRUE(fatal.fatal_prefix);
  EXPECT_TRUE(fatal.level_from_prefix);
  NormalizedLine info = NormalizeLogLine("I1204 12:34:56.789012 4242 server.cc:12] listening");
  EXPECT_EQ(info.text, "listening");
  EXPECT_EQ(info.severity, LineSeverity::kDebugInfo);
  EXPECT_FALSE(info.fatal_prefix);
  EXPECT_TRUE(NormalizeLogLine("[F1204 12:34:56.789 x.cpp:1] boom").fatal_prefix);
  // Not glog: a word that starts with a level letter and digits.
  EXPECT_EQ(NormalizeLogLine("F1234 is a part number: see x.cc:1] ").text,
            "F1234 is a part number: see x.cc:1]");
  EXPECT_FALSE(NormalizeLogLine("ERROR 10-25 13:08:43 [core.py:708] x").fatal_prefix);
}

TEST(IsExceptionLineTest, RecognisesPythonAndNativeErrors) {
  EXPECT_TRUE(IsExceptionLine("torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_TRUE(IsExceptionLine("ValueError"));
  EXPECT_TRUE(IsExceptionLine("UserWarning: PyTorch no longer supports this GPU"));
  EXPECT_TRUE(IsExceptionLine("LLVM ERROR: Cannot select: intrinsic"));
  EXPECT_TRUE(IsExceptionLine("GGML_ASSERT: ggml/src/ggml-cuda.cu:101: !\"CUDA error\""));
  EXPECT_FALSE(IsExceptionLine("raise ValueError("));
  EXPECT_FALSE(IsExceptionLine("Error in inspecting model architecture 'Qwen2ForCausalLM'"));
  EXPECT_FALSE(IsExceptionLine("ValueErrors are common"));
  // c10's "Warning: ..." and a bare "Error: ..." are log levels, not exceptions.
  EXPECT_FALSE(IsExceptionLine("Warning: WARNING: process group has NOT been destroyed"));
  EXPECT_FALSE(IsExceptionLine("Error: Invalid configuration : NUM_MMA_Q=2"));
  EXPECT_FALSE(IsExceptionLine(""));
}

// xorbitsai/xoscar backends/message.pyx _AsCauseBase.__str__: Xinference's
// actors put "[address=..., pid=...] " in front of the message, once per
// actor; only right after an exception's type.
TEST(NormalizeLogLineTest, XoscarCausePrefixGoes) {
  EXPECT_EQ(NormalizeLogLine("KeyError: [address=0.0.0.0:41234, pid=99] 'widget'").text, "KeyError: 'widget'");
  EXPECT_EQ(NormalizeLogLine("ValueError: [address=0.0.0.0:1, pid=2] [address=127.0.0.1:3, pid=4] "
                             "Model architectures ['X'] are not supported")
                .text,
            "ValueError: Model architectures ['X'] are not supported");
  EXPECT_TRUE(NormalizeLogLine("KeyError: [address=0.0.0.0:41234, pid=99] 'widget'").exception);
  // Not an exception line, or not the actor's form: kept.
  EXPECT_EQ(NormalizeLogLine("launching [address=0.0.0.0:1, pid=2] x").text, "launching [address=0.0.0.0:1, pid=2] x");
  EXPECT_EQ(NormalizeLogLine("ValueError: [address=a b, pid=2] x").text, "ValueError: [address=a b, pid=2] x");
}

// mudler/LocalAI pkg/model/process.go relays a backend's output through
// zerolog's console writer: "3:04PM DBG GRPC(<id>-<addr>): stderr <line>".
TEST(NormalizeLogLineTest, LocalAiRelayPrefixGoes) {
  NormalizedLine line = NormalizeLogLine("12:31PM DBG GRPC(my-model-127.0.0.1:46589): stderr KeyError: 'widget'");
  EXPECT_EQ(line.text, "KeyError: 'widget'");
  EXPECT_TRUE(line.exception);
  EXPECT_EQ(NormalizeLogLine("2025-12-10T13:31:09.126595216+01:00 9:05AM DBG GRPC(m-127.0.0.1:1): stdout "
                             "llama_model_load: error loading model: x")
                .text,
            "llama_model_load: error loading model: x");
  EXPECT_EQ(NormalizeLogLine("12:31PM ERR failed to load model").text, "failed to load model");
  EXPECT_EQ(NormalizeLogLine("12:31PM ERR failed").severity, LineSeverity::kError);
  EXPECT_EQ(NormalizeLogLine("GRPC(service) is ready").text, "GRPC(service) is ready");
}

TEST(NormalizeLogLineTest, NeverCrashesOnBinaryOrHugeInput) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>(i % 256));
  NormalizedLine line = NormalizeLogLine(junk);
  EXPECT_FALSE(line.text.empty());
  std::string nested;
  for (int i = 0; i < 100; ++i) nested += "(W pid=1) [rank0]: ";
  EXPECT_NE(NormalizeLogLine(nested + "x").text, "");
}

}  // namespace
}  // namespace dcu::modelkit
