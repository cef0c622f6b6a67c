// Registry, recipe rendering helpers and FakeRuntime.
#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/process_runner.h"
#include "agent/runtime/env_recipe.h"
#include "agent/runtime/fake_runtime.h"
#include "agent/runtime/runtime_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using ::testing::HasSubstr;

TEST(RuntimeRegistryTest, BuiltinsAndUnknownKind) {
  auto reg = RuntimeRegistry::WithBuiltins();
  EXPECT_EQ(reg.Kinds(), (std::vector<std::string>{"bare", "container", "fake"}));
  RuntimeConfig cfg;
  cfg.state_dir = ::testing::TempDir() + "/dcu-registry";
  auto bare = reg.Create("bare", cfg);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ((*bare)->kind(), "bare");
  auto none = reg.Create("kubernetes", cfg);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("bare, container, fake"));
  cfg.container_cli = "/nonexistent/docker";
  EXPECT_EQ(reg.Create("container", cfg).status().code(), absl::StatusCode::kUnavailable);
  // --container-cli none: the container runtime cannot run here.
  cfg.container_cli = "";
  EXPECT_EQ(reg.Create("container", cfg).status().code(), absl::StatusCode::kUnavailable);
}

// dcu-agent --runtimes: what start-up accepts and refuses.
TEST(RuntimeRegistryTest, ParseKindsForTheRuntimesFlag) {
  auto reg = RuntimeRegistry::WithBuiltins();
  auto defaults = reg.ParseKinds(kDefaultRuntimes);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(*defaults, (std::vector<std::string>{"bare", "container"}));
  auto listed = reg.ParseKinds(" container , fake,");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(*listed, (std::vector<std::string>{"container", "fake"}));

  auto unknown = reg.ParseKinds("bare,slurm");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "unknown runtime 'slurm' (known: bare, container, fake)");
  EXPECT_EQ(reg.ParseKinds("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reg.ParseKinds(" , ").status().message(), HasSubstr("known: bare, container, fake"));
  EXPECT_THAT(reg.ParseKinds("bare,bare").status().message(), HasSubstr("named twice"));
  // Kinds are exact names.
  EXPECT_EQ(reg.ParseKinds("Bare").status().code(), absl::StatusCode::kInvalidArgument);
}

// The runtimes apply common/ids.h's rule, the one the controller's input
// rules apply: an id the controller would refuse is refused here too.
TEST(ValidateInstanceIdTest, SharesTheCommonRuleAndNamesTheId) {
  EXPECT_EQ(ValidateInstanceId("qwen-1-a1b2c3"), "");
  EXPECT_EQ(ValidateInstanceId("_x"), "instance id '_x' must start with a letter or digit");
  EXPECT_EQ(ValidateInstanceId("-rm"), "instance id '-rm' must start with a letter or digit");
  EXPECT_EQ(ValidateInstanceId(""), "instance id '' must not be empty");
  std::string hostile = std::string("a\n") + std::string(200, 'b');
  std::string why = ValidateInstanceId(hostile);
  EXPECT_THAT(why, HasSubstr("'a\\nbbb"));
  EXPECT_THAT(why, HasSubstr("...' is 202 characters long; at most 128"));
  EXPECT_LT(why.size(), 120u);
}

TEST(EnvRecipeTest, PrependKeepsOrderAndDropsDuplicates) {
  EXPECT_EQ(PrependSearchPath({"/opt/dtk/.hyhal/rocm_smi/lib", "/opt/dtk/lib"},
                              "/opt/hyhal/lib:/opt/dtk/lib::/usr/lib"),
            "/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib:/opt/hyhal/lib:/usr/lib");
  EXPECT_EQ(PrependSearchPath({}, ""), "");
}

TEST(EnvRecipeTest, MarkerAndDevicesWinOverSpecEnv) {
  dcufleet::v1::InstanceSpec spec;
  spec.set_instance_id("i-1");
  spec.set_port(8001);
  spec.add_device_indices(4);
  spec.add_device_indices(5);
  spec.set_visible_devices_env("CUDA_VISIBLE_DEVICES");
  (*spec.mutable_env())["DCUFLEET_INSTANCE"] = "other";
  (*spec.mutable_env())["CUDA_VISIBLE_DEVICES"] = "0";
  EnvMap env;
  ApplyRecipe(spec, &env);
  EXPECT_EQ(env["DCUFLEET_INSTANCE"], "i-1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "4,5");
  EXPECT_EQ(env["DCUFLEET_PORT"], "8001");
  EXPECT_EQ(env.count("HIP_VISIBLE_DEVICES"), 0u);
}

TEST(EnvRecipeTest, ParseEnvZDropsShellVariables) {
  std::string text("A=1\0_=/usr/bin/env\0SHLVL=1\0B=x=y\0PWD=/\0", 38);
  EnvMap env = ParseEnvZ(text);
  EXPECT_EQ(env, (EnvMap{{"A", "1"}, {"B", "x=y"}}));
}

// Inside an image the shell may be the only tool (a static bash in an image
// without coreutils): sourcing must not need `env` or anything on PATH.
TEST(EnvRecipeTest, CaptureSourcedEnvNeedsOnlyTheShell) {
  std::string dir = ::testing::TempDir() + "/dcu-source-bash-only";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/env.sh")
      << "export LD_LIBRARY_PATH=/opt/dtk/lib:/opt/hyhal/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n"
         "export DTK_VERSION=26.04\nexport MULTI='a b\nc'\nPLAIN=not-exported\n";
  common::SubprocessRunner runner;
  auto env = CaptureSourcedEnv(runner, "/bin/bash", dir + "/env.sh",
                               {{"PATH", dir + "/no-such-dir"}, {"LD_LIBRARY_PATH", "/x"}},
                               absl::Seconds(10));
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)["LD_LIBRARY_PATH"], "/opt/dtk/lib:/opt/hyhal/lib:/x");
  EXPECT_EQ((*env)["DTK_VERSION"], "26.04");
  EXPECT_EQ((*env)["MULTI"], "a b\nc");
  // `set -a`: what the script assigns without `export` is kept too.
  EXPECT_EQ((*env)["PLAIN"], "not-exported");
  EXPECT_EQ(env->count("__dcufleet_v"), 0u);
}

// A long-running child whose output matters while it runs (`docker
// attach`): each piece arrives as it is written, by stream, and a cancel
// ends the child and its group within the 100 ms it is checked at.
TEST(SubprocessRunnerTest, OutputArrivesWhileTheChildRunsAndACancelEndsIt) {
  common::SubprocessRunner runner;
  std::atomic<bool> cancel{false};
  std::string out, err;
  absl::Time first_err;
  common::ProcessOptions o;
  o.timeout = absl::InfiniteDuration();
  o.cancel = &cancel;
  o.on_output = [&](int stream, absl::string_view data) {
    if (stream == 2 && err.empty()) first_err = absl::Now();
    (stream == 1 ? out : err).append(data.data(), data.size());
    // The redraw without a newline came through: stop the child.
    if (absl::StrContains(err, "2/3")) cancel = true;
  };
  const absl::Time start = absl::Now();
  auto r = runner.Run({"/bin/bash", "-c",
                       "echo first; for i in 1 2 3; do printf '\\rshard %d/3' $i >&2; sleep 1; done; sleep 30"},
                      o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(out, "first\n");
  EXPECT_EQ(err, "\rshard 1/3\rshard 2/3");
  EXPECT_LT(first_err - start, absl::Milliseconds(900)) << "the first redraw waited for more output";
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "the cancel did not end the child";
}

TEST(EnvRecipeTest, ModelOverlayReplacesConfigWithoutTouchingTheModel) {
  std::string root = ::testing::TempDir() + "/dcu-overlay";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/model");
  std::ofstream(root + "/model/config.json") << R"({"architectures": ["Qwen2ForCausalLM"]})";
  std::ofstream(root + "/model/model-00001-of-00001.safetensors") << "w";
  dcufleet::v1::InstanceSpec spec;
  spec.set_model_path(root + "/model");
  spec.set_overlay_dir(root + "/overlay");
  spec.set_overlay_config_json(R"({"architectures": ["Qwen3ForCausalLM"], "head_dim": 128})");
  auto notes = PrepareModelOverlay(spec);
  ASSERT_TRUE(notes.ok()) << notes.status();
  ASSERT_EQ(notes->size(), 1u);
  EXPECT_TRUE(std::filesystem::is_symlink(root + "/overlay/model-00001-of-00001.safetensors"));
  std::ifstream cfg(root + "/overlay/config.json");
  std::string text((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("head_dim"));
  std::ifstream orig(root + "/model/config.json");
  std::string orig_text((std::istreambuf_iterator<char>(orig)), std::istreambuf_iterator<char>());
  EXPECT_THAT(orig_text, HasSubstr("Qwen2ForCausalLM"));
  std::filesystem::remove_all(root);
}

TEST(FakeRuntimeTest, StatefulWithInjectedStatuses) {
  FakeRuntime rt;
  dcufleet::v1::InstanceSpec spec;
  spec.set_instance_id("a");
  ASSERT_TRUE(rt.Start(spec).ok());
  EXPECT_EQ(rt.Start(spec).status().code(), absl::StatusCode::kAlreadyExists);
  rt.AppendLog("a", "line 1\nValueError: boom\n");
  rt.SetExited("a", 1);
  auto ri = rt.Inspect("a");
  ASSERT_TRUE(ri.ok());
  EXPECT_FALSE(ri->running);
  EXPECT_EQ(ri->exit_code, 1);
  EXPECT_THAT(*rt.ReadLogTail("a", 10), HasSubstr("boom"));
  rt.set_start_status(absl::UnavailableError("injected"));
  spec.set_instance_id("b");
  EXPECT_EQ(rt.Start(spec).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rt.start_calls(), 3);
  EXPECT_TRUE(rt.Remove("a").ok());
  EXPECT_EQ(rt.Inspect("a").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dcu::agent
