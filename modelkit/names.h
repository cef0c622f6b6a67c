#pragma once

#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// "gfx906", "gfx90a", "gfx928", "gfx1100", "sm_90", "sm_100a". Rejects garbage
// such as "gfx18446744073709551615" that amdsmi returns on DTK.
bool IsValidArchName(absl::string_view arch);

// Stack ids and evidence ids: 1-96 chars of [a-z0-9._-], starting with a
// letter or digit.
bool IsValidCatalogId(absl::string_view id);

// POSIX environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsValidEnvName(absl::string_view name);

}  // namespace dcu::modelkit
