#pragma once

// Writes real safetensors files for tests (the format as safetensors writes
// it: 8-byte little-endian header length, JSON header, data; modelkit/
// safetensors.h), and the damaged variants the weights checks must catch.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dcu::testing {

struct TestTensor {
  std::string name;
  std::string dtype = "BF16";
  std::vector<int64_t> shape;
};

// Bytes per element of the dtypes tests use (F16/BF16 2, F32 4, I8/U8/F8 1, I32 4).
int64_t TestDtypeBytes(const std::string& dtype);

// The JSON header for `tensors` laid out back to back in order, plus
// `metadata` as __metadata__; `*data_bytes` gets the data length.
std::string SafetensorsHeaderJson(const std::vector<TestTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  uint64_t* data_bytes);

// Writes `path`: length, `header_json` (as given: hostile headers too), and
// `data_bytes` bytes of a repeating pattern. `declared_length` overrides the
// 8-byte length (0: the header's real length).
void WriteSafetensorsRaw(const std::string& path, const std::string& header_json, uint64_t data_bytes,
                         uint64_t declared_length = 0);

// A well-formed shard; returns its tensor bytes.
uint64_t WriteSafetensors(const std::string& path, const std::vector<TestTensor>& tensors,
                          const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// model.safetensors.index.json in `dir` mapping each tensor to its shard,
// with metadata.total_size.
void WriteSafetensorsIndex(const std::string& dir,
                           const std::map<std::string, std::vector<TestTensor>>& shards,
                           int64_t total_size);

// A tiny Qwen2/Llama-shaped checkpoint (config.json, index, shards) in
// `dir`: `layers` decoder layers over `shards` shards, BF16.
struct TinyModel {
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 16;
  int64_t intermediate = 128;
  int64_t vocab = 256;
  int layers = 2;
  int shards = 2;
  std::string architecture = "Qwen2ForCausalLM";
  std::string model_type = "qwen2";
};
// The tensors of `m`, per shard file name ("model-00001-of-00002.safetensors").
std::map<std::string, std::vector<TestTensor>> TinyModelTensors(const TinyModel& m);
std::string TinyModelConfigJson(const TinyModel& m);
// Writes config.json, the index and every shard; returns the tensor bytes.
int64_t WriteTinyModel(const std::string& dir, const TinyModel& m);

}  // namespace dcu::testing
