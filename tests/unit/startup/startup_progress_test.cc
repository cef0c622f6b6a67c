#include "modelkit/startup_progress.h"

#include <string>

#include "gtest/gtest.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::StartupProgress;

// Lines as vLLM 0.9-0.11 V1 prints them on ROCm (the fake engine's format,
// tests/fakes/fake_vllm), with the EngineCore prefix and ANSI colour.
constexpr char kV1[] =
    "INFO 07-10 12:00:00 [__init__.py:244] Automatically detected platform rocm.\n"
    "INFO 07-10 12:00:00 [api_server.py:1395] vLLM API server version 0.9.2\n"
    "\x1b[1;36m(EngineCore_DP0 pid=12)\x1b[0;0m INFO 07-10 12:00:02 [parallel_state.py:1076] "
    "world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:1 backend=nccl\n";

TEST(StartupProgressTest, FollowsTheV1OrderWithPrefixesAndColour) {
  std::string log = kV1;
  StartupProgress p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_STARTING);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
  EXPECT_EQ(p.platform(), "rocm");
  EXPECT_EQ(p.engine_version(), "0.9.2");

  log += "(EngineCore_DP0 pid=12) INFO 07-10 12:00:03 [gpu_model_runner.py:1770] Starting to load model /m...\n";
  // tqdm redraws with '\r' off a terminal; an interleaved DEBUG line.
  log += "(EngineCore_DP0 pid=12) \rLoading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]"
         "\rLoading safetensors checkpoint shards:  41% Completed | 7/17 [00:36<00:51,  5.10s/it]\n"
         "DEBUG 07-10 12:00:40 [utils.py:1] Waiting for 1 local, 0 remote core engine proc(s) to start.\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED);
  EXPECT_EQ(p.shards_loaded(), 7);
  EXPECT_EQ(p.shards_total(), 17);
  EXPECT_DOUBLE_EQ(p.seconds_per_shard(), 5.10);
  EXPECT_DOUBLE_EQ(p.shards_eta_s(), 51);
  // The waiting notice is not a line of progress.
  EXPECT_NE(p.last_line().find("7/17"), std::string::npos);

  log += "(EngineCore_DP0 pid=12) INFO 07-10 12:01:10 [gpu_model_runner.py:1801] Model loading took 15.2661 GiB and 70.20 seconds\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_WEIGHTS_LOADED);
  EXPECT_DOUBLE_EQ(p.weights_gib(), 15.2661);
  EXPECT_DOUBLE_EQ(p.weights_load_s(), 70.20);

  log += "(EngineCore_DP0 pid=12) INFO 07-10 12:01:20 [backends.py:462] Dynamo bytecode transform time: 8.1 s\n"
         "(EngineCore_DP0 pid=12) INFO 07-10 12:02:20 [monitor.py:34] torch.compile takes 61.5 s in total\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_COMPILING);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE);
  EXPECT_DOUBLE_EQ(p.torch_compile_s(), 61.5);

  log += "(EngineCore_DP0 pid=12) INFO 07-10 12:02:30 [gpu_worker.py:227] Available KV cache memory: 23.81 GiB\n"
         "(EngineCore_DP0 pid=12) INFO 07-10 12:02:30 [kv_cache_utils.py:716] GPU KV cache size: 646,000 tokens\n"
         "(EngineCore_DP0 pid=12) INFO 07-10 12:02:30 [kv_cache_utils.py:720] Maximum concurrency for 8,192 tokens per request: 78.86x\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_KV_CACHE_SIZED);
  EXPECT_DOUBLE_EQ(p.kv_cache_gib(), 23.81);
  EXPECT_EQ(p.kv_tokens(), 646000);
  EXPECT_DOUBLE_EQ(p.max_concurrency(), 78.86);
  EXPECT_EQ(p.max_concurrency_tokens(), 8192);

  log += "\rCapturing CUDA graph shapes:  49%|████▉     | 33/67 [00:10<00:10,  3.20it/s]\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_COMPILING);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE);
  EXPECT_EQ(p.graphs_captured(), 33);
  EXPECT_EQ(p.graphs_total(), 67);
  EXPECT_EQ(DescribeStartupPlace(p), "compiling (graph capture 33/67)");

  log += "(EngineCore_DP0 pid=12) INFO 07-10 12:02:50 [core.py:172] init engine (profile, create kv cache, warmup model) took 80.00 seconds\n"
         "INFO 07-10 12:02:51 [api_server.py:1818] Starting vLLM API server 0 on http://0.0.0.0:8000\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_KV_CACHE_SIZED);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP);
  EXPECT_DOUBLE_EQ(p.init_engine_s(), 80);

  log += "INFO:     Started server process [12]\nINFO:     Waiting for application startup.\n"
         "INFO:     Application startup complete.\n";
  p = ParseStartupLog(log);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_READY);
  // Figures stay once ready.
  EXPECT_EQ(p.kv_tokens(), 646000);
  // Access log lines after READY change nothing.
  log += "INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n";
  EXPECT_EQ(ParseStartupLog(log).phase(), dcufleet::v1::STARTUP_READY);
}

TEST(StartupProgressTest, AFollowerOfAGrowingLogEndsWhereOneReadEnds) {
  std::string log = std::string(kV1) +
                    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  2.00it/s]\n"
                    "INFO 07-10 12:01:10 [gpu_model_runner.py:1801] Model loading took 3.5 GiB and 2.10 seconds\n";
  StartupProgress whole = ParseStartupLog(log, {.keep_evidence = false});
  StartupProgress live;
  StartupLogFollower follower;
  // The agent reads the last 64 KB on every poll: all of a short log, as it
  // grows, cut anywhere (also inside a line), some polls seeing no growth.
  for (size_t end : {size_t{40}, log.size() / 2, log.size() / 2, log.size() - 30, log.size(), log.size()}) {
    follower.Advance(log.substr(0, end), /*starts_at_line=*/true, &live);
  }
  EXPECT_FALSE(StartupAdvanced(whole, live));
  EXPECT_EQ(live.phase(), dcufleet::v1::STARTUP_WEIGHTS_LOADED);
}

TEST(StartupProgressTest, AFollowerShowsABarsLatestRedrawBeforeItEnds) {
  // tqdm in a file: each redraw starts with '\r' and the latest has no end
  // until the next one. The follower shows it at once, not one shard late.
  std::string log = std::string(kV1) +
                    "\rLoading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]"
                    "\rLoading safetensors checkpoint shards:   6% Completed | 1/17 [00:03<00:45,  3.00s/it]";
  StartupLogFollower follower;
  StartupProgress p;
  follower.Advance(log, /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.shards_loaded(), 1);
  EXPECT_EQ(p.shards_total(), 17);
  log += "\rLoading safetensors checkpoint shards:  35% Completed | 6/17 [00:18<00:33,  3.00s/it]";
  follower.Advance(log, /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.shards_loaded(), 6);
  // The same bar, polled again before it moves, and then ended.
  follower.Advance(log, /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.shards_loaded(), 6);
  log += "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:51<00:00,  3.00s/it]\n";
  follower.Advance(log, /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.shards_loaded(), 17);
  EXPECT_FALSE(StartupAdvanced(ParseStartupLog(log, {.keep_evidence = false}), p));
}

// What a runtime with positions gives (ReadLogSince): the complete lines
// written since the last read, and the line still being written.
TEST(StartupProgressTest, AFollowerFromPositionsEndsWhereOneReadEnds) {
  std::string filler;
  for (int i = 0; filler.size() < 5000; ++i) filler += "(VllmWorker pid=99) DEBUG 07-10 12:00:04 the same line\n";
  // A block that repeats to the byte (the mark a tail follower looks for
  // occurs twice), then a bar redrawn in place.
  const std::string log = std::string(kV1) + filler + filler +
                          "\rLoading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]"
                          "\rLoading safetensors checkpoint shards:   6% Completed | 1/17 [00:03<00:45,  3.00s/it]"
                          "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:51<00:00,  3.00s/it]\n"
                          "INFO 07-10 12:01:10 [gpu_model_runner.py:1801] Model loading took 3.5 GiB and 2.10 seconds\n";
  const StartupProgress whole = ParseStartupLog(log, {.keep_evidence = false});
  StartupLogFollower follower;
  StartupProgress live;
  size_t position = 0;  // just after the last complete line read
  // Just after the bar's second redraw, before the third.
  const size_t second_redraw = log.find("3.00s/it]") + 9;
  // Polls as the log grows, cut anywhere, some with no growth.
  for (size_t written : {size_t{40}, log.size() / 3, log.size() / 3, second_redraw, log.size() - 30,
                         log.size(), log.size()}) {
    const std::string so_far = log.substr(0, written);
    const size_t complete = so_far.rfind('\n') == std::string::npos ? 0 : so_far.rfind('\n') + 1;
    follower.AdvanceFrom(so_far.substr(position, complete - position), so_far.substr(complete), &live);
    position = complete;
    if (written == second_redraw) EXPECT_EQ(live.shards_loaded(), 1) << "the bar's latest redraw, at once";
  }
  EXPECT_FALSE(StartupAdvanced(whole, live));
  EXPECT_EQ(live.phase(), dcufleet::v1::STARTUP_WEIGHTS_LOADED);
  EXPECT_EQ(live.shards_loaded(), 17);
}

TEST(StartupProgressTest, AFollowerAppliesEachLineOnceFromOverlappingTails) {
  // A worker process that starts late prints the platform line again (vLLM's
  // compile workers import vllm too). Read once, that line cannot move the
  // phase back; re-read on top of FAILED it moved the phase out of FAILED,
  // and the failure that follows was then "failed while starting".
  const std::string head =
      "INFO 07-10 12:00:00 [__init__.py:244] Automatically detected platform rocm.\n"
      "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]\n";
  std::string filler;
  for (int i = 0; filler.size() < 8192; ++i) filler += "(VllmWorker pid=99) DEBUG 07-10 12:00:04 nothing " + std::to_string(i) + "\n";
  const std::string late = "(VllmWorker pid=99) INFO 07-10 12:00:05 [__init__.py:244] Automatically detected platform rocm.\n";
  const std::string oom = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n";
  const std::string log = head + filler + late + oom;
  const StartupProgress whole = ParseStartupLog(log, {.keep_evidence = false});
  ASSERT_EQ(whole.phase(), dcufleet::v1::STARTUP_FAILED);
  ASSERT_EQ(whole.failed_in(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);

  StartupLogFollower follower;
  StartupProgress p;
  // A poll while the late line is being written: read as far as it goes
  // (nothing yet), and whole on the next poll.
  follower.Advance(head + filler + late.substr(0, 30), /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  follower.Advance(log, /*starts_at_line=*/true, &p);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_FAILED);
  EXPECT_EQ(p.failed_in(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  // Later polls read the last 6,000 bytes (the log is longer than a tail):
  // they hold the late line again.
  const std::string tail = log.substr(log.size() - 6000);
  for (int poll = 0; poll < 3; ++poll) follower.Advance(tail, /*starts_at_line=*/false, &p);
  EXPECT_FALSE(StartupAdvanced(whole, p));
  EXPECT_EQ(p.failed_in(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  // What re-reading that tail whole did, and why the agent follows instead.
  StartupProgress reread = whole;
  AdvanceStartupProgress(tail, {.starts_at_line = false, .keep_evidence = false}, &reread);
  EXPECT_EQ(reread.failed_in(), dcufleet::v1::STARTUP_STARTING);
}

TEST(StartupProgressTest, ACountNoEngineCouldPrintIsNotAFigure) {
  // 40 digits: a double far past int64 (converting it was undefined).
  const std::string huge(40, '9');
  StartupProgress p = ParseStartupLog("[2026-09-12 00:22:48 TP1] KV Cache is allocated. #tokens: " + huge +
                                      ", K size: 3.46 GB, V size: 3.46 GB\n"
                                      "INFO 07-10 12:01:20 [kv_cache_utils.py:716] GPU KV cache size: " + huge +
                                      " tokens\n# GPU blocks: " + huge + ", # CPU blocks: 2048\n");
  EXPECT_EQ(p.kv_tokens(), 0);
  EXPECT_EQ(p.gpu_blocks(), 0);
  // The line's other figures are still read.
  EXPECT_DOUBLE_EQ(p.kv_cache_gib(), 6.92);
  p = ParseStartupLog("INFO 07-10 12:01:20 [kv_cache_utils.py:716] GPU KV cache size: 646,000 tokens\n");
  EXPECT_EQ(p.kv_tokens(), 646000);
}

TEST(StartupProgressTest, AnExcerptStartingMidWayProvesNoPhaseItDoesNotShow) {
  // The HTTP server's early lines and NCCL chatter prove nothing by themselves.
  StartupProgress p = ParseStartupLog(
      "INFO:     Started server process [1]\nhost:1:1 [0] NCCL INFO Channel 00/02 : 0 1\n");
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_PHASE_UNSPECIFIED);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED);
  // A tail cut mid-line: its first partial line is not read.
  p = ParseStartupLog("ication startup complete.\nsomething\n", {.starts_at_line = false});
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_PHASE_UNSPECIFIED);
}

TEST(StartupProgressTest, FailureKeepsThePhaseItFailedIn) {
  StartupProgress p = ParseStartupLog(
      "Loading pt checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]\n"
      "Traceback (most recent call last):\n"
      "  File \"x.py\", line 1, in <module>\n"
      "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n"
      "/usr/lib/python3.10/warnings.py:1: UserWarning: resource_tracker: leaked semaphore\n");
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_FAILED);
  EXPECT_EQ(p.failed_in(), dcufleet::v1::STARTUP_LOADING_WEIGHTS);
  EXPECT_EQ(p.shards_loaded(), 1);
  EXPECT_NE(p.phase_line().find("OutOfMemoryError"), std::string::npos);
}

TEST(StartupProgressTest, SglangPhases) {
  StartupProgress p = ParseStartupLog(
      "[2025-06-17 03:51:51] server_args=ServerArgs(model_path='q', tp_size=1)\n"
      "[2025-06-17 03:51:51 TP0] Init torch distributed begin.\n");
  EXPECT_EQ(p.engine(), "sglang");
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
  p = ParseStartupLog(
      "[2025-06-17 03:51:58 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9 GB\n"
      "[2025-06-17 03:51:58 TP0] Capturing batches (bs=160 avail_mem=9 GB):  48%|████▊     | 11/23 [00:03<00:03,  3.5it/s]\n");
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE);
  EXPECT_EQ(p.graphs_captured(), 11);
  EXPECT_EQ(p.graphs_total(), 23);
  p = ParseStartupLog("[2025-06-17 03:52:10] Capture cuda graph end. Time elapsed: 5.12 s\n"
                      "[2025-06-17 03:52:11] The server is fired up and ready to roll!\n");
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_READY);
  EXPECT_DOUBLE_EQ(p.graph_capture_s(), 5.12);
}

TEST(StartupProgressTest, TritonCacheFilesAreProgressBeyondTheBaseline) {
  StartupProgress p = ParseStartupLog(
      "INFO 07-10 12:01:10 [gpu_model_runner.py:1801] Model loading took 3.5 GiB and 2.10 seconds\n");
  EXPECT_FALSE(ApplyTritonCacheCount(40, &p));  // a warm cache: the baseline
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_WEIGHTS_LOADED);
  EXPECT_FALSE(ApplyTritonCacheCount(40, &p));
  EXPECT_TRUE(ApplyTritonCacheCount(43, &p));
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_COMPILING);
  EXPECT_EQ(p.activity(), dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE);
  EXPECT_EQ(DescribeStartupPlace(p), "compiling (Triton kernels, 3 new cache files)");
  EXPECT_FALSE(ApplyTritonCacheCount(43, &p));
}

TEST(StartupProgressTest, GarbageHugeAndBinaryInputNeverCrash) {
  std::string huge(20 << 20, 'x');
  huge += " checkpoint shards: | 99999999999999999999999/1 [";
  StartupProgress p = ParseStartupLog(huge);
  EXPECT_EQ(p.shards_total(), 0);
  std::string binary;
  for (int i = 0; i < 1 << 16; ++i) binary.push_back(static_cast<char>((i * 7919) & 0xff));
  p = ParseStartupLog(binary);
  EXPECT_EQ(p.phase(), dcufleet::v1::STARTUP_PHASE_UNSPECIFIED);
  for (const char* line :
       {"Loading safetensors checkpoint shards: | x/y", "Loading safetensors checkpoint shards: | 9/4 [",
        "Loading safetensors checkpoint shards: | 1/2 [99:99:99:99<,", "Model loading took GiB and",
        "Maximum concurrency for tokens per request: x", "# GPU blocks: ", "GPU KV cache size: ,,,",
        "torch.compile takes 1e400 s in total", "Capturing CUDA graph shapes: |||| 5/"}) {
    StartupProgress q = ParseStartupLog(line);
    EXPECT_GE(q.shards_total(), 0) << line;
    EXPECT_LE(q.shards_loaded(), q.shards_total()) << line;
  }
  // Evidence lines are cut to 300 bytes.
  p = ParseStartupLog("Automatically detected platform " + std::string(5000, 'r') + ".\n");
  EXPECT_LE(p.phase_line().size(), 300u);
  EXPECT_LE(p.platform().size(), 300u);
}

}  // namespace
}  // namespace dcu::modelkit
