#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace dcu::common {

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kGiB = 1024 * kMiB;

// Device memory not free that no live holder explains, tolerated before a
// device counts as holding stranded memory: the agent's finding and the
// scheduler's refusal to place there (and dcuctl's free capacity) use it.
inline constexpr int64_t kUnreclaimedToleranceBytes = kGiB;

// "63.98 GiB", "512 MiB", "0 B". Binary units, two decimals above KiB.
std::string HumanBytes(int64_t bytes);

// Parses "64GiB", "57.6 GiB", "1073741824", "512M" (binary multiples).
absl::StatusOr<int64_t> ParseBytes(absl::string_view text);

// "3s", "2m05s", "1h02m".
std::string HumanDuration(int64_t millis);

}  // namespace dcu::common
