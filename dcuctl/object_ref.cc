#include "dcuctl/object_ref.h"

#include "absl/strings/str_cat.h"
#include "common/ids.h"

namespace dcu::dcuctl {

absl::StatusOr<ObjectRef> ParseObjectRef(absl::string_view text) {
  const size_t slash = text.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not KIND/NAME; for example deployment/qwen3-32b or node/node-a"));
  }
  absl::string_view kind = text.substr(0, slash);
  ObjectRef ref;
  if (kind == "deployment" || kind == "deployments" || kind == "deploy") {
    ref.kind = "deployment";
  } else if (kind == "node" || kind == "nodes" || kind == "no") {
    ref.kind = "node";
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown kind '", kind, "' in '", text, "' (use deployment/NAME or node/NAME)"));
  }
  ref.name = std::string(text.substr(slash + 1));
  std::string why = common::ValidateName(ref.kind + " name", ref.name);
  if (!why.empty()) return absl::InvalidArgumentError(why);
  return ref;
}

}  // namespace dcu::dcuctl
