#include "dcuctl/stack_commands.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "modelkit/learned_fix.h"
#include "modelkit/stack_view.h"
#include "modelkit/verdict.h"
#include "google/protobuf/util/json_util.h"

namespace dcu::dcuctl {
namespace {

void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i + 1 == r.size()) {
        absl::StrAppend(&line, r[i]);
      } else {
        absl::StrAppend(&line, absl::StrFormat("%-*s   ", width[i], r[i]));
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

std::string Or(const std::string& s, const char* dash = "-") { return s.empty() ? dash : s; }

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, opts);
  return out;
}

void RenderStacksTable(const dcufleet::v1::ListStacksResponse& resp, const std::string& arch,
                       bool wide, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  if (!arch.empty()) {
    rows.push_back({"ID", "ENGINE", "KIND", "DTK", "TORCH", "TRITON", "VERDICT", "NODES", "REASON"});
  } else {
    rows.push_back({"ID", "ENGINE", "KIND", "DTK", "TORCH", "TRITON", "VERDICTS", "NODES"});
  }
  for (const auto& v : resp.stacks()) {
    const auto& s = v.stack();
    std::vector<std::string> row = {s.id(), absl::StrCat(s.engine(), " ", s.engine_version()),
                                     std::string(common::RuntimeKindName(s.runtime_kind())), Or(s.dtk_version()),
                                     Or(s.torch_version()), Or(s.triton_version())};
    std::vector<std::string> nodes;
    for (const auto& e : v.present_on()) nodes.push_back(e.node());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    std::string node_text = nodes.empty() ? "-" : (wide || nodes.size() <= 2
                                                       ? absl::StrJoin(nodes, ",")
                                                       : absl::StrCat(nodes.size()));
    if (!arch.empty()) {
      std::string verdict(common::VerdictStateName(dcufleet::v1::VERDICT_UNTESTED));
      std::string reason = "no evidence";
      for (const auto& av : v.arch_verdicts()) {
        if (av.arch() == arch) {
          verdict = std::string(common::VerdictStateName(av.state()));
          if (av.learned_fix()) verdict += " (with learned fix)";
          reason = av.reason();
        }
      }
      row.push_back(verdict);
      row.push_back(node_text);
      row.push_back(reason);
    } else {
      std::vector<std::string> verdicts;
      for (const auto& av : v.arch_verdicts()) {
        verdicts.push_back(absl::StrCat(av.arch(), ":", common::VerdictStateName(av.state()),
                                        av.learned_fix() ? "+fix" : ""));
      }
      row.push_back(verdicts.empty() ? "-" : absl::StrJoin(verdicts, " "));
      row.push_back(node_text);
    }
    rows.push_back(std::move(row));
  }
  if (resp.stacks().empty()) {
    out << (arch.empty() ? "No stacks.\n" : absl::StrCat("No stacks for ", arch, ".\n"));
    return;
  }
  PrintTable(rows, out);
}

void RenderStackDescription(const dcufleet::v1::GetStackResponse& resp, std::ostream& out) {
  const auto& v = resp.view();
  const auto& s = v.stack();
  auto kv = [&](absl::string_view k, const std::string& val) {
    out << absl::StrFormat("%-18s %s\n", absl::StrCat(k, ":"), val);
  };
  kv("Name", s.id());
  kv("Description", Or(s.display_name()));
  kv("Engine", absl::StrCat(s.engine(), " ", s.engine_version()));
  kv("Runtime", absl::StrCat(common::RuntimeKindName(s.runtime_kind()), " ", s.runtime_location()));
  kv("DTK/ROCm", Or(s.dtk_version()));
  kv("Torch", Or(s.torch_version()));
  kv("Triton", Or(s.triton_version()));
  kv("Flash-attn", Or(s.flash_attn_version()));
  kv("Python", Or(s.python_version()));
  kv("Declared arches", s.arches().empty() ? "-" : absl::StrJoin(s.arches(), ", "));
  kv("Origin", Or(s.origin()));
  kv("Source", Or(s.source()));
  if (!s.note().empty()) kv("Note", s.note());
  const auto& c = s.capabilities();
  std::vector<std::string> caps;
  if (c.accepts_hf_overrides()) caps.push_back("--hf-overrides");
  if (c.accepts_kv_cache_memory_bytes()) caps.push_back("--kv-cache-memory-bytes");
  if (c.accepts_skip_mm_profiling()) caps.push_back("--skip-mm-profiling");
  if (c.v0_engine_available()) caps.push_back("V0 engine");
  if (c.v1_engine_default()) caps.push_back("V1 default");
  kv("Capabilities", caps.empty() ? "-" : absl::StrJoin(caps, ", "));
  out << "Attention backends:\n";
  if (s.attention_backends().empty()) out << "  (not recorded)\n";
  for (const auto& b : s.attention_backends()) {
    std::vector<std::string> env;
    for (const auto& e : b.select_env()) env.push_back(absl::StrCat(e.name(), "=", e.value()));
    out << "  " << b.name() << (b.is_default() ? " (default)" : "")
        << (env.empty() ? "" : absl::StrCat(" [", absl::StrJoin(env, " "), "]")) << ": head sizes "
        << (b.head_sizes().empty() ? std::string("not recorded") : absl::StrJoin(b.head_sizes(), ", "))
        << (b.note().empty() ? "" : absl::StrCat("; ", b.note())) << "\n";
  }
  auto print_env = [&](const dcufleet::v1::EnvRecipe& env, const std::string& indent) {
    for (const auto& sc : env.source_scripts()) out << indent << "source " << sc << "\n";
    for (const auto& var : env.variables()) out << indent << var.name() << "=" << var.value() << "\n";
    if (!env.ld_library_path_prefix().empty()) {
      out << indent << "LD_LIBRARY_PATH=" << absl::StrJoin(env.ld_library_path_prefix(), ":")
          << ":...\n";
    }
    if (!env.path_prefix().empty()) {
      out << indent << "PATH=" << absl::StrJoin(env.path_prefix(), ":") << ":...\n";
    }
  };
  out << "Environment:\n";
  print_env(s.env(), "  ");
  out << "Argv:\n  " << absl::StrJoin(s.argv_template(), " ") << "\n";
  if (!s.container_args().empty()) {
    out << "Container args:\n  " << absl::StrJoin(s.container_args(), " ") << "\n";
  }
  for (const auto& r : s.arch_recipes()) {
    out << "Recipe for " << r.arch() << ":\n";
    print_env(r.env(), "  ");
    if (!r.extra_args().empty()) out << "  extra args: " << absl::StrJoin(r.extra_args(), " ") << "\n";
    for (const auto& p : r.required_patches()) out << "  requires: " << p << "\n";
    if (!r.note().empty()) out << "  note: " << r.note() << "\n";
  }
  out << "Verdicts:\n";
  if (v.arch_verdicts().empty()) out << "  (none)\n";
  for (const auto& av : v.arch_verdicts()) {
    out << "  " << av.arch() << ": " << av.reason() << "\n";
  }
  for (const auto& mv : v.model_verdicts()) {
    out << "  " << mv.arch() << " / " << mv.model() << ": " << mv.reason() << "\n";
  }
  out << "Learned fixes (from launches made Ready by remediation; every later launch on the arch starts with them):\n";
  if (v.learned_fixes().empty()) out << "  (none)\n";
  for (const auto& f : v.learned_fixes()) {
    out << "  " << f.arch() << ": " << modelkit::DescribeLearnedFix(f) << "\n"
        << "    learned " << modelkit::FormatDay(f.at_ms()) << " on node '" << f.node()
        << "' by instance '" << f.instance_id() << "' [" << f.evidence_id() << "]\n";
  }
  out << "Present on:\n";
  if (v.present_on().empty()) out << "  (no node reported it)\n";
  for (const auto& e : v.present_on()) {
    out << "  " << e.node() << ": " << e.environment().location()
        << (e.registered_new() ? " (registered from this node)" : "") << "\n";
  }
  out << "Evidence (newest first):\n";
  if (resp.evidence().empty()) out << "  (none)\n";
  for (const auto& e : resp.evidence()) {
    std::string what = e.outcome() == dcufleet::v1::LAUNCH_READY
                           ? std::string("ready")
                           : absl::StrCat("failed ", e.failure_class());
    out << "  " << modelkit::FormatDay(e.at_ms()) << "  " << e.arch() << "  "
        << (e.model().empty() ? "(probe)" : e.model()) << (e.tp() > 0 ? absl::StrCat(" TP=", e.tp()) : "")
        << "  " << what << "  on " << e.node() << "  [" << e.evidence_id() << "]"
        << (e.has_learned_fix() ? absl::StrCat("  learned: ", modelkit::DescribeLearnedFix(e.learned_fix()))
                                : "")
        << (e.carried_fix().empty() ? "" : absl::StrCat("  carried ", e.carried_fix())) << "\n";
  }
}

}  // namespace dcu::dcuctl
