#include "dcuctl/apply_commands.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "common/utf8.h"
#include "dcuctl/yaml_input.h"
#include "common/status_util.h"

namespace dcu::dcuctl {

namespace {

// One declared object: a Deployment (its spec) or a bare spec.
absl::StatusOr<dcufleet::v1::DeploymentSpec> SpecOf(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a deployment is a set of fields (\"model: qwen3-32b\" …), not a list or a single value"));
  }
  // A deployment as `get -o json` prints it: the spec is the declaration,
  // the rest (status, replicas, revision) is the controller's to say.
  const bool whole = object.contains("spec");
  dcufleet::v1::DeploymentSpec spec;
  const std::string in = absl::StrCat(where, whole ? ": spec" : "");
  absl::Status s = JsonToProto(whole ? object.at("spec") : object, &spec);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(in, ": ", s.message()));
  if (spec.model().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(in, ": no model (a spec names its catalog model: \"model\": \"qwen3-32b\")"));
  }
  return spec;
}

absl::StatusOr<std::string> ReadAll(const std::string& file, std::istream& in) {
  std::string text;
  auto read = [&](std::istream& from) -> absl::Status {
    char buf[65536];
    while (from.read(buf, sizeof buf) || from.gcount() > 0) {
      text.append(buf, static_cast<size_t>(from.gcount()));
      if (text.size() > kMaxApplyFileBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": larger than ", kMaxApplyFileBytes >> 20, " MiB; split it"));
      }
    }
    return absl::OkStatus();
  };
  if (file == "-") {
    if (absl::Status s = read(in); !s.ok()) return s;
    return text;
  }
  std::ifstream f(file, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(file, ": cannot be opened"));
  if (absl::Status s = read(f); !s.ok()) return s;
  return text;
}

// The deepest nesting of brackets outside strings: a deployment is a few
// levels deep, and what reads JSON later (printing it for protobuf's parser)
// recurses, so a hostile file nested 100,000 deep is refused before.
int NestingDepth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    if (c == '}' || c == ']') --depth;
  }
  return deepest;
}

constexpr int kMaxNesting = 64;

}  // namespace

namespace {

// One declared document: a list ({"deployments": [...]} as `get deployments
// -o json|yaml` prints it, or kubectl's {"items": [...]}), a deployment or a
// bare spec; its specs appended to `specs`.
absl::Status AddSpecsOf(const nlohmann::json& j, const std::string& where,
                        std::vector<dcufleet::v1::DeploymentSpec>* specs) {
  for (const char* key : {"deployments", "items"}) {
    if (!j.is_object() || !j.contains(key)) continue;
    const nlohmann::json& list = j.at(key);
    if (!list.is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": \"", key, "\" is not a list"));
    }
    if (list.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": \"", key, "\" is empty"));
    for (size_t i = 0; i < list.size(); ++i) {
      auto spec = SpecOf(list[i], absl::StrCat(where, ": ", key, "[", i, "]"));
      if (!spec.ok()) return spec.status();
      specs->push_back(*std::move(spec));
    }
    return absl::OkStatus();
  }
  auto spec = SpecOf(j, where);
  if (!spec.ok()) return spec.status();
  specs->push_back(*std::move(spec));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<dcufleet::v1::DeploymentSpec>> SpecsFromText(const std::string& text,
                                                                        const std::string& where) {
  std::vector<dcufleet::v1::DeploymentSpec> specs;
  if (const size_t bad = common::FirstInvalidUtf8Byte(text); bad != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": not UTF-8 (byte ", bad, ")"));
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    if (NestingDepth(text) > kMaxNesting) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": nested deeper than ", kMaxNesting, " levels; no deployment is"));
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not JSON (byte ", e.byte, ")"));
    } catch (const nlohmann::json::exception& e) {
      // A number too large for a double (found by the manifest fuzzer).
      return absl::InvalidArgumentError(absl::StrCat(where, ": not read as JSON: ", e.what()));
    }
    DCU_RETURN_IF_ERROR(AddSpecsOf(j, where, &specs));
    return specs;
  }
  // YAML, as kubectl's manifests: one document or several ("---").
  auto documents = YamlDocumentsToJson(text, where);
  if (!documents.ok()) return documents.status();
  if (documents->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty (no deployment declared in it)"));
  }
  for (size_t i = 0; i < documents->size(); ++i) {
    DCU_RETURN_IF_ERROR(AddSpecsOf((*documents)[i],
                                   documents->size() > 1 ? absl::StrCat(where, ": document ", i + 1) : where,
                                   &specs));
  }
  return specs;
}

int RunApply(Client& client, const ApplyArgs& args, std::istream& in, std::ostream& out,
             std::ostream& err) {
  const std::string where = args.file == "-" ? "standard input" : args.file;
  auto text = ReadAll(args.file, in);
  if (!text.ok()) {
    err << "error: " << text.status().message() << "\n";
    return kExitUsage;
  }
  auto specs = SpecsFromText(*text, where);
  if (!specs.ok()) {
    err << "error: " << specs.status().message() << "\n";
    return kExitUsage;
  }
  int rc = kExitOk;
  for (const auto& spec : *specs) {
    DeployArgs deploy;
    deploy.spec = spec;
    deploy.dry_run = args.dry_run;
    deploy.wait = args.wait;
    deploy.watch = args.watch;
    deploy.wait_timeout_s = args.wait_timeout_s;
    const int one = RunDeploy(client, deploy, out, err);
    if (rc == kExitOk) rc = one;
  }
  return rc;
}

}  // namespace dcu::dcuctl
