#include "tests/fakes/fake_vllm/fake_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dcu::testing {
namespace {

std::string ScriptsDir() {
  const char* src = std::getenv("DCU_SOURCE_DIR");
  if (src != nullptr && *src != '\0') return absl::StrCat(src, "/tests/fakes/fake_vllm");
  return DCU_FAKE_VLLM_SCRIPTS_DIR;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot write '", path, "'"));
  out << text;
  return out ? absl::OkStatus() : absl::InternalError(absl::StrCat("short write '", path, "'"));
}

absl::Status RunScript(const std::vector<std::string>& argv, absl::Duration timeout) {
  common::SubprocessRunner runner;
  common::ProcessOptions opts;
  opts.timeout = timeout;
  auto out = runner.Run(argv, opts);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::InternalError(absl::StrCat(argv[1], " exited ", out->exit_code, ": ",
                                            out->stderr_data, out->stdout_data));
  }
  return absl::OkStatus();
}

}  // namespace

std::string FakeVllmBinary() {
  const char* bin = std::getenv("DCU_BIN_DIR");
  if (bin != nullptr && *bin != '\0') return absl::StrCat(bin, "/fake_vllm");
  return DCU_FAKE_VLLM_BIN;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/", prefix, "-XXXXXX");
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return std::string(buf.data());
}

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

absl::Status MakeFakeEnv(const std::string& env_dir, const FakeEnvOptions& options) {
  std::vector<std::string> argv = {"/bin/bash", ScriptsDir() + "/make_fake_env.sh", env_dir,
                                   FakeVllmBinary(), "--vllm", options.vllm, "--torch",
                                   options.torch, "--triton", options.triton};
  std::string scenario_file;
  std::error_code ec;
  std::filesystem::create_directories(env_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir '", env_dir, "': ", ec.message()));
  if (!options.scenario_json.empty()) {
    scenario_file = env_dir + ".scenario.json";
    if (auto s = WriteFile(scenario_file, options.scenario_json); !s.ok()) return s;
    argv.push_back("--scenario");
    argv.push_back(scenario_file);
  }
  if (options.symlink) argv.push_back("--symlink");
  absl::Status s = RunScript(argv, absl::Seconds(30));
  if (!scenario_file.empty()) std::filesystem::remove(scenario_file);
  return s;
}

absl::Status MakeFakeModelDir(const std::string& dir, const std::string& config_json,
                              int shards) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir '", dir, "': ", ec.message()));
  if (auto s = WriteFile(dir + "/config.json", config_json); !s.ok()) return s;
  for (int i = 1; i <= shards; ++i) {
    std::string name =
        absl::StrFormat("%s/model-%05d-of-%05d.safetensors", dir, i, shards);
    if (auto s = WriteFile(name, "fake shard"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string Qwen3_32bConfig() {
  return R"({
  "architectures": ["Qwen3ForCausalLM"],
  "head_dim": 128,
  "hidden_size": 5120,
  "intermediate_size": 25600,
  "max_position_embeddings": 40960,
  "model_type": "qwen3",
  "num_attention_heads": 64,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "torch_dtype": "bfloat16",
  "vocab_size": 151936
})";
}

std::string Qwen3_32bBrokenConfig() {
  return R"({
  "architectures": ["Qwen2ForCausalLM"],
  "hidden_size": 5120,
  "intermediate_size": 25600,
  "max_position_embeddings": 40960,
  "model_type": "qwen2",
  "num_attention_heads": 64,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "torch_dtype": "bfloat16",
  "vocab_size": 151936
})";
}

absl::StatusOr<std::string> BuildFakeImage(common::ProcessRunner& runner, const std::string& cli,
                                           const std::string& tag,
                                           const std::string& scenario_json) {
  std::string dir = MakeTempDir("dcu-fake-image");
  if (dir.empty()) return absl::InternalError("mkdtemp failed");
  std::string scenario = dir + "/scenario.json";
  if (auto s = WriteFile(scenario, scenario_json.empty() ? "{}" : scenario_json); !s.ok()) {
    return s;
  }
  common::ProcessOptions opts;
  opts.timeout = absl::Seconds(120);
  auto out = runner.Run({"/bin/bash", ScriptsDir() + "/make_fake_image.sh", tag,
                         FakeVllmBinary(), "--scenario", scenario, "--cli", cli},
                        opts);
  RemoveTree(dir);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("make_fake_image.sh exited ", out->exit_code, ": ", out->stderr_data));
  }
  return tag;
}

void RemoveTree(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

}  // namespace dcu::testing
