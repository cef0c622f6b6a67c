#include "dcuctl/terminal_safe.h"

#include <sstream>

#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

TEST(TerminalSafe, ControlCharactersBecomeVisibleEscapes) {
  // ESC ] 52 ... BEL: an OSC 52 clipboard write hidden in an arch string.
  EXPECT_EQ(TerminalSafe("gfx928\x1b]52;c;ZWNobw==\a"), "gfx928\\x1b]52;c;ZWNobw==\\x07");
  EXPECT_EQ(TerminalSafe(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(TerminalSafe("del\x7f"), "del\\x7f");
  EXPECT_EQ(TerminalSafe("\r"), "\\x0d");
}

TEST(TerminalSafe, NewlinesTabsAndUtf8TextStay) {
  EXPECT_EQ(TerminalSafe("line 1\n\tline 2\n"), "line 1\n\tline 2\n");
  EXPECT_EQ(TerminalSafe("显存 59 GiB °C"), "显存 59 GiB °C");
}

TEST(TerminalSafe, C1ControlsInUtf8AreEscaped) {
  // U+009B (CSI) is a one-character escape introducer for many terminals.
  EXPECT_EQ(TerminalSafe("x\xc2\x9b" "2J"), "x\\x9b2J");
  // U+00A0 and U+00B0 are text, not controls.
  EXPECT_EQ(TerminalSafe("\xc2\xa0\xc2\xb0"), "\xc2\xa0\xc2\xb0");
}

TEST(TerminalSafe, StreamFilterMatchesTheFunctionAcrossWrites) {
  std::ostringstream sink;
  {
    TerminalSafeOutput safe(sink);
    sink << "node " << "\x1b[2J" << "x\xc2";
    sink << "\x9b" << "y" << '\a' << "\n";
  }
  EXPECT_EQ(sink.str(), TerminalSafe("node \x1b[2Jx\xc2\x9by\a\n"));
}

}  // namespace
}  // namespace dcu::dcuctl
