#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/process_runner.h"

// Helpers for tests that need the fake vLLM server: fake conda envs, model
// directories and container images. They write real files and run the same
// scripts a person would (make_fake_env.sh, make_fake_image.sh).
namespace dcu::testing {

// $DCU_BIN_DIR/fake_vllm (set by dcu_test), or build/bin/fake_vllm.
std::string FakeVllmBinary();

// A fresh directory under $TMPDIR (or /tmp), e.g. "/tmp/dcu-runtime-XXXXXX".
std::string MakeTempDir(const std::string& prefix);

// A TCP port that was free on 127.0.0.1 a moment ago.
int PickFreePort();

struct FakeEnvOptions {
  std::string vllm = "0.9.2";
  std::string torch = "2.5.1";
  std::string triton = "3.0.0";
  // Written to <env>/share/fake-vllm/scenario.json when not empty.
  std::string scenario_json;
  bool symlink = false;
};

// Creates a fake conda env at env_dir (bin/python runs the fake server).
absl::Status MakeFakeEnv(const std::string& env_dir, const FakeEnvOptions& options = {});

// Writes config.json and `shards` small model-0000N-of-0000M.safetensors files.
absl::Status MakeFakeModelDir(const std::string& dir, const std::string& config_json, int shards);

// Qwen3-32B's official config (head_dim 128) and the seed's broken copy
// (relabelled Qwen2ForCausalLM, head_dim removed; 5120/64 = 80).
std::string Qwen3_32bConfig();
std::string Qwen3_32bBrokenConfig();

// Builds an image `tag` with make_fake_image.sh through `cli` ("docker" or
// "podman"); the scenario is baked in. Returns the tag.
absl::StatusOr<std::string> BuildFakeImage(common::ProcessRunner& runner, const std::string& cli,
                                           const std::string& tag,
                                           const std::string& scenario_json);

// Removes a directory tree (best effort).
void RemoveTree(const std::string& dir);

}  // namespace dcu::testing
