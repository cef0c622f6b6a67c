// common/ids: the instance id rule the controller's input rules and the
// agent's runtimes share.
#include "common/ids.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;

TEST(InstanceIdRuleTest, AcceptsWhatTheControllerMakes) {
  EXPECT_EQ(InstanceIdProblem("qwen-1-a1b2c3"), "");
  EXPECT_EQ(InstanceIdProblem("Qwen3_32B.tp2-10-ffee"), "");
  EXPECT_EQ(InstanceIdProblem("7"), "");
  EXPECT_EQ(InstanceIdProblem(std::string(128, 'a')), "");
}

TEST(InstanceIdRuleTest, Edges) {
  EXPECT_EQ(InstanceIdProblem(""), "must not be empty");
  EXPECT_EQ(InstanceIdProblem(std::string(129, 'a')), "is 129 characters long; at most 128");
  // The first character: a letter or digit only. '.' would make a hidden
  // state directory ("." and ".." escape it), '-' an option in docker's
  // argv, '_' is refused by docker as a container name's first character.
  for (const char* id : {".", "..", ".hidden", "-rm", "_x"}) {
    EXPECT_EQ(InstanceIdProblem(id), "must start with a letter or digit") << id;
  }
  EXPECT_THAT(InstanceIdProblem("a/../b"), HasSubstr("contains '/'"));
  EXPECT_THAT(InstanceIdProblem("a;b"), HasSubstr("contains ';'"));
  EXPECT_THAT(InstanceIdProblem("a b"), HasSubstr("contains ' '"));
  // Bytes are shown escaped, never raw.
  EXPECT_THAT(InstanceIdProblem(std::string("a\nb", 3)), HasSubstr("contains '\\n'"));
  EXPECT_THAT(InstanceIdProblem(std::string("a\0b", 3)), HasSubstr("contains '\\x00'"));
  EXPECT_THAT(InstanceIdProblem("caf\xc3\xa9"), HasSubstr("contains '\\xc3'"));
  // Later characters may be '.', '_' and '-'.
  EXPECT_EQ(InstanceIdProblem("a.-_"), "");
}

}  // namespace
}  // namespace dcu::common
