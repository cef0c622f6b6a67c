#include "agent/supervisor/log_tail.h"

#include <deque>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace dcu::agent {

std::vector<std::string> LastLogLines(absl::string_view log_text, size_t max_lines,
                                      bool starts_at_line) {
  std::deque<std::string> lines;
  size_t start = 0;
  bool first = true;
  for (size_t i = 0; i <= log_text.size(); ++i) {
    if (i < log_text.size() && log_text[i] != '\n' && log_text[i] != '\r') continue;
    absl::string_view line = absl::StripTrailingAsciiWhitespace(log_text.substr(start, i - start));
    bool partial = first && !starts_at_line && start == 0 && i < log_text.size();
    first = false;
    start = i + 1;
    if (line.empty() || partial) continue;
    lines.emplace_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  return std::vector<std::string>(lines.begin(), lines.end());
}

}  // namespace dcu::agent
