#include "tests/testing/safetensors_writer.h"

#include <fstream>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace dcu::testing {

int64_t TestDtypeBytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "F64" || dtype == "I64") return 8;
  return 1;
}

std::string SafetensorsHeaderJson(const std::vector<TestTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  uint64_t* data_bytes) {
  nlohmann::ordered_json j;
  if (!metadata.empty()) j["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    uint64_t n = static_cast<uint64_t>(TestDtypeBytes(t.dtype));
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  *data_bytes = at;
  return j.dump();
}

void WriteSafetensorsRaw(const std::string& path, const std::string& header_json, uint64_t data_bytes,
                         uint64_t declared_length) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  uint64_t n = declared_length ? declared_length : header_json.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));  // little-endian
  out << header_json;
  std::string chunk(64 << 10, '\0');
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 % 251);
  while (data_bytes > 0) {
    size_t k = data_bytes < chunk.size() ? static_cast<size_t>(data_bytes) : chunk.size();
    out.write(chunk.data(), static_cast<std::streamsize>(k));
    data_bytes -= k;
  }
}

uint64_t WriteSafetensors(const std::string& path, const std::vector<TestTensor>& tensors,
                          const std::map<std::string, std::string>& metadata) {
  uint64_t data = 0;
  std::string header = SafetensorsHeaderJson(tensors, metadata, &data);
  WriteSafetensorsRaw(path, header, data);
  return data;
}

void WriteSafetensorsIndex(const std::string& dir,
                           const std::map<std::string, std::vector<TestTensor>>& shards,
                           int64_t total_size) {
  nlohmann::ordered_json j;
  j["metadata"] = {{"total_size", total_size}};
  j["weight_map"] = nlohmann::ordered_json::object();
  for (const auto& [file, tensors] : shards) {
    for (const auto& t : tensors) j["weight_map"][t.name] = file;
  }
  std::ofstream(dir + "/model.safetensors.index.json") << j.dump(2);
}

std::map<std::string, std::vector<TestTensor>> TinyModelTensors(const TinyModel& m) {
  std::vector<TestTensor> all;
  all.push_back({"model.embed_tokens.weight", "BF16", {m.vocab, m.hidden}});
  for (int l = 0; l < m.layers; ++l) {
    std::string p = absl::StrCat("model.layers.", l, ".");
    all.push_back({p + "input_layernorm.weight", "BF16", {m.hidden}});
    all.push_back({p + "self_attn.q_proj.weight", "BF16", {m.heads * m.head_dim, m.hidden}});
    all.push_back({p + "self_attn.q_proj.bias", "BF16", {m.heads * m.head_dim}});
    all.push_back({p + "self_attn.k_proj.weight", "BF16", {m.kv_heads * m.head_dim, m.hidden}});
    all.push_back({p + "self_attn.v_proj.weight", "BF16", {m.kv_heads * m.head_dim, m.hidden}});
    all.push_back({p + "self_attn.o_proj.weight", "BF16", {m.hidden, m.heads * m.head_dim}});
    all.push_back({p + "mlp.gate_proj.weight", "BF16", {m.intermediate, m.hidden}});
    all.push_back({p + "mlp.up_proj.weight", "BF16", {m.intermediate, m.hidden}});
    all.push_back({p + "mlp.down_proj.weight", "BF16", {m.hidden, m.intermediate}});
    all.push_back({p + "post_attention_layernorm.weight", "BF16", {m.hidden}});
  }
  all.push_back({"model.norm.weight", "BF16", {m.hidden}});
  all.push_back({"lm_head.weight", "BF16", {m.vocab, m.hidden}});
  std::map<std::string, std::vector<TestTensor>> out;
  const size_t per = (all.size() + m.shards - 1) / m.shards;
  for (size_t i = 0; i < all.size(); ++i) {
    out[absl::StrFormat("model-%05d-of-%05d.safetensors", static_cast<int>(i / per) + 1, m.shards)].push_back(
        all[i]);
  }
  return out;
}

std::string TinyModelConfigJson(const TinyModel& m) {
  nlohmann::ordered_json j = {
      {"architectures", {m.architecture}},
      {"model_type", m.model_type},
      {"hidden_size", m.hidden},
      {"num_attention_heads", m.heads},
      {"num_key_value_heads", m.kv_heads},
      {"head_dim", m.head_dim},
      {"intermediate_size", m.intermediate},
      {"num_hidden_layers", m.layers},
      {"vocab_size", m.vocab},
      {"max_position_embeddings", 4096},
      {"torch_dtype", "bfloat16"},
      {"tie_word_embeddings", false},
  };
  return j.dump(2);
}

int64_t WriteTinyModel(const std::string& dir, const TinyModel& m) {
  auto shards = TinyModelTensors(m);
  int64_t total = 0;
  for (const auto& [file, tensors] : shards) {
    total += static_cast<int64_t>(WriteSafetensors(dir + "/" + file, tensors));
  }
  WriteSafetensorsIndex(dir, shards, total);
  std::ofstream(dir + "/config.json") << TinyModelConfigJson(m);
  return total;
}

}  // namespace dcu::testing
