#include "dcuctl/startup_view.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/enum_names.h"
#include "dcuctl/terminal_safe.h"
#include "modelkit/startup_progress.h"

namespace dcu::dcuctl {
namespace {

using dcufleet::v1::StartupProgress;

// "646,000": as vLLM prints token counts.
std::string Grouped(int64_t v) {
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::string Seconds(double s) { return absl::FormatDuration(absl::Seconds(static_cast<int64_t>(s + 0.5))); }

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

struct Figure {
  std::string name;      // field / evidence name
  std::string evidence;  // which evidence line shows it
  std::string value;     // as shown
};

std::vector<Figure> Figures(const StartupProgress& p) {
  std::vector<Figure> f;
  if (p.shards_total() > 0) {
    std::string v = absl::StrCat(p.shards_loaded(), "/", p.shards_total());
    if (p.seconds_per_shard() > 0) absl::StrAppend(&v, ", ", Num(p.seconds_per_shard()), " s/shard");
    if (p.shards_loaded() < p.shards_total()) absl::StrAppend(&v, ", ETA ", Seconds(p.shards_eta_s()));
    f.push_back({"shards", "shards", v});
  }
  if (p.weights_gib() > 0) f.push_back({"weights_gib", "weights_gib", absl::StrCat(Num(p.weights_gib()), " GiB")});
  if (p.weights_load_s() > 0) f.push_back({"weights_load_s", "weights_load_s", absl::StrCat(Num(p.weights_load_s()), " s")});
  if (p.torch_compile_s() > 0) f.push_back({"torch_compile_s", "torch_compile_s", absl::StrCat(Num(p.torch_compile_s()), " s")});
  if (p.triton_cache_files() > p.triton_cache_files_at_start()) {
    f.push_back({"triton_cache_files", "", absl::StrCat(p.triton_cache_files() - p.triton_cache_files_at_start(), " new")});
  }
  if (p.graphs_total() > 0) f.push_back({"graphs", "graphs", absl::StrCat(p.graphs_captured(), "/", p.graphs_total())});
  if (p.graph_capture_s() > 0) f.push_back({"graph_capture_s", "graph_capture_s", absl::StrCat(Num(p.graph_capture_s()), " s")});
  if (p.kv_cache_gib() > 0) f.push_back({"kv_cache_gib", "kv_cache_gib", absl::StrCat(Num(p.kv_cache_gib()), " GiB")});
  bool blocks_seen = p.gpu_blocks() > 0;
  for (const auto& e : p.evidence()) blocks_seen |= e.figure() == "gpu_blocks";
  if (blocks_seen) f.push_back({"gpu_blocks", "gpu_blocks", Grouped(p.gpu_blocks())});
  if (p.kv_tokens() > 0) f.push_back({"kv_tokens", "kv_tokens", Grouped(p.kv_tokens())});
  if (p.max_concurrency() > 0) {
    f.push_back({"max_concurrency", "max_concurrency",
                 absl::StrCat(Num(p.max_concurrency()), "x at ", Grouped(p.max_concurrency_tokens()),
                              " tokens per request")});
  }
  if (p.init_engine_s() > 0) f.push_back({"init_engine_s", "init_engine_s", absl::StrCat(Num(p.init_engine_s()), " s")});
  return f;
}

const dcufleet::v1::StartupEvidence* EvidenceOf(const StartupProgress& p, const std::string& name) {
  for (const auto& e : p.evidence()) {
    if (e.figure() == name) return &e;
  }
  return nullptr;
}

}  // namespace

std::string ProgressBar(int64_t done, int64_t total, int width) {
  if (total <= 0) return "";
  if (done < 0) done = 0;
  if (done > total) done = total;
  int filled = static_cast<int>(width * done / total);
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "] ", done,
                      "/", total);
}

std::string StartupFigures(const StartupProgress& p) {
  std::vector<std::string> parts;
  if (p.weights_gib() > 0) {
    parts.push_back(absl::StrCat("weights ", Num(p.weights_gib()), " GiB",
                                 p.weights_load_s() > 0 ? absl::StrCat(" in ", Num(p.weights_load_s()), " s") : ""));
  }
  if (p.kv_cache_gib() > 0 || p.kv_tokens() > 0) {
    std::string kv = "KV";
    if (p.kv_cache_gib() > 0) absl::StrAppend(&kv, " ", Num(p.kv_cache_gib()), " GiB");
    if (p.kv_tokens() > 0) absl::StrAppend(&kv, p.kv_cache_gib() > 0 ? " / " : " ", Grouped(p.kv_tokens()), " tokens");
    parts.push_back(kv);
  } else if (p.gpu_blocks() > 0) {
    parts.push_back(absl::StrCat(Grouped(p.gpu_blocks()), " GPU blocks"));
  }
  if (p.max_concurrency() > 0) {
    parts.push_back(absl::StrCat("max concurrency ", Num(p.max_concurrency()), "x at ",
                                 Grouped(p.max_concurrency_tokens()), " tokens"));
  }
  if (p.torch_compile_s() > 0) parts.push_back(absl::StrCat("torch.compile ", Num(p.torch_compile_s()), " s"));
  if (p.graph_capture_s() > 0) parts.push_back(absl::StrCat("graph capture ", Num(p.graph_capture_s()), " s"));
  return absl::StrJoin(parts, ", ");
}

std::string StartupLine(const StartupProgress& p, int64_t now_ms) {
  std::string out = modelkit::DescribeStartupPlace(p);
  if (p.phase() == dcufleet::v1::STARTUP_FAILED) out = absl::StrCat("failed in ", out);
  // A bar where there is a k/n or a count that grows.
  if (p.activity() == dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE && p.graphs_total() > 0) {
    absl::StrAppend(&out, " ", ProgressBar(p.graphs_captured(), p.graphs_total()));
  } else if (p.phase() == dcufleet::v1::STARTUP_LOADING_WEIGHTS && p.shards_total() > 0) {
    absl::StrAppend(&out, " ", ProgressBar(p.shards_loaded(), p.shards_total()));
    if (p.seconds_per_shard() > 0) absl::StrAppend(&out, " ", Num(p.seconds_per_shard()), " s/shard");
    if (p.shards_loaded() < p.shards_total()) absl::StrAppend(&out, ", ETA ", Seconds(p.shards_eta_s()));
  }
  std::string figures = StartupFigures(p);
  if (!figures.empty() && p.phase() != dcufleet::v1::STARTUP_LOADING_WEIGHTS) {
    absl::StrAppend(&out, ": ", figures);
  }
  if (now_ms > 0 && p.phase_since_ms() > 0 && now_ms >= p.phase_since_ms()) {
    absl::StrAppend(&out, "; ", Seconds((now_ms - p.phase_since_ms()) / 1000.0), " in phase");
  }
  return out;
}

nlohmann::json StartupToJson(const StartupProgress& p) {
  nlohmann::json j;
  j["phase"] = std::string(common::StartupPhaseName(p.phase()));
  if (p.activity() != dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED) {
    j["activity"] = std::string(common::StartupActivityName(p.activity()));
  }
  if (p.phase() == dcufleet::v1::STARTUP_FAILED) j["failed_in"] = std::string(common::StartupPhaseName(p.failed_in()));
  if (!p.phase_line().empty()) j["phase_line"] = p.phase_line();
  if (!p.engine().empty()) j["engine"] = p.engine();
  if (!p.engine_version().empty()) j["engine_version"] = p.engine_version();
  if (!p.platform().empty()) j["platform"] = p.platform();
  nlohmann::json f = nlohmann::json::object();
  if (p.shards_total() > 0) {
    f["shards_loaded"] = p.shards_loaded();
    f["shards_total"] = p.shards_total();
    if (p.seconds_per_shard() > 0) f["seconds_per_shard"] = p.seconds_per_shard();
    f["shards_eta_s"] = p.shards_eta_s();
  }
  auto put = [&](const char* k, double v) {
    if (v > 0) f[k] = v;
  };
  put("weights_gib", p.weights_gib());
  put("weights_load_s", p.weights_load_s());
  put("torch_compile_s", p.torch_compile_s());
  if (p.graphs_total() > 0) {
    f["graphs_captured"] = p.graphs_captured();
    f["graphs_total"] = p.graphs_total();
  }
  put("graph_capture_s", p.graph_capture_s());
  if (p.triton_cache_files() > 0) f["triton_cache_files"] = p.triton_cache_files() - p.triton_cache_files_at_start();
  put("kv_cache_gib", p.kv_cache_gib());
  if (p.gpu_blocks() > 0 || EvidenceOf(p, "gpu_blocks")) f["gpu_blocks"] = p.gpu_blocks();
  if (p.kv_tokens() > 0) f["kv_tokens"] = p.kv_tokens();
  if (p.max_concurrency() > 0) {
    f["max_concurrency"] = p.max_concurrency();
    f["max_concurrency_tokens"] = p.max_concurrency_tokens();
  }
  put("init_engine_s", p.init_engine_s());
  j["figures"] = f;
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : p.evidence()) {
    ev.push_back({{"figure", e.figure()}, {"line_number", e.line_number()}, {"line", e.line()}});
  }
  j["evidence"] = ev;
  return j;
}

void RenderStartupTable(const StartupProgress& p, std::ostream& out) {
  out << "PHASE   " << TerminalSafe(StartupLine(p)) << "\n";
  if (!p.engine().empty() || !p.engine_version().empty() || !p.platform().empty()) {
    out << "ENGINE  " << TerminalSafe(absl::StrCat(p.engine().empty() ? "?" : p.engine(),
                                                   p.engine_version().empty() ? "" : " " + p.engine_version(),
                                                   p.platform().empty() ? "" : " on " + p.platform()))
        << "\n";
  }
  if (const auto* e = EvidenceOf(p, "phase")) {
    out << "FROM    L" << e->line_number() << ": " << TerminalSafe(e->line().substr(0, 160)) << "\n";
  }
  std::vector<Figure> figures = Figures(p);
  if (figures.empty()) return;
  size_t w = 6;
  for (const auto& f : figures) w = std::max(w, f.value.size());
  out << "\n" << absl::StrFormat("%-20s  %-*s  %s\n", "FIGURE", static_cast<int>(w), "VALUE", "LINE");
  for (const auto& f : figures) {
    const auto* e = f.evidence.empty() ? nullptr : EvidenceOf(p, f.evidence);
    std::string line = e ? absl::StrCat("L", e->line_number(), ": ", e->line().substr(0, 100)) : "(agent)";
    out << absl::StrFormat("%-20s  %-*s  %s\n", f.name, static_cast<int>(w), f.value, TerminalSafe(line));
  }
}

}  // namespace dcu::dcuctl
