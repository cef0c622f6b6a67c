#include "common/redraw.h"

namespace dcu::common {

absl::string_view LastRedraw(absl::string_view line) {
  size_t end = line.size();
  while (end > 0) {
    size_t cr = line.rfind('\r', end - 1);
    if (cr == absl::string_view::npos) return line.substr(0, end);
    absl::string_view after = line.substr(cr + 1, end - cr - 1);
    if (after.find_first_not_of(" \t") != absl::string_view::npos) return after;
    end = cr;  // a '\r' followed by blanks only: look at the segment before it
  }
  return line.substr(0, end);
}

}  // namespace dcu::common
