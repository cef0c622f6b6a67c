#include "modelkit/remediation.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "modelkit/config_audit.h"
#include "nlohmann/json.hpp"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using dcufleet::v1::ConfigCorrection;
using dcufleet::v1::RemediationPlan;
using ojson = nlohmann::ordered_json;

std::string Dump(const ojson* v) { return v == nullptr ? std::string() : v->dump(); }

struct Parsed {
  ojson root;
  std::string text_key;  // "" or "text_config"
  // The object holding the text fields.
  const ojson& Text() const { return text_key.empty() ? root : root.at(text_key); }
};

absl::StatusOr<Parsed> ParseForEdit(absl::string_view config_text) {
  auto summary = ParseModelConfig(config_text);
  if (!summary.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "config.json cannot be corrected: ", summary.status().message(),
        "; restore it from the published model"));
  }
  Parsed p;
  try {
    p.root = ojson::parse(config_text.begin(), config_text.end());
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(absl::StrCat("config.json cannot be parsed: ", e.what()));
  }
  p.text_key = summary->text_config_key;
  return p;
}

const ojson* Find(const ojson& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void Correct(std::vector<ConfigCorrection>* out, const std::string& field, const ojson* old_value,
             const ojson& new_value, absl::string_view reason) {
  ConfigCorrection c;
  c.set_field(field);
  c.set_old_value(Dump(old_value));
  c.set_new_value(new_value.dump());
  c.set_reason(std::string(reason));
  out->push_back(std::move(c));
}

// Applies corrections to the parsed text; field names are "key" or "nest.key".
void Apply(Parsed* p, const std::vector<ConfigCorrection>& corrections) {
  for (const auto& c : corrections) {
    ojson value = ojson::parse(c.new_value());
    size_t dot = c.field().find('.');
    if (dot == std::string::npos) {
      p->root[c.field()] = value;
    } else {
      p->root[c.field().substr(0, dot)][c.field().substr(dot + 1)] = value;
    }
  }
}

std::string ShortHash(absl::string_view text) { return common::Sha256Hex(text).substr(0, 12); }

}  // namespace

absl::StatusOr<std::vector<ConfigCorrection>> ProposeCorrections(
    absl::string_view config_text, const dcufleet::v1::ModelEntry& model) {
  auto parsed = ParseForEdit(config_text);
  if (!parsed.ok()) return parsed.status();
  auto summary = ParseModelConfig(config_text);
  const auto& f = model.fingerprint();
  const ModelConfig& c = *summary;
  auto differs = [](int64_t have, int64_t want) { return want != 0 && have != 0 && have != want; };
  std::vector<std::string> different;
  if (differs(c.hidden_size, f.hidden_size())) different.push_back("hidden_size");
  if (differs(c.num_hidden_layers, f.num_hidden_layers())) different.push_back("num_hidden_layers");
  if (differs(c.num_attention_heads, f.num_attention_heads())) different.push_back("num_attention_heads");
  if (differs(c.vocab_size, f.vocab_size())) different.push_back("vocab_size");
  if (!different.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "config.json differs from '", model.name(), "' in ", different.front(),
        ": this is a different checkpoint, not a damaged config; not correcting it"));
  }
  std::vector<ConfigCorrection> out;
  const ojson& root = parsed->root;
  const ojson& text = parsed->Text();
  std::string prefix = parsed->text_key.empty() ? "" : parsed->text_key + ".";
  if (!f.architectures().empty()) {
    ojson want = ojson::array();
    for (const auto& a : f.architectures()) want.push_back(a);
    const ojson* have = Find(root, "architectures");
    if (have == nullptr || *have != want) {
      Correct(&out, "architectures", have, want,
              absl::StrCat("'", model.name(), "' is published as ", f.architectures(0)));
    }
  }
  if (!f.model_type().empty()) {
    const ojson* have = Find(root, "model_type");
    if (have == nullptr || !have->is_string() || have->get<std::string>() != f.model_type()) {
      Correct(&out, "model_type", have, ojson(f.model_type()),
              "the config class follows model_type");
    }
  }
  if (f.head_dim() > 0 && f.kv_lora_rank() == 0) {
    const ojson* have = Find(text, "head_dim");
    // Official configs may leave head_dim out when hidden / heads gives it.
    bool wrong = have == nullptr ? c.EffectiveHeadDim() != f.head_dim()
                                 : !c.has_head_dim || c.head_dim != f.head_dim();
    if (wrong) {
      Correct(&out, prefix + "head_dim", have, ojson(f.head_dim()),
              have == nullptr
                  ? absl::StrCat("missing: engines would derive ", c.EffectiveHeadDim())
                  : std::string("differs from the published value"));
    }
  }
  if (f.num_key_value_heads() > 0) {
    const ojson* have = Find(text, "num_key_value_heads");
    if (have == nullptr || !c.has_num_key_value_heads ||
        c.num_key_value_heads != f.num_key_value_heads()) {
      Correct(&out, prefix + "num_key_value_heads", have, ojson(f.num_key_value_heads()),
              have == nullptr ? "missing: engines would assume one per attention head"
                              : "differs from the published value");
    }
  }
  if (!f.torch_dtype().empty() && !c.torch_dtype.empty() && DtypeBytes(c.torch_dtype) == 0) {
    bool top = Find(text, "torch_dtype") == nullptr && Find(root, "torch_dtype") != nullptr;
    std::string field = top || prefix.empty() ? "torch_dtype" : prefix + "torch_dtype";
    const ojson* have = top ? Find(root, "torch_dtype") : Find(text, "torch_dtype");
    Correct(&out, field, have, ojson(f.torch_dtype()), "not a torch dtype");
  }
  return out;
}

absl::StatusOr<RemediationPlan> PlanConfigRemediation(const std::string& model_dir,
                                                      const std::vector<std::string>& dir_entries,
                                                      absl::string_view config_text,
                                                      const dcufleet::v1::ModelEntry& model,
                                                      const dcufleet::v1::Stack* stack,
                                                      const RemediationOptions& options) {
  auto corrections = ProposeCorrections(config_text, model);
  if (!corrections.ok()) return corrections.status();
  RemediationPlan plan;
  plan.set_model_dir(model_dir);
  plan.set_model_path(model_dir);
  for (const auto& c : *corrections) *plan.add_corrections() = c;
  if (corrections->empty()) {
    plan.set_kind(dcufleet::v1::REMEDIATION_NONE);
    plan.set_reason(absl::StrCat("config.json agrees with '", model.name(), "'"));
    return plan;
  }
  bool scalar_only = true;
  for (const auto& c : *corrections) {
    if (c.field() == "architectures" || c.field() == "model_type" ||
        c.field().find('.') != std::string::npos) {
      scalar_only = false;
    }
  }
  bool hf_ok = stack != nullptr && stack->capabilities().accepts_hf_overrides();
  if (hf_ok && scalar_only && !options.prefer_overlay) {
    nlohmann::ordered_json overrides = nlohmann::ordered_json::object();
    for (const auto& c : *corrections) overrides[c.field()] = nlohmann::ordered_json::parse(c.new_value());
    plan.set_kind(dcufleet::v1::REMEDIATION_HF_OVERRIDES);
    plan.set_hf_overrides_json(overrides.dump());
    plan.add_extra_args("--hf-overrides");
    plan.add_extra_args(overrides.dump());
    plan.set_reason(absl::StrCat("stack '", stack->id(), "' accepts --hf-overrides; ",
                                 corrections->size(), " field(s) corrected at load time"));
    return plan;
  }
  auto parsed = ParseForEdit(config_text);
  if (!parsed.ok()) return parsed.status();
  Apply(&*parsed, *corrections);
  std::string corrected =
      parsed->root.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
  if (options.overlay_root.empty() || options.overlay_root[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("overlay root '", options.overlay_root, "' must be an absolute path"));
  }
  std::string dir = (fs::path(options.overlay_root) /
                     absl::StrCat(model.name(), "-", ShortHash(absl::StrCat(model_dir, "\n", corrected))))
                        .string();
  plan.set_kind(dcufleet::v1::REMEDIATION_OVERLAY_DIR);
  plan.set_overlay_dir(dir);
  plan.set_model_path(dir);
  plan.set_corrected_config_json(corrected);
  for (const auto& name : dir_entries) {
    if (name == "config.json" || name == "." || name == "..") continue;
    auto* link = plan.add_links();
    link->set_name(name);
    link->set_target((fs::path(model_dir) / name).string());
  }
  plan.set_reason(absl::StrCat(
      corrections->size(), " field(s) corrected in an overlay directory (",
      scalar_only ? (stack == nullptr ? "no stack given" : "the stack does not accept --hf-overrides")
                  : "architectures/model_type or nested fields must be right before the engine "
                    "picks the model class",
      "); the model directory is not modified"));
  return plan;
}

absl::StatusOr<std::vector<std::string>> ListDirEntries(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) return absl::InternalError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status MaterializeOverlay(const RemediationPlan& plan) {
  if (plan.kind() != dcufleet::v1::REMEDIATION_OVERLAY_DIR) {
    return absl::InvalidArgumentError("plan is not an overlay directory plan");
  }
  std::error_code ec;
  fs::path overlay = fs::path(plan.overlay_dir()).lexically_normal();
  fs::path model = fs::weakly_canonical(plan.model_dir(), ec);
  if (ec) model = fs::path(plan.model_dir()).lexically_normal();
  if (!overlay.is_absolute()) {
    return absl::InvalidArgumentError(absl::StrCat("overlay '", plan.overlay_dir(), "' is not absolute"));
  }
  fs::path overlay_canon = fs::weakly_canonical(overlay, ec);
  if (ec) overlay_canon = overlay;
  std::string o = overlay_canon.string() + "/";
  std::string m = model.string() + "/";
  if (absl::StartsWith(o, m)) {
    return absl::FailedPreconditionError(absl::StrCat("overlay '", plan.overlay_dir(),
                                                      "' is inside the model directory '",
                                                      plan.model_dir(), "'; refusing to write there"));
  }
  fs::create_directories(overlay, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create overlay '", plan.overlay_dir(), "': ", ec.message()));
  }
  std::set<std::string> wanted;
  for (const auto& link : plan.links()) {
    if (link.name().empty() || link.name().find('/') != std::string::npos || link.name() == "." ||
        link.name() == ".." || link.name() == "config.json") {
      return absl::InvalidArgumentError(absl::StrCat("bad overlay entry name '", link.name(), "'"));
    }
    wanted.insert(link.name());
    fs::path at = overlay / link.name();
    auto st = fs::symlink_status(at, ec);
    if (!ec && fs::exists(st)) {
      if (!fs::is_symlink(st)) {
        return absl::AlreadyExistsError(absl::StrCat(
            "'", at.string(), "' exists and is not a symlink; not replacing it"));
      }
      if (fs::read_symlink(at, ec) == fs::path(link.target()) && !ec) continue;
      fs::remove(at, ec);
    }
    ec.clear();
    fs::create_symlink(link.target(), at, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot link '", at.string(), "' -> '",
                                              link.target(), "': ", ec.message()));
    }
  }
  // Symlinks of an earlier plan that no longer belong.
  for (fs::directory_iterator it(overlay, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (it->is_symlink() && !wanted.count(name)) fs::remove(it->path(), ec);
  }
  ec.clear();
  fs::path config = overlay / "config.json";
  auto st = fs::symlink_status(config, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_symlink(st)) {
    return absl::AlreadyExistsError(absl::StrCat("'", config.string(), "' is not a file"));
  }
  fs::path tmp = overlay / ".config.json.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << plan.corrected_config_json();
    out.close();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write '", tmp.string(), "'"));
    }
  }
  fs::rename(tmp, config, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot rename '", tmp.string(), "' to '",
                                            config.string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace dcu::modelkit
