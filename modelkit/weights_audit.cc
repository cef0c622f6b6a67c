#include "modelkit/weights_audit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/units.h"
#include "modelkit/safetensors.h"
#include "nlohmann/json.hpp"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using dcufleet::v1::WeightsProblem;
using dcufleet::v1::WeightsProblemKind;
using dcufleet::v1::WeightsVerification;
using json = nlohmann::json;

constexpr char kIndexName[] = "model.safetensors.index.json";
constexpr size_t kMaxWeightsIndexBytes = 64 << 20;
constexpr size_t kMaxManifestBytes = 4 << 20;
// Problems kept in the report (the rest are counted): the report travels
// in every NodeStatus.
constexpr int kMaxProblems = 64;

// File names come from the directory and tensor names from JSON (valid
// UTF-8); proto strings must be UTF-8, so a hostile name is shown with '?'.
std::string Printable(absl::string_view s) {
  std::string out;
  for (char c : s) out.push_back(static_cast<unsigned char>(c) >= 0x80 || c < 0x20 ? '?' : c);
  return out;
}

void AddProblem(WeightsVerification* v, WeightsProblemKind kind, absl::string_view file,
         std::string message, int64_t expected = 0, int64_t actual = 0, absl::string_view tensor = "") {
  v->set_problems_total(v->problems_total() + 1);
  if (v->problems_size() >= kMaxProblems) return;
  WeightsProblem* p = v->add_problems();
  p->set_kind(kind);
  p->set_file(Printable(file));
  p->set_tensor(std::string(tensor));
  p->set_expected(expected);
  p->set_actual(actual);
  p->set_message(std::move(message));
}

std::string Bytes(uint64_t n) { return common::HumanBytes(static_cast<int64_t>(n)); }

// "2.89 of 3.63 GiB": the figures a person compares, then the exact ones.
std::string OfBytes(uint64_t have, uint64_t want) {
  return absl::StrCat(Bytes(have), " of ", Bytes(want), " (", have, " of ", want, " bytes)");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

struct ShardInfo {
  std::string file;
  bool header_ok = false;
  SafetensorsHeader header;
};

// One tensor as the shape check sees it.
struct TensorRef {
  const SafetensorsTensor* tensor;
  const std::string* file;
};

// --- The directory: index, shards present, stray shards.

std::vector<std::string> SafetensorsFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors") out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsFileName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// Reads and checks one shard's header; its problems go to `v`.
ShardInfo CheckShard(const std::string& dir, const std::string& file, WeightsVerification* v) {
  ShardInfo s;
  s.file = file;
  uint64_t size = 0;
  absl::StatusOr<SafetensorsHeader> h = ReadSafetensorsHeader((fs::path(dir) / file).string(), &size);
  const std::string name = Printable(file);
  if (!h.ok()) {
    switch (h.status().code()) {
      case absl::StatusCode::kDataLoss:
        AddProblem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED, file,
            absl::StrCat(name, " ", h.status().message()), 0, static_cast<int64_t>(size));
        break;
      case absl::StatusCode::kInvalidArgument:
        AddProblem(v, dcufleet::v1::WEIGHTS_HEADER_INVALID, file,
            absl::StrCat(name, ": bad safetensors header: ", h.status().message()));
        break;
      default:
        AddProblem(v, dcufleet::v1::WEIGHTS_SHARD_UNREADABLE, file,
            absl::StrCat(name, ": ", h.status().message()));
    }
    return s;
  }
  s.header = *std::move(h);
  s.header_ok = true;
  v->set_tensors(v->tensors() + static_cast<int64_t>(s.header.tensors.size()));
  v->set_tensor_bytes(v->tensor_bytes() + static_cast<int64_t>(s.header.data_bytes));
  // One finding per unknown dtype (a hostile header may hold millions).
  std::map<std::string, std::pair<int64_t, std::string>> unknown;  // dtype -> count, first tensor
  for (const auto& t : s.header.tensors) {
    if (SafetensorsDtypeBits(t.dtype)) continue;
    auto& u = unknown[t.dtype];
    if (u.first++ == 0) u.second = t.name;
  }
  for (const auto& [dtype, u] : unknown) {
    AddProblem(v, dcufleet::v1::WEIGHTS_UNKNOWN_DTYPE, file,
        absl::StrCat(name, ": ", u.first, " tensor(s) have dtype '", Printable(dtype), "' (e.g. '", u.second,
                     "'), which this build does not know; their sizes cannot be checked"),
        0, u.first, u.second);
  }
  const uint64_t want = s.header.ExpectedFileBytes();
  if (size < want) {
    AddProblem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED, file,
        absl::StrCat(name, " truncated: ", OfBytes(size, want)), static_cast<int64_t>(want),
        static_cast<int64_t>(size));
  } else if (size > want) {
    AddProblem(v, dcufleet::v1::WEIGHTS_SHARD_PADDED, file,
        absl::StrCat(name, " has ", size - want, " bytes after its last tensor: ", Bytes(size),
                     " but its header accounts for ", OfBytes(want, want)),
        static_cast<int64_t>(want), static_cast<int64_t>(size));
  }
  return s;
}

// The index's weight_map against the shards' headers, and total_size
// against the sum of the tensors' bytes.
void CheckIndexAgainstHeaders(const std::map<std::string, std::string>& weight_map,
                              const std::vector<ShardInfo>& shards, bool have_total,
                              uint64_t total_size, bool all_read, WeightsVerification* v) {
  std::map<std::string, const ShardInfo*> by_file;
  for (const auto& s : shards) by_file[s.file] = &s;
  // Tensors the index maps to each shard.
  std::map<std::string, std::set<std::string>> mapped;
  for (const auto& [tensor, file] : weight_map) mapped[file].insert(tensor);
  for (const auto& s : shards) {
    if (!s.header_ok) continue;
    const std::set<std::string>& want = mapped[s.file];
    std::set<std::string> have;
    for (const auto& t : s.header.tensors) have.insert(t.name);
    std::vector<std::string> absent, extra;
    for (const auto& t : want) {
      if (!have.count(t)) absent.push_back(t);
    }
    for (const auto& t : have) {
      if (!want.count(t)) extra.push_back(t);
    }
    auto some = [](const std::vector<std::string>& v) {
      std::vector<std::string> shown(v.begin(), v.begin() + std::min<size_t>(v.size(), 3));
      return absl::StrCat(absl::StrJoin(shown, ", "), v.size() > shown.size() ? ", ..." : "");
    };
    const std::string name = Printable(s.file);
    if (!absent.empty()) {
      AddProblem(v, dcufleet::v1::WEIGHTS_INDEX_MISMATCH, s.file,
          absl::StrCat(name, ": ", absent.size(), " of the ", want.size(), " tensors ", kIndexName,
                       " maps to it are not in its header: ", some(absent)),
          static_cast<int64_t>(want.size()), static_cast<int64_t>(want.size() - absent.size()),
          absent.front());
    }
    if (!extra.empty()) {
      std::vector<std::string> elsewhere;
      for (const auto& t : extra) {
        auto it = weight_map.find(t);
        elsewhere.push_back(it == weight_map.end() ? absl::StrCat(t, " (not in the index)")
                                                   : absl::StrCat(t, " (index: ", Printable(it->second), ")"));
      }
      AddProblem(v, dcufleet::v1::WEIGHTS_INDEX_MISMATCH, s.file,
          absl::StrCat(name, " declares ", extra.size(), " tensor(s) ", kIndexName,
                       " does not map to it: ", some(elsewhere)),
          static_cast<int64_t>(want.size()), static_cast<int64_t>(have.size()), extra.front());
    }
  }
  if (have_total && all_read && static_cast<uint64_t>(v->tensor_bytes()) != total_size) {
    AddProblem(v, dcufleet::v1::WEIGHTS_TOTAL_SIZE_MISMATCH, kIndexName,
        absl::StrCat(kIndexName, " metadata.total_size is ", total_size, " bytes (", Bytes(total_size),
                     ") but the shards' tensors hold ", v->tensor_bytes(), " (",
                     Bytes(static_cast<uint64_t>(v->tensor_bytes())), ")"),
        static_cast<int64_t>(total_size), v->tensor_bytes());
  }
}

// --- Shapes against config.json.

// The figures a shape is computed from; 0 means unknown.
struct Figures {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, inter = 0, vocab = 0;
  int64_t moe_inter = 0, experts = 0, shared_inter = 0, layers = 0;
  int64_t v_head_dim = 0, kv_lora = 0, q_lora = 0, qk_rope = 0, qk_nope = 0;
};

Figures FromConfig(const ModelConfig& c) {
  Figures f;
  f.hidden = c.hidden_size;
  f.heads = c.num_attention_heads;
  f.kv_heads = c.EffectiveKvHeads();
  f.head_dim = c.EffectiveHeadDim();
  f.inter = c.intermediate_size;
  f.vocab = c.vocab_size;
  f.moe_inter = c.moe_intermediate_size;
  f.experts = c.num_experts;
  f.shared_inter = c.shared_expert_intermediate_size > 0
                       ? c.shared_expert_intermediate_size
                       : (c.n_shared_experts > 0 ? c.moe_intermediate_size * c.n_shared_experts : 0);
  f.layers = c.num_hidden_layers;
  f.v_head_dim = c.v_head_dim;
  f.kv_lora = c.kv_lora_rank;
  f.q_lora = c.q_lora_rank;
  f.qk_rope = c.qk_rope_head_dim;
  f.qk_nope = c.qk_nope_head_dim;
  return f;
}

// The catalog's figures: what its fingerprint records (the rest unknown).
Figures FromFingerprint(const dcufleet::v1::ModelFingerprint& p) {
  Figures f;
  f.hidden = p.hidden_size();
  f.heads = p.num_attention_heads();
  f.kv_heads = p.num_key_value_heads() > 0 ? p.num_key_value_heads() : p.num_attention_heads();
  f.head_dim = p.head_dim() > 0 ? p.head_dim()
                                : (p.num_attention_heads() > 0 ? p.hidden_size() / p.num_attention_heads() : 0);
  f.inter = p.intermediate_size();
  f.vocab = p.vocab_size();
  f.moe_inter = p.moe_intermediate_size();
  f.experts = p.num_experts();
  f.layers = p.num_hidden_layers();
  f.kv_lora = p.kv_lora_rank();
  f.qk_rope = p.qk_rope_head_dim();
  return f;
}

// One dimension's rule: its value from the figures, and the config.json
// field(s) it rests on.
struct DimRule {
  const char* field;
  int64_t (*value)(const Figures&);
};

int64_t Hidden(const Figures& f) { return f.hidden; }
int64_t Vocab(const Figures& f) { return f.vocab; }
int64_t QOut(const Figures& f) { return f.heads * f.head_dim; }
int64_t KvOut(const Figures& f) { return f.kv_heads * f.head_dim; }
int64_t Inter(const Figures& f) { return f.inter; }
int64_t MoeInter(const Figures& f) { return f.moe_inter; }
int64_t SharedInter(const Figures& f) { return f.shared_inter; }
int64_t Experts(const Figures& f) { return f.experts; }
int64_t MlaQOut(const Figures& f) { return f.heads * (f.qk_nope + f.qk_rope); }
int64_t MlaOIn(const Figures& f) { return f.heads * f.v_head_dim; }
int64_t MlaKvA(const Figures& f) { return f.kv_lora + f.qk_rope; }
int64_t QLora(const Figures& f) { return f.q_lora; }
int64_t KvLora(const Figures& f) { return f.kv_lora; }
int64_t MlaKvB(const Figures& f) { return f.heads * (f.qk_nope + f.v_head_dim); }

constexpr DimRule kHidden{"hidden_size", Hidden};
constexpr DimRule kVocab{"vocab_size", Vocab};
constexpr DimRule kQOut{"num_attention_heads × head_dim", QOut};
constexpr DimRule kKvOut{"num_key_value_heads × head_dim", KvOut};
constexpr DimRule kInter{"intermediate_size", Inter};
constexpr DimRule kMoeInter{"moe_intermediate_size", MoeInter};
constexpr DimRule kSharedInter{"shared expert intermediate size", SharedInter};
constexpr DimRule kExperts{"num_experts", Experts};
constexpr DimRule kMlaQOut{"num_attention_heads × (qk_nope_head_dim + qk_rope_head_dim)", MlaQOut};
constexpr DimRule kMlaOIn{"num_attention_heads × v_head_dim", MlaOIn};
constexpr DimRule kMlaKvA{"kv_lora_rank + qk_rope_head_dim", MlaKvA};
constexpr DimRule kQLora{"q_lora_rank", QLora};
constexpr DimRule kKvLora{"kv_lora_rank", KvLora};
constexpr DimRule kMlaKvB{"num_attention_heads × (qk_nope_head_dim + v_head_dim)", MlaKvB};

// The expected [out, in] of a tensor by its name (after the layer prefix),
// for the dense and MoE decoders of the Llama/Qwen/DeepSeek families;
// false for names the check does not interpret (norms, biases, routers'
// biases, vision towers, ...).
bool RulesFor(absl::string_view rest, bool in_layer, const ModelConfig& c, DimRule* out, DimRule* in) {
  if (!in_layer) {
    if (absl::EndsWith(rest, "embed_tokens.weight") || absl::EndsWith(rest, "lm_head.weight")) {
      *out = kVocab;
      *in = kHidden;
      return true;
    }
    return false;
  }
  const bool mla = c.is_mla();
  if (rest == "self_attn.q_proj.weight") {
    *out = mla ? kMlaQOut : kQOut;
    *in = kHidden;
    return true;
  }
  if (!mla && (rest == "self_attn.k_proj.weight" || rest == "self_attn.v_proj.weight")) {
    *out = kKvOut;
    *in = kHidden;
    return true;
  }
  if (rest == "self_attn.o_proj.weight") {
    *out = kHidden;
    *in = mla ? kMlaOIn : kQOut;
    return true;
  }
  if (mla) {
    if (rest == "self_attn.kv_a_proj_with_mqa.weight") { *out = kMlaKvA; *in = kHidden; return true; }
    if (rest == "self_attn.q_a_proj.weight") { *out = kQLora; *in = kHidden; return true; }
    if (rest == "self_attn.q_b_proj.weight") { *out = kMlaQOut; *in = kQLora; return true; }
    if (rest == "self_attn.kv_b_proj.weight") { *out = kMlaKvB; *in = kKvLora; return true; }
  }
  auto mlp = [&](absl::string_view name, const DimRule& inter) {
    if (absl::EndsWith(name, "gate_proj.weight") || absl::EndsWith(name, "up_proj.weight")) {
      *out = inter;
      *in = kHidden;
      return true;
    }
    if (absl::EndsWith(name, "down_proj.weight")) {
      *out = kHidden;
      *in = inter;
      return true;
    }
    return false;
  };
  if (absl::StartsWith(rest, "mlp.experts.")) return mlp(rest, kMoeInter);
  if (absl::StartsWith(rest, "mlp.shared_expert.") || absl::StartsWith(rest, "mlp.shared_experts.")) {
    return mlp(rest, kSharedInter);
  }
  if (rest == "mlp.gate.weight" && c.is_moe()) {  // the router
    *out = kExperts;
    *in = kHidden;
    return true;
  }
  if (absl::StartsWith(rest, "mlp.") && std::count(rest.begin(), rest.end(), '.') == 2) {
    return mlp(rest, kInter);
  }
  return false;
}

// "model.layers.12.self_attn.q_proj.weight" -> 12 and "self_attn.q_proj.weight";
// -1 when the name has no "layers.N." part.
int LayerOf(absl::string_view name, absl::string_view* rest) {
  size_t at = 0;
  while ((at = name.find("layers.", at)) != absl::string_view::npos) {
    if (at == 0 || name[at - 1] == '.') {
      absl::string_view tail = name.substr(at + 7);
      size_t dot = tail.find('.');
      int layer = 0;
      if (dot != absl::string_view::npos && dot > 0 && dot <= 6 && absl::SimpleAtoi(tail.substr(0, dot), &layer) &&
          layer >= 0) {
        *rest = tail.substr(dot + 1);
        return layer;
      }
    }
    at += 7;
  }
  *rest = name;
  return -1;
}

// Vision towers and audio encoders carry their own "layers.N": only the
// language model's tensors are the config's text figures.
bool IsLanguageModelTensor(absl::string_view name) {
  for (absl::string_view other : {"vision", "visual", "audio", "mm_projector", "multi_modal"}) {
    if (absl::StrContains(name, other)) return false;
  }
  return true;
}

void CheckShapes(const std::vector<TensorRef>& tensors, const ModelConfig& c, WeightsVerification* v) {
  const Figures fig = FromConfig(c);
  struct Group {
    int64_t count = 0;
    std::string tensor, file, shape;
  };
  // (field, config's figure, weights' figure) -> how many tensors, first one.
  std::map<std::tuple<std::string, int64_t, int64_t>, Group> groups;
  std::map<std::string, int64_t> skipped;  // why -> how many
  int max_layer = -1;
  std::set<int> layers;
  for (const TensorRef& r : tensors) {
    const SafetensorsTensor& t = *r.tensor;
    if (!IsLanguageModelTensor(t.name)) {
      ++skipped["not the language model"];
      continue;
    }
    absl::string_view rest;
    int layer = LayerOf(t.name, &rest);
    if (layer >= 0) {
      layers.insert(layer);
      max_layer = std::max(max_layer, layer);
    }
    DimRule out{}, in{};
    if (!RulesFor(rest, layer >= 0, c, &out, &in)) {
      if (!absl::EndsWith(t.name, ".weight")) {
        ++skipped["scales, biases and other non-weight tensors"];
      } else {
        ++skipped["names not interpreted (norms, routers, other layouts)"];
      }
      continue;
    }
    // Quantized weights are packed (GPTQ/AWQ int32, bitsandbytes uint8) or
    // scaled (fp8): their stored shapes are not the model's.
    if (!IsUnquantizedFloat(t.dtype)) {
      ++skipped[absl::StrCat("quantized (", t.dtype, ")")];
      continue;
    }
    if (t.shape.size() != 2) {
      Group& g = groups[{absl::StrCat(out.field, " × ", in.field), 0, static_cast<int64_t>(t.shape.size())}];
      if (g.count++ == 0) g = {1, t.name, *r.file, ShapeText(t.shape)};
      continue;
    }
    const int64_t want_out = out.value(fig), want_in = in.value(fig);
    if (want_out <= 0 || want_in <= 0) {
      ++skipped["config.json lacks the figures"];
      continue;
    }
    v->set_shape_checked(v->shape_checked() + 1);
    for (const auto& [rule, want, have] :
         {std::tuple{out, want_out, t.shape[0]}, std::tuple{in, want_in, t.shape[1]}}) {
      if (want == have) continue;
      Group& g = groups[{rule.field, want, have}];
      if (g.count++ == 0) {
        g.tensor = t.name;
        g.file = *r.file;
        g.shape = ShapeText(t.shape);
      }
    }
  }
  for (const auto& [key, g] : groups) {
    const auto& [field, want, have] = key;
    if (want == 0) {  // not a matrix
      AddProblem(v, dcufleet::v1::WEIGHTS_SHAPE_MISMATCH, g.file,
          absl::StrCat(g.count, " tensor(s) should be 2-D [", field, "] but are ", g.shape, ", e.g. '",
                       g.tensor, "' in ", Printable(g.file)),
          2, have, g.tensor);
      continue;
    }
    AddProblem(v, dcufleet::v1::WEIGHTS_SHAPE_MISMATCH, g.file,
        absl::StrCat("config.json gives ", field, " = ", want, " but ", g.count,
                     " tensor(s) have ", have, ", e.g. '", g.tensor, "' ", g.shape, " in ",
                     Printable(g.file)),
        want, have, g.tensor);
    v->mutable_problems(v->problems_size() - 1)->set_config_field(field);
  }
  if (c.num_hidden_layers > 0 && max_layer >= 0) {
    // DeepSeek-V3 stores its MTP layers after the decoder's.
    const int want = c.num_hidden_layers + c.num_nextn_predict_layers;
    if (max_layer + 1 != want) {
      AddProblem(v, dcufleet::v1::WEIGHTS_LAYER_COUNT_MISMATCH, "config.json",
          absl::StrCat("config.json gives num_hidden_layers = ", c.num_hidden_layers,
                       c.num_nextn_predict_layers ? absl::StrCat(" (+", c.num_nextn_predict_layers, " MTP)") : "",
                       " but the weights have layers 0..", max_layer, " (", max_layer + 1, ")"),
          want, max_layer + 1);
      v->mutable_problems(v->problems_size() - 1)->set_config_field("num_hidden_layers");
    } else if (static_cast<int>(layers.size()) != max_layer + 1) {
      std::vector<int> gaps;
      for (int i = 0; i <= max_layer && gaps.size() < 5; ++i) {
        if (!layers.count(i)) gaps.push_back(i);
      }
      AddProblem(v, dcufleet::v1::WEIGHTS_LAYER_COUNT_MISMATCH, "weights",
          absl::StrCat("the weights have no tensor for layer(s) ", absl::StrJoin(gaps, ", "), " of 0..",
                       max_layer),
          max_layer + 1, static_cast<int64_t>(layers.size()));
    }
  }
  std::vector<std::string> why;
  int64_t n = 0;
  for (const auto& [reason, count] : skipped) {
    why.push_back(absl::StrCat(count, " ", reason));
    n += count;
  }
  v->set_shape_skipped(n);
  if (!why.empty()) v->set_shape_skip_reason(absl::StrCat("shapes not checked: ", absl::StrJoin(why, "; ")));
}

// --- Content: sha256 against a manifest.

absl::StatusOr<std::string> HashFile(const std::string& path, const WeightsAuditOptions& o,
                                     ContentProgress* progress) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open: ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return absl::FailedPreconditionError("not a regular file");
  // Sequential read-ahead; the page cache still keeps what it keeps.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  common::Sha256Stream sha;
  std::string buf(std::max<size_t>(o.chunk_bytes, 4096), '\0');
  progress->file_done = 0;
  progress->file_total = st.st_size;
  while (true) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::DataLossError(absl::StrCat("read: ", std::strerror(errno)));
    if (r == 0) break;
    sha.Update(absl::string_view(buf.data(), static_cast<size_t>(r)));
    progress->file_done += r;
    progress->done += r;
    if (o.progress) o.progress(*progress);
  }
  std::string hex = sha.FinalHex();
  if (hex.empty()) return absl::InternalError("sha256 failed");
  return hex;
}

int64_t TotalSize(const std::string& dir, const std::vector<std::string>& shards) {
  int64_t total = 0;
  std::error_code ec;
  for (const auto& s : shards) {
    auto size = fs::file_size(fs::path(dir) / s, ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

// sha256 of shard `s`, counted into the verification's content bytes; an
// unreadable shard is a problem named in `v` (nullopt).
std::optional<std::string> HashShard(const std::string& dir, const std::string& s, const WeightsAuditOptions& o,
                                     ContentProgress* progress, WeightsVerification* v) {
  progress->file = s;
  auto hex = HashFile((fs::path(dir) / s).string(), o, progress);
  if (!hex.ok()) {
    AddProblem(v, dcufleet::v1::WEIGHTS_SHARD_UNREADABLE, s, absl::StrCat(Printable(s), ": ", hex.status().message()));
    return std::nullopt;
  }
  v->set_content_bytes(v->content_bytes() + progress->file_done);
  return *std::move(hex);
}

// No manifest yet: one is recorded only for a directory whose headers,
// index and shapes are all clean: a manifest of a damaged directory would
// bless the damage for every later check and copy.
void RecordManifest(const std::string& dir, const std::vector<std::string>& shards, const WeightsAuditOptions& o,
                    WeightsVerification* v) {
  const std::string path = (fs::path(dir) / ManifestNames().front()).string();
  if (v->problems_total() > 0) {
    AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, ManifestNames().front(),
        absl::StrCat("no manifest recorded: the directory has ", v->problems_total(),
                     " problem(s) above; fix them (or copy the model again) first"));
    return;
  }
  ContentProgress progress;
  progress.total = TotalSize(dir, shards);
  std::map<std::string, std::string> sums;
  for (const auto& s : shards) {
    std::optional<std::string> hex = HashShard(dir, s, o, &progress, v);
    if (!hex) return;
    sums[s] = *std::move(hex);
  }
  if (absl::Status w = WriteSha256Manifest(path, sums); !w.ok()) {
    AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, ManifestNames().front(),
        absl::StrCat("cannot record manifest ", Printable(path), ": ", w.message()));
    return;
  }
  v->set_content_manifest(Printable(path));
  v->set_manifest_recorded(true);
  v->set_content_verified(true);
}

void CheckContent(const std::string& dir, const std::vector<std::string>& shards,
                  const WeightsAuditOptions& o, WeightsVerification* v) {
  std::string path = o.manifest_path;
  if (path.empty()) {
    std::error_code ec;
    for (const auto& n : ManifestNames()) {
      if (fs::is_regular_file(fs::path(dir) / n, ec)) {
        path = (fs::path(dir) / n).string();
        break;
      }
    }
  }
  if (path.empty() && o.record_manifest) {
    RecordManifest(dir, shards, o, v);
    return;
  }
  if (path.empty()) {
    AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, "sha256sums",
        absl::StrCat("--verify-content: no manifest in the directory (", absl::StrJoin(ManifestNames(), ", "),
                     ") and none given; --record-manifest writes one when every header check passes"));
    return;
  }
  const std::string manifest_name = fs::path(path).filename().string();
  v->set_content_manifest(Printable(path));
  auto text = common::ReadSmallFile(path, kMaxManifestBytes + 1);
  if (!text.ok() || text->size() > kMaxManifestBytes) {
    AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, manifest_name,
        absl::StrCat("cannot read manifest ", Printable(path), ": ",
                     text.ok() ? absl::StrCat("over ", kMaxManifestBytes, " bytes") : text.status().message()));
    return;
  }
  auto manifest = ParseSha256Manifest(*text);
  if (!manifest.ok()) {
    AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, manifest_name,
        absl::StrCat(Printable(path), ": ", manifest.status().message()));
    return;
  }
  ContentProgress progress;
  progress.total = TotalSize(dir, shards);
  for (const auto& s : shards) {
    auto it = manifest->find(s);
    if (it == manifest->end()) {
      AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, s,
          absl::StrCat(Printable(s), " is not in the manifest ", manifest_name));
      continue;
    }
    std::optional<std::string> hex = HashShard(dir, s, o, &progress, v);
    if (!hex) continue;
    if (*hex != it->second) {
      AddProblem(v, dcufleet::v1::WEIGHTS_CHECKSUM_MISMATCH, s,
          absl::StrCat(Printable(s), " sha256 is ", *hex, " but ", manifest_name, " says ", it->second));
    }
  }
  std::set<std::string> present(shards.begin(), shards.end());
  for (const auto& [name, hex] : *manifest) {
    if (absl::EndsWith(name, ".safetensors") && !present.count(name)) {
      AddProblem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH, name,
          absl::StrCat(manifest_name, " lists ", Printable(name), ", which is not a shard of the directory"));
    }
  }
  v->set_content_verified(true);
}

// (name, size, mtime) of every file the header checks read, and the config.
std::string Fingerprint(const std::string& dir, absl::string_view config_text) {
  std::vector<std::string> parts;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->path().extension() != ".safetensors" && name != kIndexName) continue;
    struct stat st{};
    if (::stat(it->path().c_str(), &st) != 0) {
      parts.push_back(absl::StrCat(name, "/?"));
      continue;
    }
    parts.push_back(absl::StrCat(name, "/", st.st_size, "/", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, "/",
                                 st.st_ino));
  }
  if (ec) return "";  // unreadable directory: never cached
  std::sort(parts.begin(), parts.end());
  return absl::StrCat(absl::StrJoin(parts, "\n"), "\n", common::Sha256Hex(config_text));
}

}  // namespace

const std::vector<std::string>& ManifestNames() {
  static const auto* kNames =
      new std::vector<std::string>{"sha256sums", "SHA256SUMS", "sha256sums.txt", "sha256sums.json"};
  return *kNames;
}

absl::StatusOr<std::map<std::string, std::string>> ParseSha256Manifest(absl::string_view text) {
  std::map<std::string, std::string> out;
  auto is_hex64 = [](absl::string_view h) {
    return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) {
             return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
           });
  };
  absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(text);
  if (absl::StartsWith(trimmed, "{")) {
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("not a JSON object");
    const json* files = &j;
    if (j.contains("files") && j["files"].is_object()) files = &j["files"];
    for (auto it = files->begin(); it != files->end(); ++it) {
      if (!it->is_string()) continue;
      std::string hex = absl::AsciiStrToLower(it->get<std::string>());
      if (!is_hex64(hex)) {
        return absl::InvalidArgumentError(absl::StrCat("'", Printable(it.key()), "': not a sha256 (64 hex digits)"));
      }
      out[fs::path(it.key()).filename().string()] = hex;
    }
    return out;
  }
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    // sha256sum: 64 hex digits, a space, ' ' (text) or '*' (binary), the name.
    if (line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": not \"HEX  NAME\" as sha256sum writes"));
    }
    std::string hex = absl::AsciiStrToLower(line.substr(0, 64));
    if (!is_hex64(hex)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": not a sha256 (64 hex digits)"));
    }
    std::string name(line.substr(66));
    if (absl::StartsWith(name, "./")) name = name.substr(2);
    out[name] = hex;
  }
  return out;
}

absl::Status WriteSha256Manifest(const std::string& path, const std::map<std::string, std::string>& sha256) {
  std::string text;
  for (const auto& [name, hex] : sha256) {
    if (name.empty() || name.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("file name '", Printable(name), "' cannot go in a manifest"));
    }
    absl::StrAppend(&text, hex, "  ", name, "\n");
  }
  return common::WriteFileAtomically(path, text);
}

WeightsVerification VerifyWeights(const std::string& dir, const WeightsAuditOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  WeightsVerification v;
  std::error_code ec;
  const std::vector<std::string> present = SafetensorsFiles(dir);
  const fs::path index_path = fs::path(dir) / kIndexName;
  std::vector<std::string> shards;  // the files the checkpoint consists of
  std::map<std::string, std::string> weight_map;
  bool have_index = fs::exists(index_path, ec);
  bool have_total = false;
  uint64_t total_size = 0;
  bool index_ok = false;
  if (have_index) {
    auto text = common::ReadSmallFile(index_path.string(), kMaxWeightsIndexBytes + 1);
    json index;
    if (!text.ok() || text->size() > kMaxWeightsIndexBytes) {
      AddProblem(&v, dcufleet::v1::WEIGHTS_INDEX_INVALID, kIndexName,
          absl::StrCat("cannot read ", kIndexName, ": ",
                       text.ok() ? absl::StrCat("over ", kMaxWeightsIndexBytes, " bytes") : text.status().message()));
    } else if (index = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
               index.is_discarded() || !index.is_object()) {
      AddProblem(&v, dcufleet::v1::WEIGHTS_INDEX_INVALID, kIndexName,
          absl::StrCat(kIndexName, " is not a JSON object"));
    } else {
      index_ok = true;
      auto meta = index.find("metadata");
      if (meta != index.end() && meta->is_object()) {
        auto ts = meta->find("total_size");
        if (ts != meta->end() && ts->is_number_unsigned()) {
          have_total = true;
          total_size = ts->get<uint64_t>();
        } else if (ts != meta->end() && ts->is_number_integer()) {
          have_total = true;  // negative: compared, and reported, as is
          total_size = static_cast<uint64_t>(ts->get<int64_t>());
        }
      }
      auto map = index.find("weight_map");
      if (map == index.end() || !map->is_object()) {
        AddProblem(&v, dcufleet::v1::WEIGHTS_INDEX_INVALID, kIndexName,
            absl::StrCat(kIndexName, " has no \"weight_map\" object"));
        index_ok = false;
      } else {
        std::set<std::string> named;
        for (auto it = map->begin(); it != map->end(); ++it) {
          if (!it->is_string() || !IsFileName(it->get<std::string>())) {
            AddProblem(&v, dcufleet::v1::WEIGHTS_INDEX_INVALID, kIndexName,
                absl::StrCat(kIndexName, " maps '", it.key(), "' to ",
                             it->is_string() ? absl::StrCat("'", Printable(it->get<std::string>()), "'") : "a non-string",
                             ", which is not a file name in the directory"));
            continue;
          }
          weight_map[it.key()] = it->get<std::string>();
          named.insert(it->get<std::string>());
        }
        std::set<std::string> on_disk(present.begin(), present.end());
        for (const auto& s : named) {
          if (on_disk.count(s)) {
            shards.push_back(s);
          } else {
            AddProblem(&v, dcufleet::v1::WEIGHTS_SHARD_MISSING, s,
                absl::StrCat(Printable(s), " is named by ", kIndexName, " but is not in the directory"));
          }
        }
        for (const auto& s : present) {
          if (!named.count(s)) {
            AddProblem(&v, dcufleet::v1::WEIGHTS_SHARD_STRAY, s,
                absl::StrCat(Printable(s), " is in the directory but ", kIndexName,
                             " does not name it (a leftover of another download?)"));
          }
        }
        v.set_shards(static_cast<int>(named.size()));
      }
    }
  }
  if (!have_index) {
    shards = present;
    v.set_shards(static_cast<int>(present.size()));
  }
  if (!have_index && present.empty()) {
    v.set_verdict(dcufleet::v1::WEIGHTS_NOT_VERIFIED);
    bool bin = false;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      bin = bin || it->path().extension() == ".bin" || it->path().extension() == ".pt";
    }
    v.set_not_verified_reason(bin ? "no safetensors: a PyTorch .bin checkpoint is not verified"
                                  : "no *.safetensors files in the directory");
    return v;
  }
  std::vector<ShardInfo> infos;
  // total_size is compared only when every shard's tensors were summed.
  bool all_read = true;
  for (const auto& p : v.problems()) {
    if (p.kind() == dcufleet::v1::WEIGHTS_SHARD_MISSING) all_read = false;
  }
  for (const auto& s : shards) {
    infos.push_back(CheckShard(dir, s, &v));
    all_read = all_read && infos.back().header_ok;
  }
  if (have_index && index_ok) {
    CheckIndexAgainstHeaders(weight_map, infos, have_total, total_size, all_read, &v);
  } else if (!have_index) {
    // Without an index every tensor must be declared once across the files.
    std::map<std::string, std::string> seen;
    for (const auto& s : infos) {
      for (const auto& t : s.header.tensors) {
        auto [it, fresh] = seen.emplace(t.name, s.file);
        if (!fresh) {
          AddProblem(&v, dcufleet::v1::WEIGHTS_INDEX_MISMATCH, s.file,
              absl::StrCat("tensor '", t.name, "' is declared by both ", Printable(it->second), " and ",
                           Printable(s.file)),
              0, 0, t.name);
        }
      }
    }
  }
  if (options.config != nullptr) {
    std::vector<TensorRef> refs;
    for (const auto& s : infos) {
      for (const auto& t : s.header.tensors) refs.push_back({&t, &s.file});
    }
    if (!refs.empty()) CheckShapes(refs, *options.config, &v);
  }
  if (options.catalog != nullptr) BlameShapeProblems(*options.catalog, &v);
  if (options.verify_content) CheckContent(dir, shards, options, &v);
  v.set_verdict(v.problems_total() == 0 ? dcufleet::v1::WEIGHTS_CLEAN : dcufleet::v1::WEIGHTS_DAMAGED);
  v.set_elapsed_us(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
                       .count());
  return v;
}

void BlameShapeProblems(const dcufleet::v1::ModelEntry& catalog, WeightsVerification* v) {
  const Figures cat = FromFingerprint(catalog.fingerprint());
  const std::map<std::string, int64_t> known = {
      {kHidden.field, cat.hidden},  {kVocab.field, cat.vocab},       {kQOut.field, QOut(cat)},
      {kKvOut.field, KvOut(cat)},   {kInter.field, cat.inter},       {kMoeInter.field, cat.moe_inter},
      {kExperts.field, cat.experts}, {"num_hidden_layers", cat.layers},
  };
  for (auto& p : *v->mutable_problems()) {
    if (p.config_field().empty() || p.blame() != dcufleet::v1::WEIGHTS_BLAME_UNKNOWN) continue;
    auto it = known.find(p.config_field());
    if (it == known.end() || it->second <= 0) continue;
    // Layer counts: the catalog's figure is the decoder's, without MTP layers.
    const int64_t figure = it->second;
    if (p.actual() == figure && p.expected() != figure) {
      p.set_blame(dcufleet::v1::WEIGHTS_BLAME_CONFIG);
      absl::StrAppend(p.mutable_message(), "; the weights agree with the catalog's ", catalog.name(), " (",
                      p.config_field(), " = ", figure, "): config.json is wrong");
    } else if (p.expected() == figure && p.actual() != figure) {
      p.set_blame(dcufleet::v1::WEIGHTS_BLAME_WEIGHTS);
      absl::StrAppend(p.mutable_message(), "; config.json agrees with the catalog's ", catalog.name(), " (",
                      p.config_field(), " = ", figure, "): the weights are not ", catalog.name(), "'s");
    }
  }
}

std::string WeightsSummary(const WeightsVerification& v) {
  if (v.verdict() != dcufleet::v1::WEIGHTS_DAMAGED || v.problems().empty()) return "";
  std::string s = v.problems(0).message();
  if (v.problems_total() > 1) {
    absl::StrAppend(&s, " (and ", v.problems_total() - 1, " more problem", v.problems_total() > 2 ? "s" : "", ")");
  }
  return s;
}

WeightsVerification WeightsAuditCache::Verify(const std::string& dir, const WeightsAuditOptions& options,
                                              absl::string_view config_text) {
  if (options.verify_content) return VerifyWeights(dir, options);
  std::string fp = Fingerprint(dir, config_text);
  if (!fp.empty()) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(dir);
    if (it != entries_.end() && it->second.fingerprint == fp) {
      WeightsVerification v = it->second.result;
      v.set_cached(true);
      return v;
    }
  }
  WeightsVerification v = VerifyWeights(dir, options);
  if (fp.empty()) return v;
  // Fingerprint again: a file that changed while it was read must not be
  // remembered as it was before.
  if (Fingerprint(dir, config_text) != fp) return v;
  absl::MutexLock lock(&mu_);
  if (entries_.size() >= max_entries_ && !entries_.count(dir)) entries_.clear();
  entries_[dir] = {std::move(fp), v};
  return v;
}

}  // namespace dcu::modelkit
