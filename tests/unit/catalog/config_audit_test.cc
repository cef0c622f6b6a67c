#include "modelkit/config_audit.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "modelkit/catalog_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using dcufleet::v1::AuditReport;
using dcufleet::v1::Finding;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ConfigPath(const std::string& dir) { return testing::ConfigsDir() + "/" + dir + "/config.json"; }

const Finding* FindingWithCode(const AuditReport& r, const std::string& code,
                               const std::string& needle = "") {
  for (const auto& f : r.findings()) {
    if (f.code() == code && (needle.empty() || f.message().find(needle) != std::string::npos)) {
      return &f;
    }
  }
  return nullptr;
}

std::string Dump(const AuditReport& r) { return AuditReportToJson(r).dump(2); }

class ConfigAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    options_.models.assign(catalog->model().begin(), catalog->model().end());
    options_.stacks.assign(catalog->stack().begin(), catalog->stack().end());
  }
  // A temporary model directory named `name` holding `config`.
  std::string MakeDir(const std::string& name, const std::string& config) {
    fs::path dir = fs::temp_directory_path() /
                   ("config_audit_test_" + std::to_string(::getpid())) / name;
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << config;
    dirs_.push_back(dir.parent_path());
    return dir.string();
  }
  void TearDown() override {
    for (const auto& d : dirs_) fs::remove_all(d);
  }
  AuditOptions options_;
  std::vector<fs::path> dirs_;
};

// The first seed: Qwen3-32B's config relabelled Qwen2ForCausalLM without head_dim.
TEST_F(ConfigAuditTest, SeedCaseReportsEverythingThatWasWrong) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b-seed000-qwen2-no-head-dim")));
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_EQ(r.catalog_match(), "qwen3-32b") << Dump(r);
  EXPECT_EQ(r.architecture(), "Qwen2ForCausalLM");
  EXPECT_EQ(r.head_dim(), 80);
  EXPECT_EQ(r.head_dim_source(), "derived");

  const Finding* head = FindingWithCode(r, "head_dim_missing");
  ASSERT_NE(head, nullptr) << Dump(r);
  EXPECT_EQ(head->severity(), dcufleet::v1::FINDING_ERROR);
  EXPECT_THAT(head->message(), HasSubstr("5120 / 64 = 80"));
  EXPECT_THAT(head->message(), HasSubstr("has head_dim 128"));

  const Finding* arch = FindingWithCode(r, "architecture_mismatch");
  ASSERT_NE(arch, nullptr) << Dump(r);
  EXPECT_THAT(arch->message(), HasSubstr("Qwen2ForCausalLM"));
  EXPECT_THAT(arch->message(), HasSubstr("Qwen3ForCausalLM"));

  const Finding* size = FindingWithCode(r, "head_size_unsupported", "vllm-0.11.0-bare-dtk2604");
  ASSERT_NE(size, nullptr) << Dump(r);
  EXPECT_THAT(size->message(), HasSubstr("head size 80 is not supported by FLASH_ATTN"));
  EXPECT_THAT(size->message(), HasSubstr("32, 64, 96, 128, 160, 192, 224, 256"));
  EXPECT_THAT(size->message(), HasSubstr("with the published head_dim 128 it would be supported"));
  EXPECT_THAT(size->message(), HasSubstr("VLLM_USE_FLASH_ATTN_PA=0"));
  // The generic "derived" note is replaced by the catalog's verdict.
  EXPECT_EQ(FindingWithCode(r, "head_dim_derived"), nullptr);
  EXPECT_TRUE(HasErrors(r));
}

TEST_F(ConfigAuditTest, OfficialQwen3_32BIsClean) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b")));
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_EQ(r.catalog_match(), "qwen3-32b");
  EXPECT_EQ(r.head_dim(), 128);
  EXPECT_EQ(r.head_dim_source(), "config");
  EXPECT_EQ(r.num_key_value_heads(), 8);
  // 2 (K,V) x 64 layers x 8 kv heads x 128 x 2 bytes.
  EXPECT_EQ(r.kv_cache_bytes_per_token(), 2 * 64 * 8 * 128 * 2);
  EXPECT_THAT(r.valid_tp(), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  // No weights in the temporary directory: only that is said.
  for (const auto& f : r.findings()) {
    EXPECT_NE(f.severity(), dcufleet::v1::FINDING_ERROR) << f.code() << ": " << f.message();
  }
  EXPECT_NE(FindingWithCode(r, "no_weights"), nullptr);
  EXPECT_EQ(r.weight_bytes_source(), "estimate");
  EXPECT_EQ(r.weight_bytes(), 65524246528);
}

TEST_F(ConfigAuditTest, MatchesByFingerprintWhenTheDirectoryNameSaysNothing) {
  std::string dir = MakeDir("model-a", Read(ConfigPath("qwen3-32b-seed000-qwen2-no-head-dim")));
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_EQ(r.catalog_match(), "qwen3-32b");
  EXPECT_EQ(r.catalog_match_basis(), "fingerprint");
}

TEST_F(ConfigAuditTest, KvHeadsMissing) {
  AuditReport r = AuditConfigText(Read(ConfigPath("qwen3-32b-no-kv-heads")), "Qwen3-32B", options_);
  const Finding* f = FindingWithCode(r, "kv_heads_missing");
  ASSERT_NE(f, nullptr) << Dump(r);
  EXPECT_EQ(f->severity(), dcufleet::v1::FINDING_ERROR);
  EXPECT_THAT(f->message(), HasSubstr("engines assume 64"));
  EXPECT_THAT(f->message(), HasSubstr("8x larger"));
  EXPECT_EQ(r.num_key_value_heads(), 64);
  EXPECT_EQ(r.kv_cache_bytes_per_token(), 2 * 64 * 64 * 128 * 2);
}

TEST_F(ConfigAuditTest, TruncatedJsonGivesLineAndColumn) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b-truncated")));
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_FALSE(r.config_valid_json());
  const Finding* f = FindingWithCode(r, "invalid_json");
  ASSERT_NE(f, nullptr) << Dump(r);
  // The file ends after `"num_hidden_layers": 6` on line 18 (24 characters).
  EXPECT_THAT(f->message(), HasSubstr("invalid JSON at line 18 column 25"));
  // Still matched by its directory name; the JSON output keeps nulls.
  EXPECT_EQ(r.catalog_match(), "qwen3-32b");
  auto j = AuditReportToJson(r);
  EXPECT_TRUE(j["hidden_size"].is_null());
  EXPECT_EQ(j["findings"][0]["code"], "invalid_json");
}

TEST_F(ConfigAuditTest, UnusualAndInvalidDtypes) {
  AuditReport f32 = AuditConfigText(Read(ConfigPath("qwen3-32b-float32")), "Qwen3-32B", options_);
  ASSERT_NE(FindingWithCode(f32, "unusual_dtype"), nullptr) << Dump(f32);
  EXPECT_NE(FindingWithCode(f32, "dtype_mismatch"), nullptr);
  EXPECT_EQ(f32.kv_cache_bytes_per_token(), 2 * 64 * 8 * 128 * 4);
  AuditReport bad = AuditConfigText(Read(ConfigPath("qwen3-32b-invalid-dtype")), "Qwen3-32B", options_);
  const Finding* f = FindingWithCode(bad, "dtype_invalid");
  ASSERT_NE(f, nullptr) << Dump(bad);
  EXPECT_EQ(f->severity(), dcufleet::v1::FINDING_ERROR);
  EXPECT_THAT(f->message(), HasSubstr("'bf16'"));
}

TEST_F(ConfigAuditTest, OfficialConfigsWithoutHeadDimAreFine) {
  for (const char* name : {"deepseek-r1-distill-qwen-32b", "qwen2.5-7b-instruct", "llama-3.1-8b"}) {
    AuditReport r = AuditConfigText(Read(ConfigPath(name)), name, options_);
    EXPECT_EQ(r.catalog_match(), name == std::string("llama-3.1-8b") ? "llama-3.1-8b" : name) << Dump(r);
    EXPECT_EQ(r.head_dim(), 128) << name;
    EXPECT_EQ(r.head_dim_source(), "derived") << name;
    EXPECT_FALSE(HasErrors(r)) << Dump(r);
    EXPECT_NE(FindingWithCode(r, "head_dim_derived"), nullptr) << name;
  }
  AuditReport distill = AuditConfigText(Read(ConfigPath("deepseek-r1-distill-qwen-32b")), "", options_);
  // 40 heads, 8 kv heads: 5, 10 and 20 neither divide nor replicate 8 kv heads; 40 replicates them 5x.
  EXPECT_THAT(distill.valid_tp(), ElementsAre(1, 2, 4, 8, 40));
  AuditReport q25 = AuditConfigText(Read(ConfigPath("qwen2.5-7b-instruct")), "", options_);
  // 28 heads, 4 kv heads: 28 replicates the 4 kv heads 7 times.
  EXPECT_THAT(q25.valid_tp(), ElementsAre(1, 2, 4, 28));
}

TEST_F(ConfigAuditTest, MoeConfig) {
  AuditReport r = AuditConfigText(Read(ConfigPath("qwen3-30b-a3b")), "", options_);
  EXPECT_EQ(r.catalog_match(), "qwen3-30b-a3b") << Dump(r);
  EXPECT_TRUE(r.is_moe());
  EXPECT_EQ(r.num_experts(), 128);
  EXPECT_EQ(r.num_experts_per_tok(), 8);
  EXPECT_EQ(r.kv_cache_bytes_per_token(), 2 * 48 * 4 * 128 * 2);
  EXPECT_FALSE(HasErrors(r)) << Dump(r);
}

TEST_F(ConfigAuditTest, MlaKvCacheComesFromTheLatentNotTheHeads) {
  AuditReport v3 = AuditConfigText(Read(ConfigPath("deepseek-v3")), "", options_);
  EXPECT_TRUE(v3.is_mla());
  EXPECT_TRUE(v3.is_moe());
  EXPECT_EQ(v3.num_experts(), 256);
  EXPECT_EQ(v3.kv_lora_rank(), 512);
  EXPECT_EQ(v3.qk_rope_head_dim(), 64);
  // 61 layers x (512 + 64) x 2 bytes; heads would have said 2 x 61 x 128 x 56 x 2.
  EXPECT_EQ(v3.kv_cache_bytes_per_token(), 61 * (512 + 64) * 2);
  EXPECT_NE(FindingWithCode(v3, "quantized"), nullptr);
  EXPECT_EQ(v3.catalog_match(), "");
  AuditReport v2 = AuditConfigText(Read(ConfigPath("deepseek-v2-lite-chat")), "", options_);
  EXPECT_TRUE(v2.is_mla());
  EXPECT_EQ(v2.kv_cache_bytes_per_token(), 27 * (512 + 64) * 2);
  EXPECT_EQ(v2.num_experts(), 64);
  EXPECT_FALSE(HasErrors(v2)) << Dump(v2);
  // MLA caches the same latent on every rank.
  auto parsed = ParseModelConfig(Read(ConfigPath("deepseek-v2-lite-chat")));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(KvCacheBytesPerToken(*parsed, 8), KvCacheBytesPerToken(*parsed, 1));
}

TEST_F(ConfigAuditTest, NestedTextConfigOfAHybridModel) {
  AuditReport r = AuditConfigText(Read(ConfigPath("qwen3.5-27b-reconstructed")), "Qwen3.5-27B", options_);
  EXPECT_EQ(r.text_config_key(), "text_config");
  EXPECT_EQ(r.catalog_match(), "qwen3.5-27b") << Dump(r);
  EXPECT_EQ(r.hidden_size(), 5120);
  EXPECT_EQ(r.num_attention_heads(), 24);
  EXPECT_EQ(r.num_key_value_heads(), 4);
  EXPECT_EQ(r.head_dim(), 256);
  EXPECT_EQ(r.torch_dtype(), "bfloat16");
  EXPECT_EQ(r.attention_layers(), 16);
  // Only the 16 full-attention layers hold KV: 2 x 16 x 4 x 256 x 2.
  EXPECT_EQ(r.kv_cache_bytes_per_token(), 2 * 16 * 4 * 256 * 2);
  EXPECT_FALSE(HasErrors(r)) << Dump(r);
}

TEST_F(ConfigAuditTest, Qwen3_0_6BIsByteIdenticalToThePublishedFile) {
  std::string text = Read(ConfigPath("qwen3-0.6b"));
  EXPECT_EQ(text.size(), 726u);
  AuditReport r = AuditConfigText(text, "Qwen3-0.6B", options_);
  EXPECT_EQ(r.catalog_match(), "qwen3-0.6b");
  EXPECT_FALSE(HasErrors(r)) << Dump(r);
}

TEST_F(ConfigAuditTest, ShardsFromTheIndexAreChecked) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b")));
  std::string index = R"({"metadata": {"total_size": 65524246528}, "weight_map": {
      "lm_head.weight": "model-00003-of-00003.safetensors",
      "model.embed_tokens.weight": "model-00001-of-00003.safetensors",
      "model.layers.0.mlp.up_proj.weight": "model-00002-of-00003.safetensors",
      "model.norm.weight": "model-00003-of-00003.safetensors"}})";
  std::ofstream(fs::path(dir) / "model.safetensors.index.json") << index;
  std::ofstream(fs::path(dir) / "model-00001-of-00003.safetensors") << "x";
  std::ofstream(fs::path(dir) / "model-00002-of-00003.safetensors") << "";  // empty: truncated copy
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_EQ(r.weight_bytes(), 65524246528);
  EXPECT_EQ(r.weight_bytes_source(), "index");
  EXPECT_EQ(r.shard_count(), 3);
  EXPECT_FALSE(r.shards_complete());
  EXPECT_THAT(r.missing_shards(), ElementsAre("model-00003-of-00003.safetensors"));
  const Finding* f = FindingWithCode(r, "shards_missing");
  ASSERT_NE(f, nullptr) << Dump(r);
  EXPECT_THAT(f->message(), HasSubstr("1 of 3 shards"));
  EXPECT_NE(FindingWithCode(r, "shard_empty"), nullptr);
  // Once every shard is there it is complete.
  std::ofstream(fs::path(dir) / "model-00002-of-00003.safetensors") << "y";
  std::ofstream(fs::path(dir) / "model-00003-of-00003.safetensors") << "z";
  AuditReport ok = AuditModelDirectory(dir, options_);
  EXPECT_TRUE(ok.shards_complete()) << Dump(ok);
  // Present, but one byte each is no safetensors file: the only error is the
  // weights verification's (weights_audit_test checks real files).
  for (const auto& f : ok.findings()) {
    if (f.severity() == dcufleet::v1::FINDING_ERROR) EXPECT_EQ(f.code(), "weights_damaged") << Dump(ok);
  }
  EXPECT_EQ(ok.weights().problems(0).kind(), dcufleet::v1::WEIGHTS_SHARD_TRUNCATED);
  EXPECT_THAT(ok.weights().problems(0).message(), HasSubstr("too short for the 8-byte header length"));
  EXPECT_EQ(ok.config_sha256().size(), 64u);
}

TEST_F(ConfigAuditTest, IndexWithAPathEscapeIsInvalid) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b")));
  std::ofstream(fs::path(dir) / "model.safetensors.index.json")
      << R"({"metadata": {"total_size": 10}, "weight_map": {"a": "../../etc/passwd"}})";
  AuditReport r = AuditModelDirectory(dir, options_);
  EXPECT_NE(FindingWithCode(r, "index_invalid"), nullptr) << Dump(r);
  EXPECT_FALSE(r.shards_complete());
}

// A number too large for a double is not a syntax error to the JSON reader
// but an exception of another kind, which ended dcuctl model audit (and
// would have ended whatever audited the directory) before this was caught.
TEST_F(ConfigAuditTest, IndexWithANumberTooLargeIsAFindingNotACrash) {
  std::string dir = MakeDir("Qwen3-32B", Read(ConfigPath("qwen3-32b")));
  std::ofstream(fs::path(dir) / "model.safetensors.index.json")
      << R"({"metadata": {"total_size": 1e99999}, "weight_map": {"a": "model-00001-of-00001.safetensors"}})";
  AuditReport r = AuditModelDirectory(dir, options_);
  const Finding* f = FindingWithCode(r, "invalid_json");
  ASSERT_NE(f, nullptr) << Dump(r);
  EXPECT_THAT(f->message(), HasSubstr("model.safetensors.index.json cannot be read as JSON"));
  EXPECT_THAT(f->message(), HasSubstr("number overflow"));
}

TEST_F(ConfigAuditTest, MissingDirectoryAndMissingConfig) {
  AuditReport r = AuditModelDirectory("/nonexistent/model", options_);
  EXPECT_NE(FindingWithCode(r, "model_dir_missing"), nullptr);
  std::string dir = MakeDir("empty", "");
  fs::remove(fs::path(dir) / "config.json");
  AuditReport c = AuditModelDirectory(dir, options_);
  EXPECT_NE(FindingWithCode(c, "config_missing"), nullptr) << Dump(c);
}

TEST_F(ConfigAuditTest, NotAnObjectAndWrongTypes) {
  AuditReport arr = AuditConfigText("[1, 2]", "", options_);
  EXPECT_NE(FindingWithCode(arr, "config_invalid"), nullptr) << Dump(arr);
  AuditReport types = AuditConfigText(
      R"({"architectures": "LlamaForCausalLM", "hidden_size": "4096", "num_attention_heads": -4,
          "num_hidden_layers": 2.5, "torch_dtype": "float16"})",
      "", options_);
  EXPECT_NE(FindingWithCode(types, "field_wrong_type"), nullptr) << Dump(types);
  EXPECT_NE(FindingWithCode(types, "field_invalid"), nullptr) << Dump(types);
  EXPECT_NE(FindingWithCode(types, "shape_missing"), nullptr) << Dump(types);
}

TEST_F(ConfigAuditTest, JsonHasTheDocumentedFields) {
  AuditReport r = AuditConfigText(Read(ConfigPath("qwen3-32b-seed000-qwen2-no-head-dim")), "Qwen3-32B", options_);
  auto j = AuditReportToJson(r);
  for (const char* key : {"architecture", "model_type", "hidden_size", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "head_dim_source", "num_hidden_layers",
                          "torch_dtype", "kv_cache_bytes_per_token", "weight_bytes", "valid_tp",
                          "catalog_match", "findings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["architecture"], "Qwen2ForCausalLM");
  EXPECT_EQ(j["head_dim"], 80);
  EXPECT_EQ(j["head_dim_source"], "derived");
  EXPECT_EQ(j["catalog_match"], "qwen3-32b");
  for (const auto& f : j["findings"]) {
    for (const char* key : {"severity", "code", "field", "message"}) EXPECT_TRUE(f.contains(key));
  }
}

TEST(ConfigAuditWeights, WeightEstimateMatchesPublishedTotals) {
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  int checked = 0;
  for (const auto& m : catalog->model()) {
    // Qwen3-0.6B ties its embeddings but the published file also stores
    // lm_head.weight; Qwen3.5-27B's total is approximate (hybrid + vision).
    if (m.name() == "qwen3-0.6b" || m.name() == "qwen3.5-27b") continue;
    const auto& f = m.fingerprint();
    ModelConfig c;
    c.architectures.assign(f.architectures().begin(), f.architectures().end());
    c.model_type = f.model_type();
    c.hidden_size = f.hidden_size();
    c.num_attention_heads = f.num_attention_heads();
    c.num_key_value_heads = f.num_key_value_heads();
    c.has_num_key_value_heads = true;
    c.head_dim = f.head_dim();
    c.has_head_dim = true;
    c.num_hidden_layers = f.num_hidden_layers();
    c.torch_dtype = f.torch_dtype();
    c.intermediate_size = f.intermediate_size();
    c.vocab_size = f.vocab_size();
    c.tie_word_embeddings = f.tie_word_embeddings();
    c.num_experts = f.num_experts();
    c.moe_intermediate_size = f.moe_intermediate_size();
    EXPECT_EQ(EstimateWeightBytes(c), m.weight_bytes()) << m.name();
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(ConfigParseTest, ValidTensorParallelSizesFollowVllm) {
  EXPECT_THAT(ValidTensorParallelSizes(64, 8, 16), ElementsAre(1, 2, 4, 8, 16));
  EXPECT_THAT(ValidTensorParallelSizes(24, 4, 64), ElementsAre(1, 2, 4, 8, 12, 24));
  EXPECT_THAT(ValidTensorParallelSizes(32, 4, 8), ElementsAre(1, 2, 4, 8));
  EXPECT_TRUE(ValidTensorParallelSizes(0, 0).empty());
}

// Found by model_config_fuzzer: a byte that is not UTF-8 in a key made the
// parser quote it in its message, and the JSON report could not be printed.
TEST(ConfigParseTest, InvalidUtf8NeverBreaksTheReport) {
  std::string text = "{\n  \"quantization_config\": {\"\xe6mt\": 1}\n}";
  AuditReport r = AuditConfigText(text, "", {});
  ASSERT_GE(r.findings_size(), 1);
  EXPECT_EQ(r.findings(0).code(), "invalid_json");
  std::string dumped;
  EXPECT_NO_THROW(dumped = AuditReportToJson(r).dump());
  EXPECT_THAT(dumped, HasSubstr("invalid JSON at line 2"));
  std::string serialized;
  EXPECT_TRUE(r.SerializeToString(&serialized));
  AuditReport back;
  EXPECT_TRUE(back.ParseFromString(serialized));
  // A value cut in the middle of a multi-byte character.
  AuditReport cut = AuditConfigText(
      "{\"hidden_size\": \"" + std::string(79, 'a') + "\xc3\xa9\"}", "", {});
  EXPECT_NO_THROW(AuditReportToJson(cut).dump());
}

TEST(ConfigParseTest, InvalidJsonPositions) {
  auto r = ParseModelConfig("{\n  \"a\": 1,\n  \"b\": ,\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("invalid JSON at line 3 column 8"));
  EXPECT_FALSE(ParseModelConfig("").ok());
  EXPECT_FALSE(ParseModelConfig("\xff\xfe").ok());
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseModelConfig(deep).ok());
}

}  // namespace
}  // namespace dcu::modelkit
