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
  std::unique_ptr<ChildProcess> StartController(int port, std::vector<std::string> extra = {}) {
    std::filesystem::remove(dir_.Join("port"));
    std::vector<std::string> argv{BinPath("dcu-controller"), "--listen",
                                  absl::StrCat("127.0.0.1:", port), "--db", dir_.Join("ctl.db"),
                                  "--port-file", dir_.Join("port"), "--not-ready-after", "1.5",
                                  "--lost-after", "30", "--status-interval", "0.3"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto c = std::make_unique<ChildProcess>(argv, dir_.Join("controller.log"));
    EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_.Join("port")); },
                        absl::Seconds(10)))
        << c->Log();
    std::string text(absl::StripAsciiWhitespace(testing::ReadFileOrEmpty(dir_.Join("port"))));
    EXPECT_TRUE(absl::SimpleAtoi(text, &port_));
    return c;
  }
  std::unique_ptr<ChildProcess> StartAgent(const std::string& node, const std::string& fixture) {
    return StartAgentAt(node, Fixture(fixture));
  }
  std::unique_ptr<ChildProcess> StartAgentAt(const std::string& node, const std::string& root,
                                             std::vector<std::string> extra = {}) {
    // Its own state directory: the default (/var/lib/dcufleet/agent) would be
    // shared with every other test's agent on this host.
    std::vector<std::string> argv{BinPath("dcu-agent"), "--controller", Addr(), "--node", node,
                                  "--root", root, "--state-dir", dir_.Join(node + "-state"),
                                  "--max-backoff", "0.5"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<ChildProcess>(argv, dir_.Join(node + ".log"));
  }
  // A copy of a fixture tree the test may change (devices go away, memory moves).
  std::string CopyFixture(const std::string& fixture) {
    std::string root = dir_.Join(fixture + "-root");
    std::filesystem::copy(Fixture(fixture), root, std::filesystem::copy_options::recursive);
    return root;
  }
  // Takes device `card` (DRM cardN, KFD topology node N) out of the tree.
  static void RemoveDevice(const std::string& root, int card) {
    std::filesystem::remove_all(absl::StrCat(root, "/sys/class/kfd/kfd/topology/nodes/", card));
    std::filesystem::remove_all(absl::StrCat(root, "/sys/class/drm/card", card));
  }
  static void SetVramUsed(const std::string& root, int card, int64_t bytes) {
    std::ofstream(absl::StrCat(root, "/sys/class/drm/card", card, "/device/mem_info_vram_used"))
        << bytes << "\n";
  }
  // The node's reports counters (issue 22), 0 when absent.
  int64_t Reports(const std::string& node, const std::string& kind) {
    auto nodes = NodesByName();
    if (!nodes.count(node) || !nodes[node].contains("reports")) return 0;
    const auto& r = nodes[node]["reports"];
    if (!r.contains(kind)) return 0;
    // proto3 JSON writes int64 as a string.
    int64_t v = 0;
    if (r[kind].is_string()) {
      if (!absl::SimpleAtoi(r[kind].get<std::string>(), &v)) return -1;
      return v;
    }
    return r[kind].get<int64_t>();
  }
  int Devices(const std::string& node) {
    auto nodes = NodesByName();
    if (!nodes.count(node)) return -1;
    return static_cast<int>(nodes[node]["inventory"]["devices"].size());
  }
  // devices[i].host_used.bytes as the controller shows it ("" when absent).
  std::string HostUsed(const std::string& node, int i) {
    auto nodes = NodesByName();
    if (!nodes.count(node)) return "";
    const auto& d = nodes[node]["inventory"]["devices"];
    if (static_cast<int>(d.size()) <= i || !d[i].contains("host_used") ||
        !d[i]["host_used"].contains("bytes")) {
      return "";
    }
    const auto& b = d[i]["host_used"]["bytes"];
    return b.is_string() ? b.get<std::string>() : b.dump();
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
  // The start-up line names the malloc the controller runs on: tcmalloc
  // when the build links it (the default), so a build that silently lost
  // it (an --as-needed linker dropping an unreferenced library) fails here.
  EXPECT_THAT(controller->Log(), HasSubstr(DCU_CONTROLLER_MALLOC));
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

// Issue 22: the agent sends its inventory only when it changed; the
// periodic report is its digest and the memory figures. A change (a device
// leaving the tree) reaches the controller, memory moves reach it without a
// full inventory, and after a controller restart (the agent reconnects) the
// controller holds the full, current inventory again.
TEST_F(FleetLinkTest, InventoryTravelsWhenItChangedAndAfterAControllerRestart) {
  const std::string root = CopyFixture("k100ai-8x");
  auto controller = StartController(0);
  // The host's listeners are part of the inventory (ports other services
  // hold) and change as tests beside this one start servers: this agent
  // reads empty socket tables, so that only the fixture's changes travel.
  const std::string tables = dir_.Join("no-listeners");
  std::filesystem::create_directories(tables);
  std::ofstream(tables + "/tcp") << "  sl  local_address rem_address   st\n";
  auto agent = StartAgentAt("node-k100", root, {"--proc-net", tables});
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY") &&
                                   Reports("node-k100", "delta") >= 3; },
                      absl::Seconds(15)))
      << controller->Log() << agent->Log();
  EXPECT_EQ(Devices("node-k100"), 8);
  // Unchanged: no full inventory beyond the Hello's while deltas flow.
  const int64_t full0 = Reports("node-k100", "full");
  const int64_t delta0 = Reports("node-k100", "delta");
  EXPECT_GE(full0, 1);
  ASSERT_TRUE(WaitFor([&] { return Reports("node-k100", "delta") >= delta0 + 4; }, absl::Seconds(10)));
  EXPECT_EQ(Reports("node-k100", "full"), full0);
  EXPECT_EQ(Reports("node-k100", "inventory_requests"), 0);

  // Memory moves: it reaches the controller.
  SetVramUsed(root, 1, 3LL << 30);
  ASSERT_TRUE(WaitFor([&] { return HostUsed("node-k100", 0) == std::to_string(3LL << 30); },
                      absl::Seconds(10)))
      << HostUsed("node-k100", 0);
  // (Not asserted: no full inventory. On this tree the move also changes
  // a memory finding, which is part of the digest, so one may come.)
  const int64_t full1 = Reports("node-k100", "full");

  // A device leaves: the next report carries the inventory.
  RemoveDevice(root, 8);
  ASSERT_TRUE(WaitFor([&] { return Devices("node-k100") == 7; }, absl::Seconds(10)))
      << agent->Log();
  EXPECT_GT(Reports("node-k100", "full"), full1);

  // The controller restarts; meanwhile another device leaves. The agent
  // reconnects with its full inventory; deltas follow against it.
  int port = port_;
  controller->Signal(SIGKILL);
  controller->Wait(absl::Seconds(5));
  RemoveDevice(root, 7);
  controller = StartController(port);
  ASSERT_EQ(port_, port);
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY") &&
                                   Reports("node-k100", "delta") >= 2; },
                      absl::Seconds(15)))
      << controller->Log() << agent->Log();
  EXPECT_EQ(Devices("node-k100"), 6);
  EXPECT_GE(Reports("node-k100", "full"), 1);
  SetVramUsed(root, 1, 5LL << 30);
  EXPECT_TRUE(WaitFor([&] { return HostUsed("node-k100", 0) == std::to_string(5LL << 30); },
                      absl::Seconds(10)));
}

// An agent from before issue 22 (--inventory-delta=false: no digest, the
// inventory in every report) against this controller, and this agent
// against a controller that does not take digests (--inventory-delta=false,
// as one from before: its Welcome does not say it accepts them).
// One agent per state directory. A second one would adopt the first one's
// instances and stop them at its first assignment; it is refused at start,
// naming the holder. The lock is the kernel's: a SIGKILLed agent leaves
// nothing behind that blocks its restart.
TEST_F(FleetLinkTest, ASecondAgentOnOneStateDirectoryIsRefusedNamingTheFirst) {
  auto controller = StartController(0);
  auto first = StartAgent("node-k100", "k100ai-8x");
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY"); }, absl::Seconds(10)))
      << controller->Log() << first->Log();

  const std::string state = dir_.Join("node-k100-state");
  CmdResult second = RunCmd({BinPath("dcu-agent"), "--controller", Addr(), "--node", "node-other",
                             "--root", Fixture("k100ai-8x"), "--state-dir", state,
                             "--container-cli", "none"});
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_THAT(second.err, HasSubstr(absl::StrCat("--state-dir '", state, "' is in use")));
  EXPECT_THAT(second.err, HasSubstr(absl::StrCat("dcu-agent pid ", first->pid(), ", node 'node-k100'")));
  EXPECT_THAT(second.err, HasSubstr("give this one its own --state-dir"));
  EXPECT_TRUE(NodesByName().count("node-other") == 0) << "the refused agent registered";

  first->Signal(SIGKILL);
  first->Wait(absl::Seconds(5));
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_NOT_READY"); }, absl::Seconds(5)));
  auto again = StartAgent("node-k100", "k100ai-8x");
  ASSERT_TRUE(WaitFor([&] { return again->Running() && NodeState("node-k100", "NODE_READY"); },
                      absl::Seconds(10)))
      << again->Log();
  EXPECT_THAT(again->Log(), ::testing::Not(HasSubstr("is in use")));
}

TEST_F(FleetLinkTest, OlderAgentsAndOlderControllersGetFullInventories) {
  for (const bool old_agent : {true, false}) {
    SCOPED_TRACE(old_agent ? "older agent" : "older controller");
    testing::TempDir sub;
    const std::string root = sub.Join("root");
    std::filesystem::copy(Fixture("k100ai-8x"), root, std::filesystem::copy_options::recursive);
    auto controller = old_agent ? StartController(0) : StartController(0, {"--inventory-delta=false"});
    auto agent = old_agent ? StartAgentAt("node-k100", root, {"--inventory-delta=false"})
                           : StartAgentAt("node-k100", root);
    ASSERT_TRUE(WaitFor([&] { return NodeState("node-k100", "NODE_READY") &&
                                     Reports("node-k100", "full") >= 4; },
                        absl::Seconds(15)))
        << controller->Log() << agent->Log();
    EXPECT_EQ(Reports("node-k100", "delta"), 0);
    SetVramUsed(root, 1, 7LL << 30);
    RemoveDevice(root, 8);
    EXPECT_TRUE(WaitFor([&] { return Devices("node-k100") == 7 &&
                                     HostUsed("node-k100", 0) == std::to_string(7LL << 30); },
                        absl::Seconds(10)));
    EXPECT_EQ(Reports("node-k100", "delta"), 0);
    agent->Signal(SIGKILL);
    agent->Wait(absl::Seconds(5));
    controller->Signal(SIGKILL);
    controller->Wait(absl::Seconds(5));
  }
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
