#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// Accelerator ISA names ("arch"): AMD/Hygon "gfxNNN" as LLVM's AMDGPU backend
// spells them (gfx906 = Z100, gfx928 = K100_AI, gfx90a = MI210, gfx942 =
// MI300X, gfx1100 = RX 7900) and NVIDIA "sm_NN".
//
// Why validation exists: DTK's amdsmi returned "gfx18446744073709551615"
// (UINT64_MAX printed after "gfx") and rocm-smi 6.2 printed "gfx11001" for
// gfx1101 (both real, see tests/fixtures/sysfs/SOURCE.md). Such values must
// be rejected, recorded, and another source used.

// OK when `arch` is a well-formed ISA name: "gfx" + major (6..12, decimal)
// + minor (one decimal digit) + stepping (one hex digit), or "sm_" + 2-3
// digits with an optional letter ("sm_90a"). Target features after a colon
// ("gfx90a:sramecc+:xnack-") are not accepted here; strip them with
// NormalizeArch. INVALID_ARGUMENT otherwise, the message saying why.
absl::Status ValidateArch(absl::string_view arch);

// Lower-cases, trims whitespace and drops target features after ':'
// ("gfx90a:sramecc+:xnack-" -> "gfx90a"), then validates.
absl::StatusOr<std::string> NormalizeArch(absl::string_view raw);

// Decodes KFD's gfx_target_version (major*10000 + minor*100 + stepping, the
// stepping printed in hex in the ISA name): 90006 -> gfx906, 90010 ->
// gfx90a, 90208 -> gfx928, 90402 -> gfx942, 110001 -> gfx1101.
// NOT_FOUND for 0 (CPU node or a kernel that does not know), INVALID_ARGUMENT
// for values that decode to no valid name (e.g. UINT64_MAX).
absl::StatusOr<std::string> DecodeGfxTargetVersion(uint64_t value);

}  // namespace dcu::common
