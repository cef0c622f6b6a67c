#include "dcuctl/model_commands.h"

#include "dcuctl/exit_codes.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/units.h"
#include "dcuctl/terminal_safe.h"
#include "modelkit/catalog_loader.h"
#include "modelkit/config_audit.h"
#include "modelkit/memory_plan.h"
#include "modelkit/remediation.h"
#include "modelkit/weights_audit.h"
#include "nlohmann/json.hpp"

namespace dcu::dcuctl {
namespace {

namespace fs = std::filesystem;
using modelkit::AuditOptions;
using dcufleet::v1::AuditReport;
using dcufleet::v1::CatalogFile;

// Loads the catalog named by the flag (or found by default). An explicit
// directory that is missing or invalid is an error; no default is not.
absl::StatusOr<CatalogFile> LoadCatalog(const std::string& flag_value, std::string* used) {
  *used = ResolveCatalogDir(flag_value);
  if (!flag_value.empty() && used->empty()) {
    return absl::NotFoundError(absl::StrCat("catalog directory '", flag_value, "' does not exist"));
  }
  if (used->empty()) return CatalogFile();
  return modelkit::LoadCatalogDir(*used);
}

std::string ReadAll(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const dcufleet::v1::Stack* FindStack(const CatalogFile& catalog, const std::string& id) {
  for (const auto& s : catalog.stack()) {
    if (s.id() == id) return &s;
  }
  return nullptr;
}

}  // namespace

std::string ResolveCatalogDir(const std::string& flag_value) {
  std::error_code ec;
  if (!flag_value.empty()) return fs::is_directory(flag_value, ec) ? flag_value : "";
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("DCU_CATALOG_DIR"); env != nullptr && *env) {
    candidates.push_back(env);
  }
  candidates.insert(candidates.end(), {"deploy/catalog", "/etc/dcufleet/catalog",
                                       "/usr/share/dcufleet/catalog"});
  for (const auto& c : candidates) {
    if (fs::is_directory(c, ec)) return c;
  }
  return "";
}

void RenderAuditReport(const AuditReport& r, std::ostream& out) {
  auto row = [&](absl::string_view k, const std::string& v) {
    out << absl::StrFormat("%-12s %s\n", k, v);
  };
  row("PATH", r.path().empty() ? "(config text)" : r.path());
  row("CONFIG", r.config_valid_json()
                    ? absl::StrCat("valid JSON, sha256 ", r.config_sha256().substr(0, 16))
                    : std::string("not usable (see findings)"));
  row("CATALOG", r.catalog_match().empty()
                     ? std::string("no match")
                     : absl::StrCat(r.catalog_match(), " (matched by ", r.catalog_match_basis(), ")"));
  if (r.config_valid_json()) {
    row("ARCH", absl::StrCat(r.architecture().empty() ? "(none)" : r.architecture(),
                             "  model_type ", r.model_type().empty() ? "(none)" : r.model_type(),
                             r.text_config_key().empty() ? "" : absl::StrCat("  (text fields in ", r.text_config_key(), ")")));
    row("SHAPE", absl::StrCat("hidden ", r.hidden_size(), ", ", r.num_attention_heads(), " heads, ",
                              r.num_key_value_heads(), " kv heads, head_dim ", r.head_dim(), " (",
                              r.head_dim_source(), "), ", r.num_hidden_layers(), " layers",
                              r.attention_layers() != r.num_hidden_layers()
                                  ? absl::StrCat(" (", r.attention_layers(), " with KV cache)")
                                  : "",
                              ", ", r.torch_dtype().empty() ? "no dtype" : r.torch_dtype()));
    if (r.is_moe()) {
      row("MOE", absl::StrCat(r.num_experts(), " experts, ", r.num_experts_per_tok(), " per token"));
    }
    if (r.is_mla()) {
      row("MLA", absl::StrCat("kv_lora_rank ", r.kv_lora_rank(), " + qk_rope_head_dim ",
                              r.qk_rope_head_dim(), " cached per layer"));
    }
    row("KV CACHE", absl::StrCat(r.kv_cache_bytes_per_token(), " B/token (",
                                 common::HumanBytes(r.kv_cache_bytes_per_token()), ") at TP 1"));
    row("VALID TP", absl::StrJoin(r.valid_tp(), ", "));
  }
  std::string weights = r.weight_bytes() > 0
                            ? absl::StrCat(common::HumanBytes(r.weight_bytes()), " (",
                                           r.weight_bytes_source(), ")")
                            : std::string("unknown");
  if (r.shard_count() > 0) {
    absl::StrAppend(&weights, ", ", r.shard_count(), " shard(s), ",
                    r.shards_complete() ? "complete"
                                        : absl::StrCat(r.missing_shards_size(), " missing"));
  }
  row("WEIGHTS", weights);
  if (r.has_weights()) {
    const auto& w = r.weights();
    std::string v;
    switch (w.verdict()) {
      case dcufleet::v1::WEIGHTS_CLEAN: v = "clean"; break;
      case dcufleet::v1::WEIGHTS_DAMAGED: v = absl::StrCat("DAMAGED (", w.problems_total(), " problem(s))"); break;
      case dcufleet::v1::WEIGHTS_NOT_VERIFIED: v = absl::StrCat("not verified: ", w.not_verified_reason()); break;
      default: v = "unknown"; break;
    }
    if (w.verdict() != dcufleet::v1::WEIGHTS_NOT_VERIFIED) {
      absl::StrAppend(&v, ": ", w.shards(), " shard(s), ", w.tensors(), " tensors (",
                      common::HumanBytes(w.tensor_bytes()), "), checked in ",
                      absl::StrFormat("%.1f ms", static_cast<double>(w.elapsed_us()) / 1000.0));
    }
    row("VERIFIED", v);
    if (w.shape_checked() > 0 || w.shape_skipped() > 0) {
      row("SHAPES", absl::StrCat(w.shape_checked(), " tensor(s) checked against config.json",
                                 w.shape_skip_reason().empty() ? "" : absl::StrCat("; ", w.shape_skip_reason())));
    }
    if (w.content_verified()) {
      row("CONTENT", w.manifest_recorded()
                         ? absl::StrCat("sha256 of ", common::HumanBytes(w.content_bytes()), " recorded in ",
                                        w.content_manifest(), " (there was no manifest)")
                         : absl::StrCat("sha256 of ", common::HumanBytes(w.content_bytes()), " against ",
                                        w.content_manifest()));
    }
  }
  out << "\n";
  if (r.has_weights() && !r.weights().problems().empty()) {
    out << "Weights problems:\n";
    for (const auto& p : r.weights().problems()) {
      std::string kind = dcufleet::v1::WeightsProblemKind_Name(p.kind());
      if (absl::StartsWith(kind, "WEIGHTS_")) kind = absl::AsciiStrToLower(kind.substr(8));
      out << absl::StrFormat("  %-16s %s\n", kind, p.message());
    }
    if (r.weights().problems_total() > r.weights().problems_size()) {
      out << "  (" << r.weights().problems_total() - r.weights().problems_size() << " more)\n";
    }
    out << "\n";
  }
  if (r.findings().empty()) {
    out << "No findings.\n";
    return;
  }
  size_t code_w = 4, field_w = 5;
  for (const auto& f : r.findings()) {
    code_w = std::max(code_w, f.code().size());
    field_w = std::max(field_w, f.field().size());
  }
  out << absl::StrFormat("%-8s  %-*s  %-*s  %s\n", "SEVERITY", code_w, "CODE", field_w, "FIELD",
                         "MESSAGE");
  for (const auto& f : r.findings()) {
    out << absl::StrFormat("%-8s  %-*s  %-*s  %s\n", common::FindingSeverityName(f.severity()), code_w, f.code(), field_w,
                           f.field(), f.message());
  }
}

void RenderMemoryPlan(const dcufleet::v1::MemoryPlan& p, std::ostream& out) {
  out << (p.fits() ? absl::StrCat("fits at TP ", p.tp(), p.tp_chosen() ? " (chosen)" : "")
                   : absl::StrCat("does not fit: ", p.failure_reason()))
      << "\n";
  for (const auto& line : p.explanation()) out << "  " << line << "\n";
}

void RenderRemediationPlan(const dcufleet::v1::RemediationPlan& p, std::ostream& out) {
  switch (p.kind()) {
    case dcufleet::v1::REMEDIATION_NONE:
      out << "Remediation: none needed (" << p.reason() << ")\n";
      return;
    case dcufleet::v1::REMEDIATION_HF_OVERRIDES:
      out << "Remediation: --hf-overrides (" << p.reason() << ")\n";
      break;
    case dcufleet::v1::REMEDIATION_OVERLAY_DIR:
      out << "Remediation: overlay directory " << p.overlay_dir() << " (" << p.reason() << ")\n";
      break;
    default:
      out << "Remediation: unknown\n";
      return;
  }
  for (const auto& c : p.corrections()) {
    out << "  " << c.field() << ": " << (c.old_value().empty() ? "(absent)" : c.old_value())
        << " -> " << c.new_value() << "  (" << c.reason() << ")\n";
  }
  if (p.kind() == dcufleet::v1::REMEDIATION_HF_OVERRIDES) {
    out << "  add to the engine's argv: " << absl::StrJoin(p.extra_args(), " ") << "\n";
  } else {
    out << "  " << p.links_size() << " link(s) to " << p.model_dir()
        << ", corrected config.json; model path for the engine: " << p.model_path() << "\n";
  }
}

int RunModelAudit(const ModelAuditArgs& args, std::ostream& out, std::ostream& err) {
  if (args.path.empty()) {
    err << "error: model audit needs a PATH (model directory or config.json)\n";
    return 2;
  }
  if (args.output != "table" && args.output != "json") {
    err << "error: -o must be 'table' or 'json', not '" << args.output << "'\n";
    return 2;
  }
  std::error_code ec;
  if (!fs::exists(args.path, ec)) {
    err << "error: '" << args.path << "' does not exist\n";
    return 2;
  }
  std::string catalog_dir;
  auto catalog = LoadCatalog(args.catalog_dir, &catalog_dir);
  if (!catalog.ok()) {
    err << "error: catalog: " << catalog.status().message() << "\n";
    return 2;
  }
  AuditOptions options;
  options.models.assign(catalog->model().begin(), catalog->model().end());
  options.model_name = args.model;
  if (!args.model.empty() && modelkit::FindCatalogModel(options, args.model) == nullptr) {
    err << "error: model '" << args.model << "' is not in the catalog"
        << (catalog_dir.empty() ? " (no catalog found; pass --catalog DIR)" : "") << "\n";
    return 2;
  }
  for (const auto& id : args.stacks) {
    const auto* s = FindStack(*catalog, id);
    if (s == nullptr) {
      err << "error: stack '" << id << "' is not in the catalog\n";
      return 2;
    }
    options.stacks.push_back(*s);
  }
  if (args.stacks.empty()) options.stacks.assign(catalog->stack().begin(), catalog->stack().end());

  // Recording a manifest reads every byte, as a content check does.
  const bool content = args.verify_content || args.record_manifest;
  options.verify_content = content;
  options.manifest_path = args.manifest;
  options.record_manifest = args.record_manifest;
  const auto started = std::chrono::steady_clock::now();
  auto last_draw = started - std::chrono::seconds(1);
  if (content && args.progress_bar) {
    // Redrawn at most 10 times a second: a 4 MiB chunk is ~2 ms of hashing.
    options.content_progress = [&](const modelkit::ContentProgress& p) {
      auto now = std::chrono::steady_clock::now();
      if (now - last_draw < std::chrono::milliseconds(100) && p.done != p.total) return;
      last_draw = now;
      double secs = std::chrono::duration<double>(now - started).count();
      double frac = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1.0;
      int filled = static_cast<int>(frac * 30);
      WriteTerminalControl(err, kRedrawLine);
      err << absl::StrFormat("[%s%s] %3.0f%% %s of %s, %.0f MB/s  %s", std::string(filled, '='),
                             std::string(30 - filled, ' '), frac * 100, common::HumanBytes(p.done),
                             common::HumanBytes(p.total), secs > 0 ? static_cast<double>(p.done) / 1e6 / secs : 0.0,
                             p.file)
          << std::flush;
    };
  }
  AuditReport report;
  std::string model_dir;
  std::string config_text;
  bool have_text = false;
  if (fs::is_directory(args.path, ec)) {
    model_dir = args.path;
    report = modelkit::AuditModelDirectory(args.path, options);
    if (options.content_progress) err << "\n";
    config_text = ReadAll((fs::path(args.path) / "config.json").string(), &have_text);
  } else if (content) {
    err << "error: --verify-content and --record-manifest need a model directory, not a config.json\n";
    return 2;
  } else {
    config_text = ReadAll(args.path, &have_text);
    if (!have_text) {
      err << "error: cannot read '" << args.path << "'\n";
      return 2;
    }
    model_dir = fs::path(args.path).parent_path().string();
    report = modelkit::AuditConfigText(config_text, fs::path(model_dir).filename().string(),
                                         options);
    report.set_path(args.path);
  }

  nlohmann::ordered_json json = modelkit::AuditReportToJson(report);
  std::optional<dcufleet::v1::RemediationPlan> plan;
  std::string plan_error;
  if (args.fix_plan || args.apply_overlay) {
    const auto* entry = modelkit::FindCatalogModel(options, report.catalog_match());
    if (entry == nullptr) {
      plan_error = "no catalog model matched: nothing to correct against";
    } else if (!have_text) {
      plan_error = "config.json cannot be read";
    } else {
      auto entries = modelkit::ListDirEntries(model_dir.empty() ? "." : model_dir);
      const dcufleet::v1::Stack* stack = args.stacks.empty() ? nullptr : &options.stacks[0];
      modelkit::RemediationOptions ropts;
      ropts.overlay_root = args.overlay_root;
      ropts.prefer_overlay = args.apply_overlay;
      auto p = entries.ok() ? modelkit::PlanConfigRemediation(
                                  fs::absolute(model_dir.empty() ? "." : model_dir).string(),
                                  *entries, config_text, *entry, stack, ropts)
                            : absl::StatusOr<dcufleet::v1::RemediationPlan>(entries.status());
      if (p.ok()) {
        plan = *p;
      } else {
        plan_error = std::string(p.status().message());
      }
    }
    if (plan && args.apply_overlay && plan->kind() == dcufleet::v1::REMEDIATION_OVERLAY_DIR) {
      absl::Status s = modelkit::MaterializeOverlay(*plan);
      if (!s.ok()) {
        err << "error: overlay: " << s.message() << "\n";
        return 2;
      }
    }
  }

  if (args.output == "json") {
    if (plan) {
      nlohmann::ordered_json pj;
      pj["kind"] = plan->kind() == dcufleet::v1::REMEDIATION_NONE           ? "none"
                   : plan->kind() == dcufleet::v1::REMEDIATION_HF_OVERRIDES ? "hf_overrides"
                                                                            : "overlay_dir";
      pj["reason"] = plan->reason();
      pj["model_path"] = plan->model_path();
      pj["overlay_dir"] = plan->overlay_dir();
      pj["hf_overrides"] = plan->hf_overrides_json();
      pj["extra_args"] = nlohmann::ordered_json::array();
      for (const auto& a : plan->extra_args()) pj["extra_args"].push_back(a);
      pj["corrections"] = nlohmann::ordered_json::array();
      for (const auto& c : plan->corrections()) {
        pj["corrections"].push_back({{"field", c.field()},
                                     {"old", c.old_value()},
                                     {"new", c.new_value()},
                                     {"reason", c.reason()}});
      }
      json["remediation"] = pj;
    } else if (!plan_error.empty()) {
      json["remediation"] = {{"error", plan_error}};
    }
    out << json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else {
    RenderAuditReport(report, out);
    if (plan) {
      out << "\n";
      RenderRemediationPlan(*plan, out);
    } else if (!plan_error.empty()) {
      out << "\nRemediation: " << plan_error << "\n";
    }
    if (catalog_dir.empty()) out << "\n(no catalog found: compared with nothing)\n";
  }
  return modelkit::HasErrors(report) ? kExitFindings : kExitOk;
}

int RunModelPlan(const ModelPlanArgs& args, std::ostream& out, std::ostream& err) {
  if (args.model.empty()) {
    err << "error: model plan needs a MODEL (catalog name or model directory)\n";
    return 2;
  }
  auto total = common::ParseBytes(args.device_total);
  auto free = args.device_free.empty() ? total : common::ParseBytes(args.device_free);
  if (!total.ok() || !free.ok() || *total <= 0) {
    err << "error: --device-total (and --device-free) must be sizes such as 64GiB\n";
    return 2;
  }
  if (args.gpu_memory_utilization <= 0 || args.gpu_memory_utilization > 1) {
    err << "error: --gpu-memory-utilization must be in (0, 1]\n";
    return 2;
  }
  std::string catalog_dir;
  auto catalog = LoadCatalog(args.catalog_dir, &catalog_dir);
  if (!catalog.ok()) {
    err << "error: catalog: " << catalog.status().message() << "\n";
    return 2;
  }
  AuditOptions options;
  options.models.assign(catalog->model().begin(), catalog->model().end());
  modelkit::ModelShape shape;
  std::error_code ec;
  if (const auto* entry = modelkit::FindCatalogModel(options, args.model)) {
    shape = modelkit::ShapeFromCatalog(*entry);
  } else if (fs::is_directory(args.model, ec)) {
    AuditReport r = modelkit::AuditModelDirectory(args.model, options);
    if (!r.config_valid_json()) {
      err << "error: '" << args.model << "' has no usable config.json\n";
      return 2;
    }
    shape = modelkit::ShapeFromAudit(r);
  } else {
    err << "error: '" << args.model << "' is neither a catalog model nor a directory\n";
    return 2;
  }
  dcufleet::v1::MemoryPlanRequest req;
  req.set_model(shape.name);
  req.set_tp(args.tp);
  req.set_max_model_len(args.max_model_len);
  req.set_max_num_seqs(args.max_num_seqs);
  req.set_gpu_memory_utilization(args.gpu_memory_utilization);
  req.set_device_total_bytes(*total);
  req.set_device_free_bytes(*free);
  req.set_device_count(args.devices);
  if (!args.overhead.empty()) {
    auto o = common::ParseBytes(args.overhead);
    if (!o.ok()) {
      err << "error: --overhead: " << o.status().message() << "\n";
      return 2;
    }
    req.set_overhead_bytes(*o);
  }
  if (!args.kv_cache_memory_bytes.empty()) {
    auto k = common::ParseBytes(args.kv_cache_memory_bytes);
    if (!k.ok()) {
      err << "error: --kv-cache-memory-bytes: " << k.status().message() << "\n";
      return 2;
    }
    req.set_kv_cache_memory_bytes(*k);
  }
  dcufleet::v1::MemoryPlan plan = modelkit::PlanMemory(shape, req);
  if (args.output == "json") {
    nlohmann::ordered_json j;
    j["model"] = shape.name;
    j["fits"] = plan.fits();
    j["tp"] = plan.tp();
    j["tp_chosen"] = plan.tp_chosen();
    j["weights_per_device_bytes"] = plan.weights_per_device_bytes();
    j["kv_bytes_per_token_per_device"] = plan.kv_bytes_per_token_per_device();
    j["kv_available_bytes"] = plan.kv_available_bytes();
    j["budget_bytes"] = plan.budget_bytes();
    j["overhead_bytes"] = plan.overhead_bytes();
    j["startup_ok"] = plan.startup_ok();
    j["failure_reason"] = plan.failure_reason();
    j["explanation"] = nlohmann::ordered_json::array();
    for (const auto& l : plan.explanation()) j["explanation"].push_back(l);
    out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else {
    RenderMemoryPlan(plan, out);
  }
  return plan.fits() ? kExitOk : kExitUnschedulable;
}

}  // namespace dcu::dcuctl
