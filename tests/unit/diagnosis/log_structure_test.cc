// The structure reader on log shapes taken from real launch logs (the corpus
// in tests/data/launch-logs and tests/data/diagnosis-corpus/dev): what an
// engineer would point at as "the error it died of" and "where it died".

#include "modelkit/diagnosis/log_structure.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/diagnosis/log_normalizer.h"

namespace dcu::modelkit {
namespace {

using ::testing::ElementsAre;

std::vector<NormalizedLine> Normalize(const std::vector<std::string>& raw) {
  std::vector<NormalizedLine> lines;
  for (const std::string& line : raw) lines.push_back(NormalizeLogLine(line));
  return lines;
}

const RaisedError& Terminal(const LogStructure& s) {
  static const RaisedError kNone;
  return s.terminal_error >= 0 ? s.errors[s.terminal_error] : kNone;
}

std::vector<std::string> Functions(const LogStructure& s) {
  std::vector<std::string> out;
  if (s.terminal_traceback < 0) return out;
  for (const auto& f : s.tracebacks[s.terminal_traceback].frames) out.push_back(f.function);
  return out;
}

TEST(LogStructureTest, TerminalExceptionIsTheLastOfAChain) {
  LogStructure s = ReadLogStructure(Normalize({
      "Traceback (most recent call last):",
      "  File \"/x/transformers/utils/hub.py\", line 398, in cached_file",
      "    resolved_file = hf_hub_download(",
      "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name'",
      "",
      "The above exception was the direct cause of the following exception:",
      "",
      "Traceback (most recent call last):",
      "  File \"/x/vllm/config.py\", line 12, in get_config",
      "    raise OSError(msg) from e",
      "OSError: Incorrect path_or_model_id: '/models/qwen'. Please provide either the path",
      "to a local folder or the repo_id of a model on the Hub.",
  }));
  ASSERT_EQ(s.errors.size(), 2u);
  ASSERT_EQ(s.tracebacks.size(), 2u);
  EXPECT_FALSE(s.tracebacks[0].chained);
  EXPECT_TRUE(s.tracebacks[1].chained);
  const RaisedError& t = Terminal(s);
  EXPECT_EQ(t.type, "OSError");
  EXPECT_EQ(t.message,
            "Incorrect path_or_model_id: '/models/qwen'. Please provide either the path\n"
            "to a local folder or the repo_id of a model on the Hub.");
  EXPECT_EQ(t.first_line, 10);
  EXPECT_EQ(t.last_line, 11);
  EXPECT_EQ(s.error_of_line[11], s.terminal_error);
  EXPECT_THAT(Functions(s), ElementsAre("get_config"));
  EXPECT_EQ(s.tracebacks[1].frames[0].file, "/x/vllm/config.py");
  EXPECT_FALSE(s.ErrorLineMissing());
  EXPECT_EQ(s.roles[2], LineRole::kFrameSource);
  EXPECT_EQ(s.roles[5], LineRole::kChainMarker);
}

// vLLM V1: the engine core's traceback holds the cause; the API server's
// "Engine core initialization failed. See root cause above" only reports it.
TEST(LogStructureTest, FollowOnErrorIsNotTheTerminalOne) {
  std::vector<NormalizedLine> lines = Normalize({
      "(EngineCore_DP0 pid=7) ERROR 10-25 13:08:43 [core.py:708] Traceback (most recent call last):",
      "(EngineCore_DP0 pid=7) ERROR 10-25 13:08:43 [core.py:708]   File \"/x/vllm/v1/engine/core.py\", line 699, in run_engine_core",
      "(EngineCore_DP0 pid=7) ERROR 10-25 13:08:43 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)",
      "(EngineCore_DP0 pid=7) ERROR 10-25 13:08:43 [core.py:708] ValueError: No available memory for the cache blocks.",
      "Traceback (most recent call last):",
      "  File \"/x/vllm/v1/engine/utils.py\", line 433, in wait_for_engine_startup",
      "    raise RuntimeError(",
      "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
  });
  LogStructure plain = ReadLogStructure(lines);
  EXPECT_EQ(Terminal(plain).type, "RuntimeError");
  LogStructure s = ReadLogStructure(lines, [](const RaisedError& e) {
    return e.message.find("See root cause above") != std::string::npos;
  });
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_TRUE(s.errors[1].follow_on);
  EXPECT_EQ(Terminal(s).type, "ValueError");
  EXPECT_EQ(Terminal(s).message, "No available memory for the cache blocks.");
  EXPECT_THAT(Functions(s), ElementsAre("run_engine_core"));
}

// The log was cut inside a traceback: the frames say where it died.
TEST(LogStructureTest, TracebackCutBeforeItsErrorLine) {
  LogStructure s = ReadLogStructure(Normalize({
      "ValueError: an earlier, unrelated error",
      "(VllmWorker rank=5 pid=3073) Traceback (most recent call last):",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/worker/gpu_worker.py\", line 136, in load_model",
      "(VllmWorker rank=5 pid=3073)     self.model_runner.load_model()",
      "(VllmWorker rank=5 pid=3073)              ^^^^^^^^^^^^^^^^^^^^^^^",
      "INFO 04-17 20:54:26 [loader.py:1] Loading weights took 3.1 seconds",
      "(VllmWorker rank=5 pid=3073)   File \"/v/vllm/v1/worker/gpu_model_runner.py\", line 1167, in load_model",
      "(VllmWorker rank=5 pid=3073)     self.model = get_model(vllm_config=self.vllm_config)",
  }));
  EXPECT_TRUE(s.ErrorLineMissing());
  EXPECT_EQ(s.terminal_traceback, 0);
  EXPECT_EQ(s.tracebacks[0].error, -1);
  // The interleaved INFO line of another process neither ends the traceback
  // nor counts as a frame.
  EXPECT_THAT(Functions(s), ElementsAre("load_model", "load_model"));
  // The run went on after the earlier error: it is not what it died of.
  EXPECT_EQ(s.terminal_error, -1);
  EXPECT_EQ(s.error_before_cut_traceback, 0);
  EXPECT_EQ(s.errors.size(), 1u);
  EXPECT_THAT(s.cut_traceback_tail, ElementsAre(7));
}

// Two ranks print the same traceback, interleaved; one rank's exception line
// comes before the other's last frames. The exception is still what it died of.
TEST(LogStructureTest, InterleavedRanksKeepTheirException) {
  LogStructure s = ReadLogStructure(Normalize({
      "[rank0]: Traceback (most recent call last):",
      "[rank1]: Traceback (most recent call last):",
      "[rank0]:   File \"/x/vllm/worker/worker.py\", line 229, in determine_num_available_blocks",
      "[rank0]:     raise ValueError(",
      "[rank0]: ValueError: No available memory for the cache blocks.",
      "[rank1]:   File \"/x/vllm/worker/worker.py\", line 229, in determine_num_available_blocks",
      "[rank1]:     raise ValueError(",
  }));
  EXPECT_EQ(Terminal(s).type, "ValueError");
  EXPECT_FALSE(s.ErrorLineMissing());
}

// Another process's INFO line between an exception line and the line that
// continues its message is skipped, as between frames: the message reads
// the same with and without it (DiagnosisCorpusTest.NoiseDoesNotChangeTheAnswer
// found a message cut short by it).
TEST(LogStructureTest, InterleavedInfoLineDoesNotCutAMessageShort) {
  const std::string error = "ValueError: The model's max seq len (32768) is larger than";
  const std::string rest = "the maximum number of tokens that can be stored in KV cache (7600).";
  const std::string info =
      "(VllmWorkerProcess pid=77) INFO 04-17 20:54:26 [multiproc_worker_utils.py:225] Worker ready";
  LogStructure plain = ReadLogStructure(Normalize({"Traceback (most recent call last):",
                                                   "  File \"/x/vllm/engine.py\", line 3, in f",
                                                   error, rest}));
  LogStructure noisy = ReadLogStructure(Normalize({"Traceback (most recent call last):",
                                                   "  File \"/x/vllm/engine.py\", line 3, in f",
                                                   error, info, rest}));
  EXPECT_EQ(Terminal(plain).message, Terminal(noisy).message);
  EXPECT_NE(Terminal(noisy).message.find("KV cache (7600)"), std::string::npos) << Terminal(noisy).message;
}

TEST(LogStructureTest, PrefixesAnsiAndTimestampsDoNotChangeTheResult) {
  std::vector<std::string> plain = {
      "Traceback (most recent call last):",
      "  File \"/x/vllm/worker/worker.py\", line 229, in determine_num_available_blocks",
      "    torch.cuda.empty_cache()",
      "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.",
  };
  std::vector<std::string> noisy;
  for (const std::string& line : plain) {
    noisy.push_back("\x1b[1;36m(RayWorkerWrapper pid=880, ip=10.0.0.1)\x1b[0;0m [rank0]: "
                    "2025-03-10 14:17:52,886 - vllm - ERROR - " + line);
  }
  LogStructure a = ReadLogStructure(Normalize(plain));
  LogStructure b = ReadLogStructure(Normalize(noisy));
  EXPECT_EQ(Terminal(a).type, "torch.OutOfMemoryError");
  EXPECT_EQ(Terminal(b).type, Terminal(a).type);
  EXPECT_EQ(Terminal(b).message, Terminal(a).message);
  EXPECT_EQ(Functions(b), Functions(a));
  EXPECT_THAT(Functions(a), ElementsAre("determine_num_available_blocks"));
}

TEST(LogStructureTest, CppTerminateTakesItsMessageFromWhat) {
  LogStructure s = ReadLogStructure(Normalize({
      "terminate called after throwing an instance of 'c10::Error'",
      "  what():  CUDA error: invalid device function",
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
  }));
  ASSERT_GE(s.terminal_error, 0);
  EXPECT_EQ(Terminal(s).origin, ErrorOrigin::kCppException);
  EXPECT_EQ(Terminal(s).type, "c10::Error");
  EXPECT_EQ(Terminal(s).message,
            "CUDA error: invalid device function\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.");
}

TEST(LogStructureTest, GoPanicWithItsFrames) {
  LogStructure s = ReadLogStructure(Normalize({
      "panic: runtime error: index out of range [3] with length 3",
      "",
      "goroutine 1 [running]:",
      "github.com/ollama/ollama/llm.(*gguf).Decode(0xc0001a2000)",
      "\t/go/src/github.com/ollama/ollama/llm/gguf.go:123 +0x1d",
  }));
  EXPECT_EQ(Terminal(s).origin, ErrorOrigin::kGoPanic);
  EXPECT_EQ(Terminal(s).message, "runtime error: index out of range [3] with length 3");
  EXPECT_THAT(Functions(s), ElementsAre("github.com/ollama/ollama/llm.(*gguf).Decode"));
}

TEST(LogStructureTest, NativeErrorLines) {
  struct Case {
    const char* line;
    const char* type;
  };
  for (const Case& c : {
           Case{"llama_model_load: error loading model: unknown model architecture: 'qwen3'", "error"},
           Case{"error: unsupported target: 'gfx928'", "error"},
           Case{"LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.permlanex16", "LLVM ERROR"},
           Case{"ggml_cuda_compute_forward: MUL failed", ""},
           Case{"HIP error: hipErrorNoBinaryForGpu at /x/ggml-cuda.cu:100", "HIP error"},
           Case{"CUDA error: out of memory", "CUDA error"},
       }) {
    LogStructure s = ReadLogStructure(Normalize({"INFO starting", c.line}));
    if (std::string(c.type).empty()) {
      EXPECT_EQ(s.terminal_error, -1) << c.line;
      continue;
    }
    ASSERT_GE(s.terminal_error, 0) << c.line;
    EXPECT_EQ(Terminal(s).origin, ErrorOrigin::kNativeError) << c.line;
    EXPECT_EQ(Terminal(s).type, c.type) << c.line;
    EXPECT_EQ(Terminal(s).first_line, 1) << c.line;
  }
}

// Error formats of the engines that are not Python: Rust panics (TGI's
// launcher and router; the old form quotes the message, Rust 1.73+ prints it
// below the location), libc++'s terminate (macOS builds of llama.cpp and
// Ollama's runner), a terminate without an exception, Go's runtime fatal
// error, glog's fatal lines and CHECKs, and llama.cpp's server tags.
TEST(LogStructureTest, RustPanicOldAndNewForm) {
  LogStructure old_form = ReadLogStructure(Normalize({
      "2024-01-01T00:00:00.000000Z  INFO text_generation_router: Starting",
      "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 98, "
      "kind: AddrInUse, message: \"Address already in use\" }', router/src/server.rs:1171:10",
  }));
  ASSERT_GE(old_form.terminal_error, 0);
  EXPECT_EQ(Terminal(old_form).origin, ErrorOrigin::kNativeError);
  EXPECT_EQ(Terminal(old_form).type, "panicked");
  EXPECT_EQ(Terminal(old_form).message,
            "called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: AddrInUse, "
            "message: \"Address already in use\" }");
  LogStructure new_form = ReadLogStructure(Normalize({
      "thread 'main' panicked at launcher/src/main.rs:1700:25:",
      "called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound }",
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
  }));
  ASSERT_GE(new_form.terminal_error, 0);
  EXPECT_EQ(Terminal(new_form).type, "panicked");
  EXPECT_THAT(Terminal(new_form).message,
              ::testing::StartsWith("called `Result::unwrap()` on an `Err` value: Os { code: 2"));
}

TEST(LogStructureTest, CppTerminateOfLibcxxAndWithoutException) {
  LogStructure libcxx = ReadLogStructure(Normalize({
      "llama_model_load: loading model",
      "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
      "unknown model architecture: 'gemma3'",
  }));
  ASSERT_GE(libcxx.terminal_error, 0);
  EXPECT_EQ(Terminal(libcxx).origin, ErrorOrigin::kCppException);
  EXPECT_EQ(Terminal(libcxx).type, "std::runtime_error");
  EXPECT_EQ(Terminal(libcxx).message, "unknown model architecture: 'gemma3'");
  LogStructure older = ReadLogStructure(Normalize({
      "libc++abi.dylib: terminating with uncaught exception of type std::out_of_range: map::at:  key not found",
  }));
  EXPECT_EQ(Terminal(older).type, "std::out_of_range");
  EXPECT_EQ(Terminal(older).message, "map::at:  key not found");
  LogStructure bare = ReadLogStructure(Normalize({"terminate called without an active exception"}));
  EXPECT_EQ(Terminal(bare).origin, ErrorOrigin::kCppException);
  EXPECT_EQ(Terminal(bare).type, "terminate");
}

TEST(LogStructureTest, GoFatalGlogFatalAndCheckFailed) {
  LogStructure go = ReadLogStructure(Normalize({"fatal error: runtime: out of memory"}));
  EXPECT_EQ(Terminal(go).type, "fatal error");
  EXPECT_EQ(Terminal(go).message, "runtime: out of memory");
  // A compiler's "<file>:<l>:<c>: fatal error:" is not Go's runtime.
  LogStructure cc = ReadLogStructure(
      Normalize({"/tmp/x/main.c:5:10: fatal error: Python.h: No such file or directory"}));
  EXPECT_NE(Terminal(cc).type, "fatal error");
  LogStructure glog = ReadLogStructure(Normalize({
      "I1204 12:34:56.000001  77 server.cc:10] starting",
      "F1204 12:34:56.789012  77 allocator.cc:88] cudaMalloc failed: out of memory",
      "*** Check failure stack trace: ***",
  }));
  ASSERT_GE(glog.terminal_error, 0);
  EXPECT_EQ(Terminal(glog).type, "fatal");
  EXPECT_EQ(Terminal(glog).message, "cudaMalloc failed: out of memory");
  EXPECT_EQ(Terminal(glog).first_line, 1);
  LogStructure check = ReadLogStructure(Normalize({
      "F1204 12:34:56.789012  77 llama.cc:9] Check failed: head_num % tp == 0 (28 vs. 0)",
  }));
  EXPECT_EQ(Terminal(check).type, "Check failed");
  EXPECT_EQ(Terminal(check).message, "head_num % tp == 0 (28 vs. 0)");
}

TEST(LogStructureTest, LlamaServerTaggedErrorLines) {
  LogStructure s = ReadLogStructure(Normalize({
      "srv    load_model: loading model '/models/x.gguf'",
      "srv    load_model: failed to load model, '/models/x.gguf'",
      "main: exiting due to model loading error",
  }));
  ASSERT_GE(s.terminal_error, 0);
  EXPECT_EQ(Terminal(s).type, "error");
  EXPECT_EQ(Terminal(s).first_line, 1);
  EXPECT_EQ(Terminal(s).message, "failed to load model, '/models/x.gguf'");
}

TEST(LogStructureTest, WarningsAreNotRaisedErrors) {
  LogStructure s = ReadLogStructure(Normalize({
      "/x/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.",
      "UserWarning: TypedStorage is deprecated",
  }));
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.terminal_error, -1);
  EXPECT_EQ(s.terminal_traceback, -1);
}

TEST(LogStructureTest, FrameWrappedAfterItsFileNameIsOneFrame) {
  // vllm-20226: a terminal wrapped the frame after the file name.
  LogStructure s = ReadLogStructure(Normalize({
      "Traceback (most recent call last):",
      "  File \"/venv/vllm/distributed/parallel_state.py\"",
      ", line 1121, in ensure_model_parallel_initialized",
      "    initialize_model_parallel(tensor_model_parallel_size,",
      "  File \"/venv/vllm/distributed/parallel_state.py\"",
      ", line 1063, in initialize_model_parallel",
  }));
  ASSERT_EQ(s.tracebacks.size(), 1u);
  EXPECT_THAT(Functions(s), ElementsAre("ensure_model_parallel_initialized", "initialize_model_parallel"));
  EXPECT_EQ(s.tracebacks[0].frames[1].file, "/venv/vllm/distributed/parallel_state.py");
  EXPECT_TRUE(s.ErrorLineMissing());
}

TEST(LogStructureTest, IPythonFramesAreFrames) {
  TracebackFrame frame;
  ASSERT_TRUE(ParsePythonFrame(
      "File ~/anaconda3/lib/python3.11/site-packages/vllm/entrypoints/llm.py:118, in "
      "LLM.__init__(self, model)",
      &frame));
  EXPECT_EQ(frame.file, "~/anaconda3/lib/python3.11/site-packages/vllm/entrypoints/llm.py");
  EXPECT_EQ(frame.function, "LLM.__init__");
  ASSERT_TRUE(ParsePythonFrame("File \"<string>\", line 1", &frame));
  EXPECT_EQ(frame.function, "");
  EXPECT_FALSE(ParsePythonFrame("File not found: x", &frame));
  EXPECT_FALSE(ParsePythonFrame("File \"x.py\", line abc, in f", &frame));
}

TEST(LogStructureTest, ExceptionHeaders) {
  std::string type, message;
  EXPECT_TRUE(ParsePythonExceptionHeader("torch._dynamo.exc.BackendCompilerFailed: backend='inductor'",
                                         /*strict=*/false, &type, &message));
  EXPECT_EQ(type, "torch._dynamo.exc.BackendCompilerFailed");
  EXPECT_EQ(message, "backend='inductor'");
  // Strict (outside a traceback): the name must end like an exception class.
  EXPECT_FALSE(ParsePythonExceptionHeader("torch._dynamo.exc.BackendCompilerFailed: x",
                                          /*strict=*/true, &type, &message));
  EXPECT_TRUE(ParsePythonExceptionHeader("KeyError: 'gfx1151'", /*strict=*/true, &type, &message));
  EXPECT_FALSE(ParsePythonExceptionHeader("self.model = get_model(", /*strict=*/false, &type,
                                          &message));
  EXPECT_FALSE(ParsePythonExceptionHeader("Error: boom", /*strict=*/false, &type, &message));
}

// Hostile input: long lines and long logs are read in bounded time and
// copies; nothing is quadratic in a line's length.
TEST(LogStructureTest, HugeLinesAreBounded) {
  std::string huge(10 << 20, 'A');
  std::vector<NormalizedLine> lines = Normalize({
      "Traceback (most recent call last):",
      "  File \"/x/" + huge + "\", line 1, in f",
      "ValueError: " + huge,
      huge,
  });
  LogStructure s = ReadLogStructure(lines);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_LE(s.errors[0].message.size(), kMaxMessageBytes);
  EXPECT_LE(s.tracebacks[0].frames[0].file.size(), kMaxMessageBytes);

  std::vector<NormalizedLine> many;
  for (int i = 0; i < 20000; ++i) {
    many.push_back(NormalizeLogLine("  File \"/x.py\", line 1, in f" + std::to_string(i)));
  }
  LogStructure deep = ReadLogStructure(many);
  ASSERT_EQ(deep.tracebacks.size(), 1u);
  EXPECT_EQ(deep.tracebacks[0].frames.size(), kMaxFramesKept);
  EXPECT_EQ(deep.tracebacks[0].frames.back().function, "f19999");
}

}  // namespace
}  // namespace dcu::modelkit
