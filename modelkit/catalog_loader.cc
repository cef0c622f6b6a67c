#include "modelkit/catalog_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "modelkit/argv_template.h"
#include "modelkit/names.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
using dcufleet::v1::CatalogFile;

constexpr size_t kMaxCatalogFileBytes = 8 << 20;
constexpr size_t kMaxErrors = 50;

class CollectErrors : public pb::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string name, std::vector<std::string>* out)
      : name_(std::move(name)), out_(out) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    out_->push_back(absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {}

 private:
  std::string name_;
  std::vector<std::string>* out_;
};

struct Where {
  std::string file;
  int line = 0;  // 1-based
  int column = 0;
  std::string Str() const { return absl::StrCat(file, ":", line, ":", column); }
};

// Checks one parsed file and reports positions through its ParseInfoTree.
class FileValidator {
 public:
  FileValidator(std::string name, const pb::TextFormat::ParseInfoTree* tree,
                std::vector<std::string>* errors)
      : name_(std::move(name)), tree_(tree), errors_(errors) {}

  // Position of `field`[index] inside the message whose tree is `t`; falls
  // back to `fallback` when the field is absent from the text.
  Where At(const pb::TextFormat::ParseInfoTree* t, const pb::Message& msg, absl::string_view field,
           int index, const Where& fallback) const {
    if (t == nullptr) return fallback;
    const pb::FieldDescriptor* f = msg.GetDescriptor()->FindFieldByName(std::string(field));
    if (f == nullptr) return fallback;
    pb::TextFormat::ParseLocation loc = t->GetLocation(f, f->is_repeated() ? index : -1);
    if (loc.line < 0) return fallback;
    return Where{name_, loc.line + 1, loc.column + 1};
  }
  const pb::TextFormat::ParseInfoTree* Nested(const pb::TextFormat::ParseInfoTree* t,
                                              const pb::Message& msg, absl::string_view field,
                                              int index) const {
    if (t == nullptr) return nullptr;
    const pb::FieldDescriptor* f = msg.GetDescriptor()->FindFieldByName(std::string(field));
    if (f == nullptr) return nullptr;
    return t->GetTreeForNested(f, f->is_repeated() ? index : -1);
  }
  void Error(const Where& where, absl::string_view reason) {
    errors_->push_back(absl::StrCat(where.Str(), ": ", reason));
  }

  void ValidateFile(const CatalogFile& file, std::vector<Where>* stack_where,
                    std::vector<Where>* evidence_where, std::vector<Where>* model_where) {
    Where top{name_, 1, 1};
    for (int i = 0; i < file.stack_size(); ++i) {
      Where w = At(tree_, file, "stack", i, top);
      stack_where->push_back(w);
      ValidateStack(file.stack(i), Nested(tree_, file, "stack", i), w);
    }
    for (int i = 0; i < file.evidence_size(); ++i) {
      Where w = At(tree_, file, "evidence", i, top);
      evidence_where->push_back(w);
      ValidateEvidence(file.evidence(i), Nested(tree_, file, "evidence", i), w);
    }
    for (int i = 0; i < file.model_size(); ++i) {
      Where w = At(tree_, file, "model", i, top);
      model_where->push_back(w);
      ValidateModel(file.model(i), Nested(tree_, file, "model", i), w);
    }
  }

 private:
  void ValidateEnv(const dcufleet::v1::EnvRecipe& env, const pb::TextFormat::ParseInfoTree* t,
                   const Where& w) {
    for (int i = 0; i < env.source_scripts_size(); ++i) {
      if (!absl::StartsWith(env.source_scripts(i), "/")) {
        Error(At(t, env, "source_scripts", i, w),
              absl::StrCat("source script '", env.source_scripts(i), "' must be an absolute path"));
      }
    }
    for (int i = 0; i < env.variables_size(); ++i) {
      const auto& v = env.variables(i);
      Where vw = At(t, env, "variables", i, w);
      if (!IsValidEnvName(v.name())) {
        Error(vw, absl::StrCat("invalid environment variable name '", v.name(), "'"));
      } else if (v.name() == "LD_LIBRARY_PATH" || v.name() == "PATH") {
        Error(vw, absl::StrCat(v.name(), " is built from the ordered prefixes "
                                         "(ld_library_path_prefix / path_prefix), not set as a variable"));
      }
      if (v.value().find('\0') != std::string::npos) {
        Error(vw, absl::StrCat("value of '", v.name(), "' contains a NUL byte"));
      }
    }
    for (int i = 0; i < env.ld_library_path_prefix_size(); ++i) {
      const std::string& p = env.ld_library_path_prefix(i);
      if (!absl::StartsWith(p, "/") || absl::StrContains(p, ":")) {
        Error(At(t, env, "ld_library_path_prefix", i, w),
              absl::StrCat("LD_LIBRARY_PATH prefix '", p,
                           "' must be one absolute directory (no ':'); list them in order"));
      }
    }
    for (int i = 0; i < env.path_prefix_size(); ++i) {
      const std::string& p = env.path_prefix(i);
      if (!absl::StartsWith(p, "/") || absl::StrContains(p, ":")) {
        Error(At(t, env, "path_prefix", i, w),
              absl::StrCat("PATH prefix '", p, "' must be one absolute directory (no ':')"));
      }
    }
  }

  void ValidateArgs(const pb::Message& msg, absl::string_view field,
                    const google::protobuf::RepeatedPtrField<std::string>& args,
                    const pb::TextFormat::ParseInfoTree* t, const Where& w) {
    for (int i = 0; i < args.size(); ++i) {
      auto names = ArgvPlaceholders(args.Get(i));
      if (!names.ok()) Error(At(t, msg, field, i, w), names.status().message());
    }
  }

  void ValidateStack(const dcufleet::v1::Stack& s, const pb::TextFormat::ParseInfoTree* t,
                     const Where& w) {
    if (!IsValidCatalogId(s.id())) {
      Error(At(t, s, "id", 0, w),
            absl::StrCat("stack id '", s.id(),
                         "' must be 1-96 chars of [a-z0-9._-] starting with a letter or digit"));
    }
    if (s.engine().empty()) Error(w, absl::StrCat("stack '", s.id(), "': engine is required"));
    if (s.engine_version().empty()) {
      Error(w, absl::StrCat("stack '", s.id(), "': engine_version is required"));
    }
    if (s.runtime_kind() == dcufleet::v1::RUNTIME_KIND_UNSPECIFIED) {
      Error(w, absl::StrCat("stack '", s.id(),
                            "': runtime_kind is required (RUNTIME_BARE or RUNTIME_CONTAINER)"));
    }
    if (s.runtime_location().empty()) {
      Error(w, absl::StrCat("stack '", s.id(),
                            "': runtime_location is required (env prefix or image reference)"));
    } else if (s.runtime_kind() == dcufleet::v1::RUNTIME_BARE &&
               !absl::StartsWith(s.runtime_location(), "/")) {
      Error(At(t, s, "runtime_location", 0, w),
            absl::StrCat("stack '", s.id(), "': a bare stack's runtime_location '",
                         s.runtime_location(), "' must be an absolute env prefix"));
    } else if (s.runtime_kind() == dcufleet::v1::RUNTIME_CONTAINER &&
               s.runtime_location().find_first_of(" \t\n") != std::string::npos) {
      Error(At(t, s, "runtime_location", 0, w),
            absl::StrCat("stack '", s.id(), "': image reference '", s.runtime_location(),
                         "' contains whitespace"));
    }
    for (int i = 0; i < s.arches_size(); ++i) {
      if (!IsValidArchName(s.arches(i))) {
        Error(At(t, s, "arches", i, w),
              absl::StrCat("stack '", s.id(), "': '", s.arches(i),
                           "' is not an arch name (gfx906, gfx928, gfx90a, sm_90...)"));
      }
    }
    int defaults = 0;
    for (int i = 0; i < s.attention_backends_size(); ++i) {
      const auto& b = s.attention_backends(i);
      Where bw = At(t, s, "attention_backends", i, w);
      if (b.name().empty()) Error(bw, "attention backend needs a name");
      if (b.is_default()) ++defaults;
      for (int h : b.head_sizes()) {
        if (h <= 0 || h > 1024) {
          Error(bw, absl::StrCat("attention backend '", b.name(), "': head size ", h,
                                 " is out of range"));
        }
      }
      for (const auto& v : b.select_env()) {
        if (!IsValidEnvName(v.name())) {
          Error(bw, absl::StrCat("attention backend '", b.name(),
                                 "': invalid environment variable name '", v.name(), "'"));
        }
      }
    }
    if (defaults > 1) {
      Error(w, absl::StrCat("stack '", s.id(), "': ", defaults,
                            " attention backends are marked is_default; at most one"));
    }
    ValidateEnv(s.env(), Nested(t, s, "env", 0), At(t, s, "env", 0, w));
    if (s.argv_template().empty()) {
      Error(w, absl::StrCat("stack '", s.id(), "': argv_template is required"));
    } else {
      const std::string& argv0 = s.argv_template(0);
      bool shell = argv0 == "sh" || argv0 == "bash" || absl::EndsWith(argv0, "/sh") ||
                   absl::EndsWith(argv0, "/bash");
      if (shell) {
        Error(At(t, s, "argv_template", 0, w),
              absl::StrCat("stack '", s.id(), "': argv_template must run the engine directly, "
                                              "not through a shell ('", argv0, "')"));
      }
      bool has_model = false;
      for (const auto& a : s.argv_template()) has_model |= absl::StrContains(a, "{model_path}");
      if (!has_model) {
        Error(At(t, s, "argv_template", 0, w),
              absl::StrCat("stack '", s.id(), "': argv_template never uses {model_path}"));
      }
    }
    ValidateArgs(s, "argv_template", s.argv_template(), t, w);
    for (int i = 0; i < s.arch_recipes_size(); ++i) {
      const auto& r = s.arch_recipes(i);
      Where rw = At(t, s, "arch_recipes", i, w);
      const auto* rt = Nested(t, s, "arch_recipes", i);
      if (!IsValidArchName(r.arch())) {
        Error(At(rt, r, "arch", 0, rw),
              absl::StrCat("stack '", s.id(), "': arch recipe for '", r.arch(),
                           "', which is not an arch name"));
      }
      ValidateEnv(r.env(), Nested(rt, r, "env", 0), At(rt, r, "env", 0, rw));
      ValidateArgs(r, "extra_args", r.extra_args(), rt, rw);
    }
  }

  void ValidateEvidence(const dcufleet::v1::Evidence& e, const pb::TextFormat::ParseInfoTree* t,
                        const Where& w) {
    if (!IsValidCatalogId(e.evidence_id())) {
      Error(At(t, e, "evidence_id", 0, w),
            absl::StrCat("evidence_id '", e.evidence_id(),
                         "' must be 1-96 chars of [a-z0-9._-] starting with a letter or digit"));
    }
    if (e.stack_id().empty()) {
      Error(w, absl::StrCat("evidence '", e.evidence_id(), "': stack_id is required"));
    }
    if (!IsValidArchName(e.arch())) {
      Error(At(t, e, "arch", 0, w),
            absl::StrCat("evidence '", e.evidence_id(), "': '", e.arch(), "' is not an arch name"));
    }
    if (e.outcome() == dcufleet::v1::LAUNCH_OUTCOME_UNSPECIFIED) {
      Error(w, absl::StrCat("evidence '", e.evidence_id(),
                            "': outcome is required (LAUNCH_READY or LAUNCH_FAILED)"));
    }
    if (e.outcome() == dcufleet::v1::LAUNCH_FAILED && e.failure_class().empty()) {
      Error(w, absl::StrCat("evidence '", e.evidence_id(), "': a failure needs its failure_class"));
    }
    if (e.outcome() == dcufleet::v1::LAUNCH_READY && !e.failure_class().empty()) {
      Error(At(t, e, "failure_class", 0, w),
            absl::StrCat("evidence '", e.evidence_id(), "': a ready launch has no failure_class"));
    }
    if (e.tp() < 0) Error(At(t, e, "tp", 0, w), "tp must not be negative");
    if (e.at_ms() <= 0) {
      Error(w, absl::StrCat("evidence '", e.evidence_id(), "': at_ms (unix milliseconds) is required"));
    }
  }

  void ValidateModel(const dcufleet::v1::ModelEntry& m, const pb::TextFormat::ParseInfoTree* t,
                     const Where& w) {
    if (!IsValidCatalogId(m.name())) {
      Error(At(t, m, "name", 0, w),
            absl::StrCat("model name '", m.name(), "' must be 1-96 chars of [a-z0-9._-]"));
    }
    const auto& f = m.fingerprint();
    Where fw = At(t, m, "fingerprint", 0, w);
    if (f.architectures().empty()) {
      Error(fw, absl::StrCat("model '", m.name(), "': fingerprint needs architectures"));
    }
    if (f.hidden_size() <= 0 || f.num_attention_heads() <= 0 || f.num_hidden_layers() <= 0) {
      Error(fw, absl::StrCat("model '", m.name(),
                             "': fingerprint needs hidden_size, num_attention_heads and "
                             "num_hidden_layers > 0"));
    }
    if (f.num_key_value_heads() < 0 || f.head_dim() < 0) {
      Error(fw, absl::StrCat("model '", m.name(), "': negative kv heads or head_dim"));
    }
    if (f.num_key_value_heads() > 0 && f.num_attention_heads() % f.num_key_value_heads() != 0) {
      Error(fw, absl::StrCat("model '", m.name(), "': num_attention_heads ",
                             f.num_attention_heads(), " is not a multiple of num_key_value_heads ",
                             f.num_key_value_heads()));
    }
    if (m.weight_bytes() < 0) Error(At(t, m, "weight_bytes", 0, w), "weight_bytes is negative");
  }

  std::string name_;
  const pb::TextFormat::ParseInfoTree* tree_;
  std::vector<std::string>* errors_;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot read catalog file '", path, "': ", ec.message()));
  if (size > kMaxCatalogFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": catalog file is ", size, " bytes, over the ", kMaxCatalogFileBytes,
                     "-byte limit"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open catalog file '", path, "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// `with_locations`: record where every field is (a ParseInfoTree), so each
// error names FILE:LINE:COLUMN. The tree costs far more than the message
// (a 6.9 MiB catalog took the controller to 682 MB), so it is built only
// when there is an error to place: the first pass parses and checks without
// it, and only a failing input is parsed again with it.
absl::StatusOr<CatalogFile> ParseCatalogTextsPass(
    const std::vector<std::pair<std::string, std::string>>& named_texts,
    const CatalogLoadOptions& options, bool with_locations) {
  std::vector<std::string> errors;
  CatalogFile merged;
  std::vector<Where> stack_where, evidence_where, model_where;
  for (const auto& [name, text] : named_texts) {
    if (text.size() > kMaxCatalogFileBytes) {
      errors.push_back(absl::StrCat(name, ":1:1: file is over the ", kMaxCatalogFileBytes,
                                    "-byte limit"));
      continue;
    }
    CatalogFile file;
    pb::TextFormat::ParseInfoTree tree;
    CollectErrors collector(name, &errors);
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    if (with_locations) parser.WriteLocationsTo(&tree);
    size_t before = errors.size();
    if (!parser.ParseFromString(text, &file)) {
      if (errors.size() == before) errors.push_back(absl::StrCat(name, ":1:1: cannot parse"));
      continue;
    }
    FileValidator validator(name, with_locations ? &tree : nullptr, &errors);
    validator.ValidateFile(file, &stack_where, &evidence_where, &model_where);
    for (auto& s : *file.mutable_stack()) {
      if (s.origin().empty()) s.set_origin(absl::StrCat("catalog:", name));
    }
    merged.mutable_stack()->MergeFrom(file.stack());
    merged.mutable_evidence()->MergeFrom(file.evidence());
    merged.mutable_model()->MergeFrom(file.model());
  }
  // Across files: ids are unique, evidence points at a known stack.
  if (errors.empty()) {
    std::map<std::string, Where> stacks;
    for (int i = 0; i < merged.stack_size(); ++i) {
      auto [it, inserted] = stacks.emplace(merged.stack(i).id(), stack_where[i]);
      if (!inserted) {
        errors.push_back(absl::StrCat(stack_where[i].Str(), ": duplicate stack id '",
                                      merged.stack(i).id(), "' (first at ", it->second.Str(), ")"));
      }
    }
    std::map<std::string, Where> evidence;
    for (int i = 0; i < merged.evidence_size(); ++i) {
      const auto& e = merged.evidence(i);
      auto [it, inserted] = evidence.emplace(e.evidence_id(), evidence_where[i]);
      if (!inserted) {
        errors.push_back(absl::StrCat(evidence_where[i].Str(), ": duplicate evidence id '",
                                      e.evidence_id(), "' (first at ", it->second.Str(), ")"));
      }
      if (!stacks.count(e.stack_id()) && !options.known_stack_ids.count(e.stack_id())) {
        errors.push_back(absl::StrCat(evidence_where[i].Str(), ": evidence '", e.evidence_id(),
                                      "' refers to unknown stack '", e.stack_id(), "'"));
      }
    }
    std::map<std::string, Where> models;
    for (int i = 0; i < merged.model_size(); ++i) {
      auto [it, inserted] = models.emplace(merged.model(i).name(), model_where[i]);
      if (!inserted) {
        errors.push_back(absl::StrCat(model_where[i].Str(), ": duplicate model name '",
                                      merged.model(i).name(), "' (first at ", it->second.Str(),
                                      ")"));
      }
    }
  }
  if (!errors.empty()) {
    size_t n = errors.size();
    if (n > kMaxErrors) {
      errors.resize(kMaxErrors);
      errors.push_back(absl::StrCat("... and ", n - kMaxErrors, " more"));
    }
    return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  }
  return merged;
}

}  // namespace

absl::StatusOr<CatalogFile> ParseCatalogTexts(
    const std::vector<std::pair<std::string, std::string>>& named_texts,
    const CatalogLoadOptions& options) {
  absl::StatusOr<CatalogFile> fast = ParseCatalogTextsPass(named_texts, options, false);
  if (fast.ok() || fast.status().code() != absl::StatusCode::kInvalidArgument) return fast;
  return ParseCatalogTextsPass(named_texts, options, true);
}

absl::StatusOr<CatalogFile> ParseCatalogText(absl::string_view name, absl::string_view text,
                                             const CatalogLoadOptions& options) {
  return ParseCatalogTexts({{std::string(name), std::string(text)}}, options);
}

absl::StatusOr<CatalogFile> LoadCatalogFiles(const std::vector<std::string>& paths,
                                             const CatalogLoadOptions& options) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& p : paths) {
    auto text = ReadFile(p);
    if (!text.ok()) return text.status();
    texts.emplace_back(p, *std::move(text));
  }
  return ParseCatalogTexts(texts, options);
}

absl::StatusOr<std::vector<std::string>> ListCatalogFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("catalog directory '", dir, "' does not exist"));
  }
  std::vector<std::string> paths;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
    if (it->is_regular_file(ec) && it->path().extension() == ".txtpb") {
      paths.push_back(it->path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

absl::StatusOr<CatalogFile> LoadCatalogDir(const std::string& dir,
                                           const CatalogLoadOptions& options) {
  auto paths = ListCatalogFiles(dir);
  if (!paths.ok()) return paths.status();
  return LoadCatalogFiles(*paths, options);
}

}  // namespace dcu::modelkit
