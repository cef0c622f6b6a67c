#include "dcuctl/object_ref.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/match.h"
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
  ref.kind = CanonicalKind(kind);
  if (ref.kind != "deployment" && ref.kind != "node") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown kind '", kind, "' in '", text, "' (use deployment/NAME or node/NAME)"));
  }
  ref.name = std::string(text.substr(slash + 1));
  std::string why = common::ValidateName(ref.kind + " name", ref.name);
  if (!why.empty()) return absl::InvalidArgumentError(why);
  return ref;
}

std::string CanonicalKind(absl::string_view kind) {
  if (kind == "deployment" || kind == "deployments" || kind == "deploy") return "deployment";
  if (kind == "node" || kind == "nodes" || kind == "no") return "node";
  if (kind == "stack" || kind == "stacks") return "stack";
  return "";
}

std::string DeploymentNameFromRef(const std::string& ref) {
  const size_t slash = ref.find('/');
  if (slash == std::string::npos) return ref;
  if (CanonicalKind(absl::string_view(ref).substr(0, slash)) != "deployment") return "";
  return ref.substr(slash + 1);
}

absl::StatusOr<std::string> JoinKindAndName(const std::string& ref, const std::string& name) {
  if (name.empty()) return ref;
  if (CanonicalKind(ref).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", ref, "' followed by '", name,
                                                   "': give KIND NAME or KIND/NAME, for example "
                                                   "deployment qwen3-32b or deployment/qwen3-32b"));
  }
  return absl::StrCat(ref, "/", name);
}

namespace {

// Options that take their value as the next word, wherever they appear
// before the object: the global ones (main.cc) and scale's --replicas.
bool TakesNextWord(absl::string_view arg) {
  static constexpr absl::string_view kValued[] = {
      "--controller", "--context", "--dcuconfig", "-o",       "--output",
      "--timeout",    "--tls-ca",  "--tls-cert",  "--tls-key", "--token-file", "--replicas"};
  return std::find(std::begin(kValued), std::end(kValued), arg) != std::end(kValued);
}

}  // namespace

std::vector<std::string> SplitKindSlashName(std::vector<std::string> args) {
  // The verb: the first word that is not an option or an option's value.
  size_t i = 1;
  auto next_word = [&]() -> size_t {
    for (; i < args.size(); ++i) {
      if (args[i] == "--") return args.size();  // what follows is not for us
      if (!absl::StartsWith(args[i], "-")) return i++;
      if (TakesNextWord(args[i])) ++i;
    }
    return args.size();
  };
  const size_t verb = next_word();
  if (verb >= args.size()) return args;
  const std::string& v = args[verb];
  if (v != "get" && v != "describe" && v != "delete" && v != "scale" && v != "edit") return args;
  const size_t object = next_word();
  if (object >= args.size()) return args;
  const std::string& word = args[object];
  const size_t slash = word.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == word.size() ||
      CanonicalKind(absl::string_view(word).substr(0, slash)).empty()) {
    return args;
  }
  std::string kind = word.substr(0, slash), name = word.substr(slash + 1);
  const std::string canonical = CanonicalKind(kind);
  args[object] = std::move(kind);
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(object) + 1, std::move(name));
  // More objects of the same kind (`delete deployment/a deployment/b`):
  // their names.
  i = object + 2;
  for (size_t more = next_word(); more < args.size(); more = next_word()) {
    const size_t s = args[more].find('/');
    if (s == std::string::npos || s + 1 == args[more].size() ||
        CanonicalKind(absl::string_view(args[more]).substr(0, s)) != canonical) {
      continue;
    }
    args[more] = args[more].substr(s + 1);
  }
  return args;
}

}  // namespace dcu::dcuctl
