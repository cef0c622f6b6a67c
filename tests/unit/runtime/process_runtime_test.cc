// ProcessRuntime with real processes: the fake vLLM server from a fake conda
// env, real HTTP, real signals, /proc scanned for the instance marker.
#include "agent/runtime/process_runtime.h"

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include <sstream>
#include "absl/time/clock.h"
#include "agent/runtime/log_fetch.h"
#include "common/redraw.h"
#include "agent/runtime/proc_util.h"
#include "common/http_client.h"
#include "common/proc_stat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_vllm/fake_env.h"

namespace dcu::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

bool WaitUntil(const std::function<bool()>& pred, absl::Duration limit = absl::Seconds(10)) {
  absl::Time deadline = absl::Now() + limit;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

std::vector<int> Marked(const std::string& id) {
  return FindPidsWithEnv("/proc", kInstanceMarkerEnv, id);
}

class ProcessRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dcu::testing::MakeTempDir("dcu-process-runtime");
    ASSERT_FALSE(root_.empty());
    model_ = root_ + "/models/Qwen3-32B";
    ASSERT_TRUE(dcu::testing::MakeFakeModelDir(model_, dcu::testing::Qwen3_32bConfig(), 3).ok());
    runtime_ = NewRuntime();
  }
  void TearDown() override {
    // Whatever a failed test left running goes.
    for (const auto& id : started_) {
      if (runtime_) runtime_->Stop(id, absl::Milliseconds(100)).IgnoreError();
      for (int pid : Marked(id)) kill(pid, SIGKILL);
    }
    dcu::testing::RemoveTree(root_);
  }

  std::unique_ptr<ProcessRuntime> NewRuntime() {
    ProcessRuntimeOptions o;
    o.state_dir = root_ + "/state";
    auto rt = ProcessRuntime::Create(o);
    EXPECT_TRUE(rt.ok()) << rt.status();
    return rt.ok() ? std::move(*rt) : nullptr;
  }

  std::string Env(const std::string& scenario) {
    std::string env = root_ + "/envs/vllm-" + std::to_string(env_count_++);
    dcu::testing::FakeEnvOptions o;
    o.scenario_json = scenario;
    auto made = dcu::testing::MakeFakeEnv(env, o);
    EXPECT_TRUE(made.ok()) << made;
    return env;
  }

  dcufleet::v1::InstanceSpec Spec(const std::string& id, const std::string& env) {
    dcufleet::v1::InstanceSpec s;
    s.set_instance_id(id);
    s.set_deployment("qwen3-32b");
    s.set_model("qwen3-32b");
    s.set_model_path(model_);
    s.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    s.set_runtime_location(env);
    s.set_port(dcu::testing::PickFreePort());
    s.set_served_model_name("qwen3-32b");
    s.add_device_indices(0);
    s.add_device_indices(1);
    for (const char* a : {"python", "-m", "vllm.entrypoints.openai.api_server", "--model"}) {
      s.add_argv(a);
    }
    s.add_argv(model_);
    s.add_argv("--served-model-name");
    s.add_argv("qwen3-32b");
    s.add_argv("--host");
    s.add_argv("127.0.0.1");
    s.add_argv("--port");
    s.add_argv(absl::StrCat(s.port()));
    s.add_argv("--tensor-parallel-size");
    s.add_argv("2");
    started_.push_back(id);
    return s;
  }

  bool Healthy(int port) {
    common::SocketHttpClient http;
    common::HttpRequest req;
    req.port = port;
    req.path = "/health";
    req.timeout = absl::Seconds(1);
    auto r = http.Send(req);
    return r.ok() && r->status == 200;
  }

  std::string root_;
  std::string model_;
  int env_count_ = 0;
  std::vector<std::string> started_;
  std::unique_ptr<ProcessRuntime> runtime_;
};

TEST_F(ProcessRuntimeTest, StartsServesAndStopLeavesNoMarkedProcess) {
  auto spec = Spec("inst-serve", Env(""));
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok()) << ri.status();
  EXPECT_TRUE(ri->running);
  EXPECT_GT(ri->pid, 0);
  ASSERT_TRUE(WaitUntil([&] { return Healthy(spec.port()); })) << *runtime_->ReadLogTail("inst-serve", 4096);

  // A completion through the instance's port.
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.port = spec.port();
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"model": "qwen3-32b", "prompt": "hi", "max_tokens": 1})";
  auto resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 200);

  // Own session and process group.
  auto st = common::ReadProcStat("/proc", ri->pid);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->sid, ri->pid);
  EXPECT_EQ(st->pgid, ri->pid);
  EXPECT_THAT(Marked("inst-serve"), ::testing::Contains(ri->pid));

  ASSERT_TRUE(runtime_->Stop("inst-serve", absl::Seconds(5)).ok());
  EXPECT_TRUE(Marked("inst-serve").empty());
  auto after = runtime_->Inspect("inst-serve");
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->running);
  EXPECT_TRUE(after->stop_requested);
  // vLLM exits 0 on SIGTERM; the monitor recorded it.
  EXPECT_TRUE(after->exit_known);
  EXPECT_EQ(after->exit_code, 0);
  auto log = runtime_->ReadLogTail("inst-serve", 1 << 20);
  ASSERT_TRUE(log.ok());
  EXPECT_THAT(*log, HasSubstr("Loading safetensors checkpoint shards: 100% Completed | 3/3"));
  EXPECT_THAT(*log, HasSubstr("INFO:     Shutting down"));
  // Stop is idempotent.
  EXPECT_TRUE(runtime_->Stop("inst-serve", absl::Seconds(1)).ok());
  EXPECT_TRUE(runtime_->Remove("inst-serve").ok());
  EXPECT_EQ(runtime_->Inspect("inst-serve").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ProcessRuntimeTest, CleanEnvironmentWithRecipeApplied) {
  setenv("DCU_AGENT_ONLY_SECRET", "agent-env-must-not-leak", 1);
  std::string env = Env("");
  // A DTK-like env.sh whose file name would run code if it were ever pasted
  // into shell text.
  std::string dtk = root_ + "/opt dtk";
  std::filesystem::create_directories(dtk);
  std::string script = dtk + "/env $(touch dcufleet-INJECTED).sh";
  {
    std::ofstream(script) << "export ROCM_PATH=/opt/dtk\n"
                             "DTK_FROM_SCRIPT=yes\n"  // set -a exports it
                             "export LD_LIBRARY_PATH=/opt/dtk/lib:/opt/hyhal/lib:$LD_LIBRARY_PATH\n"
                             "echo noise; echo more noise >&2\n";
  }
  auto spec = Spec("inst-env", env);
  spec.add_source_scripts(script);
  (*spec.mutable_env())["VLLM_ROCM_USE_SKINNY_GEMM"] = "0";
  (*spec.mutable_env())["DCUFLEET_INSTANCE"] = "spoofed";
  spec.add_ld_library_path_prefix("/opt/dtk/.hyhal/rocm_smi/lib");
  spec.add_ld_library_path_prefix("/opt/dtk/lib");
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok()) << ri.status();
  auto penv = ReadProcEnviron("/proc", ri->pid);
  ASSERT_TRUE(penv.ok()) << penv.status();
  EXPECT_EQ(penv->count("DCU_AGENT_ONLY_SECRET"), 0u);
  EXPECT_EQ(penv->at("ROCM_PATH"), "/opt/dtk");
  EXPECT_EQ(penv->at("DTK_FROM_SCRIPT"), "yes");
  EXPECT_EQ(penv->at("VLLM_ROCM_USE_SKINNY_GEMM"), "0");
  EXPECT_EQ(penv->at("LD_LIBRARY_PATH"), "/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib:/opt/hyhal/lib");
  EXPECT_EQ(penv->at("HIP_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(penv->at("DCUFLEET_PORT"), absl::StrCat(spec.port()));
  EXPECT_EQ(penv->at("DCUFLEET_INSTANCE"), "inst-env");
  EXPECT_TRUE(absl::StartsWith(penv->at("PATH"), env + "/bin:"));
  EXPECT_FALSE(std::filesystem::exists("dcufleet-INJECTED"));
  EXPECT_FALSE(std::filesystem::exists(dtk + "/dcufleet-INJECTED"));
  // argv[0] resolved in the env, no shell in between.
  std::ifstream cmdline(absl::StrCat("/proc/", ri->pid, "/cmdline"));
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  EXPECT_EQ(argv0, env + "/bin/python");
  ASSERT_TRUE(runtime_->Stop("inst-env", absl::Seconds(5)).ok());
  unsetenv("DCU_AGENT_ONLY_SECRET");
}

// A Python engine's print() reaches the log when it is made, not when 8 KiB
// of them have (Python block-buffers stdout to a file): the start-up
// follower reads it, and a hang or a kill does not swallow the last lines.
// spec.env can still ask for buffering. (The printed texts are built at run
// time: the log's launch header quotes the argv.)
TEST_F(ProcessRuntimeTest, APythonEnginesPrintReachesTheLogWhenItIsMade) {
  auto spec = Spec("inst-print", "");
  spec.clear_argv();
  for (const char* a : {"/usr/bin/python3", "-c", "import time; print('weights: shard %d/2' % 1); time.sleep(30)"}) {
    spec.add_argv(a);
  }
  ASSERT_TRUE(runtime_->Start(spec).ok());
  auto buffered = Spec("inst-buffered", "");
  buffered.clear_argv();
  for (const char* a : {"/usr/bin/python3", "-c", "import time; print('held in the %s' % 'buffer'); time.sleep(30)"}) {
    buffered.add_argv(a);
  }
  (*buffered.mutable_env())["PYTHONUNBUFFERED"] = "";
  ASSERT_TRUE(runtime_->Start(buffered).ok());
  std::string log;
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (absl::Now() < until && !absl::StrContains(log, "weights: shard 1/2")) {
    absl::SleepFor(absl::Milliseconds(100));
    log = runtime_->ReadLogTail("inst-print", 1 << 16).value_or("");
  }
  EXPECT_THAT(log, HasSubstr("weights: shard 1/2"));
  EXPECT_THAT(runtime_->ReadLogTail("inst-buffered", 1 << 16).value_or(""), Not(HasSubstr("held in the buffer")));
  runtime_->Stop("inst-print", absl::Seconds(1)).IgnoreError();
  runtime_->Stop("inst-buffered", absl::Seconds(1)).IgnoreError();
}

TEST_F(ProcessRuntimeTest, CrashRecordsExitCodeAndLogHasTheRealMessage) {
  auto spec = Spec("inst-crash", Env(R"({"crash": {"after_seconds": 0.2, "exit_code": 3}})"));
  ASSERT_TRUE(runtime_->Start(spec).ok());
  absl::StatusOr<RuntimeInstance> ri;
  ASSERT_TRUE(WaitUntil([&] {
    ri = runtime_->Inspect("inst-crash");
    return ri.ok() && !ri->running && ri->exit_known;
  }));
  EXPECT_EQ(ri->exit_code, 3);
  EXPECT_FALSE(ri->stop_requested);
  auto log = runtime_->ReadLogTail("inst-crash", 4096);
  ASSERT_TRUE(log.ok());
  EXPECT_THAT(*log, HasSubstr("RuntimeError: HIP error: invalid device function"));
}

TEST_F(ProcessRuntimeTest, ScenarioFailureThenRemediationServes) {
  std::string env = Env(R"({"failures": [{"kind": "wvsplitk_missing"}]})");
  auto bad = Spec("inst-wv-1", env);
  ASSERT_TRUE(runtime_->Start(bad).ok());
  absl::StatusOr<RuntimeInstance> ri;
  ASSERT_TRUE(WaitUntil([&] {
    ri = runtime_->Inspect("inst-wv-1");
    return ri.ok() && !ri->running && ri->exit_known;
  }));
  EXPECT_EQ(ri->exit_code, 1);
  EXPECT_THAT(*runtime_->ReadLogTail("inst-wv-1", 1 << 16),
              HasSubstr("'_rocm_C' object has no attribute 'wvSplitK'"));

  auto good = Spec("inst-wv-2", env);
  (*good.mutable_env())["VLLM_ROCM_USE_SKINNY_GEMM"] = "0";
  ASSERT_TRUE(runtime_->Start(good).ok());
  EXPECT_TRUE(WaitUntil([&] { return Healthy(good.port()); }));
  ASSERT_TRUE(runtime_->Stop("inst-wv-2", absl::Seconds(5)).ok());
}

TEST_F(ProcessRuntimeTest, ParentKilledThenMarkedChildrenAreSwept) {
  // Workers that left the server's process group, like engine workers that
  // outlive a killed parent and keep holding device memory.
  auto spec = Spec("inst-orphans", Env(R"({"workers": 2, "workers_escape_group": true})"));
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok());
  // Both workers forked and out of the server's group.
  ASSERT_TRUE(WaitUntil([&] {
    int escaped = 0;
    for (int pid : Marked("inst-orphans")) {
      auto st = common::ReadProcStat("/proc", pid);
      if (pid != ri->pid && st.ok() && st->pgid == pid) ++escaped;
    }
    return escaped == 2;
  }));
  ASSERT_EQ(kill(ri->pid, SIGKILL), 0);
  absl::StatusOr<RuntimeInstance> after;
  ASSERT_TRUE(WaitUntil([&] {
    after = runtime_->Inspect("inst-orphans");
    return after.ok() && !after->running && after->exit_known;
  }));
  EXPECT_EQ(after->term_signal, SIGKILL);
  std::vector<int> orphans = Marked("inst-orphans");
  ASSERT_EQ(orphans.size(), 2u) << "the workers must outlive their parent for this test; log: "
                                << *runtime_->ReadLogTail("inst-orphans", 8192);
  for (int pid : orphans) {
    auto st = common::ReadProcStat("/proc", pid);
    ASSERT_TRUE(st.ok());
    EXPECT_NE(st->pgid, ri->pid);
  }
  ASSERT_TRUE(runtime_->Stop("inst-orphans", absl::Seconds(1)).ok());
  EXPECT_TRUE(Marked("inst-orphans").empty());
}

TEST_F(ProcessRuntimeTest, SigtermIgnoredMeansSigkillAfterGrace) {
  auto spec = Spec("inst-stubborn", Env(R"({"ignore_sigterm": true})"));
  ASSERT_TRUE(runtime_->Start(spec).ok());
  ASSERT_TRUE(WaitUntil([&] { return Healthy(spec.port()); }));
  ASSERT_TRUE(runtime_->Stop("inst-stubborn", absl::Milliseconds(300)).ok());
  EXPECT_TRUE(Marked("inst-stubborn").empty());
  auto ri = runtime_->Inspect("inst-stubborn");
  ASSERT_TRUE(ri.ok());
  EXPECT_EQ(ri->term_signal, SIGKILL);
}

TEST_F(ProcessRuntimeTest, RecoverAfterAgentRestartAdoptsWithoutRestartOrDuplicate) {
  auto spec = Spec("inst-adopt", Env(""));
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok());
  ASSERT_TRUE(WaitUntil([&] { return Healthy(spec.port()); }));
  int pid = ri->pid;
  // "Agent restart": the old runtime object goes away without stopping
  // anything; a new one opens the same state directory.
  runtime_.reset();
  runtime_ = NewRuntime();
  auto found = runtime_->Recover();
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].instance_id, "inst-adopt");
  EXPECT_TRUE((*found)[0].running);
  EXPECT_EQ((*found)[0].pid, pid);
  EXPECT_EQ((*found)[0].spec.port(), spec.port());
  EXPECT_TRUE(Healthy(spec.port()));
  EXPECT_EQ(Marked("inst-adopt"), std::vector<int>{pid});
  // Starting it again must not duplicate it.
  EXPECT_EQ(runtime_->Start(spec).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Marked("inst-adopt"), std::vector<int>{pid});
  EXPECT_EQ(runtime_->Remove("inst-adopt").code(), absl::StatusCode::kFailedPrecondition);
  // The adopted instance can be stopped, and its exit status is still known
  // although this runtime object is not the one that launched it.
  ASSERT_TRUE(runtime_->Stop("inst-adopt", absl::Seconds(5)).ok());
  EXPECT_TRUE(Marked("inst-adopt").empty());
  auto after = runtime_->Inspect("inst-adopt");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->exit_known);
  EXPECT_EQ(after->exit_code, 0);
}

// The agent stopped between the fork and writing the state file: the spec
// (written before the fork) and the running server are all there is. The
// restarted agent must adopt that server by its marker, not launch a second
// one (which failed on the port and ended Unschedulable).
TEST_F(ProcessRuntimeTest, StoppedInsideTheStartWindowIsAdoptedByItsMarker) {
  auto spec = Spec("inst-window", Env(""));
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok()) << ri.status();
  ASSERT_TRUE(WaitUntil([&] { return Healthy(spec.port()); }));
  const int pid = ri->pid;
  runtime_.reset();
  // Exactly the crash window's state: no state file.
  std::string state = root_ + "/state/instances/inst-window/state.json";
  ASSERT_TRUE(std::filesystem::remove(state)) << state;
  runtime_ = NewRuntime();
  auto found = runtime_->Recover();
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_TRUE((*found)[0].running);
  EXPECT_EQ((*found)[0].pid, pid);
  EXPECT_EQ((*found)[0].spec.port(), spec.port());
  EXPECT_EQ(runtime_->Start(spec).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Marked("inst-window"), std::vector<int>{pid});
  // Adopted for good: its state was recorded, and it stops like any other
  // (the monitor found as its parent still records the exit status).
  EXPECT_TRUE(std::filesystem::exists(state));
  ASSERT_TRUE(runtime_->Stop("inst-window", absl::Seconds(5)).ok());
  EXPECT_TRUE(Marked("inst-window").empty());
  auto after = runtime_->Inspect("inst-window");
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->running);
  EXPECT_TRUE(after->exit_known);
}

// A spec without a process (a launch that failed before the fork) is no
// instance: nothing to adopt.
TEST_F(ProcessRuntimeTest, SpecWithoutAnyMarkedProcessIsNotAnInstance) {
  auto spec = Spec("inst-ghost", Env(""));
  std::string dir = root_ + "/state/instances/inst-ghost";
  std::filesystem::create_directories(dir);
  std::string bytes;
  spec.SerializeToString(&bytes);
  std::ofstream(dir + "/spec.binpb", std::ios::binary) << bytes;
  EXPECT_EQ(runtime_->Inspect("inst-ghost").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ProcessRuntimeTest, ReusedPidIsNotTakenForTheInstance) {
  auto spec = Spec("inst-reuse", Env(""));
  auto ri = runtime_->Start(spec);
  ASSERT_TRUE(ri.ok());
  ASSERT_TRUE(runtime_->Stop("inst-reuse", absl::Seconds(5)).ok());
  // Point the state at a live process that is not the instance (this test).
  std::string state_path = runtime_->InstanceDir("inst-reuse") + "/state.json";
  std::ifstream in(state_path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto self = common::ReadProcStat("/proc", getpid());
  ASSERT_TRUE(self.ok());
  text = absl::StrReplaceAll(text, {{absl::StrCat("\"pid\": ", ri->pid), absl::StrCat("\"pid\": ", getpid())}});
  std::ofstream(state_path, std::ios::trunc) << text;
  auto again = runtime_->Inspect("inst-reuse");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->running);
}

TEST_F(ProcessRuntimeTest, ErrorsNameWhatIsMissing) {
  auto spec = Spec("inst-missing", root_ + "/no-such-env");
  auto r = runtime_->Start(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("no-such-env"));

  auto env = Env("");
  auto script_spec = Spec("inst-noscript", env);
  script_spec.add_source_scripts("/opt/definitely/not/env.sh");
  r = runtime_->Start(script_spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("/opt/definitely/not/env.sh"));

  auto bad_id = Spec("../escape", env);
  EXPECT_EQ(runtime_->Start(bad_id).status().code(), absl::StatusCode::kInvalidArgument);

  auto no_exe = Spec("inst-noexe", env);
  no_exe.set_argv(0, "python9");
  r = runtime_->Start(no_exe);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("python9"));
  EXPECT_EQ(runtime_->Inspect("never-started").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runtime_->Stop("never-started", absl::Seconds(1)).code(), absl::StatusCode::kNotFound);
}

TEST_F(ProcessRuntimeTest, RestartRotatesTheLog) {
  std::string env = Env(R"({"failures": [{"kind": "no_cache_memory"}]})");
  auto spec = Spec("inst-rotate", env);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(runtime_->Start(spec).ok());
    ASSERT_TRUE(WaitUntil([&] {
      auto ri = runtime_->Inspect("inst-rotate");
      return ri.ok() && !ri->running && ri->exit_known;
    }));
  }
  std::string dir = runtime_->InstanceDir("inst-rotate");
  EXPECT_TRUE(std::filesystem::exists(dir + "/output.log.1"));
  auto tail = runtime_->ReadLogTail("inst-rotate", 1 << 20);
  ASSERT_TRUE(tail.ok());
  // Only the latest run is in the tail.
  size_t first = tail->find("dcufleet: starting instance");
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(tail->find("dcufleet: starting instance", first + 1), std::string::npos);
}

}  // namespace
}  // namespace dcu::agent

namespace dcu::agent {
namespace {

// dcuctl logs -f reads a bare instance's log by position: every line once,
// however alike (the tail comparison took three identical access lines for
// nothing new), a partial line when it is whole, and across the
// copy-truncate of a running instance's log.
class ReadLogSinceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dcu::testing::MakeTempDir("dcu-read-log-since");
    ProcessRuntimeOptions o;
    o.state_dir = root_ + "/state";
    auto rt = ProcessRuntime::Create(o);
    ASSERT_TRUE(rt.ok()) << rt.status();
    runtime_ = std::move(*rt);
    log_ = runtime_->InstanceDir("inst-a") + "/output.log";
    std::filesystem::create_directories(runtime_->InstanceDir("inst-a"));
  }
  void Append(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::app | std::ios::binary) << text;
  }
  LogChunk Since(int64_t offset, size_t max_bytes = 1 << 20) {
    auto c = runtime_->ReadLogSince("inst-a", offset, max_bytes);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : LogChunk{};
  }
  void TearDown() override { dcu::testing::RemoveTree(root_); }
  std::string root_;
  std::unique_ptr<ProcessRuntime> runtime_;
  std::string log_;
};

TEST_F(ReadLogSinceTest, EveryLineOnceHoweverAlike) {
  const std::string access = "INFO:     127.0.0.1:40412 - \"GET /metrics HTTP/1.1\" 200 OK\n";
  Append(log_, "dcufleet: starting instance inst-a\n" + access + access);
  LogChunk first = Since(-1);
  EXPECT_EQ(first.text, "dcufleet: starting instance inst-a\n" + access + access);
  EXPECT_EQ(first.skipped_bytes, 0);
  Append(log_, access);
  LogChunk second = Since(first.next_offset);
  EXPECT_EQ(second.text, access);  // the third identical line, and only it
  LogChunk nothing = Since(second.next_offset);
  EXPECT_EQ(nothing.text, "");
  EXPECT_EQ(nothing.next_offset, second.next_offset);
}

TEST_F(ReadLogSinceTest, APartialLineWaitsForItsEnd) {
  Append(log_, "dcufleet: starting instance inst-a\nLoading safetensors checkpoint shards:  50%");
  LogChunk first = Since(-1);
  EXPECT_EQ(first.text, "dcufleet: starting instance inst-a\n");
  // Given apart, for a reader that shows a bar's latest redraw at once.
  EXPECT_EQ(first.partial, "Loading safetensors checkpoint shards:  50%");
  Append(log_, " Completed\nready\n");
  EXPECT_EQ(Since(first.next_offset).text, "Loading safetensors checkpoint shards:  50% Completed\nready\n");
}

// What the agent answers a follower (dcuctl logs -f): the whole lines, and
// apart from them the line still being written as a terminal would show it
// (the bar's latest redraw), bounded; asked without a position, no partial.
TEST_F(ReadLogSinceTest, TheAnswerToAFollowerCarriesTheBarsLatestRedraw) {
  Append(log_, "dcufleet: starting instance inst-a\n"
               "Loading safetensors checkpoint shards:   0% Completed | 0/4\r"
               "Loading safetensors checkpoint shards:  50% Completed | 2/4\r");
  const std::map<std::string, Runtime*> runtimes = {{"bare", runtime_.get()}};
  dcufleet::v1::FetchLogsCommand follow;
  follow.set_instance_id("inst-a");
  follow.set_since_offset(0);
  auto answer = AnswerFetchLogs(follow, runtimes, "node-a");
  ASSERT_TRUE(answer.ok()) << answer.status();
  auto j = nlohmann::json::parse(*answer);
  EXPECT_EQ(j["lines"], nlohmann::json::array({"dcufleet: starting instance inst-a"}));
  EXPECT_EQ(j["partial"], "Loading safetensors checkpoint shards:  50% Completed | 2/4");
  // A runaway line is shown by its end.
  Append(log_, std::string(5000, 'x') + "end");
  j = nlohmann::json::parse(*AnswerFetchLogs(follow, runtimes, "node-a"));
  ASSERT_TRUE(j["partial"].is_string());
  EXPECT_EQ(j["partial"].get<std::string>().size(), common::kMaxLiveLineBytes);
  EXPECT_TRUE(absl::EndsWith(j["partial"].get<std::string>(), "xxend"));
  // Once the line ends it is a line, and there is no partial.
  Append(log_, "\n");
  j = nlohmann::json::parse(*AnswerFetchLogs(follow, runtimes, "node-a"));
  EXPECT_FALSE(j.contains("partial")) << j.dump();
  EXPECT_EQ(j["lines"].size(), 2u);
  dcufleet::v1::FetchLogsCommand tail;
  tail.set_instance_id("inst-a");
  j = nlohmann::json::parse(*AnswerFetchLogs(tail, runtimes, "node-a"));
  EXPECT_FALSE(j.contains("partial"));
}

TEST_F(ReadLogSinceTest, MoreThanFitsIsSkippedAndSaidSo) {
  Append(log_, "dcufleet: starting instance inst-a\n");
  LogChunk first = Since(-1);
  Append(log_, "line one\nline two\nline three\n");
  // Room for 12 bytes: the cut falls in "line two", so that line goes too.
  LogChunk c = Since(first.next_offset, 12);
  EXPECT_EQ(c.text, "line three\n");
  EXPECT_EQ(c.skipped_bytes, static_cast<int64_t>(std::string("line one\nline two\n").size()));
}

// A skip that ends where a line begins keeps that line (before, every cut
// dropped up to the next line end, so a whole line was lost).
TEST_F(ReadLogSinceTest, ASkipEndingAtALineKeepsIt) {
  Append(log_, "dcufleet: starting instance inst-a\n");
  LogChunk first = Since(-1);
  Append(log_, "line one\nline two\nline three\n");
  // Room for exactly "line two\nline three\n".
  LogChunk c = Since(first.next_offset, std::string("line two\nline three\n").size());
  EXPECT_EQ(c.text, "line two\nline three\n");
  EXPECT_EQ(c.skipped_bytes, static_cast<int64_t>(std::string("line one\n").size()));
  // The same for a tail: one that starts at a line keeps it.
  EXPECT_EQ(Since(-1, std::string("line three\n").size()).text, "line three\n");
}

// A line longer than a read's room is skipped whole, however many reads
// it spans: before, the read that cut it moved past it and the next gave
// the line's end as a line of its own.
TEST_F(ReadLogSinceTest, ALineLongerThanTheRoomIsSkippedToItsEnd) {
  Append(log_, "dcufleet: starting instance inst-a\n");
  LogChunk first = Since(-1);
  // A bar redrawn with carriage returns and no newline, far past 32 bytes.
  const std::string redraw(100, '#');
  Append(log_, redraw + "\r" + redraw);
  LogChunk cut = Since(first.next_offset, 32);
  EXPECT_EQ(cut.text, "");
  EXPECT_EQ(cut.partial, "");
  EXPECT_EQ(cut.skipped_bytes, static_cast<int64_t>(2 * redraw.size() + 1));
  // The line goes on: no line is answered, nothing counted twice; its
  // latest redraw is the partial line, as for any line being written.
  Append(log_, "\r" + redraw);
  LogChunk going = Since(cut.next_offset, 1 << 20);
  EXPECT_EQ(going.text, "");
  EXPECT_EQ(going.partial, "\r" + redraw);
  EXPECT_EQ(going.skipped_bytes, 0);
  EXPECT_EQ(going.next_offset, cut.next_offset);
  // It ends: its rest is skipped and counted, the next line is whole.
  Append(log_, "] done\nnext line\n");
  LogChunk after = Since(going.next_offset, 1 << 20);
  EXPECT_EQ(after.text, "next line\n");
  EXPECT_EQ(after.skipped_bytes, static_cast<int64_t>(redraw.size() + std::string("\r] done\n").size()));
  // A tail cut inside such a line does the same.
  Append(log_, redraw);
  LogChunk tail = Since(-1, 32);
  EXPECT_EQ(tail.text, "");
  Append(log_, "\nlast\n");
  EXPECT_EQ(Since(tail.next_offset, 1 << 20).text, "last\n");
}

TEST_F(ReadLogSinceTest, ReadsOnAcrossACopyTruncate) {
  Append(log_, "dcufleet: starting instance inst-a\nbefore\n");
  LogChunk first = Since(-1);
  // What ProcessRuntime does past max_log_bytes: copy, then truncate.
  Append(log_, "written before the copy\n");
  std::filesystem::copy_file(log_, log_ + ".1");
  std::filesystem::resize_file(log_, 0);
  Append(log_, "written after\n");
  LogChunk c = Since(first.next_offset);
  EXPECT_EQ(c.text, "written before the copy\nwritten after\n");
  EXPECT_EQ(c.skipped_bytes, 0);
  EXPECT_EQ(c.next_offset, static_cast<int64_t>(std::string("written after\n").size()));
}

TEST_F(ReadLogSinceTest, APositionNoFileReachesIsAReplacedLog) {
  Append(log_, "dcufleet: starting instance inst-a\nshort\n");
  LogChunk c = Since(1 << 20);
  EXPECT_EQ(c.skipped_bytes, -1);
  EXPECT_EQ(c.text, "dcufleet: starting instance inst-a\nshort\n");
  EXPECT_EQ(runtime_->ReadLogSince("nope", 0, 100).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runtime_->ReadLogSince("../x", 0, 100).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcu::agent
