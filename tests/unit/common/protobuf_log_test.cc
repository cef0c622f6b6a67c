#include "common/protobuf_log.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "dcufleet/v1/node.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

// Issue 16: garbage protobuf sent to the controller wrote one unformatted
// "[libprotobuf ERROR ...]" line per request.
TEST(ProtobufLog, LinesGoThroughTheLoggerFormattedAndRateLimited) {
  RouteProtobufLogs(3);
  testing::internal::CaptureStderr();
  // A real one: a proto3 string field holding invalid UTF-8, as a hostile
  // peer would send it (field 1 of Hello, node_name, length 2: 0xff 0xfe).
  const std::string garbage("\x0a\x02\xff\xfe", 4);
  dcufleet::v1::Hello hello;
  EXPECT_FALSE(hello.ParseFromString(garbage));
  for (int i = 0; i < 20; ++i) GOOGLE_LOG(ERROR) << "flood " << i;
  std::string err = testing::internal::GetCapturedStderr();
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(err, '\n', absl::SkipEmpty())) {
    EXPECT_THAT(std::string(line), ::testing::HasSubstr("protobuf ("));
    EXPECT_FALSE(absl::StartsWith(line, "[libprotobuf")) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 3) << err;
  EXPECT_THAT(err, ::testing::HasSubstr("invalid UTF-8"));
  EXPECT_THAT(err, ::testing::Not(::testing::HasSubstr("flood 5")));
}

}  // namespace
}  // namespace dcu::common
