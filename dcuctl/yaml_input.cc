#include "dcuctl/yaml_input.h"

#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace dcu::dcuctl {

namespace {

constexpr int kMaxDepth = 64;
// Aliases repeat what their anchor names without copying it in the file, so
// a small file can stand for a huge tree (the "billion laughs"): the nodes
// read are counted, aliases' repeats included, and a file stops at this.
constexpr int kMaxNodes = 200000;

std::string At(const std::string& where, const YAML::Mark& mark) {
  if (mark.is_null()) return where;
  return absl::StrCat(where, ": line ", mark.line + 1, ", column ", mark.column + 1);
}

absl::StatusOr<nlohmann::json> ToJson(const YAML::Node& node, int depth, const std::string& where,
                                      int* budget) {
  if (--*budget < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": more than ", kMaxNodes, " values (aliases counted as what they repeat)"));
  }
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(At(where, node.Mark()), ": nested deeper than ", kMaxDepth, " levels; no deployment is"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nlohmann::json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& v = node.Scalar();
      if (node.Tag() == "?") {  // plain, not quoted
        if (v == "true" || v == "True" || v == "TRUE") return nlohmann::json(true);
        if (v == "false" || v == "False" || v == "FALSE") return nlohmann::json(false);
        if (v == "null" || v == "Null" || v == "NULL" || v == "~") return nlohmann::json(nullptr);
      }
      return nlohmann::json(v);
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) {
        auto v = ToJson(item, depth + 1, where, budget);
        if (!v.ok()) return v.status();
        out.push_back(*std::move(v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(At(where, kv.first.Mark()), ": a key is a plain word"));
        }
        const std::string key = kv.first.Scalar();
        if (out.contains(key)) {
          return absl::InvalidArgumentError(
              absl::StrCat(At(where, kv.first.Mark()), ": '", key, "' is given twice"));
        }
        auto v = ToJson(kv.second, depth + 1, where, budget);
        if (!v.ok()) return v.status();
        out[key] = *std::move(v);
      }
      return out;
    }
  }
  return nlohmann::json(nullptr);
}

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> YamlDocumentsToJson(const std::string& text,
                                                                const std::string& where) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(At(where, e.mark), ": ", e.msg));
  }
  std::vector<nlohmann::json> out;
  int budget = kMaxNodes;
  for (const YAML::Node& doc : documents) {
    if (!doc.IsDefined() || doc.IsNull()) continue;  // an empty document ("---" at the end)
    auto j = ToJson(doc, 0, where, &budget);
    if (!j.ok()) return j.status();
    out.push_back(*std::move(j));
  }
  return out;
}

}  // namespace dcu::dcuctl
