// dcuctl edit's file: the comment header kubectl users expect, and the
// reading that ignores it without moving a line or a byte.
#include "dcuctl/edit_commands.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "dcuctl/apply_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EditFileTest, CommentLinesAreBlankedInPlace) {
  const std::string text = "# a header\n#\nspec:\n  name: chat # not a comment line\n#x\n";
  const std::string blanked = BlankCommentLines(text);
  EXPECT_EQ(blanked.size(), text.size());
  EXPECT_EQ(blanked, "          \n \nspec:\n  name: chat # not a comment line\n  \n");
}

TEST(EditFileTest, JsonUnderAHeaderReadsWithItsByteOffsetsKept) {
  const std::string json = "{\"spec\": {\"name\": \"chat\", \"model\": \"qwen3-32b\"}}\n";
  const std::string with_header = EditHeader("") + json;
  auto specs = SpecsFromText(BlankCommentLines(with_header), "edit.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].name(), "chat");
  // A broken byte is named where the saved file has it.
  const std::string broken = EditHeader("") + "{\"spec\": }\n";
  auto refused = SpecsFromText(BlankCommentLines(broken), "edit.json");
  ASSERT_FALSE(refused.ok());
  const size_t brace = broken.find("}");
  EXPECT_THAT(refused.status().message(), HasSubstr("(byte " + std::to_string(brace + 1) + ")"));
}

TEST(EditFileTest, TheHeaderSaysWhyTheLastSaveWasNotApplied) {
  EXPECT_THAT(EditHeader(""), Not(HasSubstr("not applied")));
  const std::string h = EditHeader("edit.yaml: line 3: bad\nand a second line");
  EXPECT_THAT(h, HasSubstr("# It was not applied:\n# * edit.yaml: line 3: bad\n# * and a second line\n"));
  for (absl::string_view line : absl::StrSplit(h, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "#")) << line;
  }
}

}  // namespace
}  // namespace dcu::dcuctl
