// The fake vLLM server, run as a real process from a fake conda env: each
// scenario condition fails with the real message, and the remediation flips
// the outcome to serving.
#include <signal.h>

#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/http_client.h"
#include "common/process_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_vllm/fake_env.h"

namespace dcu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class FakeVllmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = MakeTempDir("dcu-fake-vllm");
    ASSERT_FALSE(root_.empty());
    model_ = root_ + "/Qwen3-32B";
  }
  void TearDown() override { RemoveTree(root_); }

  std::string Env(const std::string& scenario, const std::string& name = "env") {
    std::string env = root_ + "/" + name;
    FakeEnvOptions o;
    o.scenario_json = scenario;
    o.vllm = "0.11.0";
    EXPECT_TRUE(MakeFakeEnv(env, o).ok());
    return env;
  }

  // Runs the env's python with the server module; a server still running at
  // `limit` is killed (timed_out = true) — that is the "it serves" outcome.
  common::ProcessOutput Run(const std::string& env, std::vector<std::string> args,
                            std::map<std::string, std::string> vars = {},
                            absl::Duration limit = absl::Seconds(1)) {
    std::vector<std::string> argv = {env + "/bin/python", "-m",
                                     "vllm.entrypoints.openai.api_server", "--model", model_,
                                     "--port", absl::StrCat(PickFreePort())};
    argv.insert(argv.end(), args.begin(), args.end());
    common::ProcessOptions o;
    o.replace_env = true;
    o.env = std::move(vars);
    o.env["PATH"] = "/usr/bin:/bin";
    o.timeout = limit;
    common::SubprocessRunner runner;
    auto out = runner.Run(argv, o);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : common::ProcessOutput{};
  }

  static bool Served(const common::ProcessOutput& out) {
    return out.timed_out && absl::StrContains(out.stdout_data, "Application startup complete.");
  }
  static std::string All(const common::ProcessOutput& out) {
    return out.stdout_data + out.stderr_data;
  }

  std::string root_;
  std::string model_;
};

TEST_F(FakeVllmTest, WithoutScenarioItServesAndPrintsShardProgress) {
  ASSERT_TRUE(MakeFakeModelDir(model_, Qwen3_32bConfig(), 17).ok());
  std::string env = Env("");
  auto out = Run(env, {"--tensor-parallel-size", "4", "--enforce-eager"});
  EXPECT_TRUE(Served(out)) << All(out);
  EXPECT_THAT(out.stdout_data, HasSubstr("vLLM API server version 0.11.0"));
  EXPECT_THAT(out.stderr_data,
              HasSubstr("Loading safetensors checkpoint shards:  41% Completed | 7/17 ["));
  EXPECT_THAT(out.stderr_data,
              HasSubstr("Loading safetensors checkpoint shards: 100% Completed | 17/17 ["));
}

TEST_F(FakeVllmTest, HeadSize80FromBrokenConfigAndHfOverridesFixIt) {
  ASSERT_TRUE(MakeFakeModelDir(model_, Qwen3_32bBrokenConfig(), 4).ok());
  std::string env = Env(R"({"failures": [{"kind": "head_size_unsupported"}]})");
  auto broken = Run(env, {});
  EXPECT_FALSE(broken.timed_out);
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_THAT(broken.stderr_data,
              HasSubstr("ValueError: Head size 80 is not supported by FlashAttention. Supported "
                        "head sizes are: [32, 64, 96, 128, 160, 192, 224, 256]. Set "
                        "VLLM_ATTENTION_BACKEND=FLEX_ATTENTION to use FlexAttention backend "
                        "which supports all head sizes."));
  EXPECT_THAT(broken.stderr_data, HasSubstr("Traceback (most recent call last):"));
  // The remediation that leaves the files untouched: --hf-overrides.
  auto fixed = Run(env, {"--hf-overrides", R"({"head_dim": 128})"});
  EXPECT_TRUE(Served(fixed)) << All(fixed);
  // The official config needs nothing.
  ASSERT_TRUE(MakeFakeModelDir(model_, Qwen3_32bConfig(), 4).ok());
  EXPECT_TRUE(Served(Run(env, {})));
}

TEST_F(FakeVllmTest, RsmiInitUndefinedUnlessDtkRocmSmiComesFirst) {
  std::string env = Env(R"({"failures": [{"kind": "rsmi_init_undefined"}]})");
  auto bad = Run(env, {}, {{"LD_LIBRARY_PATH", "/opt/hyhal/lib:/opt/dtk/.hyhal/rocm_smi/lib"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.stderr_data,
              HasSubstr("ImportError: /opt/dtk/lib/librccl.so.1: undefined symbol: rsmi_init"));
  // Nothing of vLLM's start-up is printed: it dies importing torch.
  EXPECT_THAT(bad.stdout_data, Not(HasSubstr("vLLM API server version")));
  auto unset = Run(env, {});
  EXPECT_EQ(unset.exit_code, 1);
  auto good = Run(env, {}, {{"LD_LIBRARY_PATH",
                             "/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib:/opt/hyhal/lib"}});
  EXPECT_TRUE(Served(good)) << All(good);
}

TEST_F(FakeVllmTest, WvSplitKMissingUnlessSkinnyGemmDisabled) {
  std::string env = Env(R"({"failures": [{"kind": "wvsplitk_missing"}]})");
  auto bad = Run(env, {});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.stderr_data,
              HasSubstr("AttributeError: '_OpNamespace' '_rocm_C' object has no attribute "
                        "'wvSplitK'"));
  // vLLM reads the variable as a bool: "True"/"1" keep it on.
  EXPECT_EQ(Run(env, {}, {{"VLLM_ROCM_USE_SKINNY_GEMM", "1"}}).exit_code, 1);
  EXPECT_TRUE(Served(Run(env, {}, {{"VLLM_ROCM_USE_SKINNY_GEMM", "0"}})));
}

TEST_F(FakeVllmTest, NoCacheMemoryUnlessKvCacheMemoryBytesGiven) {
  std::string env = Env(R"({"failures": [{"kind": "no_cache_memory"}]})");
  auto bad = Run(env, {"--gpu-memory-utilization", "0.96"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.stderr_data,
              HasSubstr("ValueError: No available memory for the cache blocks. Try increasing "
                        "`gpu_memory_utilization` when initializing the engine."));
  // It fails after the weights loaded, as the real one does.
  EXPECT_THAT(bad.stderr_data, HasSubstr("Completed | 4/4"));
  EXPECT_TRUE(Served(Run(env, {"--kv-cache-memory-bytes", "1073741824"})));
}

TEST_F(FakeVllmTest, TritonUnsupportedTargetAlwaysEvenWithEnforceEager) {
  std::string env = Env(R"({"failures": [{"kind": "triton_unsupported_target", "arch": "gfx928"}]})");
  for (auto args : {std::vector<std::string>{}, std::vector<std::string>{"--enforce-eager"}}) {
    auto out = Run(env, args);
    EXPECT_EQ(out.exit_code, 1);
    EXPECT_THAT(out.stderr_data, HasSubstr("error: unsupported target: 'gfx928'"));
    EXPECT_THAT(out.stderr_data, HasSubstr("RuntimeError: PassManager::run failed"));
  }
}

TEST_F(FakeVllmTest, FreeMemoryTooLowOnDirtyDeviceOnly) {
  std::string env = Env(R"({"dirty_devices": [0], "failures": [{"kind": "free_memory_low"}]})");
  auto bad = Run(env, {"--tensor-parallel-size", "4"}, {{"HIP_VISIBLE_DEVICES", "0,1,2,3"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.stderr_data,
              HasSubstr("ValueError: Free memory on device (4.8/63.98 GiB) on startup is less "
                        "than desired GPU memory utilization (0.9, 57.59 GiB)"));
  auto good = Run(env, {"--tensor-parallel-size", "4"}, {{"HIP_VISIBLE_DEVICES", "4,5,6,7"}});
  EXPECT_TRUE(Served(good)) << All(good);
}

TEST_F(FakeVllmTest, SecondSeedFailsLayerByLayerUntilEveryRemediationIsApplied) {
  std::string env = Env(R"({"failures": [
      {"kind": "rsmi_init_undefined"}, {"kind": "no_cache_memory"}, {"kind": "wvsplitk_missing"}]})");
  std::map<std::string, std::string> vars;
  std::vector<std::string> args = {"--tensor-parallel-size", "4"};
  auto step1 = Run(env, args, vars);
  EXPECT_THAT(step1.stderr_data, HasSubstr("undefined symbol: rsmi_init"));
  vars["LD_LIBRARY_PATH"] = "/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib";
  auto step2 = Run(env, args, vars);
  EXPECT_THAT(step2.stderr_data, HasSubstr("has no attribute 'wvSplitK'"));
  EXPECT_THAT(step2.stderr_data, Not(HasSubstr("rsmi_init")));
  vars["VLLM_ROCM_USE_SKINNY_GEMM"] = "0";
  auto step3 = Run(env, args, vars);
  EXPECT_THAT(step3.stderr_data, HasSubstr("No available memory for the cache blocks"));
  args.insert(args.end(), {"--kv-cache-memory-bytes", "1073741824"});
  EXPECT_TRUE(Served(Run(env, args, vars)));
}

TEST_F(FakeVllmTest, CrashAfterSecondsExitsWithConfiguredCode) {
  std::string env = Env(R"({"crash": {"after_seconds": 0.2, "exit_code": 7}})");
  auto out = Run(env, {});
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.exit_code, 7);
  EXPECT_THAT(out.stdout_data, HasSubstr("Application startup complete."));
  EXPECT_THAT(out.stderr_data, HasSubstr("RuntimeError: HIP error: invalid device function"));
}

TEST_F(FakeVllmTest, RejectedArgumentIsAnArgparseError) {
  std::string env = Env(R"({"reject_args": ["--kv-cache-memory-bytes"]})");
  auto out = Run(env, {"--kv-cache-memory-bytes", "1073741824"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.stderr_data,
              HasSubstr("error: unrecognized arguments: --kv-cache-memory-bytes 1073741824"));
}

TEST_F(FakeVllmTest, ScenarioFromEnvVariableAndVllmServeForm) {
  std::string env = Env("");
  std::string scenario = root_ + "/image-scenario.json";
  {
    std::ofstream(scenario) << R"({"failures": [{"kind": "no_cache_memory"}]})";
  }
  common::SubprocessRunner runner;
  common::ProcessOptions o;
  o.replace_env = true;
  o.env = {{"PATH", "/usr/bin:/bin"}, {"FAKE_VLLM_SCENARIO", scenario}};
  o.timeout = absl::Seconds(5);
  auto out = runner.Run({env + "/bin/vllm", "serve", model_, "--port",
                         absl::StrCat(PickFreePort())},
                        o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_THAT(out->stderr_data, HasSubstr("No available memory for the cache blocks"));
}

TEST_F(FakeVllmTest, BadScenarioFileIsReportedNotIgnored) {
  std::string env = Env("{ not json");
  auto out = Run(env, {});
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_THAT(out.stderr_data, HasSubstr("fake-vllm: bad scenario file"));
}

TEST_F(FakeVllmTest, DiscoveryReadsVersionsFromDistInfo) {
  std::string env = Env("");
  common::SubprocessRunner runner;
  common::ProcessOptions o;
  o.replace_env = true;
  o.env = {{"PATH", "/usr/bin:/bin"}};
  auto out = runner.Run({env + "/bin/python", "-c", "import vllm; print(vllm.__version__)"}, o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stdout_data, "0.11.0\n");
  out = runner.Run({env + "/bin/python", "-c", "import triton; print(triton.__version__)"}, o);
  EXPECT_EQ(out->stdout_data, "3.0.0\n");
}

TEST_F(FakeVllmTest, ServesOpenAiShapedJsonOverRealHttp) {
  ASSERT_TRUE(MakeFakeModelDir(model_, Qwen3_32bConfig(), 2).ok());
  std::string env = Env("");
  int port = PickFreePort();
  common::ProcessOutput server_out;
  std::thread server([&] {
    common::SubprocessRunner runner;
    common::ProcessOptions o;
    o.replace_env = true;
    o.env = {{"PATH", "/usr/bin:/bin"}};
    o.timeout = absl::Milliseconds(2500);
    auto out = runner.Run({env + "/bin/python", "-m", "vllm.entrypoints.openai.api_server",
                           "--model", model_, "--served-model-name", "qwen3-32b", "--port",
                           absl::StrCat(port), "--host", "127.0.0.1"},
                          o);
    if (out.ok()) server_out = *out;
  });
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.port = port;
  req.path = "/health";
  absl::StatusOr<common::HttpResponse> resp;
  for (int i = 0; i < 100; ++i) {
    resp = http.Send(req);
    if (resp.ok()) break;
    absl::SleepFor(absl::Milliseconds(30));
  }
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200);

  req.path = "/v1/models";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  auto models = nlohmann::json::parse(resp->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "qwen3-32b");

  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"model": "qwen3-32b", "prompt": "1+1=", "max_tokens": 3})";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 200);
  auto c = nlohmann::json::parse(resp->body);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["usage"]["completion_tokens"], 3);
  EXPECT_FALSE(c["choices"][0]["text"].get<std::string>().empty());

  req.path = "/v1/chat/completions";
  req.body = R"({"model": "qwen3-32b", "messages": [{"role": "user", "content": "你好"}], "max_tokens": 5})";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  auto chat = nlohmann::json::parse(resp->body);
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");

  req.body = R"({"model": "nope", "prompt": "x", "max_tokens": 1})";
  req.path = "/v1/completions";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 404);
  EXPECT_THAT(resp->body, HasSubstr("The model `nope` does not exist."));
  server.join();
  EXPECT_THAT(server_out.stdout_data, HasSubstr("\"POST /v1/completions HTTP/1.1\" 200 OK"));
}

// Streaming, the service model and /metrics (issue 17), against the binary
// run directly as the gateway's tests run it.
TEST_F(FakeVllmTest, StreamsServerSentEventsAndExportsVllmMetrics) {
  int port = PickFreePort();
  common::ProcessOutput server_out;
  std::thread server([&] {
    common::SubprocessRunner runner;
    common::ProcessOptions o;
    o.replace_env = true;
    o.env = {{"PATH", "/usr/bin:/bin"}, {"FAKE_VLLM_TOKEN_DELAY_MS", "1"}};
    o.timeout = absl::Milliseconds(3000);
    auto out = runner.Run({FakeVllmBinary(), "--model", "/m/tiny", "--served-model-name", "tiny",
                           "--port", absl::StrCat(port), "--host", "127.0.0.1",
                           "--fake-max-concurrency", "4"},
                          o);
    if (out.ok()) server_out = *out;
  });
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.port = port;
  req.path = "/health";
  absl::StatusOr<common::HttpResponse> resp;
  for (int i = 0; i < 100; ++i) {
    resp = http.Send(req);
    if (resp.ok()) break;
    absl::SleepFor(absl::Milliseconds(30));
  }
  ASSERT_TRUE(resp.ok()) << resp.status();
  // RFC 7231 IMF-fixdate: "Tue, 01 Dec 2026 17:00:00 GMT".
  const std::string date = resp->headers["date"];
  EXPECT_EQ(date.size(), 29u) << date;
  EXPECT_EQ(date.substr(3, 2), ", ") << date;
  EXPECT_EQ(date.substr(25), " GMT") << date;

  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = R"({"model": "tiny", "messages": [{"role": "user", "content": "a b c"}],)"
             R"( "max_tokens": 3, "stream": true})";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->headers["transfer-encoding"], "chunked");
  EXPECT_THAT(resp->headers["content-type"], HasSubstr("text/event-stream"));
  std::vector<nlohmann::json> events;
  bool done = false;
  for (absl::string_view line : absl::StrSplit(resp->body, "\n\n", absl::SkipEmpty())) {
    ASSERT_TRUE(absl::ConsumePrefix(&line, "data: ")) << resp->body;
    if (line == "[DONE]") {
      done = true;
      continue;
    }
    events.push_back(nlohmann::json::parse(line));
  }
  EXPECT_TRUE(done);
  // Role first, three tokens, then the finish.
  ASSERT_EQ(events.size(), 5u) << resp->body;
  EXPECT_EQ(events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events[1]["choices"][0]["delta"]["content"], " the");
  EXPECT_EQ(events[4]["choices"][0]["finish_reason"], "length");

  req.path = "/v1/completions";
  req.body = R"({"model": "tiny", "prompt": "x y", "max_tokens": 2, "stream": true})";
  resp = http.Send(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_THAT(resp->body, HasSubstr("\"object\":\"text_completion\""));
  EXPECT_THAT(resp->body, HasSubstr("data: [DONE]"));

  req.method = "GET";
  req.path = "/metrics";
  req.body.clear();
  const std::string labels = "{engine=\"0\",model_name=\"tiny\"}";
  // A stream's last chunk can reach the client before the engine counts the
  // request finished (in vLLM too, the stat loggers run apart from the
  // response): read until the finished request leaves the running gauge.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    resp = http.Send(req);
    ASSERT_TRUE(resp.ok());
    if (absl::StrContains(resp->body, "vllm:num_requests_running" + labels + " 0.0")) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  EXPECT_THAT(resp->body, HasSubstr("# TYPE vllm:num_requests_running gauge"));
  EXPECT_THAT(resp->body, HasSubstr("vllm:num_requests_running" + labels + " 0.0"));
  EXPECT_THAT(resp->body, HasSubstr("vllm:num_requests_waiting" + labels + " 0.0"));
  EXPECT_THAT(resp->body, HasSubstr("vllm:kv_cache_usage_perc" + labels + " 0.0"));
  EXPECT_THAT(resp->body, HasSubstr("vllm:gpu_cache_usage_perc" + labels));
  // 3 + 2 prompt words, 3 + 2 tokens.
  EXPECT_THAT(resp->body, HasSubstr("vllm:prompt_tokens_total" + labels + " 5.0"));
  EXPECT_THAT(resp->body, HasSubstr("vllm:generation_tokens_total" + labels + " 5.0"));
  EXPECT_THAT(resp->body, HasSubstr(
      "vllm:request_success_total{engine=\"0\",model_name=\"tiny\",finished_reason=\"length\"} 2.0"));
  server.join();
}

}  // namespace
}  // namespace dcu::testing
