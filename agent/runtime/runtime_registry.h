#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/runtime/runtime.h"
#include "common/process_runner.h"

namespace dcu::agent {

// What runtime factories need; main.cc fills it from flags.
struct RuntimeConfig {
  // Root of the agent's state: runtimes keep records below it.
  std::string state_dir;
  // Container CLI: "docker" or "podman"; empty disables the container
  // runtime (--container-cli none).
  std::string container_cli = "docker";
  // When false, --device entries absent on the host fail the start.
  bool skip_missing_devices = true;
  // Root under which device nodes and host mounts are looked up.
  std::string host_root = "/";
  std::string proc_root = "/proc";
  // Runs external tools (bash for sourced scripts, the container CLI). Not
  // owned; must outlive the runtimes. Null means a private SubprocessRunner
  // where one is needed.
  common::ProcessRunner* runner = nullptr;
};

// Returns UNAVAILABLE when the backend cannot work on this host (e.g. the
// container CLI is missing or disabled); other errors mean a broken setup
// (e.g. an unwritable state directory).
using RuntimeFactory =
    std::function<absl::StatusOr<std::unique_ptr<Runtime>>(const RuntimeConfig&)>;

// What dcu-agent enables without --runtimes: the built-in backends that run
// real work. "fake" (accepts any spec, runs nothing) must be asked for.
inline constexpr char kDefaultRuntimes[] = "bare,container";

// Where the bare runtime keeps its instances under an agent's --state-dir.
std::string BareStateDir(const std::string& agent_state_dir);

// The bare instances running from an agent's --state-dir, asked from
// another process (`dcu-agent inventory` beside the running agent: its
// instances' processes are its own holders, not leftovers). Reads only.
absl::StatusOr<std::vector<std::string>> RunningBareInstances(const std::string& agent_state_dir);

// Where the container runtime keeps its records under an agent's --state-dir.
std::string ContainerStateDir(const std::string& agent_state_dir);

// The same for the containers that agent's container runtime started
// (`CLI ps` by its owner label), running now: empty when the agent never
// ran that runtime (no ContainerStateDir) or `cli` is empty. Asks the CLI,
// writes nothing.
absl::StatusOr<std::vector<std::string>> RunningContainerInstances(const std::string& agent_state_dir,
                                                                   const std::string& cli,
                                                                   common::ProcessRunner* runner);

// Name → factory (Mesos' containerizer `creators`): "bare", "container",
// "fake". main.cc selects with --runtimes=bare,container; a new backend
// (Slurm) registers here and needs no other wiring.
class RuntimeRegistry {
 public:
  void Register(const std::string& kind, RuntimeFactory factory);
  // NOT_FOUND for an unknown kind, else what the factory returns.
  absl::StatusOr<std::unique_ptr<Runtime>> Create(const std::string& kind,
                                                  const RuntimeConfig& config) const;
  // Registered kinds, sorted.
  std::vector<std::string> Kinds() const;
  // Parses a comma-separated --runtimes list into kinds, in order.
  // INVALID_ARGUMENT naming the known kinds when a kind is unknown, and for
  // an empty list or a kind named twice.
  absl::StatusOr<std::vector<std::string>> ParseKinds(absl::string_view list) const;

  // A registry with the built-in backends.
  static RuntimeRegistry WithBuiltins();

 private:
  std::map<std::string, RuntimeFactory> factories_;
};

}  // namespace dcu::agent
