#include "dcuctl/yaml_input.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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
  // Documents are split here, on the "---" lines at column 0 that YAML
  // reserves for it, and each is loaded alone: yaml-cpp 0.7's LoadAll never
  // returns on a stray ',' (found by the manifest fuzzer; ",}j" grew to 2 GB).
  std::vector<std::pair<std::string, int>> pieces;  // text, its first line
  {
    std::string current;
    int line = 0, first_line = 0;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const absl::string_view l(text.data() + start, end - start);
      const bool marker = absl::StartsWith(l, "---") &&
                          (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
      if (marker) {
        if (!current.empty()) pieces.emplace_back(std::move(current), first_line);
        current = std::string(l.substr(3));
        current.push_back('\n');
        first_line = line;
      } else {
        current.append(l.data(), l.size());
        current.push_back('\n');
      }
      ++line;
      start = end + 1;
    }
    if (!current.empty()) pieces.emplace_back(std::move(current), first_line);
  }
  std::vector<YAML::Node> documents;
  for (const auto& [piece, first_line] : pieces) {
    try {
      documents.push_back(YAML::Load(piece));
    } catch (const YAML::Exception& e) {
      YAML::Mark mark = e.mark;
      if (!mark.is_null()) mark.line += first_line;
      return absl::InvalidArgumentError(absl::StrCat(At(where, mark), ": ", e.msg));
    }
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
