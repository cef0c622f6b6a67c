#include "agent/runtime/runtime_registry.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/runtime/container_runtime.h"
#include "agent/runtime/fake_runtime.h"
#include "agent/runtime/process_runtime.h"
#include "common/status_util.h"

namespace dcu::agent {
namespace {

bool OnPath(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return access(prog.c_str(), X_OK) == 0;
  const char* path = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    if (access(absl::StrCat(dir, "/", prog).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Keeps a private runner alive for as long as the runtime it serves.
class RunnerHolder {
 public:
  static common::ProcessRunner* Get() {
    static common::SubprocessRunner* runner = new common::SubprocessRunner();
    return runner;
  }
};

}  // namespace

void RuntimeRegistry::Register(const std::string& kind, RuntimeFactory factory) {
  factories_[kind] = std::move(factory);
}

absl::StatusOr<std::unique_ptr<Runtime>> RuntimeRegistry::Create(
    const std::string& kind, const RuntimeConfig& config) const {
  auto it = factories_.find(kind);
  if (it == factories_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown runtime '", kind, "' (known: ",
                                            absl::StrJoin(Kinds(), ", "), ")"));
  }
  return it->second(config);
}

std::vector<std::string> RuntimeRegistry::Kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, f] : factories_) out.push_back(k);
  return out;
}

absl::StatusOr<std::vector<std::string>> RuntimeRegistry::ParseKinds(absl::string_view list) const {
  std::vector<std::string> kinds;
  for (absl::string_view k : absl::StrSplit(list, ',')) {
    std::string kind(absl::StripAsciiWhitespace(k));
    if (kind.empty()) continue;
    if (!factories_.contains(kind)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown runtime '", absl::CHexEscape(kind),
                                                     "' (known: ", absl::StrJoin(Kinds(), ", "), ")"));
    }
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) {
      return absl::InvalidArgumentError(absl::StrCat("runtime '", kind, "' is named twice"));
    }
    kinds.push_back(std::move(kind));
  }
  if (kinds.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no runtime named (known: ", absl::StrJoin(Kinds(), ", "), ")"));
  }
  return kinds;
}

std::string BareStateDir(const std::string& agent_state_dir) { return agent_state_dir + "/bare"; }

namespace {

// The ids of a runtime's instances that run now.
absl::StatusOr<std::vector<std::string>> RunningIdsOf(Runtime& runtime) {
  DCU_ASSIGN_OR_RETURN(std::vector<RuntimeInstance> all, runtime.List());
  std::vector<std::string> running;
  for (const RuntimeInstance& ri : all) {
    if (ri.running) running.push_back(ri.instance_id);
  }
  return running;
}

// Whether `dir` exists: each runtime's Create() makes its records'
// directory, and a reader beside an agent must not.
bool IsDirectory(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RunningBareInstances(const std::string& agent_state_dir) {
  if (!IsDirectory(BareStateDir(agent_state_dir) + "/instances")) return std::vector<std::string>{};
  ProcessRuntimeOptions o;
  o.state_dir = BareStateDir(agent_state_dir);
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<ProcessRuntime> rt, ProcessRuntime::Create(std::move(o)));
  return RunningIdsOf(*rt);
}

std::string ContainerStateDir(const std::string& agent_state_dir) { return agent_state_dir + "/container"; }

absl::StatusOr<std::vector<std::string>> RunningContainerInstances(const std::string& agent_state_dir,
                                                                   const std::string& cli,
                                                                   common::ProcessRunner* runner) {
  if (cli.empty() || !IsDirectory(ContainerStateDir(agent_state_dir) + "/containers")) {
    return std::vector<std::string>{};
  }
  ContainerRuntimeOptions o;
  o.cli = cli;
  o.state_dir = ContainerStateDir(agent_state_dir);
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<ContainerRuntime> rt, ContainerRuntime::Create(std::move(o), runner));
  return RunningIdsOf(*rt);
}

RuntimeRegistry RuntimeRegistry::WithBuiltins() {
  RuntimeRegistry r;
  r.Register("bare", [](const RuntimeConfig& c) -> absl::StatusOr<std::unique_ptr<Runtime>> {
    ProcessRuntimeOptions o;
    o.state_dir = BareStateDir(c.state_dir);
    o.proc_root = c.proc_root;
    auto rt = ProcessRuntime::Create(std::move(o), c.runner);
    if (!rt.ok()) return rt.status();
    return std::unique_ptr<Runtime>(std::move(*rt));
  });
  r.Register("container", [](const RuntimeConfig& c) -> absl::StatusOr<std::unique_ptr<Runtime>> {
    if (c.container_cli.empty()) {
      return absl::UnavailableError("container runtime: no container CLI (--container-cli none)");
    }
    if (!OnPath(c.container_cli)) {
      return absl::UnavailableError(
          absl::StrCat("container runtime: CLI '", c.container_cli, "' not found in PATH"));
    }
    ContainerRuntimeOptions o;
    o.cli = c.container_cli;
    o.state_dir = ContainerStateDir(c.state_dir);
    o.skip_missing_devices = c.skip_missing_devices;
    o.host_root = c.host_root;
    auto rt = ContainerRuntime::Create(std::move(o),
                                       c.runner != nullptr ? c.runner : RunnerHolder::Get());
    if (!rt.ok()) return rt.status();
    return std::unique_ptr<Runtime>(std::move(*rt));
  });
  r.Register("fake", [](const RuntimeConfig&) -> absl::StatusOr<std::unique_ptr<Runtime>> {
    return std::unique_ptr<Runtime>(std::make_unique<FakeRuntime>());
  });
  return r;
}

}  // namespace dcu::agent
