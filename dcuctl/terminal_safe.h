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
