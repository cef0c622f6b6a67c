// The ports other services hold at a node, from the kernel's socket tables
// (agent/procscan/listen_ports): the format as Linux prints it, garbage
// named by file and line, and a real listener found in the live tables.
#include "agent/procscan/listen_ports.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/held_port.h"

namespace dcu::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// As Linux 6.1 prints /proc/net/tcp: a header, then one line per socket.
constexpr char kTcp[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1761846 1 "
    "0000000027c4e5c3 100 0 0 10 0\n"
    "   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1768777 1 "
    "00000000ffad970d 100 0 0 10 0\n"
    // An established connection from 8082: not a listener.
    "   2: 0100007F:1F92 0100007F:C100 01 00000000:00000000 00:00000000 00000000     0        0 1779735 1 "
    "00000000b4c72b88 20 4 17 18 -1\n"
    // sshd on 22: privileged, never an instance's.
    "   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 "
    "0000000000000000 100 0 0 10 0\n"
    // A server bound to port 0 (49152): in the ephemeral range, left out.
    "   4: 0100007F:C000 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18 1 "
    "0000000000000000 100 0 0 10 0\n";

constexpr char kTcp6[] =
    "  sl  local_address                         remote_address                        st tx_queue "
    "rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0000000000000000FFFF00000100007F:1B9E 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 1761006 1 00000000476902c5 100 0 0 10 0\n"
    // The same port as IPv4's 8080, once in the result.
    "   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 1761007 1 00000000476902c6 100 0 0 10 0\n";

TEST(ListenPorts, ListenersOfBothTablesAreReadAndNothingElse) {
  std::set<int> ports;
  std::vector<std::string> problems;
  ParseSocketTable(kTcp, "/proc/net/tcp", &ports, &problems);
  ParseSocketTable(kTcp6, "/proc/net/tcp6", &ports, &problems);
  EXPECT_THAT(ports, ElementsAre(7070, 8080, 8081));
  EXPECT_THAT(problems, IsEmpty());
}

TEST(ListenPorts, GarbageIsNamedByFileAndLineAndSkipped) {
  std::set<int> ports;
  std::vector<std::string> problems;
  ParseSocketTable(
      "  sl  local_address rem_address   st\n"
      "   0: 00000000:1F90 00000000:0000 0A\n"
      "garbage\n"
      "   2: 00000000:ZZZZ 00000000:0000 0A\n"
      "   3: 00000000 00000000:0000 0A\n"
      "   4: 00000000:1F9 00000000:0000 0A\n"
      "   5: 00000000:1F91 00000000:0000 0A\n",
      "/proc/net/tcp", &ports, &problems);
  EXPECT_THAT(ports, ElementsAre(8080, 8081));
  ASSERT_EQ(problems.size(), 3u) << "at most three per table";
  EXPECT_THAT(problems[0], HasSubstr("/proc/net/tcp line 3: not a socket entry"));
  EXPECT_THAT(problems[1], HasSubstr("/proc/net/tcp line 4: local address '00000000:ZZZZ'"));
  EXPECT_THAT(problems[2], HasSubstr("line 5"));
}

TEST(ListenPorts, OwnInstancesAreLeftOutAndAMissingTableIsSaid) {
  char dir[] = "/tmp/listen_ports_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::ofstream(std::string(dir) + "/tcp") << kTcp;
  std::vector<std::string> problems;
  // No tcp6 (a host without IPv6): not a problem.
  EXPECT_THAT(ForeignListenPorts(dir, {8081}, &problems), ElementsAre(8080));
  EXPECT_THAT(problems, IsEmpty());
  std::remove((std::string(dir) + "/tcp").c_str());
  EXPECT_THAT(ForeignListenPorts(dir, {}, &problems), IsEmpty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("/tcp': No such file or directory; ports held by other services"));
  rmdir(dir);
}

// Below the ephemeral range, where instance ports are (the harness's too).
int QuietPort() { return 15000 + static_cast<int>(getpid() % 500) * 20 + 11; }

// A real listener on this host is in the live tables; one the kernel gave
// an ephemeral port is not (such listeners come and go).
TEST(ListenPorts, ARealListenerIsFound) {
  ASSERT_GT(EphemeralPortsStart(), QuietPort() + 200);
  testing::HeldPort ephemeral(INADDR_LOOPBACK);
  ASSERT_GE(ephemeral.port(), EphemeralPortsStart());
  testing::HeldPort held(INADDR_LOOPBACK, QuietPort());
  const int port = held.port();
  ASSERT_GT(port, 0);
  // Both sources: the kernel over netlink (the default) and /proc/net's
  // tables.
  for (const std::string source : {"", "/proc/net"}) {
    std::vector<std::string> problems;
    std::vector<int> ports = ForeignListenPorts(source, {}, &problems);
    EXPECT_TRUE(std::binary_search(ports.begin(), ports.end(), port)) << port << " from '" << source << "'";
    EXPECT_FALSE(std::binary_search(ports.begin(), ports.end(), ephemeral.port()));
    EXPECT_TRUE(std::is_sorted(ports.begin(), ports.end()));
    EXPECT_THAT(problems, IsEmpty());
    // Its owner's instance: left out.
    ports = ForeignListenPorts(source, {port}, &problems);
    EXPECT_FALSE(std::binary_search(ports.begin(), ports.end(), port));
  }
}

// The netlink answer is the tables' answer, without their walk: the same
// listening ports on this host (read twice each way, so that a listener
// opening or closing between two reads does not fail the test).
TEST(ListenPorts, NetlinkAndTheTablesAgree) {
  testing::HeldPort held(INADDR_ANY, QuietPort() + 40);
  ASSERT_GT(held.port(), 0);
  bool agreed = false;
  for (int attempt = 0; attempt < 3 && !agreed; ++attempt) {
    std::set<int> from_netlink, from_tables;
    std::string error;
    ASSERT_TRUE(ReadListeningPortsNetlink(&from_netlink, &error)) << error;
    std::vector<std::string> problems;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      std::ifstream in(table);
      std::stringstream text;
      text << in.rdbuf();
      ParseSocketTable(text.str(), table, &from_tables, &problems);
    }
    EXPECT_THAT(problems, IsEmpty());
    EXPECT_TRUE(from_netlink.count(held.port()));
    agreed = from_netlink == from_tables;
  }
  EXPECT_TRUE(agreed);
}

}  // namespace
}  // namespace dcu::agent
