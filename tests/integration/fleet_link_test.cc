// Real processes on loopback: a dcu-controller, two dcu-agents reading fixture
// trees, and dcuctl, exactly as a person would run them.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/process_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using testing::BinPath;
using testing::ChildProcess;
using testing::SourceDir;
using testing::WaitFor;

std::string Fixture(const std::string& name) {
  return SourceDir() + "/tests/fixtures/sysfs/" + name + "/root";
}

struct CmdResult {
  int exit_code;
  std::string out, err;
};

CmdResult RunCmd(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
  common::SubprocessRunner runner;
  common::ProcessOptions o;
  o.timeout = absl::Seconds(20);
  o.env = std::move(env);
  o.env["DCUFLEET_CONTROLLER"] = "";
  auto r = runner.Run(argv, o);
  if (!r.ok()) return {-100, "", std::string(r.status().message())};
  return {r->exit_code, r->stdout_data, r->stderr_data};
}

class FleetLinkTest : public ::testing::Test {
 protected:
  std::unique_ptr<ChildProcess> StartController(int port) {
    std::filesystem::remove(dir_.Join("port"));
    auto c = std::make_unique<ChildProcess>(
        std::vector<std::string>{BinPath("dcu-controller"), "--listen",
                                 absl::StrCat("127.0.0.1:", port), "--db", dir_.Join("ctl.db"),
                                 "--port-file", dir_.Join("port"), "--not-ready-after", "1.5",
                                 "--lost-after", "30", "--status-interval", "0.3"},
        dir_.Join("controller.log"));
    EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_.Join("port")); },
                        absl::Seconds(10)))
        << c->Log();
    std::string text(absl::StripAsciiWhitespace(testing::ReadFileOrEmpty(dir_.Join("port"))));
    EXPECT_TRUE(absl::SimpleAtoi(text, &port_));
    return c;
  }
  std::unique_ptr<ChildProcess> StartAgent(const std::string& node, const std::string& fixture) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{BinPath("dcu-agent"), "--controller", Addr(), "--node", node,
                                 "--root", Fixture(fixture), "--max-backoff", "0.5"},
        dir_.Join(node + ".log"));
  }
  std::string Addr() const { return absl::StrCat("127.0.0.1:", port_); }
  nlohmann::json GetNodes() {
    CmdResult r = RunCmd({BinPath("dcuctl"), "--controller", Addr(), "get", "nodes", "-o", "json"});
    if (r.exit_code != 0) return nlohmann::json::object();
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  std::map<std::string, nlohmann::json> NodesByName() {
    std::map<std::string, nlohmann::json> out;
    nlohmann::json j = GetNodes();
    if (!j.is_object() || !j.contains("nodes")) return out;
    for (auto& n : j["nodes"]) out[n["name"].get<std::string>()] = n;
    return out;
  }
  bool NodeState(const std::string& name, const std::string& state) {
    auto nodes = NodesByName();
    return nodes.count(name) && nodes[name]["state"] == state;
  }

  testing::TempDir dir_;
  int port_ = 0;
};

TEST_F(FleetLinkTest, TwoAgentsRegisterSurviveKillsAndControllerRestart) {
  auto controller = StartController(0);
  auto agent_a = StartAgent("node-k100", "k100ai-8x");
  auto agent_b = StartAgent("node-z100", "z100-4x");

  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY") &&
                                   NodeState("node-z100", "NODE_READY"); },
                      absl::Seconds(10)))
      << controller->Log() << agent_a->Log();
  auto nodes = NodesByName();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes["node-k100"]["inventory"]["devices"].size(), 8u);
  EXPECT_EQ(nodes["node-z100"]["inventory"]["devices"].size(), 4u);
  EXPECT_EQ(nodes["node-k100"]["inventory"]["devices"][0]["arch"], "gfx928");
  EXPECT_EQ(nodes["node-z100"]["inventory"]["devices"][0]["arch"], "gfx906");
  const std::string id_a = nodes["node-k100"]["node_id"];
  const std::string id_b = nodes["node-z100"]["node_id"];

  // SIGKILL one agent: NotReady within the grace (1.5 s) plus a tick.
  agent_a->Signal(SIGKILL);
  agent_a->Wait(absl::Seconds(5));
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_NOT_READY"); }, absl::Seconds(4)))
      << controller->Log();
  EXPECT_TRUE(NodeState("node-z100", "NODE_READY"));

  // Restart it: Ready again, same node row.
  agent_a = StartAgent("node-k100", "k100ai-8x");
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY"); }, absl::Seconds(10)));
  EXPECT_EQ(NodesByName()["node-k100"]["node_id"], id_a);

  // SIGKILL the controller and restart it on the same port and database:
  // both agents come back on their own, no duplicates, same ids.
  int port = port_;
  controller->Signal(SIGKILL);
  controller->Wait(absl::Seconds(5));
  controller = StartController(port);
  ASSERT_EQ(port_, port);
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY") &&
                                   NodeState("node-z100", "NODE_READY"); },
                      absl::Seconds(15)))
      << controller->Log() << agent_b->Log();
  nodes = NodesByName();
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes["node-k100"]["node_id"], id_a);
  EXPECT_EQ(nodes["node-z100"]["node_id"], id_b);

  // And describe works on the live fleet.
  CmdResult d = RunCmd({BinPath("dcuctl"), "--controller", Addr(), "describe", "node", "node-z100"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("gfx906"));
  EXPECT_THAT(d.out, HasSubstr("Z100"));
  CmdResult missing =
      RunCmd({BinPath("dcuctl"), "--controller", Addr(), "describe", "node", "node-none"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr("'node-none' not found"));
}

TEST(BadInput, CorruptDatabaseIsOneClearLine) {
  testing::TempDir dir;
  std::string db = dir.Join("corrupt.db");
  std::ofstream(db) << std::string(4096, '\x7f');
  CmdResult r = RunCmd({BinPath("dcu-controller"), "--listen", "127.0.0.1:0", "--db", db});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(db));
  EXPECT_THAT(r.err, HasSubstr("not a database"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(BadInput, UnwritableDatabasePathIsOneClearLine) {
  testing::TempDir dir;
  std::ofstream(dir.Join("afile")) << "x";
  std::string db = dir.Join("afile/sub/ctl.db");
  CmdResult r = RunCmd({BinPath("dcu-controller"), "--listen", "127.0.0.1:0", "--db", db});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(db));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(BadInput, UnknownFlagsAreRefused) {
  for (const char* bin : {"dcu-controller", "dcu-agent", "dcuctl"}) {
    std::vector<std::string> argv = {BinPath(bin)};
    if (std::string(bin) == "dcuctl") {
      argv.push_back("get");
      argv.push_back("nodes");
    }
    argv.push_back("--no-such-flag");
    CmdResult r = RunCmd(argv);
    EXPECT_EQ(r.exit_code, 2) << bin;
    EXPECT_THAT(r.err + r.out, HasSubstr("--no-such-flag")) << bin;
  }
}

// Issue 20: inside a Slurm job, a device list the agent cannot read stops
// it (reporting devices another job holds is worse than not starting);
// --slurm off ignores the job.
TEST(BadInput, HostileSlurmAllocationIsRefusedAtStartup) {
  testing::TempDir dir;
  CmdResult r = RunCmd({BinPath("dcu-agent"), "--controller", "127.0.0.1:1", "--node", "n1", "--state-dir",
                        dir.Join("state"), "--runtimes", "bare"},
                       {{"SLURM_JOB_ID", "12"}, {"SLURM_JOB_GPUS", "0,GPU-5e1c"}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("dcu-agent: inside a Slurm job: SLURM_JOB_GPUS '0,GPU-5e1c': item 'GPU-5e1c' is "
                               "not a device index 0..1023 or a range of them (device UUIDs are not supported"));
  CmdResult off = RunCmd({BinPath("dcu-agent"), "--controller", "127.0.0.1:1", "--node", "n1", "--state-dir",
                          dir.Join("state"), "--runtimes", "bare", "--slurm", "nonsense"},
                         {{"SLURM_JOB_ID", "12"}});
  EXPECT_EQ(off.exit_code, 2) << off.err;
  EXPECT_THAT(off.err, HasSubstr("--slurm"));
}

TEST(BadInput, UnknownRuntimeKindIsRefusedAtStartup) {
  testing::TempDir dir;
  std::string state = dir.Join("state");
  CmdResult r = RunCmd({BinPath("dcu-agent"), "--controller", "127.0.0.1:1", "--node", "n1",
                        "--state-dir", state, "--runtimes", "bare,slurm"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--runtimes: unknown runtime 'slurm' (known: bare, container, fake)"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Refused before anything was set up.
  EXPECT_FALSE(std::filesystem::exists(state));
}

TEST(BadInput, NonLoopbackListenWithoutTlsIsRefused) {
  testing::TempDir dir;
  CmdResult r = RunCmd({BinPath("dcu-controller"), "--listen", "0.0.0.0:0", "--db", dir.Join("x.db")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("without TLS"));
}

TEST(BadInput, UnreachableControllerNamesTheAddress) {
  CmdResult r = RunCmd({BinPath("dcuctl"), "--controller", "127.0.0.1:1", "get", "nodes"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_THAT(r.err, HasSubstr("'127.0.0.1:1'"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(BadInput, MalformedTopologyFileIsReportedWithItsPath) {
  testing::TempDir dir;
  std::filesystem::copy(Fixture("z100-4x"), dir.Join("root"),
                        std::filesystem::copy_options::recursive);
  std::string props = dir.Join("root/sys/class/kfd/kfd/topology/nodes/2/properties");
  std::ofstream(props, std::ios::app) << "gfx_target_version banana\n";
  CmdResult r = RunCmd({BinPath("dcu-agent"), "inventory", "--root", dir.Join("root")});
  // A finding (exit 1), not a crash; the other devices are still reported.
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nodes/2/properties' line"));
  EXPECT_THAT(r.out, HasSubstr("banana"));
  EXPECT_THAT(r.out, HasSubstr("0000:0d:00.0"));
}

}  // namespace
}  // namespace dcu
