#include "agent/supervisor/log_progress.h"

#include <deque>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace dcu::agent {

LoadProgress ParseLoadProgress(absl::string_view log_text) {
  LoadProgress p;
  static constexpr absl::string_view kMarker = " checkpoint shards:";
  size_t pos = log_text.rfind(kMarker);
  while (pos != absl::string_view::npos) {
    // The figures follow the first '|' after the marker, on the same line.
    absl::string_view rest = log_text.substr(pos + kMarker.size());
    size_t eol = rest.find_first_of("\r\n");
    absl::string_view line = rest.substr(0, eol);
    size_t bar = line.find('|');
    if (bar != absl::string_view::npos) {
      absl::string_view nums = absl::StripLeadingAsciiWhitespace(line.substr(bar + 1));
      size_t slash = nums.find('/');
      if (slash != absl::string_view::npos) {
        size_t end = slash + 1;
        while (end < nums.size() && absl::ascii_isdigit(nums[end])) ++end;
        int loaded = 0, total = 0;
        if (absl::SimpleAtoi(nums.substr(0, slash), &loaded) &&
            absl::SimpleAtoi(nums.substr(slash + 1, end - slash - 1), &total) && total > 0 &&
            loaded >= 0 && loaded <= total) {
          p.found = true;
          p.loaded = loaded;
          p.total = total;
          return p;
        }
      }
    }
    if (pos == 0) break;
    pos = log_text.rfind(kMarker, pos - 1);
  }
  return p;
}

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
