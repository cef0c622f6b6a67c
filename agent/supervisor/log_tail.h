#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dcu::agent {

// Start-up phases and shard progress are read by modelkit/startup_progress.h
// (the one log-phase parser); this file only cuts a tail into lines.

// The last `max_lines` non-empty lines of a log; '\r' and '\n' both end a
// line, trailing whitespace is trimmed, and a partial first line (the tail
// was cut mid-line) is dropped when the text does not start a line.
std::vector<std::string> LastLogLines(absl::string_view log_text, size_t max_lines,
                                      bool starts_at_line = false);

}  // namespace dcu::agent
