// dcuctl as a kubectl user types it (issue 16): typos get "unknown command"
// and the closest commands; singular, plural and short kinds all work.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/strings/str_join.h"
#include "controller/store/sqlite_store.h"
#include "dcuctl/suggest.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/test_env.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A child dcuctl's environment: no $DCUFLEET_CONTROLLER, no user's contexts.
const std::map<std::string, std::string> kIsolated = {
    {"DCUFLEET_CONTROLLER", ""}, {"DCUCONFIG", "/nonexistent/dcuctl-test/config"}};

testing::CmdResult Dcuctl(std::vector<std::string> args) {
  // A controller address nothing listens on: these must be answered before
  // any call is made.
  std::vector<std::string> argv = {testing::BinPath("dcuctl"), "--controller", "127.0.0.1:1",
                                   "--timeout", "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCmd(argv, {}, 20);
}

TEST(DcuctlTypos, UnknownCommandsNameTheClosest) {
  struct Case {
    std::vector<std::string> args;
    std::string unknown, suggestion;
  } cases[] = {
      {{"gte", "nodes"}, "unknown command 'gte' for 'dcuctl'", "Did you mean 'get'?"},
      {{"get", "nodez"}, "unknown command 'nodez' for 'dcuctl get'", "Did you mean 'get nodes'?"},
      {{"get", "dep"}, "unknown command 'dep' for 'dcuctl get'", "'get deployments'"},
      {{"-o", "json", "descibe", "node", "x"}, "unknown command 'descibe' for 'dcuctl'",
       "Did you mean 'describe'?"},
  };
  for (const Case& c : cases) {
    testing::CmdResult r = Dcuctl(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.unknown)) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.suggestion)) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("A subcommand is required"))) << r.err;
  }
  // Nothing close: no guess, still the command named and where to look.
  testing::CmdResult r = Dcuctl({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate' for 'dcuctl'"));
  EXPECT_THAT(r.err, Not(HasSubstr("Did you mean")));
  EXPECT_THAT(r.err, HasSubstr("Run 'dcuctl --help'"));
}

TEST(DcuctlKinds, SingularPluralAndShortFormsAreAccepted) {
  // Parsed, then the (absent) controller is tried: exit 4, not a usage error.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"get", "node"}, {"get", "no"}, {"get", "deploy"}, {"get", "stack"},
           {"describe", "nodes", "n1"}, {"describe", "no", "n1"},
           {"describe", "deployments", "d1"}, {"describe", "stacks", "s1"},
           {"delete", "deployments", "d1"},
           // kubectl's KIND/NAME where dcuctl has KIND NAME, and the other
           // way round; the count before the object, as in kubectl's example.
           {"describe", "deployment/d1"}, {"get", "deploy/d1"}, {"describe", "no/n1"},
           {"describe", "stack/s1"}, {"delete", "deployments/d1", "--wait"},
           {"scale", "deployment/d1", "--replicas", "2"}, {"scale", "--replicas=2", "deploy/d1"},
           // kubectl's scale to zero is a scale like any other.
           {"scale", "deployment", "d1", "--replicas", "0"}, {"scale", "--replicas=0", "deploy/d1"},
           {"rollout", "status", "deployment", "d1"}, {"wait", "--for=delete", "deployment", "d1"},
           {"logs", "deployment/d1"}, {"delete", "deployment", "d1", "d2"},
           {"delete", "deploy/d1", "deployment/d2", "--wait"}}) {
    testing::CmdResult r = Dcuctl(args);
    EXPECT_EQ(r.exit_code, 4) << absl::StrJoin(args, " ") << ": " << r.err;
  }
  // What is refused before any call, and why.
  struct Refused {
    std::vector<std::string> args;
    std::string why;
  } refused[] = {
      {{"scale", "deployment", "d1"}, "scale needs --replicas N"},
      {{"scale", "deployment", "d1", "--replicas", "257"}, "--replicas: 257 is outside 0-256"},
      {{"scale", "--replicas=-1", "deploy/d1"}, "--replicas: -1 is outside 0-256"},
      // A deploy is asked for to run the model: zero is a scale.
      {{"deploy", "qwen3-32b", "--replicas", "0"},
       "a deploy starts at least one replica; to keep a deployment with none running, scale it: "
       "dcuctl scale deployment NAME --replicas 0"},
      {{"logs", "node/n1"}, "logs takes a deployment"},
      {{"rollout", "status", "pod", "x"}, "'pod' followed by 'x'"},
      {{"rollout", "status", "node", "n1"}, "rollout status takes deployment/NAME"},
      {{"wait", "--for=delete", "deployment/d1", "extra"}, "'deployment/d1' followed by 'extra'"},
      {{"describe", "pod/x"}, "unknown command 'pod/x' for 'dcuctl describe'"},
  };
  for (const Refused& c : refused) {
    testing::CmdResult r = Dcuctl(c.args);
    EXPECT_EQ(r.exit_code, 2) << absl::StrJoin(c.args, " ") << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.why)) << absl::StrJoin(c.args, " ");
  }
}

TEST(DcuctlAddress, ANonsenseAddressIsABadAddress) {
  testing::CmdResult r =
      testing::RunCmd({testing::BinPath("dcuctl"), "--controller", "nonsense", "get", "nodes"}, {}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("controller address 'nonsense' is not HOST:PORT"));
  EXPECT_THAT(r.err, Not(HasSubstr("plaintext")));
  // A remote HOST:PORT without TLS is still refused for what it is.
  r = testing::RunCmd({testing::BinPath("dcuctl"), "--controller", "10.1.2.3:7070", "get", "nodes"},
                      {}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("plaintext"));
}

// Issue 16: nothing showed which fleet you are on, and an empty
// $DCUFLEET_CONTROLLER silently meant the default port.
TEST(DcuctlVersion, SaysWhichControllerAndWhy) {
  testing::CmdResult r = testing::RunCmd(
      {"/usr/bin/env", "DCUFLEET_CONTROLLER=", testing::BinPath("dcuctl"), "--timeout", "1", "version"},
      {}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("$DCUFLEET_CONTROLLER is set but empty; unset it"));
  r = testing::RunCmd({"/usr/bin/env", "-u", "DCUFLEET_CONTROLLER", testing::BinPath("dcuctl"),
                       "--timeout", "1", "version"},
                      {}, 20);
  EXPECT_THAT(r.out, HasSubstr("Context: none"));
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:7070 (from the default, plaintext)"));
  r = testing::RunCmd({"/usr/bin/env", "DCUFLEET_CONTROLLER=127.0.0.1:1", testing::BinPath("dcuctl"),
                       "--timeout", "1", "version"},
                      {}, 20);
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:1 (from $DCUFLEET_CONTROLLER"));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  r = testing::RunCmd({testing::BinPath("dcuctl"), "--controller", "127.0.0.1:2", "--timeout", "1",
                       "version"},
                      {}, 20);
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:2 (from --controller"));
}

TEST(EditDistance, CountsASwapAsOneSlip) {
  EXPECT_EQ(dcuctl::EditDistance("gte", "get"), 1);
  EXPECT_EQ(dcuctl::EditDistance("nodez", "nodes"), 1);
  EXPECT_EQ(dcuctl::EditDistance("", "abc"), 3);
  EXPECT_EQ(dcuctl::EditDistance("describe", "describe"), 0);
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// A controller with one deployment (no node can take it: it waits,
// Unschedulable) and one node, for the commands that read them.
class DcuctlFleet : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.StartController({"--status-interval", "0.5", "--reconcile-interval", "0.2"}));
    h_.StartAgent("node-k100", {"--root", testing::SourceDir() + "/tests/fixtures/sysfs/k100ai-8x/root",
                                "--proc_root", "/proc", "--container-cli", "none", "--device_probe",
                                "sysfs_kfd"});
    ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 30)) << h_.Logs();
    testing::CmdResult d = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "4", "--node", "nowhere"});
    ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  }
  testing::FleetHarness h_;
};

// kubectl's cordon / uncordon through the real controller: the node shows
// Ready,SchedulingDisabled and why, a placement there is refused naming it,
// the cordon survives a controller restart (the store keeps it), and
// uncordon ends it. drain on a node running nothing is drained at once.
TEST_F(DcuctlFleet, CordonShowsRefusesSurvivesARestartAndUncordonEndsIt) {
  testing::CmdResult r = h_.Dcuctl({"cordon", "node-k100", "--reason", "firmware update"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "node/node-k100 cordoned\n");
  auto cordoned = [&] {
    testing::CmdResult g = h_.Dcuctl({"get", "nodes", "--no-headers"});
    return g.out.find("Ready,SchedulingDisabled") != std::string::npos;
  };
  EXPECT_TRUE(cordoned());
  r = h_.Dcuctl({"describe", "node", "node-k100"});
  EXPECT_THAT(r.out, HasSubstr("Cordoned:       firmware update; since ")) << r.out;
  r = h_.Dcuctl({"deploy", "qwen3-32b", "--name", "pinned", "--tp", "4", "--node", "node-k100", "--dry-run"});
  EXPECT_THAT(r.out + r.err, HasSubstr("node is cordoned (firmware update)")) << r.out << r.err;
  h_.KillController(SIGKILL);
  ASSERT_TRUE(h_.StartController({"--status-interval", "0.5", "--reconcile-interval", "0.2"})) << h_.Logs();
  ASSERT_TRUE(h_.WaitNodeState("node-k100", "NODE_READY", 30)) << h_.Logs();
  EXPECT_TRUE(cordoned()) << "kept across a controller restart and the agent's reconnect";
  r = h_.Dcuctl({"uncordon", "node/node-k100"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "node/node-k100 uncordoned\n");
  EXPECT_FALSE(cordoned());
  r = h_.Dcuctl({"drain", "node-k100", "--wait", "--timeout", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "node/node-k100 draining\nnode/node-k100 drained\n");
  EXPECT_EQ(h_.Dcuctl({"cordon", "nowhere"}).exit_code, 3);
  EXPECT_EQ(h_.Dcuctl({"cordon", "deployment/x"}).exit_code, 2);
  auto events = h_.Dcuctl({"get", "events", "--for", "node/node-k100"});
  EXPECT_THAT(events.out, HasSubstr("Cordoned")) << events.out;
  EXPECT_THAT(events.out, HasSubstr("Uncordoned")) << events.out;
}

TEST_F(DcuctlFleet, OutputNameJsonpathAndNoHeaders) {
  testing::CmdResult r = h_.Dcuctl({"get", "deployments", "-o", "name"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment/qwen3-32b\n");
  r = h_.Dcuctl({"get", "nodes", "-o", "name"});
  EXPECT_EQ(r.out, "node/node-k100\n") << r.err;
  r = h_.Dcuctl({"get", "node", "node-k100", "-o", "name"});
  EXPECT_EQ(r.out, "node/node-k100\n") << r.err;
  // KIND/NAME names the same objects (kubectl's form).
  r = h_.Dcuctl({"get", "deploy/qwen3-32b", "-o", "name"});
  EXPECT_EQ(r.out, "deployment/qwen3-32b\n") << r.err;
  r = h_.Dcuctl({"get", "nodes/node-k100", "-o", "name"});
  EXPECT_EQ(r.out, "node/node-k100\n") << r.err;
  r = h_.Dcuctl({"describe", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Name: +qwen3-32b\n")) << r.out;
  r = h_.Dcuctl({"rollout", "status", "deployment", "qwen3-32b", "--timeout", "1"});
  // Its node does not exist: exit 5, unschedulable, naming it.
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("deployment 'qwen3-32b' cannot be scheduled")) << r.err;
  // rollout undo: nothing to go back to yet; after a rollout, back to the
  // spec before it.
  r = h_.Dcuctl({"rollout", "undo", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no earlier spec to roll back to"));
  r = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "4", "--node", "nowhere", "--max-model-len", "4096"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("max_model_len 8192 -> 4096"));
  r = h_.Dcuctl({"get", "deploy/qwen3-32b", "-o", "jsonpath={.spec.max_model_len}"});
  EXPECT_EQ(r.out, "4096") << r.err;
  r = h_.Dcuctl({"rollout", "undo", "deployment", "qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment \"qwen3-32b\" rolled back (rolling out: max_model_len 4096 -> 8192)"));
  r = h_.Dcuctl({"get", "deploy/qwen3-32b", "-o", "jsonpath={.spec.max_model_len}"});
  EXPECT_EQ(r.out, "8192") << r.err;
  // The undo was revision 3, revision 1's spec again: 1 left the history.
  r = h_.Dcuctl({"rollout", "history", "deploy/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n2 +[^\n]*max_model_len 8192 -> 4096\n")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n3 \\(current\\) +[^\n]*max_model_len 4096 -> 8192\n")) << r.out;
  EXPECT_THAT(r.out, Not(::testing::ContainsRegex("\n1 "))) << r.out;
  r = h_.Dcuctl({"rollout", "history", "deploy/qwen3-32b", "--revision", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment/qwen3-32b with revision #2\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("  max_model_len: \"4096\"\n")) << r.out;
  r = h_.Dcuctl({"rollout", "undo", "deploy/qwen3-32b", "--to-revision", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no revision 1 (kept: 2, 3, the last the current one)")) << r.err;
  r = h_.Dcuctl({"rollout", "undo", "deploy/qwen3-32b", "--to-revision", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("already runs revision 3 (unchanged)")) << r.out;
  r = h_.Dcuctl({"rollout", "undo", "deploy/qwen3-32b", "--to-revision=2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("rolled back to revision 2's spec (rolling out: max_model_len 8192 -> 4096)")) << r.out;
  nlohmann::json history = h_.Json({"rollout", "history", "deployment/qwen3-32b"});
  EXPECT_EQ(history["current"], 4) << history.dump();
  ASSERT_EQ(history["revisions"].size(), 2u) << history.dump();
  EXPECT_EQ(history["revisions"][0]["revision"], 3) << history.dump();
  EXPECT_EQ(history["revisions"][1]["spec"]["max_model_len"], "4096") << history.dump();
  r = h_.Dcuctl({"rollout", "undo", "deploy/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = h_.Dcuctl({"get", "deploy/qwen3-32b", "-o", "jsonpath={.spec.max_model_len}"});
  EXPECT_EQ(r.out, "8192") << r.err;
  r = h_.Dcuctl({"get", "stacks", "-o", "name"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith("stack/")) << r.out;
  // -o name is for get.
  r = h_.Dcuctl({"describe", "deployment", "qwen3-32b", "-o", "name"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("-o name is for 'dcuctl get'"));

  // jsonpath over a listing ({.items}, as kubectl) and over one object.
  r = h_.Dcuctl({"get", "deploy", "-o", "jsonpath={.items[*].spec.name}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "qwen3-32b");
  r = h_.Dcuctl({"get", "nodes", "-o",
                 R"(jsonpath={range .items[*]}{.name}:{.state}{"\n"}{end})"});
  EXPECT_EQ(r.out, "node-k100:NODE_READY\n") << r.err;
  r = h_.Dcuctl({"get", "deployment", "qwen3-32b", "-o=jsonpath={.spec.model}/{.spec.tp}"});
  EXPECT_EQ(r.out, "qwen3-32b/4") << r.err;
  // A malformed template: exit 2, naming the column, before any call.
  r = h_.Dcuctl({"get", "deployments", "-o", "jsonpath={.items[0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("jsonpath: column 1: '{' is not closed by '}'"));
  r = h_.Dcuctl({"get", "deployments", "-o", "xml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown output format 'xml'"));

  // --no-headers: the rows only.
  r = h_.Dcuctl({"get", "deployments", "--no-headers"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("NAME")));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("^qwen3-32b +0/1 +"));
  r = h_.Dcuctl({"get", "nodes", "-o", "wide", "--no-headers"});
  EXPECT_THAT(r.out, Not(HasSubstr("SCHEDULABLE FREE")));
  EXPECT_THAT(r.out, ::testing::StartsWith("node-k100 "));
  r = h_.Dcuctl({"get", "nodes"});
  EXPECT_THAT(r.out, ::testing::StartsWith("NAME "));

  // -o json: RFC 3339 UTC times, no *_at_ms.
  nlohmann::json d = h_.Json({"get", "deployment", "qwen3-32b"});
  ASSERT_TRUE(d.is_object());
  std::string created = d["status"].value("created_at", "");
  EXPECT_THAT(created, ::testing::MatchesRegex(
                           "20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9][0-9][0-9]Z"))
      << d.dump(2);
  EXPECT_FALSE(d["status"].contains("created_at_ms"));
  nlohmann::json n = h_.Json({"get", "nodes"});
  EXPECT_TRUE(n["nodes"][0]["last_seen"].is_string()) << n.dump(2);
  r = h_.Dcuctl({"get", "deployment", "qwen3-32b", "-o", "yaml"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("created_at: \"?20[0-9-]+T[0-9:.]+Z"));
}

// kubectl top's words for device memory: a row per node, or per device of
// one node, from what its agent reported; a format other than the table
// and an unknown node are refused with their exit codes.
TEST_F(DcuctlFleet, TopNodesShowsDeviceMemoryByBothViews) {
  testing::CmdResult r = h_.Dcuctl({"top", "nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith("NAME ")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\nnode-k100 +8 +[^ ]")) << r.out;
  r = h_.Dcuctl({"top", "node", "node-k100", "--sort-by", "memory", "--no-headers"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 8) << r.out;
  EXPECT_THAT(r.out, HasSubstr("gfx928")) << r.out;
  r = h_.Dcuctl({"top", "nodes", "-o", "json"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("dcuctl get nodes -o json")) << r.err;
  EXPECT_EQ(h_.Dcuctl({"top", "node", "nowhere"}).exit_code, 3);
}

// kubectl logs' choices reach the controller: a replica by index, the
// attempt before the latest; what is not there is named (exit 3).
TEST_F(DcuctlFleet, LogsOfAReplicaAndOfThePreviousAttempt) {
  testing::CmdResult r = h_.Dcuctl({"logs", "qwen3-32b", "--replica", "3"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("deployment 'qwen3-32b' has no replica 3 (its replicas: 0)")) << r.err;
  r = h_.Dcuctl({"logs", "qwen3-32b", "--replica", "0", "-p"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("replica 0 of deployment 'qwen3-32b' has not launched yet")) << r.err;
  r = h_.Dcuctl({"logs", "qwen3-32b", "--instance", "qwen3-32b-1-abc", "--previous"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--instance names one attempt")) << r.err;
}

// The positions `logs -f` follows by are checked at the door: a position
// below -1 and an instance id with control characters are refused, named.
TEST_F(DcuctlFleet, LogPositionsFromACallerAreChecked) {
  auto stub = dcufleet::v1::FleetService::NewStub(
      grpc::CreateChannel(h_.Addr(), grpc::InsecureChannelCredentials()));
  auto call = [&](const dcufleet::v1::GetLogsRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    dcufleet::v1::GetLogsResponse resp;
    return stub->GetLogs(&ctx, req, &resp);
  };
  dcufleet::v1::GetLogsRequest req;
  req.set_deployment("qwen3-32b");
  req.set_since_offset(-7);
  grpc::Status s = call(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("since_offset")) << s.error_message();
  req.set_since_offset(0);
  req.set_offset_instance_id(std::string("abc\x01\n", 5));
  s = call(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("offset_instance_id")) << s.error_message();
}

TEST_F(DcuctlFleet, GetEventsAllAndForOneObject) {
  testing::CmdResult r = h_.Dcuctl({"get", "events"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Normal +Created +deployment/qwen3-32b"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Registered +node/node-k100"));
  // Newest last: the node registered before the deployment was created.
  EXPECT_LT(r.out.find("node/node-k100"), r.out.find("deployment/qwen3-32b")) << r.out;
  r = h_.Dcuctl({"get", "events", "--for", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment/qwen3-32b"));
  EXPECT_THAT(r.out, Not(HasSubstr("node/node-k100")));
  r = h_.Dcuctl({"get", "ev", "--for", "no/node-k100", "--no-headers"});
  EXPECT_THAT(r.out, HasSubstr("node/node-k100"));
  EXPECT_THAT(r.out, Not(HasSubstr("deployment/")));
  EXPECT_THAT(r.out, Not(HasSubstr("LAST SEEN")));
  r = h_.Dcuctl({"get", "events", "--for", "pod/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown kind 'pod'"));
  r = h_.Dcuctl({"get", "events", "--for", "deployment/nothing-here"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("No events for deployment/nothing-here"));
  nlohmann::json j = h_.Json({"get", "events"});
  ASSERT_FALSE(j["events"].empty()) << j.dump();
  EXPECT_EQ(j["events"][0]["kind"], "node");
  EXPECT_TRUE(j["events"][0]["at"].is_string());

  // --watch (kubectl get events -w): the table, then each new event once,
  // under it; one object's only; SIGTERM ends it with exit 0. With -o name
  // each event is its id, so "once" is checked by id.
  testing::ChildProcess watch({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get", "events",
                               "--for", "deployment/qwen3-32b", "-w"},
                              h_.Join("watch-events.log"), kIsolated);
  testing::ChildProcess ids({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get", "events", "-w",
                             "-o", "name"},
                            h_.Join("watch-event-ids.log"), kIsolated);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return watch.Log().find("Created") != std::string::npos &&
               ids.Log().find("event/") != std::string::npos;
      },
      absl::Seconds(30)))
      << watch.Log() << ids.Log();
  const size_t ids_before = Lines(ids.Log()).size();
  ASSERT_EQ(h_.Dcuctl({"delete", "deployment", "qwen3-32b"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor([&] { return watch.Log().find("Deleting") != std::string::npos; },
                               absl::Seconds(30)))
      << watch.Log();
  absl::SleepFor(absl::Milliseconds(2500));  // two more polls: nothing printed twice
  watch.Signal(SIGTERM);
  ids.Signal(SIGINT);
  EXPECT_EQ(watch.Wait(absl::Seconds(30)), 0) << watch.Log();
  EXPECT_EQ(ids.Wait(absl::Seconds(30)), 0) << ids.Log();
  std::vector<std::string> lines = Lines(watch.Log());
  ASSERT_GE(lines.size(), 3u) << watch.Log();
  EXPECT_THAT(lines[0], ::testing::StartsWith("LAST SEEN "));
  const size_t type_col = lines[0].find("TYPE");
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], HasSubstr("deployment/qwen3-32b")) << lines[i];
    EXPECT_THAT(lines[i], Not(HasSubstr("node/"))) << lines[i];
    // Lined up under the header.
    EXPECT_TRUE(lines[i].compare(type_col, 6, "Normal") == 0 || lines[i].compare(type_col, 7, "Warning") == 0)
        << lines[i];
  }
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.find(" Deleting ") != std::string::npos; }),
            1)
      << watch.Log();
  std::vector<std::string> names = Lines(ids.Log());
  EXPECT_GT(names.size(), ids_before) << ids.Log();
  int64_t last = 0;
  for (const std::string& n : names) {
    ASSERT_THAT(n, ::testing::MatchesRegex("event/[0-9]+")) << ids.Log();
    const int64_t id = std::stoll(n.substr(6));
    EXPECT_GT(id, last) << "each event once, oldest first: " << ids.Log();
    last = id;
  }
}

// More events between two polls than one ListEvents page (5,000): the
// watcher pages forward from the last it printed (after_id) and prints every
// one once, in order. Before, it asked for the newest 5,000 each poll and
// the oldest of a larger burst were never shown.
TEST_F(DcuctlFleet, WatchingEventsPagesThroughABurstLargerThanAPage) {
  testing::ChildProcess ids({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get", "events", "-w",
                             "-o", "name"},
                            h_.Join("watch-burst.log"), kIsolated);
  ASSERT_TRUE(testing::WaitFor([&] { return ids.Log().find("event/") != std::string::npos; },
                               absl::Seconds(30)))
      << ids.Log();
  // 6,001 events in one transaction, straight into the controller's own
  // store (a second writer on its SQLite file waits for the file lock).
  auto db = controller::SqliteDatabase::Open(h_.Join("ctl.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  controller::SqliteStore store(std::shared_ptr<controller::SqliteDatabase>(std::move(*db)));
  constexpr int kBurst = 6001;
  std::vector<controller::Event> burst;
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (int i = 0; i < kBurst; ++i) {
    burst.push_back({0, now_ms, "node", "burst", "Normal", "Burst", absl::StrCat("burst ", i)});
  }
  ASSERT_TRUE(store.AppendEvents(burst).ok());
  auto written = store.ListEvents("node", "burst", 0);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), static_cast<size_t>(kBurst));
  const std::string last = absl::StrCat("event/", written->back().event_id);
  ASSERT_TRUE(testing::WaitFor([&] { return ids.Log().find(last + "\n") != std::string::npos; },
                               absl::Seconds(30)))
      << "the burst's last event was never printed";
  ids.Signal(SIGINT);
  EXPECT_EQ(ids.Wait(absl::Seconds(30)), 0);
  std::set<int64_t> printed;
  int64_t previous = 0;
  for (const std::string& n : Lines(ids.Log())) {
    ASSERT_THAT(n, ::testing::MatchesRegex("event/[0-9]+")) << n;
    const int64_t id = std::stoll(n.substr(6));
    EXPECT_GT(id, previous) << "each event once, oldest first";
    previous = id;
    printed.insert(id);
  }
  int missing = 0;
  for (const auto& e : *written) missing += printed.count(e.event_id) == 0;
  EXPECT_EQ(missing, 0) << "of the burst's " << kBurst << " events";
}

// kubectl's get -o json | edit | apply -f loop: what get printed applies
// back unchanged, an edited field rolls out, a bare spec creates, YAML is
// refused with what is read instead.
TEST_F(DcuctlFleet, ApplyAFileOfWhatGetPrinted) {
  testing::CmdResult got = h_.Dcuctl({"get", "deployment", "qwen3-32b", "-o", "json"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  const std::string same = h_.Join("same.json");
  std::ofstream(same) << got.out;
  testing::CmdResult r = h_.Dcuctl({"apply", "-f", same});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' unchanged")) << r.out;

  nlohmann::json edited = nlohmann::json::parse(got.out);
  edited["spec"]["max_num_seqs"] = 32;
  const std::string changed = h_.Join("changed.json");
  std::ofstream(changed) << edited.dump(2);
  r = h_.Dcuctl({"apply", "-f", changed});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' configured (")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("max_num_seqs 16 -> 32")) << r.out;
  nlohmann::json after = h_.Json({"get", "deployment", "qwen3-32b"});
  EXPECT_EQ(after["spec"]["max_num_seqs"], 32) << after.dump();

  // The edit is a revision: rollout history lists the creation and it.
  nlohmann::json history = h_.Json({"rollout", "history", "deployment/qwen3-32b"});
  ASSERT_EQ(history["revisions"].size(), 2u) << history.dump();
  EXPECT_EQ(history["current"], 2) << history.dump();
  EXPECT_THAT(history["revisions"][0]["change"].get<std::string>(), HasSubstr("created: model qwen3-32b"));
  EXPECT_EQ(history["revisions"][1]["change"], "max_num_seqs 16 -> 32") << history.dump();
  r = h_.Dcuctl({"rollout", "history", "deploy", "qwen3-32b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rollout undo goes back to revision 1's spec")) << r.out;

  const std::string bare = h_.Join("second.json");
  std::ofstream(bare) << R"({"model": "qwen3-32b", "name": "second", "tp": 4, "node": "nowhere"})";
  r = h_.Dcuctl({"apply", "-f", bare});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'second' created")) << r.out;

  // YAML, as kubectl's manifests: what get -o yaml printed applies back
  // unchanged; a hand-written manifest of two documents creates both.
  got = h_.Dcuctl({"get", "deployment", "qwen3-32b", "-o", "yaml"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  const std::string yaml = h_.Join("q.yaml");
  std::ofstream(yaml) << got.out;
  r = h_.Dcuctl({"apply", "-f", yaml});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' unchanged")) << r.out;
  const std::string manifest = h_.Join("two.yaml");
  std::ofstream(manifest) << "model: qwen3-32b\nname: third\ntp: 4\nnode: nowhere\n---\n"
                             "spec:\n  model: qwen3-32b\n  name: fourth\n  tp: 4\n  node: nowhere\n";
  r = h_.Dcuctl({"apply", "-f", manifest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'third' created")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("deployment 'fourth' created")) << r.out;
  const std::string broken = h_.Join("broken.yaml");
  std::ofstream(broken) << "spec:\n  model: [qwen3-32b\n";
  r = h_.Dcuctl({"apply", "-f", broken});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("broken.yaml: line ")) << r.err;
  r = h_.Dcuctl({"apply", "-f", h_.Join("missing.json")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("missing.json: cannot be opened")) << r.err;
}

// A deployment scaled to zero round-trips through get -o yaml and apply -f
// at zero (`replicas: 0` is zero, not the default), and a manifest that
// says `replicas: 0` creates one at zero; `deploy` without --replicas and
// a manifest without replicas still mean one.
TEST_F(DcuctlFleet, ScaledToZeroAppliesBackAtZeroAndAManifestCanCreateOneSo) {
  testing::CmdResult r = h_.Dcuctl({"scale", "deployment", "qwen3-32b", "--replicas", "0", "--wait", "--timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' scaled to 0 replicas")) << r.out;
  nlohmann::json d = h_.Json({"get", "deployment", "qwen3-32b"});
  EXPECT_EQ(d["status"]["phase"], "DEPLOYMENT_SCALED_TO_ZERO") << d.dump();
  EXPECT_EQ(d["spec"]["replicas"], 0) << d.dump();

  testing::CmdResult got = h_.Dcuctl({"get", "deployment", "qwen3-32b", "-o", "yaml"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_THAT(got.out, HasSubstr("  replicas: 0\n")) << got.out;
  const std::string yaml = h_.Join("zero.yaml");
  std::ofstream(yaml) << got.out;
  r = h_.Dcuctl({"apply", "-f", yaml});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' unchanged")) << r.out;
  EXPECT_EQ(h_.Json({"get", "deployment", "qwen3-32b"})["status"]["phase"], "DEPLOYMENT_SCALED_TO_ZERO");

  const std::string manifest = h_.Join("parked.yaml");
  std::ofstream(manifest) << "model: qwen3-32b\nname: parked\ntp: 4\nreplicas: 0\n---\n"
                             "model: qwen3-32b\nname: one\ntp: 4\nnode: nowhere\n";
  r = h_.Dcuctl({"apply", "-f", manifest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'parked' created")) << r.out;
  nlohmann::json parked = h_.Json({"get", "deployment", "parked"});
  EXPECT_EQ(parked["status"]["phase"], "DEPLOYMENT_SCALED_TO_ZERO") << parked.dump();
  EXPECT_EQ(parked["status"]["attempts"].size(), 0u) << parked.dump();
  EXPECT_EQ(h_.Json({"get", "deployment", "one"})["spec"]["replicas"], 1);
  testing::CmdResult table = h_.Dcuctl({"get", "deployments", "--no-headers"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, ::testing::ContainsRegex("parked +0/0 +ScaledToZero")) << table.out;
}

// kubectl edit: the editor ($EDITOR, here scripts) gets the deployment as
// get -o yaml prints it; what it saves is applied. No change, a failed
// editor and a rename apply nothing, each saying so; a save that is
// refused opens the editor again with the reason, as kubectl's.
TEST_F(DcuctlFleet, EditADeploymentInTheEditor) {
  auto editor = [&](const std::string& name, const std::string& body) {
    const std::string path = h_.Join(name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  };
  auto edit = [&](const std::string& editor_cmd, const std::string& ref) {
    std::map<std::string, std::string> env = kIsolated;
    env["EDITOR"] = editor_cmd;
    env["DCUCTL_EDITOR"] = "";
    env["TMPDIR"] = h_.Join("");
    // `ref`: NAME (as `edit deployment NAME`) or KIND/NAME.
    std::vector<std::string> argv = {testing::BinPath("dcuctl"), "--controller", h_.Addr(), "edit"};
    if (ref.find('/') == std::string::npos) argv.push_back("deployment");
    argv.push_back(ref);
    return testing::RunCmd(argv, env, 60);
  };
  // Saved with a change: applied (a rollout of the new spec). YAML, as
  // kubectl edits.
  const std::string more_seqs = editor("more-seqs.sh", "sed -i 's/^  max_num_seqs: 16$/  max_num_seqs: 24/' \"$1\"");
  testing::CmdResult r = edit(more_seqs, "qwen3-32b");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' configured (")) << r.out;
  EXPECT_EQ(h_.Json({"get", "deployment", "qwen3-32b"})["spec"]["max_num_seqs"], 24);
  // -o json edits JSON.
  {
    std::map<std::string, std::string> env = kIsolated;
    env["EDITOR"] = editor("json-seqs.sh", "sed -i 's/\"max_num_seqs\": 24/\"max_num_seqs\": 28/' \"$1\"");
    env["TMPDIR"] = h_.Join("");
    r = testing::RunCmd({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "-o", "json", "edit",
                         "deployment", "qwen3-32b"}, env, 60);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(h_.Json({"get", "deployment", "qwen3-32b"})["spec"]["max_num_seqs"], 28);
  }
  // Saved as it was: nothing to do. Words in $EDITOR are its arguments.
  r = edit("sh -c true", "qwen3-32b");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Edit cancelled, no changes made.")) << r.out;
  // The editor fails: nothing applied.
  r = edit(editor("fails.sh", "exit 3"), "qwen3-32b");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("exited 3; nothing applied")) << r.err;
  r = edit(h_.Join("no-such-editor"), "qwen3-32b");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("could not be run (set $EDITOR")) << r.err;
  // A rename is not an edit of this deployment: the file opens again with
  // the reason at its top; saved again unchanged, the edit is cancelled
  // and kept to fix.
  r = edit(editor("rename.sh", "sed -i 's/^  name: qwen3-32b$/  name: other/' \"$1\""), "qwen3-32b");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("must keep its spec.name ('other' given)")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(opening the editor again)")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Edit cancelled, no valid changes were saved. Your edit is kept in ")) << r.err;
  EXPECT_EQ(h_.Dcuctl({"get", "deployment", "other"}).exit_code, 3);
  // Saved as something that does not parse: the same, the line named.
  r = edit(editor("garbage.sh", "echo 'model: [' > \"$1\""), "deploy/qwen3-32b");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(".yaml: line ")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Your edit is kept in ")) << r.err;
  // As kubectl: fixed in the second opening (where the reason is the
  // header's), it is applied.
  const std::string reason = h_.Join("reason.txt");
  r = edit(editor("fixes.sh", "if grep -q '^# \\* ' \"$1\"; then\n"
                              "  grep '^#' \"$1\" > " + reason + "\n"
                              "  sed -i 's/^  name: other$/  name: qwen3-32b/; s/^  max_num_seqs: .*$/  max_num_seqs: 20/' \"$1\"\n"
                              "else\n"
                              "  sed -i 's/^  name: qwen3-32b$/  name: other/' \"$1\"\n"
                              "fi"),
           "qwen3-32b");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("deployment 'qwen3-32b' configured (")) << r.out;
  EXPECT_EQ(h_.Json({"get", "deployment", "qwen3-32b"})["spec"]["max_num_seqs"], 20);
  std::stringstream header;
  header << std::ifstream(reason).rdbuf();
  EXPECT_THAT(header.str(), HasSubstr("# It was not applied:\n# * ")) << header.str();
  EXPECT_THAT(header.str(), HasSubstr("must keep its spec.name ('other' given)")) << header.str();
  // An editor that saves another wrong file each time (here a new name
  // each opening) is not opened for ever: ten refused saves, then the
  // last one kept to fix. It counts its openings.
  const std::string openings = h_.Join("openings.txt");
  r = edit(editor("renames-anew.sh", "echo x >> " + openings + "\n"
                                     "sed -i \"s/^  name: .*$/  name: other-$(wc -l < " + openings + ")/\" \"$1\""),
           "qwen3-32b");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("Edit cancelled: 10 saves in a row were refused")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("must keep its spec.name ('other-10' given)")) << r.err;
  {
    std::ifstream count(openings);
    EXPECT_EQ(std::count(std::istreambuf_iterator<char>(count), std::istreambuf_iterator<char>(), '\n'), 10);
  }
  // Emptied: cancelled.
  r = edit(editor("empties.sh", ": > \"$1\""), "qwen3-32b");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Edit cancelled, the file was emptied")) << r.out;
  EXPECT_EQ(edit("true", "nothing-here").exit_code, 3);
}

TEST_F(DcuctlFleet, WaitForConditionAndDeletion) {
  // Its node does not exist: it becomes Unschedulable (any case, any kind form).
  testing::CmdResult r =
      h_.Dcuctl({"wait", "--for", "condition=unschedulable", "deploy/qwen3-32b", "--timeout", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment/qwen3-32b condition met\n");
  // Never Ready here: exit 1 after the timeout, with what it is instead.
  r = h_.Dcuctl({"wait", "--for=condition=Ready", "deployment/qwen3-32b", "--timeout=1s"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("timed out after 1s waiting for condition Ready on deployment/qwen3-32b"));
  EXPECT_THAT(r.err, HasSubstr("it is Unschedulable"));
  r = h_.Dcuctl({"wait", "--for=condition=Ready", "node/node-k100", "--timeout=20s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node/node-k100 condition met"));
  // Usage errors and a missing object.
  r = h_.Dcuctl({"wait", "--for=condition=Serving", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("has no condition 'Serving' (it has Pending, Unschedulable"));
  r = h_.Dcuctl({"wait", "--for=ready", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 2);
  r = h_.Dcuctl({"wait", "--for=delete", "deployment/qwen3-32b", "--timeout=soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--timeout 'soon' is not a duration"));
  r = h_.Dcuctl({"wait", "--for=condition=Ready", "deployment/nope", "--timeout=5s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // --for=delete returns once it is gone.
  testing::ChildProcess waiter({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "wait",
                                "--for=delete", "deployment/qwen3-32b", "--timeout=30s"},
                               h_.Join("wait.log"), kIsolated);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(waiter.Running()) << waiter.Log();
  // Several names, as kubectl: one unknown does not keep the other (exit 3
  // for it, the other deleted).
  r = h_.Dcuctl({"delete", "deployment/nope", "deployment/qwen3-32b"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("'nope'"));
  EXPECT_EQ(r.out, "deployment 'qwen3-32b' deleting\n") << r.err;
  EXPECT_EQ(waiter.Wait(absl::Seconds(20)), 0) << waiter.Log();
  EXPECT_THAT(waiter.Log(), HasSubstr("deployment/qwen3-32b deleted"));
  // The controller gone: exit 4.
  h_.KillController();
  r = h_.Dcuctl({"wait", "--for=condition=Ready", "deployment/qwen3-32b", "--timeout=2s"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
}

TEST_F(DcuctlFleet, WatchPrintsTheTableThenALinePerChangeUntilStopped) {
  testing::ChildProcess list({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get",
                              "deployments", "-w"},
                             h_.Join("watch-list.log"), kIsolated);
  testing::ChildProcess nodes({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get", "no",
                               "--watch"},
                              h_.Join("watch-nodes.log"), kIsolated);
  ASSERT_TRUE(testing::WaitFor([&] { return list.Log().find("qwen3-32b") != std::string::npos; },
                               absl::Seconds(30)))
      << list.Log();
  // One deployment followed through its stream, in another process.
  ASSERT_EQ(h_.Dcuctl({"deploy", "qwen3-32b", "--name", "second", "--tp", "2", "--node", "nowhere"})
                .exit_code,
            0);
  testing::ChildProcess one({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "get",
                             "deployment", "second", "-w", "-o",
                             "jsonpath={.spec.name}:{.status.phase}:{.status.deleted}"},
                            h_.Join("watch-one.log"), kIsolated);
  ASSERT_TRUE(testing::WaitFor([&] { return list.Log().find("second") != std::string::npos; },
                               absl::Seconds(30)))
      << list.Log();
  ASSERT_TRUE(testing::WaitFor([&] { return one.Log().find("second:DEPLOYMENT_") != std::string::npos; },
                               absl::Seconds(30)))
      << one.Log();
  ASSERT_EQ(h_.Dcuctl({"delete", "deployment", "second"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return list.Log().find("Deleted") != std::string::npos; }, absl::Seconds(30)))
      << list.Log();
  // The one-object watch ends by itself when its object is gone.
  EXPECT_EQ(one.Wait(absl::Seconds(30)), 0) << one.Log();
  EXPECT_THAT(one.Log(), ::testing::ContainsRegex("second:DEPLOYMENT_[A-Z]+:false\n"));
  EXPECT_THAT(one.Log(), ::testing::ContainsRegex("second:DEPLOYMENT_[A-Z]+:true\n$")) << one.Log();
  // The first table, then lines lined up under it.
  std::vector<std::string> lines = Lines(list.Log());
  ASSERT_GE(lines.size(), 3u) << list.Log();
  EXPECT_THAT(lines[0], ::testing::StartsWith("NAME "));
  EXPECT_THAT(lines[1], ::testing::StartsWith("qwen3-32b "));
  EXPECT_THAT(list.Log(), ::testing::ContainsRegex("\nsecond +0/1 +[A-Za-z]+ +qwen3-32b"));
  EXPECT_THAT(list.Log(), ::testing::ContainsRegex("\nsecond +0/1 +Deleted "));
  for (const auto& l : lines) {
    if (l.find("Deleted") != std::string::npos) {
      EXPECT_EQ(lines[0].find("PHASE"), l.find("Deleted")) << l;
    }
  }
  // SIGTERM and SIGINT end them cleanly: exit 0.
  list.Signal(SIGTERM);
  EXPECT_EQ(list.Wait(absl::Seconds(30)), 0) << list.Log();
  ASSERT_TRUE(testing::WaitFor([&] { return nodes.Log().find("node-k100") != std::string::npos; },
                               absl::Seconds(30)));
  nodes.Signal(SIGINT);
  EXPECT_EQ(nodes.Wait(absl::Seconds(30)), 0) << nodes.Log();
  EXPECT_THAT(nodes.Log(), ::testing::StartsWith("NAME "));
}

TEST(DcuctlCompletion, TheBashScriptParsesAndCompletes) {
  testing::TempDir dir;
  testing::CmdResult gen = Dcuctl({"completion", "bash"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::ofstream(dir.Join("dcuctl.bash")) << gen.out;
  testing::CmdResult syntax = testing::RunCmd({"/bin/bash", "-n", dir.Join("dcuctl.bash")});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  // Completes as bash would call it: COMP_WORDS / COMP_CWORD set.
  auto complete = [&](const std::string& words) {
    std::string script = absl::StrCat("source '", dir.Join("dcuctl.bash"), "'; COMP_WORDS=(", words,
                                      "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dcuctl; "
                                      "echo \"${COMPREPLY[*]}\"");
    return testing::RunCmd({"/bin/bash", "-c", script}).out;
  };
  EXPECT_EQ(complete("dcuctl ge"), "get\n");
  EXPECT_EQ(complete("dcuctl get dep"), "deployments deployment deploy\n");
  EXPECT_EQ(complete("dcuctl --controller 1.2.3.4:7070 get ev"), "events event ev\n");
  EXPECT_EQ(complete("dcuctl get nodes -o j"), "json jsonpath=\n");
  EXPECT_EQ(complete("dcuctl config u"), "use-context\n");
  EXPECT_THAT(complete("dcuctl get deployments --"), HasSubstr("--watch"));
  EXPECT_THAT(complete("dcuctl wait --"), HasSubstr("--for"));
  // zsh gets the same through bashcompinit.
  gen = Dcuctl({"completion", "zsh"});
  EXPECT_EQ(gen.exit_code, 0);
  EXPECT_THAT(gen.out, ::testing::StartsWith("#compdef dcuctl\n"));
  EXPECT_THAT(gen.out, HasSubstr("bashcompinit"));
  EXPECT_THAT(gen.out, HasSubstr("complete -F _dcuctl dcuctl"));
  EXPECT_EQ(Dcuctl({"completion", "fish"}).exit_code, 2);
}

TEST(DcuctlContexts, SetUseAndPrecedence) {
  testing::FleetHarness h;
  ASSERT_TRUE(h.StartController());
  const std::string cfg = h.Join("cfg/config");
  // No --controller, no $DCUFLEET_CONTROLLER: the context decides.
  auto ctl = [&](std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    if (!env.count("DCUFLEET_CONTROLLER")) {
      argv.push_back("-u");
      argv.push_back("DCUFLEET_CONTROLLER");
    }
    argv.insert(argv.end(), {testing::BinPath("dcuctl"), "--timeout", "2"});
    argv.insert(argv.end(), args.begin(), args.end());
    if (!env.count("DCUCONFIG")) env["DCUCONFIG"] = cfg;
    return testing::RunCmd(argv, env, 30);
  };
  testing::CmdResult r = ctl({"config", "get-contexts"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("No contexts in " + cfg));
  r = ctl({"config", "set-context", "lab", "--controller", h.Addr()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Context 'lab' created in " + cfg));
  struct stat st;
  ASSERT_EQ(::stat(cfg.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  r = ctl({"config", "set-context", "far", "--controller", "127.0.0.1:1", "--ca", "ca.crt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(testing::ReadFileOrEmpty(cfg), HasSubstr("ca = /"));  // stored absolute
  r = ctl({"config", "current-context"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("current-context is not set"));
  r = ctl({"config", "use-context", "nope"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("no context 'nope' in " + cfg + " (it has: lab, far)"));
  ASSERT_EQ(ctl({"config", "use-context", "lab"}).exit_code, 0);
  r = ctl({"config", "current-context"});
  EXPECT_EQ(r.out, "lab\n");
  r = ctl({"config", "get-contexts"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\\* +lab +127\\.0\\.0\\.1:[0-9]+ +plaintext"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n +far +127\\.0\\.0\\.1:1 +TLS"));

  // The current context is used, and version says so.
  r = ctl({"get", "nodes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl({"version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Context: lab (from current-context in " + cfg + ")"));
  EXPECT_THAT(r.out, HasSubstr("Controller: " + h.Addr() + " (from context 'lab', plaintext)"));
  // The environment beats it, a flag beats both; --context picks another.
  r = ctl({"version"}, {{"DCUFLEET_CONTROLLER", "127.0.0.1:3"}});
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:3 (from $DCUFLEET_CONTROLLER"));
  r = ctl({"--controller", "127.0.0.1:4", "version"}, {{"DCUFLEET_CONTROLLER", "127.0.0.1:3"}});
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:4 (from --controller"));
  r = ctl({"--context", "far", "get", "nodes"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // its CA file does not exist
  EXPECT_THAT(r.err, HasSubstr("ca.crt"));
  r = ctl({"--context", "gone", "get", "nodes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("context 'gone' (from --context) is not in " + cfg));
  // $XDG_CONFIG_HOME is where the file is when $DCUCONFIG is not set.
  std::filesystem::create_directories(h.Join("xdg/dcufleet"));
  std::filesystem::copy_file(cfg, h.Join("xdg/dcufleet/config"));
  r = testing::RunCmd({"/usr/bin/env", "-u", "DCUFLEET_CONTROLLER", "-u", "DCUCONFIG",
                       "XDG_CONFIG_HOME=" + h.Join("xdg"), testing::BinPath("dcuctl"), "config",
                       "current-context"});
  EXPECT_EQ(r.out, "lab\n") << r.err;
  // A corrupt file: exit 2, naming the file and line.
  std::ofstream(h.Join("bad"), std::ios::trunc) << "[context a]\ncontroler = x:1\n";
  r = ctl({"get", "nodes"}, {{"DCUCONFIG", h.Join("bad")}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(h.Join("bad") + ":2: unknown key 'controler' in context 'a'"));
  // Deleting the current context leaves none current.
  r = ctl({"config", "delete-context", "lab"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("none is current now"));
  EXPECT_EQ(ctl({"config", "current-context"}).exit_code, 3);
  EXPECT_EQ(ctl({"config", "delete-context", "lab"}).exit_code, 3);
  r = ctl({"config", "set-context", "bad name", "--controller", "x:1"});
  EXPECT_EQ(r.exit_code, 2);
  r = ctl({"config", "set-context", "x", "--controller", "nonsense"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is not HOST:PORT"));
}

// Issue 16: a non-gRPC endpoint exited 1; it is unreachable as a
// controller (4), and the message names the address.
TEST(DcuctlExitCodes, AnHttpServerIsNotAController) {
  testing::TempDir dir;
  testing::ChildProcess http(
      {"/usr/bin/python3", "-c",
       absl::StrCat("import http.server\n"
                    "s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
                    "open('", dir.Join("port.tmp"), "', 'w').write(str(s.server_port))\n"
                    "import os; os.rename('", dir.Join("port.tmp"), "', '", dir.Join("port"), "')\n"
                    "s.serve_forever()\n")},
      dir.Join("http.log"));
  ASSERT_TRUE(testing::WaitFor([&] { return std::filesystem::exists(dir.Join("port")); },
                               absl::Seconds(10)))
      << http.Log();
  const std::string addr = "127.0.0.1:" + testing::ReadFileOrEmpty(dir.Join("port"));
  testing::CmdResult r = testing::RunCmd(
      {testing::BinPath("dcuctl"), "--controller", addr, "--timeout", "3", "get", "nodes"}, {}, 20);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  // Said for what it is: something answers there, and it is no controller.
  EXPECT_THAT(r.err, HasSubstr("'" + addr + "' answers, but not as a dcufleet controller"));
  EXPECT_THAT(r.err, Not(HasSubstr("is dcu-controller running?")));
}

}  // namespace
}  // namespace dcu
