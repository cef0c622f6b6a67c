// dcuctl as a kubectl user types it (issue 16): typos get "unknown command"
// and the closest commands; singular, plural and short kinds all work.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcuctl/suggest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/test_env.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
           {"delete", "deployments", "d1"}}) {
    testing::CmdResult r = Dcuctl(args);
    EXPECT_EQ(r.exit_code, 4) << absl::StrJoin(args, " ") << ": " << r.err;
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
  EXPECT_THAT(r.out, HasSubstr("Controller: 127.0.0.1:7070 (from the default ($DCUFLEET_CONTROLLER is "
                               "set but empty), plaintext)"))
      << r.out << r.err;
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

}  // namespace
}  // namespace dcu
