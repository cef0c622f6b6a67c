#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/testing/test_env.h"

namespace dcu::testing {

struct CmdResult {
  int exit_code = -100;
  std::string out, err;
};

// Runs a command to completion (no shell), with extra environment.
CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env = {}, double timeout_s = 120);

// A controller, agents and dcuctl as real processes on loopback, in a temp dir.
class FleetHarness {
 public:
  FleetHarness();
  // Ends every instance the harness's agents started (their processes live in
  // their own sessions, so killing an agent leaves them), then the daemons.
  ~FleetHarness();
  const std::string& dir() const { return dir_.path(); }
  std::string Join(const std::string& name) const { return dir_.Join(name); }

  // Starts (or restarts on the same port and database) dcu-controller.
  bool StartController(std::vector<std::string> extra_args = {});
  void KillController(int sig = 9);
  std::string Addr() const;
  ChildProcess* controller() { return controller_.get(); }

  // Starts dcu-agent NODE with args (after --controller/--node/--state-dir).
  ChildProcess* StartAgent(const std::string& node, std::vector<std::string> args,
                           std::map<std::string, std::string> env = {});
  ChildProcess* agent(const std::string& node) { return agents_[node].get(); }
  void StopAgent(const std::string& node, int sig = 9);

  CmdResult Dcuctl(std::vector<std::string> args, double timeout_s = 120);
  nlohmann::json Json(std::vector<std::string> args);
  bool WaitNodeState(const std::string& node, const std::string& state, double timeout_s);
  // The deployment document (GetDeployment response as JSON), {} if absent.
  nlohmann::json Deployment(const std::string& name);
  std::string Logs() const;
  // MarkedProcesses of this harness's agents.
  std::map<int, std::string> Marked(const std::string& instance_prefix) const;

 private:
  TempDir dir_;
  int port_ = 0;
  int instance_port_base_ = 0;
  std::unique_ptr<ChildProcess> controller_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
  std::map<std::string, std::vector<std::string>> agent_argv_;
};

// Processes on this machine whose environment carries DCUFLEET_INSTANCE with
// this prefix (the instances dcufleet started) and whose working directory is
// under `under` (a bare instance runs in its instance directory, inside its
// agent's --state-dir), as pid -> instance id. Scoped so that another test
// on this host deploying the same model name is not counted.
std::map<int, std::string> MarkedProcesses(const std::string& instance_prefix,
                                           const std::string& under);

}  // namespace dcu::testing
