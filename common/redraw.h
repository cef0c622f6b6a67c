#pragma once

#include "absl/strings/string_view.h"

namespace dcu::common {

// The text a terminal shows for a line redrawn with '\r' (a progress bar,
// or a message printed over one): what follows the last '\r' that has text
// after it; the line itself when it has no '\r'. One reading for the
// diagnosis (a log line is classified by what it shows), the agent (a
// follower's line still being written) and dcuctl (a bar's line shown on a
// terminal).
absl::string_view LastRedraw(absl::string_view line);

}  // namespace dcu::common
