#pragma once

namespace dcu::common {
inline constexpr char kVersion[] = "0.1.0";
}  // namespace dcu::common
