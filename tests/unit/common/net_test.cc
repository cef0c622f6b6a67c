#include "common/net.h"

#include "gtest/gtest.h"

namespace dcu::common {
namespace {

TEST(HostOfGrpcPeer, TakesTheHostOfIpv4AndIpv6Peers) {
  EXPECT_EQ(HostOfGrpcPeer("ipv4:10.0.0.7:51234"), "10.0.0.7");
  EXPECT_EQ(HostOfGrpcPeer("ipv4:127.0.0.1:1"), "127.0.0.1");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:[fd00::7]:51234"), "fd00::7");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:[fe80::1%25eth0]:9"), "fe80::1");
}

TEST(HostOfGrpcPeer, AnythingElseIsUnknown) {
  for (const char* p : {"", "test", "unix:/tmp/sock", "ipv4:", "ipv4:nocolon", "ipv6:::1:5",
                        "ipv6:[::1", "ipv6:"}) {
    EXPECT_EQ(HostOfGrpcPeer(p), "") << p;
  }
}

TEST(JoinHostPort, BracketsIpv6Literals) {
  EXPECT_EQ(JoinHostPort("10.0.0.7", 8000), "10.0.0.7:8000");
  EXPECT_EQ(JoinHostPort("node-a", 8001), "node-a:8001");
  EXPECT_EQ(JoinHostPort("fd00::7", 8002), "[fd00::7]:8002");
  // What ParseHostPort reads back.
  auto hp = ParseHostPort(JoinHostPort("fd00::7", 8002));
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "fd00::7");
  EXPECT_EQ(hp->port, 8002);
}

}  // namespace
}  // namespace dcu::common
