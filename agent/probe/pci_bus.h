#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace dcu::agent {

// Spells a PCI address the way Linux sysfs does, so backends can be matched
// by it: "00000000:19:00.0" (NVML's busId), "0000:19:00.0" (CUDA, HIP),
// "0000:19:00" -> "0000:19:00.0": lower case, a 4-digit domain unless it
// needs more, a function when none is given. Input that is not a PCI
// address comes back lower-cased and trimmed.
std::string NormalizePciBusId(absl::string_view raw);

}  // namespace dcu::agent
