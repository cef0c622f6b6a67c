// The controller's gRPC transport settings that are plain values: which
// experiments it turns off (server_security.h, issue 22).

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "controller/service/server_security.h"

namespace dcu::controller {
namespace {

TEST(WithTcpReadChunksOff, TurnsTheExperimentOffWhenNothingIsSet) {
  EXPECT_EQ(WithTcpReadChunksOff(""), "-tcp_read_chunks");
  EXPECT_EQ(WithTcpReadChunksOff("  "), "-tcp_read_chunks");
}

TEST(WithTcpReadChunksOff, KeepsTheOperatorsOtherExperiments) {
  EXPECT_EQ(WithTcpReadChunksOff("event_engine_client"), "event_engine_client,-tcp_read_chunks");
  EXPECT_EQ(WithTcpReadChunksOff("-tcp_rcv_lowat,monitoring_experiment"),
            "-tcp_rcv_lowat,monitoring_experiment,-tcp_read_chunks");
}

TEST(WithTcpReadChunksOff, LeavesAnExplicitChoiceAlone) {
  // Turned on by the operator, on purpose: kept on.
  EXPECT_EQ(WithTcpReadChunksOff("tcp_read_chunks"), "tcp_read_chunks");
  EXPECT_EQ(WithTcpReadChunksOff("x, tcp_read_chunks "), "x, tcp_read_chunks ");
  EXPECT_EQ(WithTcpReadChunksOff("-tcp_read_chunks"), "-tcp_read_chunks");
  // A longer name that only starts with it is another experiment.
  EXPECT_EQ(WithTcpReadChunksOff("tcp_read_chunks_v2"), "tcp_read_chunks_v2,-tcp_read_chunks");
}

TEST(TurnOffTcpReadChunks, SetsTheEnvironmentGrpcReads) {
  ASSERT_EQ(setenv("GRPC_EXPERIMENTS", "tcp_rcv_lowat", 1), 0);
  TurnOffTcpReadChunks();
  EXPECT_STREQ(std::getenv("GRPC_EXPERIMENTS"), "tcp_rcv_lowat,-tcp_read_chunks");
  // Twice is once.
  TurnOffTcpReadChunks();
  EXPECT_STREQ(std::getenv("GRPC_EXPERIMENTS"), "tcp_rcv_lowat,-tcp_read_chunks");
  ASSERT_EQ(unsetenv("GRPC_EXPERIMENTS"), 0);
  TurnOffTcpReadChunks();
  EXPECT_STREQ(std::getenv("GRPC_EXPERIMENTS"), "-tcp_read_chunks");
}

}  // namespace
}  // namespace dcu::controller
