#include "modelkit/config_audit.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/utf8.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/enum_names.h"
#include "common/units.h"
#include "modelkit/weights_audit.h"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using dcufleet::v1::AuditReport;
using dcufleet::v1::Finding;
using dcufleet::v1::ModelEntry;
using json = nlohmann::json;

constexpr size_t kMaxConfigBytes = 16 << 20;
constexpr size_t kMaxIndexBytes = 64 << 20;

// Proto strings and JSON output must be valid UTF-8, but config values and
// parser messages quote whatever bytes the file had: invalid sequences become '?'.
std::string SanitizeUtf8(absl::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    const size_t n = common::Utf8SequenceAt(in, i);
    if (n == 0) {
      out.push_back('?');
      ++i;
    } else {
      out.append(in.data() + i, n);
      i += n;
    }
  }
  return out;
}

Finding MakeFinding(dcufleet::v1::FindingSeverity severity, absl::string_view code,
                    absl::string_view field, absl::string_view message) {
  Finding f;
  f.set_severity(severity);
  f.set_code(std::string(code));
  f.set_field(SanitizeUtf8(field));
  f.set_message(SanitizeUtf8(message));
  return f;
}

void Add(AuditReport* r, dcufleet::v1::FindingSeverity severity, absl::string_view code,
         absl::string_view field, absl::string_view message) {
  *r->add_findings() = MakeFinding(severity, code, field, message);
}

// Line and column (1-based) of byte offset `pos` (0-based) in `text`.
std::pair<int, int> LineColumn(absl::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int>(pos - line_start) + 1};
}

std::string ParseErrorReason(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 5, column 1: syntax
  // error while parsing object - unexpected end of input; expected string literal"
  size_t at = what.find("parse error");
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// Reads an integer field into `out`; records a finding for wrong types.
// Returns true when the field was present with a usable value.
template <typename T>
bool ReadInt(const json& obj, const char* key, absl::string_view prefix, T* out,
             std::vector<Finding>* findings) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  std::string field = prefix.empty() ? std::string(key) : absl::StrCat(prefix, ".", key);
  double v = 0;
  if (it->is_number_integer()) {
    v = static_cast<double>(it->get<int64_t>());
  } else if (it->is_number_unsigned()) {
    v = static_cast<double>(it->get<uint64_t>());
  } else if (it->is_number_float() && std::isfinite(it->get<double>()) &&
             std::floor(it->get<double>()) == it->get<double>()) {
    v = it->get<double>();
  } else {
    findings->push_back(MakeFinding(dcufleet::v1::FINDING_ERROR, "field_wrong_type", field,
                                    absl::StrCat(field, " should be an integer, got ",
                                                 it->dump().substr(0, 80))));
    return false;
  }
  if (v < 0 || v > 9.0e15 || (sizeof(T) == 4 && v > 2.0e9)) {
    findings->push_back(MakeFinding(dcufleet::v1::FINDING_ERROR, "field_invalid", field,
                                    absl::StrCat(field, " = ", it->dump(), " is out of range")));
    return false;
  }
  *out = static_cast<T>(v);
  return true;
}

bool ReadString(const json& obj, const char* key, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

// The object holding the text model's fields.
const json* TextObject(const json& root, std::string* key) {
  static const char* kKeys[] = {"text_config", "language_config", "llm_config"};
  for (const char* k : kKeys) {
    auto it = root.find(k);
    if (it != root.end() && it->is_object() && it->contains("hidden_size")) {
      *key = k;
      return &*it;
    }
  }
  key->clear();
  return &root;
}

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(s); }

std::string JoinInts(const google::protobuf::RepeatedField<int32_t>& v) {
  return absl::StrJoin(v, ", ");
}

// common::ReadSmallFile, refusing (not truncating) a file over `limit`; on
// failure `err` says why for the audit finding.
std::optional<std::string> ReadWithin(const std::string& path, size_t limit, std::string* err) {
  auto text = common::ReadSmallFile(path, limit + 1);
  if (!text.ok()) {
    *err = std::string(text.status().message());
    return std::nullopt;
  }
  if (text->size() > limit) {
    std::error_code ec;
    *err = absl::StrCat(fs::file_size(path, ec), " bytes, over the ", limit, "-byte limit");
    return std::nullopt;
  }
  return *std::move(text);
}

// Weight bytes, shard presence, from the directory.
void AuditWeights(const std::string& dir, const ModelConfig* config, AuditReport* r) {
  std::error_code ec;
  for (const char* index_name : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
    fs::path index_path = fs::path(dir) / index_name;
    if (!fs::exists(index_path, ec)) continue;
    std::string err;
    auto text = ReadWithin(index_path.string(), kMaxIndexBytes, &err);
    if (!text) {
      Add(r, dcufleet::v1::FINDING_ERROR, "index_unreadable", index_name,
          absl::StrCat("cannot read ", index_name, ": ", err));
      break;
    }
    json index;
    try {
      index = json::parse(*text);
    } catch (const json::parse_error& e) {
      auto [line, col] = LineColumn(*text, e.byte > 0 ? e.byte - 1 : 0);
      Add(r, dcufleet::v1::FINDING_ERROR, "invalid_json", index_name,
          absl::StrCat(index_name, " is not valid JSON: line ", line, " column ", col, ": ",
                       ParseErrorReason(e.what())));
      break;
    } catch (const std::exception& e) {
      // Not a syntax error: a number too large for a double ("total_size":
      // 1e99999) ended dcuctl model audit with an uncaught exception.
      Add(r, dcufleet::v1::FINDING_ERROR, "invalid_json", index_name,
          absl::StrCat(index_name, " cannot be read as JSON: ", SanitizeUtf8(e.what())));
      break;
    }
    if (!index.is_object()) {
      Add(r, dcufleet::v1::FINDING_ERROR, "index_invalid", index_name, absl::StrCat(index_name, " is not a JSON object"));
      break;
    }
    auto meta = index.find("metadata");
    if (meta != index.end() && meta->is_object()) {
      std::vector<Finding> f;
      int64_t total = 0;
      if (ReadInt(*meta, "total_size", "metadata", &total, &f) && total > 0) {
        r->set_weight_bytes(total);
        r->set_weight_bytes_source("index");
      }
    }
    std::set<std::string> shards;
    auto map = index.find("weight_map");
    if (map != index.end() && map->is_object()) {
      for (auto it = map->begin(); it != map->end(); ++it) {
        if (it->is_string()) shards.insert(it->get<std::string>());
      }
    }
    r->set_shard_count(static_cast<int>(shards.size()));
    std::vector<std::string> missing, empty;
    int64_t present_bytes = 0;
    for (const auto& shard : shards) {
      // Shard names are file names in the model directory, never paths.
      if (shard.find('/') != std::string::npos || shard == ".." || shard.empty()) {
        Add(r, dcufleet::v1::FINDING_ERROR, "index_invalid", index_name,
            absl::StrCat(index_name, " lists '", shard, "', which is not a file name"));
        missing.push_back(shard);
        continue;
      }
      fs::path p = fs::path(dir) / shard;
      auto size = fs::file_size(p, ec);  // follows symlinks
      if (ec) {
        missing.push_back(shard);
      } else if (size == 0) {
        empty.push_back(shard);
      } else {
        present_bytes += static_cast<int64_t>(size);
      }
    }
    for (const auto& m : missing) r->add_missing_shards(m);
    r->set_shards_complete(missing.empty() && empty.empty() && !shards.empty());
    if (!missing.empty()) {
      std::vector<std::string> shown(missing.begin(),
                                     missing.begin() + std::min<size_t>(missing.size(), 5));
      Add(r, dcufleet::v1::FINDING_ERROR, "shards_missing", index_name,
          absl::StrCat(missing.size(), " of ", shards.size(), " shards listed in ", index_name,
                       " are missing: ", absl::StrJoin(shown, ", "),
                       missing.size() > shown.size() ? ", ..." : ""));
    }
    if (!empty.empty()) {
      Add(r, dcufleet::v1::FINDING_ERROR, "shard_empty", index_name,
          absl::StrCat(empty.size(), " shard(s) are empty files: ", absl::StrJoin(empty, ", ")));
    }
    if (r->weight_bytes() == 0 && present_bytes > 0) {
      r->set_weight_bytes(present_bytes);
      r->set_weight_bytes_source("files");
    }
    return;
  }
  // No index: a single model.safetensors (or several files without index).
  int64_t total = 0;
  int count = 0;
  std::string ext_used;
  for (const char* ext : {".safetensors", ".bin"}) {
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const auto& p = it->path();
      if (p.extension() != ext) continue;
      if (std::string(ext) == ".bin" && !absl::StartsWith(p.filename().string(), "pytorch_model")) {
        continue;
      }
      auto size = fs::file_size(p, ec);
      if (ec) {
        ec.clear();
        continue;
      }
      total += static_cast<int64_t>(size);
      ++count;
    }
    ec.clear();
    if (count > 0) {
      ext_used = ext;
      break;
    }
  }
  if (count > 0) {
    r->set_weight_bytes(total);
    r->set_weight_bytes_source("files");
    r->set_shard_count(count);
    r->set_shards_complete(true);
    return;
  }
  r->set_shards_complete(false);
  Add(r, dcufleet::v1::FINDING_WARNING, "no_weights", "weights",
      "no *.safetensors or pytorch_model*.bin files and no index in the directory");
  if (config != nullptr) {
    int64_t est = EstimateWeightBytes(*config);
    if (est > 0) {
      r->set_weight_bytes(est);
      r->set_weight_bytes_source("estimate");
    }
  }
}

// Scores how well a config matches a catalog fingerprint; -1 when a field
// that is never edited by hand (hidden size, layers, vocab) differs.
int FingerprintScore(const ModelConfig& c, const dcufleet::v1::ModelFingerprint& f) {
  if (c.hidden_size != f.hidden_size() || c.num_hidden_layers != f.num_hidden_layers()) return -1;
  if (c.vocab_size != 0 && f.vocab_size() != 0 && c.vocab_size != f.vocab_size()) return -1;
  int score = 2;
  if (c.vocab_size == f.vocab_size()) ++score;
  if (c.num_attention_heads == f.num_attention_heads()) ++score;
  if (c.has_num_key_value_heads && c.num_key_value_heads == f.num_key_value_heads()) ++score;
  if (c.intermediate_size == f.intermediate_size()) ++score;
  if (c.has_head_dim && c.head_dim == f.head_dim()) ++score;
  if (c.max_position_embeddings == f.max_position_embeddings()) ++score;
  if (!c.architectures.empty() && !f.architectures().empty() &&
      c.architectures[0] == f.architectures(0)) {
    ++score;
  }
  if (c.model_type == f.model_type()) ++score;
  return score;
}

std::string BaseName(absl::string_view path) {
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return fs::path(p).filename().string();
}

const ModelEntry* MatchCatalog(const ModelConfig& c, absl::string_view dir_name,
                               const AuditOptions& options, std::string* basis,
                               std::vector<std::string>* also) {
  if (!options.model_name.empty()) {
    *basis = "name";
    return FindCatalogModel(options, options.model_name);
  }
  std::string dir = Lower(dir_name);
  if (!dir.empty()) {
    for (const auto& m : options.models) {
      bool hit = Lower(m.name()) == dir || Lower(BaseName(m.hf_repo())) == dir;
      for (const auto& a : m.aliases()) hit |= Lower(a) == dir;
      if (hit) {
        *basis = "alias";
        return &m;
      }
    }
  }
  const ModelEntry* best = nullptr;
  int best_score = -1;
  for (const auto& m : options.models) {
    int s = FingerprintScore(c, m.fingerprint());
    if (s < 0 || s < 5) continue;  // hidden, layers, vocab and two more agree
    if (s > best_score) {
      best_score = s;
      best = &m;
      also->clear();
    } else if (s == best_score) {
      also->push_back(m.name());
    }
  }
  if (best != nullptr) *basis = "fingerprint";
  return best;
}

void CompareWithCatalog(const ModelConfig& c, const ModelEntry& m, AuditReport* r) {
  const auto& f = m.fingerprint();
  std::string name = absl::StrCat("'", m.name(), "'");
  if (!f.architectures().empty()) {
    std::string have = c.architectures.empty() ? "(none)" : c.architectures[0];
    if (have != f.architectures(0)) {
      Add(r, dcufleet::v1::FINDING_ERROR, "architecture_mismatch", "architectures",
          absl::StrCat("config.json says ", have, " but ", name, " is ", f.architectures(0),
                       " (", m.hf_repo(), "); engines pick the model class from this field"));
    }
  }
  if (!f.model_type().empty() && !c.model_type.empty() && c.model_type != f.model_type()) {
    Add(r, dcufleet::v1::FINDING_WARNING, "model_type_mismatch", "model_type",
        absl::StrCat("config.json model_type '", c.model_type, "' but ", name, " has '",
                     f.model_type(), "'"));
  }
  std::string prefix = c.text_config_key.empty() ? "" : absl::StrCat(c.text_config_key, ".");
  auto field_check = [&](const char* field, int64_t have, int64_t want) {
    if (want != 0 && have != 0 && have != want) {
      Add(r, dcufleet::v1::FINDING_ERROR, "field_mismatch", absl::StrCat(prefix, field),
          absl::StrCat(field, " is ", have, " but ", name, " has ", want));
    }
  };
  field_check("hidden_size", c.hidden_size, f.hidden_size());
  field_check("num_attention_heads", c.num_attention_heads, f.num_attention_heads());
  field_check("num_hidden_layers", c.num_hidden_layers, f.num_hidden_layers());
  field_check("vocab_size", c.vocab_size, f.vocab_size());
  field_check("intermediate_size", c.intermediate_size, f.intermediate_size());
  if (f.head_dim() > 0 && !c.is_mla()) {
    if (c.has_head_dim && c.head_dim != f.head_dim()) {
      Add(r, dcufleet::v1::FINDING_ERROR, "head_dim_mismatch", absl::StrCat(prefix, "head_dim"),
          absl::StrCat("head_dim is ", c.head_dim, " but ", name, " has ", f.head_dim()));
    } else if (!c.has_head_dim && c.EffectiveHeadDim() != f.head_dim()) {
      Add(r, dcufleet::v1::FINDING_ERROR, "head_dim_missing", absl::StrCat(prefix, "head_dim"),
          absl::StrCat("config.json has no head_dim; engines derive hidden_size / "
                       "num_attention_heads = ",
                       c.hidden_size, " / ", c.num_attention_heads, " = ", c.EffectiveHeadDim(),
                       ", but ", name, " has head_dim ", f.head_dim()));
    }
  }
  if (f.num_key_value_heads() > 0) {
    if (!c.has_num_key_value_heads) {
      bool differs = f.num_key_value_heads() != c.num_attention_heads;
      Add(r, differs ? dcufleet::v1::FINDING_ERROR : dcufleet::v1::FINDING_WARNING, "kv_heads_missing",
          absl::StrCat(prefix, "num_key_value_heads"),
          absl::StrCat("config.json has no num_key_value_heads; engines assume ",
                       c.num_attention_heads, " (one per attention head)",
                       differs ? absl::StrCat(" but ", name, " has ", f.num_key_value_heads(),
                                              ": the k/v weights will not load and the KV cache "
                                              "would be ",
                                              c.num_attention_heads / std::max(1, f.num_key_value_heads()),
                                              "x larger")
                               : std::string()));
    } else if (c.num_key_value_heads != f.num_key_value_heads()) {
      Add(r, dcufleet::v1::FINDING_ERROR, "field_mismatch", absl::StrCat(prefix, "num_key_value_heads"),
          absl::StrCat("num_key_value_heads is ", c.num_key_value_heads, " but ", name, " has ",
                       f.num_key_value_heads()));
    }
  }
  if (!f.torch_dtype().empty() && !c.torch_dtype.empty() && c.torch_dtype != f.torch_dtype() &&
      DtypeBytes(c.torch_dtype) > 0) {
    Add(r, dcufleet::v1::FINDING_WARNING, "dtype_mismatch", "torch_dtype",
        absl::StrCat("torch_dtype is ", c.torch_dtype, " but ", name, " is published as ",
                     f.torch_dtype()));
  }
}

void CheckHeadSize(const ModelConfig& c, const ModelEntry* match, const AuditOptions& options,
                   AuditReport* r) {
  int head = c.EffectiveHeadDim();
  if (head <= 0 || c.is_mla()) return;
  int catalog_head = match != nullptr ? match->fingerprint().head_dim() : 0;
  for (const auto& stack : options.stacks) {
    const dcufleet::v1::AttentionBackend* chosen = nullptr;
    for (const auto& b : stack.attention_backends()) {
      if (b.is_default()) chosen = &b;
    }
    if (chosen == nullptr || chosen->head_sizes().empty()) continue;
    const auto& sizes = chosen->head_sizes();
    if (std::find(sizes.begin(), sizes.end(), head) != sizes.end()) continue;
    std::string msg = absl::StrCat("head size ", head, " is not supported by ", chosen->name(),
                                   ", the default attention backend of stack '", stack.id(),
                                   "' (supported: ", JoinInts(sizes), ")");
    std::vector<std::string> alternatives;
    for (const auto& b : stack.attention_backends()) {
      if (&b == chosen) continue;
      bool known = !b.head_sizes().empty();
      bool ok = known &&
                std::find(b.head_sizes().begin(), b.head_sizes().end(), head) != b.head_sizes().end();
      if (known && !ok) continue;
      std::vector<std::string> env;
      for (const auto& v : b.select_env()) env.push_back(absl::StrCat(v.name(), "=", v.value()));
      alternatives.push_back(absl::StrCat(b.name(), env.empty() ? "" : absl::StrCat(" (", absl::StrJoin(env, " "), ")"),
                                          known ? "" : " whose limits are not recorded"));
    }
    if (!alternatives.empty()) {
      absl::StrAppend(&msg, "; on this stack try ", absl::StrJoin(alternatives, ", "));
    }
    if (!c.has_head_dim && catalog_head > 0 && catalog_head != head &&
        std::find(sizes.begin(), sizes.end(), catalog_head) != sizes.end()) {
      absl::StrAppend(&msg, "; with the published head_dim ", catalog_head,
                      " it would be supported");
    }
    Add(r, dcufleet::v1::FINDING_ERROR, "head_size_unsupported", "head_dim", msg);
  }
}

void FillFromConfig(const ModelConfig& c, AuditReport* r) {
  for (const auto& a : c.architectures) r->add_architectures(SanitizeUtf8(a));
  r->set_architecture(r->architectures().empty() ? "" : r->architectures(0));
  r->set_model_type(SanitizeUtf8(c.model_type));
  r->set_hidden_size(c.hidden_size);
  r->set_num_attention_heads(c.num_attention_heads);
  r->set_num_key_value_heads(c.EffectiveKvHeads());
  r->set_head_dim(c.EffectiveHeadDim());
  r->set_effective_head_dim(c.EffectiveHeadDim());
  r->set_head_dim_source(c.has_head_dim ? "config" : "derived");
  r->set_num_hidden_layers(c.num_hidden_layers);
  r->set_torch_dtype(SanitizeUtf8(c.torch_dtype));
  r->set_kv_cache_bytes_per_token(KvCacheBytesPerToken(c, 1));
  r->set_is_moe(c.is_moe());
  r->set_num_experts(c.num_experts);
  r->set_num_experts_per_tok(c.num_experts_per_tok);
  r->set_is_mla(c.is_mla());
  r->set_kv_lora_rank(c.kv_lora_rank);
  r->set_qk_rope_head_dim(c.qk_rope_head_dim);
  r->set_attention_layers(c.AttentionLayers());
  r->set_text_config_key(c.text_config_key);
  r->set_vocab_size(c.vocab_size);
  r->set_intermediate_size(c.intermediate_size);
  r->set_max_position_embeddings(c.max_position_embeddings);
  for (int tp : ValidTensorParallelSizes(c.num_attention_heads, c.EffectiveKvHeads())) {
    r->add_valid_tp(tp);
  }
  for (const auto& f : c.findings) *r->add_findings() = f;
}

void ConfigOnlyFindings(const ModelConfig& c, AuditReport* r) {
  std::string prefix = c.text_config_key.empty() ? "" : absl::StrCat(c.text_config_key, ".");
  if (c.architectures.empty()) {
    Add(r, dcufleet::v1::FINDING_ERROR, "architectures_missing", "architectures",
        "config.json has no architectures list; engines cannot pick a model class");
  }
  if (c.hidden_size <= 0 || c.num_attention_heads <= 0 || c.num_hidden_layers <= 0) {
    Add(r, dcufleet::v1::FINDING_ERROR, "shape_missing", absl::StrCat(prefix, "hidden_size"),
        "hidden_size, num_attention_heads and num_hidden_layers must all be present and > 0");
  }
  if (!c.has_head_dim && !c.is_mla() && c.num_attention_heads > 0) {
    if (c.hidden_size % c.num_attention_heads != 0) {
      Add(r, dcufleet::v1::FINDING_ERROR, "head_dim_underivable", absl::StrCat(prefix, "head_dim"),
          absl::StrCat("config.json has no head_dim and hidden_size ", c.hidden_size,
                       " is not a multiple of num_attention_heads ", c.num_attention_heads));
    } else {
      Add(r, dcufleet::v1::FINDING_INFO, "head_dim_derived", absl::StrCat(prefix, "head_dim"),
          absl::StrCat("config.json has no head_dim; engines derive ", c.hidden_size, " / ",
                       c.num_attention_heads, " = ", c.EffectiveHeadDim()));
    }
  }
  if (!c.has_num_key_value_heads && c.num_attention_heads > 0 && !c.is_mla()) {
    Add(r, dcufleet::v1::FINDING_WARNING, "kv_heads_missing", absl::StrCat(prefix, "num_key_value_heads"),
        absl::StrCat("config.json has no num_key_value_heads; engines assume ",
                     c.num_attention_heads, " (multi-head attention, no GQA)"));
  }
  if (c.has_num_key_value_heads && c.num_key_value_heads > 0 && c.num_attention_heads > 0 &&
      c.num_attention_heads % c.num_key_value_heads != 0) {
    Add(r, dcufleet::v1::FINDING_ERROR, "kv_heads_invalid", absl::StrCat(prefix, "num_key_value_heads"),
        absl::StrCat("num_attention_heads ", c.num_attention_heads,
                     " is not a multiple of num_key_value_heads ", c.num_key_value_heads));
  }
  if (c.torch_dtype.empty()) {
    Add(r, dcufleet::v1::FINDING_WARNING, "dtype_missing", "torch_dtype",
        "config.json has no torch_dtype; engines then assume float32 weights");
  } else if (DtypeBytes(c.torch_dtype) == 0) {
    Add(r, dcufleet::v1::FINDING_ERROR, "dtype_invalid", "torch_dtype",
        absl::StrCat("torch_dtype '", c.torch_dtype,
                     "' is not a torch dtype (bfloat16, float16, float32)"));
  } else if (c.torch_dtype != "bfloat16" && c.torch_dtype != "float16") {
    Add(r, dcufleet::v1::FINDING_WARNING, "unusual_dtype", "torch_dtype",
        absl::StrCat("torch_dtype is ", c.torch_dtype, "; LLM checkpoints are normally bfloat16 or "
                                                       "float16 (",
                     c.torch_dtype == "float32" ? "float32 doubles the weight memory" : "check it",
                     ")"));
  }
  if (!c.quant_method.empty()) {
    Add(r, dcufleet::v1::FINDING_INFO, "quantized", "quantization_config",
        absl::StrCat("quantized checkpoint (", c.quant_method, ")"));
  }
  if (c.num_attention_heads > 0 && r->valid_tp().empty()) {
    Add(r, dcufleet::v1::FINDING_ERROR, "no_valid_tp", "num_attention_heads",
        "no tensor parallel size divides the attention and KV heads");
  }
}

void AuditParsed(const ModelConfig* c, absl::string_view dir_name, const AuditOptions& options,
                 AuditReport* r) {
  if (c == nullptr) {
    if (!options.model_name.empty() && FindCatalogModel(options, options.model_name) != nullptr) {
      r->set_catalog_match(options.model_name);
      r->set_catalog_match_basis("name");
    } else if (!dir_name.empty()) {
      std::string basis;
      std::vector<std::string> also;
      ModelConfig empty;
      const ModelEntry* m = MatchCatalog(empty, dir_name, options, &basis, &also);
      if (m != nullptr && basis == "alias") {
        r->set_catalog_match(m->name());
        r->set_catalog_match_basis(basis);
      }
    }
    return;
  }
  FillFromConfig(*c, r);
  ConfigOnlyFindings(*c, r);
  std::string basis;
  std::vector<std::string> also;
  const ModelEntry* match = MatchCatalog(*c, dir_name, options, &basis, &also);
  if (match == nullptr && !options.model_name.empty()) {
    Add(r, dcufleet::v1::FINDING_ERROR, "catalog_unknown_model", "model",
        absl::StrCat("model '", options.model_name, "' is not in the catalog"));
  }
  if (match != nullptr) {
    r->set_catalog_match(match->name());
    r->set_catalog_match_basis(basis);
    if (!also.empty()) {
      Add(r, dcufleet::v1::FINDING_INFO, "catalog_ambiguous", "model",
          absl::StrCat("the config also matches ", absl::StrJoin(also, ", "),
                       "; pass the model name to choose"));
    }
    int generic_end = r->findings_size();
    CompareWithCatalog(*c, *match, r);
    // Findings the catalog decides replace the generic ones about the same field.
    std::set<std::string> decided;
    for (int i = generic_end; i < r->findings_size(); ++i) decided.insert(r->findings(i).code());
    bool decided_head = decided.count("head_dim_missing") || decided.count("head_dim_mismatch");
    bool decided_kv = decided.count("kv_heads_missing") > 0;
    auto* fs = r->mutable_findings();
    for (int i = generic_end - 1; i >= 0; --i) {
      const auto& f = fs->Get(i);
      bool drop = (decided_head && f.code() == "head_dim_derived") ||
                  (decided_kv && f.code() == "kv_heads_missing");
      if (drop) fs->DeleteSubrange(i, 1);
    }
  } else if (!options.models.empty()) {
    Add(r, dcufleet::v1::FINDING_INFO, "catalog_no_match", "model",
        "no catalog model matches this config (hidden size, layers and vocabulary differ from all)");
  }
  CheckHeadSize(*c, match, options, r);
}

}  // namespace

int ModelConfig::EffectiveHeadDim() const {
  if (has_head_dim) return head_dim;
  if (num_attention_heads <= 0) return 0;
  return static_cast<int>(hidden_size / num_attention_heads);
}

int ModelConfig::EffectiveKvHeads() const {
  return has_num_key_value_heads && num_key_value_heads > 0 ? num_key_value_heads
                                                            : num_attention_heads;
}

int ModelConfig::AttentionLayers() const {
  return full_attention_layers > 0 ? full_attention_layers : num_hidden_layers;
}

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat("config.json is ", text.size(),
                                                   " bytes, over the ", kMaxConfigBytes,
                                                   "-byte limit"));
  }
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    auto [line, col] = LineColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at line ", line, " column ", col,
                                                   ": ", SanitizeUtf8(ParseErrorReason(e.what()))));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", e.what()));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError("config.json is not a JSON object");
  }
  ModelConfig c;
  try {
    auto arch = root.find("architectures");
    if (arch != root.end()) {
      if (arch->is_array()) {
        for (const auto& a : *arch) {
          if (a.is_string()) c.architectures.push_back(a.get<std::string>());
        }
      } else if (!arch->is_null()) {
        c.findings.push_back(MakeFinding(dcufleet::v1::FINDING_ERROR, "field_wrong_type", "architectures",
                                         "architectures should be a list of strings"));
      }
    }
    ReadString(root, "model_type", &c.model_type);
    const json& t = *TextObject(root, &c.text_config_key);
    std::string p = c.text_config_key;
    if (!p.empty()) ReadString(t, "model_type", &c.text_model_type);
    auto& fnd = c.findings;
    ReadInt(t, "hidden_size", p, &c.hidden_size, &fnd);
    ReadInt(t, "num_attention_heads", p, &c.num_attention_heads, &fnd);
    c.has_num_key_value_heads = ReadInt(t, "num_key_value_heads", p, &c.num_key_value_heads, &fnd);
    c.has_head_dim = ReadInt(t, "head_dim", p, &c.head_dim, &fnd) && c.head_dim > 0;
    ReadInt(t, "num_hidden_layers", p, &c.num_hidden_layers, &fnd);
    if (!ReadString(t, "torch_dtype", &c.torch_dtype) && !ReadString(t, "dtype", &c.torch_dtype) &&
        !ReadString(root, "torch_dtype", &c.torch_dtype)) {
      ReadString(root, "dtype", &c.torch_dtype);
    }
    ReadInt(t, "intermediate_size", p, &c.intermediate_size, &fnd);
    ReadInt(t, "vocab_size", p, &c.vocab_size, &fnd) || ReadInt(root, "vocab_size", "", &c.vocab_size, &fnd);
    ReadInt(t, "max_position_embeddings", p, &c.max_position_embeddings, &fnd);
    for (const json* o : std::initializer_list<const json*>{&t, &root}) {
      auto tie = o->find("tie_word_embeddings");
      if (tie != o->end() && tie->is_boolean()) {
        c.tie_word_embeddings = tie->get<bool>();
        break;
      }
    }
    auto bias = t.find("attention_bias");
    if (bias != t.end() && bias->is_boolean()) c.attention_bias = bias->get<bool>();
    ReadInt(t, "num_experts", p, &c.num_experts, &fnd) ||
        ReadInt(t, "n_routed_experts", p, &c.num_experts, &fnd) ||
        ReadInt(t, "num_local_experts", p, &c.num_experts, &fnd);
    ReadInt(t, "num_experts_per_tok", p, &c.num_experts_per_tok, &fnd);
    ReadInt(t, "moe_intermediate_size", p, &c.moe_intermediate_size, &fnd);
    ReadInt(t, "shared_expert_intermediate_size", p, &c.shared_expert_intermediate_size, &fnd);
    ReadInt(t, "n_shared_experts", p, &c.n_shared_experts, &fnd);
    ReadInt(t, "first_k_dense_replace", p, &c.first_k_dense_replace, &fnd);
    ReadInt(t, "num_nextn_predict_layers", p, &c.num_nextn_predict_layers, &fnd);
    ReadInt(t, "kv_lora_rank", p, &c.kv_lora_rank, &fnd);
    ReadInt(t, "q_lora_rank", p, &c.q_lora_rank, &fnd);
    ReadInt(t, "qk_rope_head_dim", p, &c.qk_rope_head_dim, &fnd);
    ReadInt(t, "qk_nope_head_dim", p, &c.qk_nope_head_dim, &fnd);
    ReadInt(t, "v_head_dim", p, &c.v_head_dim, &fnd);
    auto types = t.find("layer_types");
    if (types != t.end() && types->is_array()) {
      int full = 0;
      bool any_linear = false;
      for (const auto& lt : *types) {
        if (!lt.is_string()) continue;
        const std::string& s = lt.get_ref<const std::string&>();
        // Sliding/chunked attention layers still hold a (bounded) KV cache;
        // linear attention and state-space layers hold a fixed-size state.
        if (absl::StrContains(s, "linear") || absl::StrContains(s, "mamba") ||
            absl::StrContains(s, "conv")) {
          any_linear = true;
        } else {
          ++full;
        }
      }
      if (any_linear) c.full_attention_layers = full;
    } else {
      int interval = 0;
      if (ReadInt(t, "full_attention_interval", p, &interval, &fnd) && interval > 1 &&
          c.num_hidden_layers > 0) {
        c.full_attention_layers = c.num_hidden_layers / interval;
      }
    }
    auto quant = root.find("quantization_config");
    if (quant != root.end() && quant->is_object()) {
      if (!ReadString(*quant, "quant_method", &c.quant_method)) c.quant_method = "unknown";
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read config.json: ", e.what()));
  }
  return c;
}

int DtypeBytes(absl::string_view dtype) {
  std::string d(dtype);
  if (absl::StartsWith(d, "torch.")) d = d.substr(6);
  if (d == "bfloat16" || d == "float16" || d == "half" || d == "bf16" || d == "fp16") {
    // "bf16"/"fp16" are not torch names; DtypeBytes answers for KV sizing,
    // the audit flags them separately.
    return d == "bf16" || d == "fp16" ? 0 : 2;
  }
  if (d == "float32" || d == "float") return 4;
  if (d == "float64" || d == "double") return 8;
  if (d == "float8_e4m3fn" || d == "float8_e5m2" || d == "int8" || d == "uint8") return 1;
  return 0;
}

std::vector<int> ValidTensorParallelSizes(int heads, int kv_heads, int max_tp) {
  std::vector<int> out;
  if (heads <= 0) return out;
  if (kv_heads <= 0) kv_heads = heads;
  for (int tp = 1; tp <= std::min(max_tp, heads); ++tp) {
    if (heads % tp != 0) continue;
    bool kv_ok = tp >= kv_heads ? tp % kv_heads == 0 : kv_heads % tp == 0;
    if (kv_ok) out.push_back(tp);
  }
  return out;
}

int64_t KvCacheBytesPerToken(const ModelConfig& c, int tp) {
  int bytes = DtypeBytes(c.torch_dtype);
  if (bytes == 0) bytes = 2;  // engines run bf16/fp16 KV unless told otherwise
  int64_t layers = c.AttentionLayers();
  if (c.is_mla()) {
    return layers * (c.kv_lora_rank + c.qk_rope_head_dim) * static_cast<int64_t>(bytes);
  }
  int kv = c.EffectiveKvHeads();
  if (tp < 1) tp = 1;
  int per_rank = std::max(1, kv / tp);
  return 2 * layers * per_rank * static_cast<int64_t>(c.EffectiveHeadDim()) * bytes;
}

int64_t EstimateWeightBytes(const ModelConfig& c) {
  if (c.is_mla() || c.full_attention_layers > 0) return 0;
  if (c.hidden_size <= 0 || c.num_attention_heads <= 0 || c.num_hidden_layers <= 0 ||
      c.vocab_size <= 0) {
    return 0;
  }
  int bytes = DtypeBytes(c.torch_dtype);
  if (bytes == 0) bytes = 2;
  const int64_t h = c.hidden_size;
  const int64_t hd = c.EffectiveHeadDim();
  const int64_t q = c.num_attention_heads * hd;
  const int64_t kv = c.EffectiveKvHeads() * hd;
  bool bias = c.attention_bias.value_or(c.model_type == "qwen2" || c.model_type == "qwen2_moe");
  bool qk_norm = c.model_type == "qwen3" || c.model_type == "qwen3_moe";
  int64_t attn = h * q + 2 * h * kv + q * h;
  if (bias) attn += q + 2 * kv;
  if (qk_norm) attn += 2 * hd;
  int64_t mlp = 0;
  if (c.is_moe()) {
    int64_t inter = c.moe_intermediate_size > 0 ? c.moe_intermediate_size : c.intermediate_size;
    mlp = c.num_experts * 3 * h * inter + h * c.num_experts;
    if (c.shared_expert_intermediate_size > 0) {
      mlp += 3 * h * c.shared_expert_intermediate_size + h;  // shared expert and its gate
    }
  } else {
    mlp = 3 * h * c.intermediate_size;
  }
  int64_t layer = attn + mlp + 2 * h;
  int64_t embed = c.vocab_size * h;
  int64_t params = c.num_hidden_layers * layer + h + embed * (c.tie_word_embeddings ? 1 : 2);
  return params * bytes;
}

const ModelEntry* FindCatalogModel(const AuditOptions& options, absl::string_view name) {
  std::string want = Lower(name);
  for (const auto& m : options.models) {
    if (Lower(m.name()) == want || Lower(m.hf_repo()) == want) return &m;
  }
  return nullptr;
}

AuditReport AuditConfigText(absl::string_view text, absl::string_view dir_name,
                            const AuditOptions& options) {
  AuditReport r;
  r.set_config_sha256(common::Sha256Hex(text));
  auto parsed = ParseModelConfig(text);
  if (!parsed.ok()) {
    r.set_config_valid_json(false);
    bool json_error = absl::StartsWith(parsed.status().message(), "invalid JSON");
    Add(&r, dcufleet::v1::FINDING_ERROR, json_error ? "invalid_json" : "config_invalid", "config.json",
        absl::StrCat("config.json: ", parsed.status().message()));
    AuditParsed(nullptr, dir_name, options, &r);
    if (const ModelEntry* m = FindCatalogModel(options, r.catalog_match())) {
      r.set_weight_bytes(m->weight_bytes());
      r.set_weight_bytes_source("catalog");
    }
    return r;
  }
  r.set_config_valid_json(true);
  AuditParsed(&*parsed, dir_name, options, &r);
  if (const ModelEntry* m = FindCatalogModel(options, r.catalog_match());
      m != nullptr && m->weight_bytes() > 0) {
    r.set_weight_bytes(m->weight_bytes());
    r.set_weight_bytes_source("catalog");
  } else {
    int64_t est = EstimateWeightBytes(*parsed);
    r.set_weight_bytes(est);
    r.set_weight_bytes_source(est > 0 ? "estimate" : "none");
  }
  return r;
}

namespace {

// The safetensors checks into the report, with one error finding when
// damaged (the typed details are in r->weights()).
void VerifyWeightsInto(const std::string& path, const ModelConfig* config, absl::string_view config_text,
                       const AuditOptions& options, AuditReport* r) {
  WeightsAuditOptions wo;
  wo.config = config;
  wo.catalog = FindCatalogModel(options, r->catalog_match());
  wo.verify_content = options.verify_content;
  wo.manifest_path = options.manifest_path;
  wo.record_manifest = options.record_manifest;
  wo.progress = options.content_progress;
  *r->mutable_weights() = options.weights_cache ? options.weights_cache->Verify(path, wo, config_text)
                                                : VerifyWeights(path, wo);
  if (r->weights().verdict() == dcufleet::v1::WEIGHTS_DAMAGED) {
    const auto& first = r->weights().problems(0);
    Add(r, dcufleet::v1::FINDING_ERROR, "weights_damaged", first.file(), WeightsSummary(r->weights()));
  }
}

}  // namespace

AuditReport AuditModelDirectory(const std::string& path, const AuditOptions& options) {
  AuditReport r;
  r.set_path(SanitizeUtf8(path));
  r.set_weight_bytes_source("none");
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    Add(&r, dcufleet::v1::FINDING_ERROR, "model_dir_missing", "path",
        absl::StrCat("'", path, "' is not a directory"));
    return r;
  }
  std::string dir_name = BaseName(path);
  fs::path config_path = fs::path(path) / "config.json";
  std::string err;
  std::optional<std::string> text;
  if (fs::exists(config_path, ec)) text = ReadWithin(config_path.string(), kMaxConfigBytes, &err);
  if (!text) {
    Add(&r, dcufleet::v1::FINDING_ERROR, "config_missing", "config.json",
        absl::StrCat("cannot read ", config_path.string(), err.empty() ? ": no such file" : ": " + err));
    AuditParsed(nullptr, dir_name, options, &r);
    AuditWeights(path, nullptr, &r);
    VerifyWeightsInto(path, nullptr, "", options, &r);
    return r;
  }
  r.set_config_sha256(common::Sha256Hex(*text));
  auto parsed = ParseModelConfig(*text);
  if (!parsed.ok()) {
    r.set_config_valid_json(false);
    bool json_error = absl::StartsWith(parsed.status().message(), "invalid JSON");
    Add(&r, dcufleet::v1::FINDING_ERROR, json_error ? "invalid_json" : "config_invalid", "config.json",
        absl::StrCat("config.json: ", parsed.status().message()));
    AuditParsed(nullptr, dir_name, options, &r);
    AuditWeights(path, nullptr, &r);
    VerifyWeightsInto(path, nullptr, *text, options, &r);
    return r;
  }
  r.set_config_valid_json(true);
  AuditParsed(&*parsed, dir_name, options, &r);
  AuditWeights(path, &*parsed, &r);
  VerifyWeightsInto(path, &*parsed, *text, options, &r);
  if (const ModelEntry* m = FindCatalogModel(options, r.catalog_match());
      m != nullptr && m->weight_bytes() > 0 && r.weight_bytes_source() == "index") {
    double ratio = static_cast<double>(r.weight_bytes()) / static_cast<double>(m->weight_bytes());
    if (ratio < 0.99 || ratio > 1.01) {
      Add(&r, dcufleet::v1::FINDING_WARNING, "weight_bytes_mismatch", "model.safetensors.index.json",
          absl::StrCat("the index declares ", common::HumanBytes(r.weight_bytes()), " but '",
                       m->name(), "' is ", common::HumanBytes(m->weight_bytes()),
                       " (a different checkpoint, quantized or re-exported?)"));
    }
  }
  return r;
}

bool HasErrors(const AuditReport& r) {
  for (const auto& f : r.findings()) {
    if (f.severity() == dcufleet::v1::FINDING_ERROR) return true;
  }
  return false;
}

nlohmann::ordered_json AuditReportToJson(const AuditReport& r) {
  using oj = nlohmann::ordered_json;
  bool valid = r.config_valid_json();
  auto num = [&](int64_t v) -> oj { return valid && v != 0 ? oj(v) : oj(nullptr); };
  auto str = [&](const std::string& s) -> oj { return s.empty() ? oj(nullptr) : oj(s); };
  oj j;
  j["path"] = str(r.path());
  j["architecture"] = str(r.architecture());
  j["architectures"] = oj::array();
  for (const auto& a : r.architectures()) j["architectures"].push_back(a);
  j["model_type"] = str(r.model_type());
  j["text_config_key"] = str(r.text_config_key());
  j["hidden_size"] = num(r.hidden_size());
  j["num_attention_heads"] = num(r.num_attention_heads());
  j["num_key_value_heads"] = num(r.num_key_value_heads());
  j["head_dim"] = num(r.head_dim());
  j["head_dim_source"] = valid ? oj(r.head_dim_source()) : oj(nullptr);
  j["num_hidden_layers"] = num(r.num_hidden_layers());
  j["attention_layers"] = num(r.attention_layers());
  j["torch_dtype"] = str(r.torch_dtype());
  j["kv_cache_bytes_per_token"] = num(r.kv_cache_bytes_per_token());
  j["is_moe"] = r.is_moe();
  j["num_experts"] = num(r.num_experts());
  j["num_experts_per_tok"] = num(r.num_experts_per_tok());
  j["is_mla"] = r.is_mla();
  j["kv_lora_rank"] = num(r.kv_lora_rank());
  j["qk_rope_head_dim"] = num(r.qk_rope_head_dim());
  j["weight_bytes"] = r.weight_bytes() > 0 ? oj(r.weight_bytes()) : oj(nullptr);
  j["weight_bytes_source"] = str(r.weight_bytes_source());
  j["shard_count"] = r.shard_count();
  j["shards_complete"] = r.shards_complete();
  j["missing_shards"] = oj::array();
  for (const auto& m : r.missing_shards()) j["missing_shards"].push_back(m);
  j["valid_tp"] = oj::array();
  for (int tp : r.valid_tp()) j["valid_tp"].push_back(tp);
  j["catalog_match"] = str(r.catalog_match());
  j["catalog_match_basis"] = str(r.catalog_match_basis());
  j["config_sha256"] = str(r.config_sha256());
  j["findings"] = oj::array();
  for (const auto& f : r.findings()) {
    oj fj;
    fj["severity"] = std::string(common::FindingSeverityName(f.severity()));
    fj["code"] = f.code();
    fj["field"] = f.field();
    fj["message"] = f.message();
    j["findings"].push_back(std::move(fj));
  }
  if (r.has_weights()) {
    // Enum values as their proto names, as -o json shows every enum.
    const auto& w = r.weights();
    oj wj;
    wj["verdict"] = dcufleet::v1::WeightsVerdict_Name(w.verdict());
    wj["shards"] = w.shards();
    wj["tensors"] = w.tensors();
    wj["tensor_bytes"] = w.tensor_bytes();
    wj["shape_checked"] = w.shape_checked();
    wj["shape_skipped"] = w.shape_skipped();
    wj["shape_skip_reason"] = str(w.shape_skip_reason());
    wj["not_verified_reason"] = str(w.not_verified_reason());
    wj["content_verified"] = w.content_verified();
    wj["content_manifest"] = str(w.content_manifest());
    wj["content_bytes"] = w.content_bytes();
    wj["elapsed_us"] = w.elapsed_us();
    wj["problems_total"] = w.problems_total();
    wj["problems"] = oj::array();
    for (const auto& p : w.problems()) {
      oj pj;
      pj["kind"] = dcufleet::v1::WeightsProblemKind_Name(p.kind());
      pj["file"] = p.file();
      pj["tensor"] = str(p.tensor());
      pj["expected"] = p.expected();
      pj["actual"] = p.actual();
      pj["config_field"] = str(p.config_field());
      pj["blame"] = dcufleet::v1::WeightsBlame_Name(p.blame());
      pj["message"] = p.message();
      wj["problems"].push_back(std::move(pj));
    }
    j["weights"] = std::move(wj);
  }
  return j;
}

dcufleet::v1::ModelDirectory ToModelDirectory(const AuditReport& r) {
  dcufleet::v1::ModelDirectory d;
  d.set_path(r.path());
  d.set_name(BaseName(r.path()));
  d.set_architecture(r.architecture());
  d.set_config_sha256(r.config_sha256());
  d.set_weight_bytes(r.weight_bytes());
  d.set_shards_complete(r.shards_complete());
  *d.mutable_missing_shards() = r.missing_shards();
  *d.mutable_findings() = r.findings();
  if (r.has_weights()) *d.mutable_weights() = r.weights();
  return d;
}

}  // namespace dcu::modelkit
