#include "agent/runtime/runtime.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"

namespace dcu::agent {

std::string ValidateInstanceId(absl::string_view id) {
  std::string why = common::InstanceIdProblem(id);
  if (why.empty()) return "";
  // At most a short, escaped prefix of a hostile id in the message.
  std::string shown = absl::CHexEscape(id.substr(0, 40));
  return absl::StrCat("instance id '", shown, id.size() > 40 ? "...' " : "' ", why);
}

}  // namespace dcu::agent
