#pragma once

#include <ostream>
#include <streambuf>
#include <string>

#include "absl/strings/string_view.h"

namespace dcu::dcuctl {

// What a node reports reaches an operator's terminal through dcuctl: names,
// command lines, log lines. A control character in them is an escape
// sequence the terminal obeys (cursor moves, retitling, OSC 52 clipboard
// writes), so everything dcuctl prints passes through here: newline and tab
// stay, every other C0 control, DEL and the C1 controls (U+0080..U+009F,
// UTF-8 C2 80..C2 9F) become visible "\xNN" escapes. Other UTF-8 text
// (Chinese model names, log lines) is left as it is.
std::string TerminalSafe(absl::string_view text);

// A streambuf that applies TerminalSafe to everything written through it and
// forwards to `sink`. dcuctl's main installs it on std::cout and std::cerr.
class TerminalSafeStreambuf : public std::streambuf {
 public:
  explicit TerminalSafeStreambuf(std::streambuf* sink) : sink_(sink) {}

  // Writes `control` to the sink as it is (WriteTerminalControl).
  bool WriteControl(absl::string_view control);

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool Put(unsigned char c);
  std::streambuf* sink_;
  // A 0xC2 byte waiting to see whether a C1 control follows.
  bool pending_c2_ = false;
};

// Back to the start of the line and erase it: how dcuctl redraws a line in
// place on a terminal (deploy --watch's start-up line, logs -f's line still
// being written, model audit's hashing bar).
inline constexpr char kRedrawLine[] = "\r\033[K";

// Writes one of dcuctl's own cursor controls (kRedrawLine): past the
// TerminalSafe filter on `out`, the only bytes that are, so never text that
// came from a node. Before, they went through the filter too, and `deploy
// --watch` on a terminal printed "\x0d\x1b[K" before each redraw. To a
// stream without the filter (a test's ostringstream) they are written as
// they are.
void WriteTerminalControl(std::ostream& out, absl::string_view control);

// A line redrawn in place below what has been printed: `logs -f`'s line
// still being written (a progress bar's latest redraw). Show() redraws it
// when it changed, Clear() erases it before other output is written. Off
// (not a terminal): nothing is ever written, so a pipe or a file gets the
// log's whole lines only.
class LiveLine {
 public:
  // `columns`: the terminal's width; a longer line is cut to it (a wrapped
  // line is not erased by a redraw).
  LiveLine(std::ostream& out, bool on, size_t columns)
      : out_(out), on_(on), columns_(columns < 20 ? 20 : columns) {}
  // `text` comes from a node: shown TerminalSafe, its last '\r' redraw.
  void Show(absl::string_view text);
  void Clear();

 private:
  std::ostream& out_;
  const bool on_;
  const size_t columns_;
  std::string shown_;
};

// Installs a TerminalSafeStreambuf on `stream` for its lifetime (flushes and
// puts the original back when it ends, before the stream's own teardown).
class TerminalSafeOutput {
 public:
  explicit TerminalSafeOutput(std::ostream& stream)
      : stream_(stream), filter_(stream.rdbuf()), original_(stream.rdbuf(&filter_)) {}
  ~TerminalSafeOutput() {
    stream_.flush();
    stream_.rdbuf(original_);
  }
  TerminalSafeOutput(const TerminalSafeOutput&) = delete;
  TerminalSafeOutput& operator=(const TerminalSafeOutput&) = delete;

 private:
  std::ostream& stream_;
  TerminalSafeStreambuf filter_;
  std::streambuf* original_;
};

}  // namespace dcu::dcuctl
