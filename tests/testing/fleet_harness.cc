#include "tests/testing/fleet_harness.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/proc_stat.h"
#include "common/process_runner.h"

namespace dcu::testing {

CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, double timeout_s) {
  common::SubprocessRunner runner;
  common::ProcessOptions o;
  o.timeout = absl::Seconds(timeout_s);
  o.env = env;
  if (!o.env.count("DCUFLEET_CONTROLLER")) o.env["DCUFLEET_CONTROLLER"] = "";
  // Nobody's ~/.config/dcufleet/config (dcuctl's contexts) leaks into a test.
  if (!o.env.count("DCUCONFIG")) o.env["DCUCONFIG"] = "/nonexistent/dcufleet-test/config";
  if (!o.env.count("DCUFLEET_CONTEXT")) o.env["DCUFLEET_CONTEXT"] = "";
  auto r = runner.Run(argv, o);
  if (!r.ok()) return {-100, "", std::string(r.status().message())};
  return {r->exit_code, r->stdout_data, r->stderr_data};
}

FleetHarness::FleetHarness() = default;

FleetHarness::~FleetHarness() {
  for (auto& [node, p] : agents_) p->Signal(SIGCONT);
  agents_.clear();
  controller_.reset();
  // Instance ids are the directory names under <state>/bare/instances and
  // <state>/container/containers.
  std::error_code ec;
  std::vector<std::string> ids, containers;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path(), ec)) {
    if (!e.is_directory(ec)) continue;
    std::string parent = e.path().parent_path().filename().string();
    if (parent == "instances") ids.push_back(e.path().filename().string());
    if (parent == "containers") containers.push_back(e.path().filename().string());
  }
  for (const auto& id : ids) {
    for (const auto& [pid, inst] : MarkedProcesses(id, dir_.path())) {
      if (inst == id) kill(pid, SIGKILL);
    }
  }
  for (const auto& id : containers) {
    RunCmd({"docker", "rm", "-f", absl::StrCat("dcufleet-", id)}, {}, 30);
  }
}

std::string FleetHarness::Addr() const { return absl::StrCat("127.0.0.1:", port_); }

bool FleetHarness::StartController(std::vector<std::string> extra) {
  std::filesystem::remove(Join("port"));
  std::vector<std::string> argv = {BinPath("dcu-controller"), "--listen",
                                   absl::StrCat("127.0.0.1:", port_), "--db", Join("ctl.db"),
                                   "--port-file", Join("port")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  bool has_base = false;
  for (const auto& a : extra) has_base |= a == "--instance-port-base";
  if (!has_base) {
    // Instances get ports from a base no other run on this machine is likely
    // to use: chosen once per harness, kept across controller restarts.
    if (instance_port_base_ == 0) {
      // Below the kernel's ephemeral range (32768-60999 by default): loopback
      // clients of this and other tests take ports there at random, and an
      // instance port among them collided (port_in_use) in the suite.
      instance_port_base_ = 20000 + static_cast<int>(getpid() % 600) * 20;
    }
    argv.push_back("--instance-port-base");
    argv.push_back(absl::StrCat(instance_port_base_));
  }
  controller_ = std::make_unique<ChildProcess>(argv, Join("controller.log"));
  if (!WaitFor([&] { return std::filesystem::exists(Join("port")); }, absl::Seconds(20))) {
    return false;
  }
  std::string text(absl::StripAsciiWhitespace(ReadFileOrEmpty(Join("port"))));
  return absl::SimpleAtoi(text, &port_);
}

void FleetHarness::KillController(int sig) {
  if (!controller_) return;
  controller_->Signal(sig);
  controller_->Wait(absl::Seconds(10));
}

ChildProcess* FleetHarness::StartAgent(const std::string& node, std::vector<std::string> args,
                                       std::map<std::string, std::string> env) {
  std::vector<std::string> argv = {BinPath("dcu-agent"), "--controller", Addr(), "--node", node,
                                   "--max-backoff", "0.5"};
  bool has_state = false;
  for (const auto& a : args) has_state |= a == "--state-dir";
  if (!has_state) {
    argv.push_back("--state-dir");
    argv.push_back(Join(node + "-state"));
  }
  argv.insert(argv.end(), args.begin(), args.end());
  agents_[node] = std::make_unique<ChildProcess>(argv, Join(node + ".log"), env);
  return agents_[node].get();
}

void FleetHarness::StopAgent(const std::string& node, int sig) {
  auto it = agents_.find(node);
  if (it == agents_.end()) return;
  it->second->Signal(sig);
  if (sig == SIGKILL || sig == SIGTERM) it->second->Wait(absl::Seconds(10));
}

CmdResult FleetHarness::Dcuctl(std::vector<std::string> args, double timeout_s) {
  std::vector<std::string> argv = {BinPath("dcuctl"), "--controller", Addr()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCmd(argv, {}, timeout_s);
}

nlohmann::json FleetHarness::Json(std::vector<std::string> args) {
  args.push_back("-o");
  args.push_back("json");
  CmdResult r = Dcuctl(args);
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out, nullptr, false);
}

bool FleetHarness::WaitNodeState(const std::string& node, const std::string& state,
                                 double timeout_s) {
  return WaitFor(
      [&] {
        nlohmann::json j = Json({"get", "nodes"});
        if (!j.is_object() || !j.contains("nodes")) return false;
        for (const auto& n : j["nodes"]) {
          if (n["name"] == node && n["state"] == state) return true;
        }
        return false;
      },
      absl::Milliseconds(static_cast<int64_t>(timeout_s * 1000)));
}

nlohmann::json FleetHarness::Deployment(const std::string& name) {
  return Json({"describe", "deployment", name});
}

std::string FleetHarness::Logs() const {
  std::string out = absl::StrCat("--- controller.log\n", ReadFileOrEmpty(dir_.Join("controller.log")));
  for (const auto& [node, p] : agents_) {
    absl::StrAppend(&out, "--- ", node, ".log\n", ReadFileOrEmpty(dir_.Join(node + ".log")));
  }
  return out;
}

std::map<int, std::string> FleetHarness::Marked(const std::string& prefix) const {
  return MarkedProcesses(prefix, dir_.path());
}

std::map<int, std::string> MarkedProcesses(const std::string& prefix, const std::string& under) {
  std::map<int, std::string> out;
  std::error_code ec;
  const std::string root = std::filesystem::weakly_canonical(under, ec).string() + "/";
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string env = ss.str();
    std::string key = "DCUFLEET_INSTANCE=";
    size_t pos = 0;
    while ((pos = env.find(key, pos)) != std::string::npos) {
      if (pos == 0 || env[pos - 1] == '\0') {
        size_t end = env.find('\0', pos);
        std::string id = env.substr(pos + key.size(), end - pos - key.size());
        std::error_code cwd_ec;
        std::string cwd =
            std::filesystem::read_symlink(absl::StrCat("/proc/", pid, "/cwd"), cwd_ec).string();
        if (id.rfind(prefix, 0) == 0 && !cwd_ec && (cwd + "/").rfind(root, 0) == 0) out[pid] = id;
        break;
      }
      pos += key.size();
    }
    // Zombies keep no environ; a stopped process still has one.
    auto stat = common::ReadProcStat("/proc", pid);
    if (stat.ok() && stat->state == 'Z') out.erase(pid);
  }
  closedir(d);
  return out;
}

}  // namespace dcu::testing
