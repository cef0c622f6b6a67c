#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace dcu::common {

// The most of a line still being written that a log follower is sent (the
// agent cuts it to its end, the controller checks a node's word against it).
inline constexpr size_t kMaxLiveLineBytes = 1024;

// The text a terminal shows for a line redrawn with '\r' (a progress bar,
// or a message printed over one): what follows the last '\r' that has text
// after it; the line itself when it has no '\r'. One reading for the
// diagnosis (a log line is classified by what it shows), the agent (a
// follower's line still being written) and dcuctl (a bar's line shown on a
// terminal).
absl::string_view LastRedraw(absl::string_view line);

}  // namespace dcu::common
