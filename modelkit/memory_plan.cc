#include "modelkit/memory_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/holder_class.h"
#include "common/units.h"
#include "modelkit/config_audit.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::MemoryPlan;
using dcufleet::v1::MemoryPlanRequest;

std::string H(int64_t bytes) { return common::HumanBytes(bytes); }

std::string Util(double u) {
  std::string s = absl::StrFormat("%.2f", u);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The request's figures with vLLM's defaults where it leaves them unset;
// planning and the text rendered from a plan read them the same way.
double UtilOf(const MemoryPlanRequest& req) {
  return req.gpu_memory_utilization() > 0 ? req.gpu_memory_utilization() : 0.9;
}
int64_t MaxLenOf(const MemoryPlanRequest& req) {
  return req.max_model_len() > 0 ? req.max_model_len() : 4096;
}
int64_t SeqsOf(const MemoryPlanRequest& req) {
  return req.max_num_seqs() > 0 ? req.max_num_seqs() : 1;
}

// KV heads one rank holds: the heads split over TP, and one replicated head
// when TP exceeds their count. The byte count and its formula text read it.
int KvHeadsPerRank(const dcufleet::v1::KvShape& k, int tp) {
  return std::max(1, k.kv_heads() / std::max(1, tp));
}

// Plans at one TP: the figures, then the explanation rendered from them.
// `why_not` says in one line why it does not fit.
MemoryPlan PlanAt(const ModelShape& m, const MemoryPlanRequest& req, int tp, std::string* why_not) {
  MemoryPlan p;
  *p.mutable_request() = req;
  p.set_tp(tp);
  const double util = UtilOf(req);
  const int64_t total = req.device_total_bytes();
  const int64_t free = req.device_free_bytes();
  const int64_t overhead = req.overhead_bytes() > 0 ? req.overhead_bytes() : kDefaultOverheadBytes;
  const int64_t max_len = MaxLenOf(req);
  const int64_t seqs = SeqsOf(req);
  const int64_t weights = (m.weight_bytes + tp - 1) / tp;
  const int64_t per_token = m.KvBytesPerTokenPerDevice(tp);
  const int64_t budget = static_cast<int64_t>(std::llround(util * static_cast<double>(total)));
  p.set_model_weight_bytes(m.weight_bytes);
  *p.mutable_kv_shape() = m.Kv();
  p.set_weights_per_device_bytes(weights);
  p.set_kv_bytes_per_token_per_device(per_token);
  p.set_overhead_bytes(overhead);
  p.set_budget_bytes(budget);
  p.set_kv_min_bytes(per_token * max_len);
  p.set_kv_target_bytes(per_token * max_len * seqs);

  const int64_t kv_available = req.kv_cache_memory_bytes() > 0 ? req.kv_cache_memory_bytes()
                                                                : budget - weights - overhead;
  p.set_kv_available_bytes(std::max<int64_t>(0, kv_available));
  p.set_max_tokens_in_kv(per_token > 0 && kv_available > 0 ? kv_available / per_token : 0);

  bool startup_ok = free >= budget;
  p.set_startup_ok(startup_ok);

  bool fits = true;
  if (!startup_ok) {
    fits = false;
    *why_not = absl::StrCat("device-view free ", GiBText(free), " GiB is below ", Util(util),
                            " x ", GiBText(total), " GiB = ", GiBText(budget),
                            " GiB (free the device of leftover processes, pick other devices, or "
                            "lower gpu_memory_utilization)");
  } else if (req.kv_cache_memory_bytes() > 0 &&
             weights + overhead + kv_available > std::min(free, total)) {
    fits = false;
    *why_not = absl::StrCat("weights ", H(weights), " + overhead ", H(overhead), " + KV ",
                            H(kv_available), " exceed device-view free ", H(free));
  } else if (kv_available <= 0) {
    fits = false;
    *why_not = absl::StrCat("weights ", H(weights), " + overhead ", H(overhead),
                            " leave no KV cache within the ", GiBText(budget), " GiB budget");
  } else if (kv_available < p.kv_min_bytes()) {
    fits = false;
    *why_not = absl::StrCat("KV cache ", H(kv_available), " holds ", p.max_tokens_in_kv(),
                            " tokens, fewer than one ", max_len, "-token sequence (",
                            H(p.kv_min_bytes()), ")");
  }
  p.set_fits(fits);
  if (!fits) p.set_failure_reason(*why_not);
  for (auto& line : ExplainMemoryPlan(p)) p.add_explanation(std::move(line));
  return p;
}

}  // namespace

DeviceBlock DeviceBlockOf(const dcufleet::v1::Device& device, int64_t unreclaimed_tolerance_bytes) {
  if (device.unreclaimed_bytes() > unreclaimed_tolerance_bytes) return DeviceBlock::kStrandedMemory;
  for (const auto& h : device.holders()) {
    if (common::HolderToReap(h.holder_class())) return DeviceBlock::kHolderToReap;
  }
  return DeviceBlock::kNone;
}

NodeBlock NodeBlockOf(const dcufleet::v1::NodeView& node) {
  if (node.state() != dcufleet::v1::NODE_READY) return NodeBlock::kNotReady;
  if (node.has_drain()) return NodeBlock::kAgentDrain;
  if (node.has_cordon()) return NodeBlock::kCordoned;
  return NodeBlock::kNone;
}

std::string GiBText(int64_t bytes) {
  std::string s = absl::StrFormat("%.2f", static_cast<double>(bytes) / common::kGiB);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::vector<std::string> ExplainMemoryPlan(const MemoryPlan& p, bool with_startup_rule) {
  const MemoryPlanRequest& req = p.request();
  const double util = UtilOf(req);
  const int64_t total = req.device_total_bytes();
  const int64_t free = req.device_free_bytes();
  const int64_t max_len = MaxLenOf(req);
  const int64_t seqs = SeqsOf(req);
  const int tp = p.tp();
  const int64_t weights = p.weights_per_device_bytes();
  const int64_t overhead = p.overhead_bytes();
  const int64_t budget = p.budget_bytes();
  std::vector<std::string> ex;
  ex.push_back(absl::StrCat("weights: ", H(p.model_weight_bytes()), " / TP ", tp, " = ", H(weights),
                            " per device"));
  ex.push_back(absl::StrCat("KV cache per token per device: ", KvFormulaText(p.kv_shape(), tp), " = ",
                            p.kv_bytes_per_token_per_device(), " B"));
  ex.push_back(absl::StrCat("KV cache for one ", max_len, "-token sequence: ", H(p.kv_min_bytes()),
                            "; for max_num_seqs ", seqs, ": ", H(p.kv_target_bytes())));
  ex.push_back(absl::StrCat("overhead (activations, HIP context, non-torch): ", H(overhead),
                            req.overhead_bytes() > 0 ? "" : " (default)"));
  ex.push_back(absl::StrCat("budget: gpu_memory_utilization ", Util(util), " x total ", GiBText(total),
                            " GiB = ", GiBText(budget), " GiB per device"));
  // kv_available_bytes is clamped at 0; the line shows the subtraction.
  int64_t kv_available;
  if (req.kv_cache_memory_bytes() > 0) {
    kv_available = req.kv_cache_memory_bytes();
    ex.push_back(absl::StrCat("KV cache fixed by --kv-cache-memory-bytes: ", H(kv_available),
                              "; weights + overhead + KV = ", H(weights + overhead + kv_available)));
  } else {
    kv_available = budget - weights - overhead;
    ex.push_back(absl::StrCat("KV cache available: budget ", GiBText(budget), " GiB - weights ",
                              GiBText(weights), " GiB - overhead ", GiBText(overhead), " GiB = ",
                              kv_available > 0 ? H(kv_available) : std::string("nothing")));
  }
  if (with_startup_rule) {
    if (p.startup_ok()) {
      ex.push_back(absl::StrCat("start-up rule: device-view free ", GiBText(free), " GiB >= ",
                                Util(util), " x ", GiBText(total), " GiB = ", GiBText(budget),
                                " GiB: ok"));
    } else {
      ex.push_back(absl::StrCat(
          "start-up rule: device-view free ", GiBText(free), " GiB < ", Util(util), " x ",
          GiBText(total), " GiB = ", GiBText(budget),
          " GiB: vLLM refuses to start (\"Free memory on device (", GiBText(free), "/",
          GiBText(total), " GiB) on startup is less than desired GPU memory utilization (",
          Util(util), ", ", GiBText(budget), " GiB)\")"));
    }
  }
  if (p.fits()) {
    const int64_t concurrent = p.kv_min_bytes() > 0 ? kv_available / p.kv_min_bytes() : 0;
    ex.push_back(absl::StrCat("fits: KV cache holds ", p.max_tokens_in_kv(), " tokens = ", concurrent,
                              " concurrent ", max_len, "-token sequences",
                              concurrent < seqs
                                  ? absl::StrCat(" (fewer than max_num_seqs ", seqs,
                                                 ": longer queues, not a failure)")
                                  : std::string()));
  } else {
    ex.push_back(absl::StrCat("does not fit at TP ", tp, ": ", p.failure_reason()));
  }
  return ex;
}

std::string KvFormulaText(const dcufleet::v1::KvShape& k, int tp) {
  if (k.kv_lora_rank() > 0) {
    return absl::StrCat(k.attention_layers(), " layers x (kv_lora_rank ", k.kv_lora_rank(),
                        " + qk_rope_head_dim ", k.qk_rope_head_dim(), ") x ", k.dtype_bytes(),
                        " bytes (MLA latent, on every rank)");
  }
  const int kv = k.kv_heads();
  const int per_rank = KvHeadsPerRank(k, tp);
  std::string heads = kv >= tp ? absl::StrCat(per_rank, " kv heads (", kv, " / TP ", tp, ")")
                               : absl::StrCat("1 kv head (", kv, " kv heads replicated over TP ",
                                              tp, ")");
  return absl::StrCat("2 (K,V) x ", k.attention_layers(), " layers x ", heads, " x ", k.head_dim(),
                      " head_dim x ", k.dtype_bytes(), " bytes");
}

std::vector<std::string> PlacementMemoryLines(const dcufleet::v1::Placement& pl) {
  if (!pl.memory_explanation().empty()) {
    return {pl.memory_explanation().begin(), pl.memory_explanation().end()};
  }
  std::vector<std::string> lines;
  // Without the start-up rule: the plan assumed a clean device, and the
  // scheduler checked each chosen device's own free figure against the budget.
  if (pl.has_memory_plan()) lines = ExplainMemoryPlan(pl.memory_plan(), /*with_startup_rule=*/false);
  std::vector<std::string> avoided;
  if (!pl.devices_in_use().empty()) {
    avoided.push_back(DevicesRunningOthersText(
        absl::MakeConstSpan(pl.devices_in_use().data(), pl.devices_in_use_size())));
  }
  avoided.insert(avoided.end(), pl.devices_avoided().begin(), pl.devices_avoided().end());
  if (!avoided.empty()) lines.push_back(absl::StrCat("avoided: ", absl::StrJoin(avoided, "; ")));
  return lines;
}

std::string DevicesRunningOthersText(absl::Span<const int32_t> devices) {
  if (devices.size() == 1) return absl::StrCat("device ", devices[0], " runs another instance");
  return absl::StrCat("devices ", absl::StrJoin(devices, ", "), " run other instances");
}

int64_t ModelShape::KvBytesPerTokenPerDevice(int tp) const {
  const dcufleet::v1::KvShape k = Kv();
  if (k.kv_lora_rank() > 0) {
    return static_cast<int64_t>(k.attention_layers()) * (k.kv_lora_rank() + k.qk_rope_head_dim()) *
           k.dtype_bytes();
  }
  return 2LL * k.attention_layers() * KvHeadsPerRank(k, tp) * k.head_dim() * k.dtype_bytes();
}

dcufleet::v1::KvShape ModelShape::Kv() const {
  dcufleet::v1::KvShape k;
  k.set_attention_layers(attention_layers);
  k.set_kv_heads(num_kv_heads > 0 ? num_kv_heads : num_attention_heads);
  k.set_head_dim(head_dim);
  k.set_dtype_bytes(dtype_bytes);
  k.set_kv_lora_rank(kv_lora_rank);
  k.set_qk_rope_head_dim(qk_rope_head_dim);
  return k;
}

std::vector<int> ModelShape::ValidTp(int max_tp) const {
  return ValidTensorParallelSizes(num_attention_heads, num_kv_heads, max_tp);
}

ModelShape ShapeFromAudit(const dcufleet::v1::AuditReport& r) {
  ModelShape m;
  m.name = r.catalog_match().empty() ? r.path() : r.catalog_match();
  m.weight_bytes = r.weight_bytes();
  m.num_attention_heads = r.num_attention_heads();
  m.num_kv_heads = r.num_key_value_heads();
  m.head_dim = r.effective_head_dim();
  m.attention_layers = r.attention_layers() > 0 ? r.attention_layers() : r.num_hidden_layers();
  int bytes = DtypeBytes(r.torch_dtype());
  m.dtype_bytes = bytes > 0 ? bytes : 2;
  m.kv_lora_rank = r.kv_lora_rank();
  m.qk_rope_head_dim = r.qk_rope_head_dim();
  return m;
}

ModelShape ShapeFromCatalog(const dcufleet::v1::ModelEntry& e) {
  const auto& f = e.fingerprint();
  ModelShape m;
  m.name = e.name();
  m.weight_bytes = e.weight_bytes();
  m.num_attention_heads = f.num_attention_heads();
  m.num_kv_heads = f.num_key_value_heads();
  m.head_dim = f.head_dim() > 0 ? f.head_dim()
                                : (f.num_attention_heads() > 0
                                       ? static_cast<int>(f.hidden_size() / f.num_attention_heads())
                                       : 0);
  m.attention_layers =
      f.full_attention_layers() > 0 ? f.full_attention_layers() : f.num_hidden_layers();
  int bytes = DtypeBytes(f.torch_dtype());
  m.dtype_bytes = bytes > 0 ? bytes : 2;
  m.kv_lora_rank = f.kv_lora_rank();
  m.qk_rope_head_dim = f.qk_rope_head_dim();
  return m;
}

MemoryPlan PlanMemory(const ModelShape& m, const MemoryPlanRequest& req) {
  std::string why;
  if (req.tp() > 0) {
    MemoryPlan p = PlanAt(m, req, req.tp(), &why);
    std::vector<int> valid = m.ValidTp(64);
    if (std::find(valid.begin(), valid.end(), req.tp()) == valid.end()) {
      p.set_fits(false);
      p.set_failure_reason(absl::StrCat("TP ", req.tp(), " does not divide the ",
                                        m.num_attention_heads, " attention heads / ",
                                        m.num_kv_heads, " KV heads (valid: ",
                                        absl::StrJoin(valid, ", "), ")"));
      p.add_explanation(p.failure_reason());
    }
    return p;
  }
  int devices = req.device_count() > 0 ? req.device_count() : 8;
  std::vector<int> candidates = m.ValidTp(devices);
  MemoryPlan last;
  std::vector<std::string> tried;
  for (int tp : candidates) {
    MemoryPlan p = PlanAt(m, req, tp, &why);
    if (p.fits()) {
      p.set_tp_chosen(true);
      for (const auto& t : tried) p.add_tried(t);
      p.mutable_explanation()->Add(
          absl::StrCat("chose TP ", tp, ": the smallest valid tensor parallel size that fits",
                       tried.empty() ? "" : absl::StrCat(" (", absl::StrJoin(tried, "; "), ")")));
      return p;
    }
    tried.push_back(absl::StrCat("TP ", tp, ": ", why));
    last = std::move(p);
  }
  if (candidates.empty()) {
    last.mutable_request()->CopyFrom(req);
    last.set_failure_reason(absl::StrCat("no valid tensor parallel size up to ", devices,
                                         " devices for ", m.num_attention_heads,
                                         " attention heads"));
  } else {
    last.set_failure_reason(absl::StrCat("no TP up to ", devices, " devices fits: ",
                                         absl::StrJoin(tried, "; ")));
  }
  last.set_fits(false);
  last.set_tp_chosen(false);
  for (const auto& t : tried) last.add_tried(t);
  last.add_explanation(last.failure_reason());
  return last;
}

}  // namespace dcu::modelkit
