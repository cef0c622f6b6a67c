#include "modelkit/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace dcu::modelkit {

bool IsValidArchName(absl::string_view arch) {
  if (absl::StartsWith(arch, "gfx")) {
    absl::string_view rest = arch.substr(3);
    // gfx906 / gfx90a / gfx928 / gfx1100 / gfx1101: 3-4 chars, digits then
    // one trailing hex digit (the stepping).
    if (rest.size() < 3 || rest.size() > 4) return false;
    for (size_t i = 0; i + 1 < rest.size(); ++i) {
      if (!absl::ascii_isdigit(rest[i])) return false;
    }
    return absl::ascii_isxdigit(rest.back()) && !absl::ascii_isupper(rest.back());
  }
  if (absl::StartsWith(arch, "sm_")) {
    absl::string_view rest = arch.substr(3);
    size_t digits = 0;
    while (digits < rest.size() && absl::ascii_isdigit(rest[digits])) ++digits;
    if (digits < 2 || digits > 3) return false;
    absl::string_view suffix = rest.substr(digits);
    return suffix.empty() || (suffix.size() == 1 && absl::ascii_islower(suffix[0]));
  }
  return false;
}

bool IsValidCatalogId(absl::string_view id) {
  if (id.empty() || id.size() > 96) return false;
  if (!absl::ascii_islower(id[0]) && !absl::ascii_isdigit(id[0])) return false;
  for (char c : id) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '.' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

bool IsValidEnvName(absl::string_view name) {
  if (name.empty()) return false;
  if (!absl::ascii_isalpha(name[0]) && name[0] != '_') return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

}  // namespace dcu::modelkit
