#include "agent/runtime/runtime.h"

#include "absl/strings/str_cat.h"

namespace dcu::agent {

std::string ValidateInstanceId(absl::string_view id) {
  if (id.empty()) return "instance id is empty";
  if (id.size() > 128) return absl::StrCat("instance id '", id, "' is longer than 128 characters");
  if (id[0] == '.') return absl::StrCat("instance id '", id, "' starts with '.'");
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return absl::StrCat("instance id '", id, "' has a character outside [A-Za-z0-9._-]");
  }
  return "";
}

}  // namespace dcu::agent
