#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/types.pb.h"
#include "nlohmann/json.hpp"

namespace dcu::modelkit {

struct ContentProgress;    // weights_audit.h
class WeightsAuditCache;   // weights_audit.h

// A config.json read the way engines read it: text fields from `text_config`
// (or `language_config`, `llm_config`) when the model nests them, else from
// the top level. Zero means absent unless a has_* flag says otherwise.
struct ModelConfig {
  std::vector<std::string> architectures;
  std::string model_type;
  // model_type inside the nested text config, if any.
  std::string text_model_type;
  // "" or the key the text fields were read from ("text_config").
  std::string text_config_key;
  int64_t hidden_size = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  bool has_num_key_value_heads = false;
  int head_dim = 0;
  bool has_head_dim = false;
  int num_hidden_layers = 0;
  // torch_dtype, or dtype (transformers >= 4.56).
  std::string torch_dtype;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  std::optional<bool> attention_bias;
  // MoE: num_experts / n_routed_experts / num_local_experts.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;
  int n_shared_experts = 0;
  int first_k_dense_replace = 0;
  // DeepSeek-V3's multi-token-prediction layers, stored after the decoder's
  // (model.layers.61 of a 61-layer model).
  int num_nextn_predict_layers = 0;
  // MLA (DeepSeek-V2/V3).
  int kv_lora_rank = 0;
  int q_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  // Layers that keep a KV cache when the model mixes in linear attention
  // (layer_types / full_attention_interval); 0 when every layer does.
  int full_attention_layers = 0;
  // quantization_config.quant_method, when quantized.
  std::string quant_method;
  // Wrong types and impossible values met while reading.
  std::vector<dcufleet::v1::Finding> findings;

  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_moe() const { return num_experts > 0; }
  // head_dim if the config has it, else hidden_size / num_attention_heads as
  // engines derive it (0 when that is impossible).
  int EffectiveHeadDim() const;
  // num_key_value_heads, defaulting to num_attention_heads like transformers.
  int EffectiveKvHeads() const;
  int AttentionLayers() const;
};

// Parses config.json text. INVALID_ARGUMENT "invalid JSON at line L column C:
// reason" for text that is not JSON, "config.json is not a JSON object" for
// other JSON. Never throws, whatever the input.
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text);

// Bytes per element of a torch dtype name; 0 when the name is not a dtype.
int DtypeBytes(absl::string_view dtype);

// TP sizes up to `max_tp` that vLLM accepts: they divide the attention heads,
// and either divide the KV heads or are a multiple of them (KV heads are then
// replicated, as QKVParallelLinear does).
std::vector<int> ValidTensorParallelSizes(int num_attention_heads, int num_kv_heads,
                                          int max_tp = 64);

// KV cache bytes one token takes on one device at tensor parallel size `tp`
// in the model's dtype: MLA caches kv_lora_rank + qk_rope_head_dim per layer
// on every rank; otherwise 2 (K,V) x kv heads per rank (at least 1) x head_dim.
int64_t KvCacheBytesPerToken(const ModelConfig& config, int tp = 1);

// Parameter bytes estimated from the config for dense and MoE decoders of the
// Llama/Qwen families (embeddings, attention, MLP or experts, norms); 0 for
// shapes it does not know (MLA, hybrid linear attention).
int64_t EstimateWeightBytes(const ModelConfig& config);

struct AuditOptions {
  // The model catalog to match against.
  std::vector<dcufleet::v1::ModelEntry> models;
  // Stacks whose attention backends are checked against the head size.
  std::vector<dcufleet::v1::Stack> stacks;
  // Match this catalog model instead of guessing.
  std::string model_name;
  int max_tp = 64;
  // The safetensors checks (weights_audit.h) of AuditModelDirectory: header
  // checks always, through `weights_cache` when given (the agent's); sha256
  // against a manifest when `verify_content`.
  WeightsAuditCache* weights_cache = nullptr;
  bool verify_content = false;
  std::string manifest_path;
  // WeightsAuditOptions::record_manifest: no manifest yet and all clean ->
  // record one (dcuctl model audit --record-manifest).
  bool record_manifest = false;
  std::function<void(const ContentProgress&)> content_progress;
};

// Audits a model directory: config.json, the safetensors (or .bin) index and
// the files, and fills `weights` (VerifyWeights; a damaged verdict also adds
// one "weights_damaged" error finding). Never fails: what is wrong is in the findings (invalid JSON with
// line and column, missing shards, ...).
dcufleet::v1::AuditReport AuditModelDirectory(const std::string& path,
                                              const AuditOptions& options);

// Audits config.json text alone; `dir_name` (may be empty) helps matching.
// Weight bytes come from the catalog match or the estimate.
dcufleet::v1::AuditReport AuditConfigText(absl::string_view config_text,
                                          absl::string_view dir_name,
                                          const AuditOptions& options);

// The catalog entry `report` matched, or nullptr.
const dcufleet::v1::ModelEntry* FindCatalogModel(const AuditOptions& options,
                                                 absl::string_view name);

// The report as `dcuctl model audit -o json` prints it (snake_case keys,
// null for what the config does not give).
nlohmann::ordered_json AuditReportToJson(const dcufleet::v1::AuditReport& report);

// What an agent reports for a directory.
dcufleet::v1::ModelDirectory ToModelDirectory(const dcufleet::v1::AuditReport& report);

// True when any finding has severity "error".
bool HasErrors(const dcufleet::v1::AuditReport& report);

}  // namespace dcu::modelkit
