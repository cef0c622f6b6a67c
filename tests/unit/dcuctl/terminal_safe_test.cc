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

// dcuctl's own redraw passes the filter; a node's text next to it does not.
// Before, the redraw went through it too: `deploy --watch` on a terminal
// printed "\x0d\x1b[K" before each start-up line.
TEST(TerminalSafe, DcuctlsOwnRedrawPassesTheFilterANodesTextDoesNot) {
  std::ostringstream sink;
  {
    TerminalSafeOutput safe(sink);
    sink << "x\xc2";
    WriteTerminalControl(sink, kRedrawLine);
    sink << "  loading \r\x1b[2J\n";
  }
  EXPECT_EQ(sink.str(), "x\xc2\r\x1b[K  loading \\x0d\\x1b[2J\n");
  std::ostringstream plain;
  WriteTerminalControl(plain, kRedrawLine);
  EXPECT_EQ(plain.str(), "\r\x1b[K");
}

TEST(LiveLine, RedrawsOnlyAChangeShowsTheLastRedrawCutToTheWidthAndClears) {
  std::ostringstream out;
  LiveLine live(out, /*on=*/true, /*columns=*/24);
  live.Show("Loading:  10% |#  | 1/10\rLoading:  20% |##  | 2/10");
  EXPECT_EQ(out.str(), "\r\x1b[KLoading:  20% |##  | 2/") << "23 columns, the last redraw";
  out.str("");
  live.Show("Loading:  10%\rLoading:  20% |##  | 2/10");  // the same shown text
  EXPECT_EQ(out.str(), "");
  live.Show("\x1b]52;c;x\a");
  EXPECT_EQ(out.str(), "\r\x1b[K\\x1b]52;c;x\\x07") << "a node's text stays safe";
  out.str("");
  live.Clear();
  EXPECT_EQ(out.str(), "\r\x1b[K");
  out.str("");
  live.Clear();
  EXPECT_EQ(out.str(), "") << "nothing shown: nothing to erase";
  // Not a terminal: nothing, ever.
  std::ostringstream pipe;
  LiveLine off(pipe, /*on=*/false, 80);
  off.Show("Loading:  10%");
  off.Clear();
  EXPECT_EQ(pipe.str(), "");
}

}  // namespace
}  // namespace dcu::dcuctl
