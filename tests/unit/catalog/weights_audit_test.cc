// The safetensors checks (issue 19) on real files the tests write: every
// damage a directory can have, each a finding naming the file and figures.
#include "modelkit/weights_audit.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/config_audit.h"
#include "modelkit/safetensors.h"
#include "nlohmann/json.hpp"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using dcufleet::v1::WeightsProblem;
using dcufleet::v1::WeightsVerification;
using ::testing::HasSubstr;
using testing::TestTensor;

const WeightsProblem* Problem(const WeightsVerification& v, dcufleet::v1::WeightsProblemKind kind) {
  for (const auto& p : v.problems()) {
    if (p.kind() == kind) return &p;
  }
  return nullptr;
}

std::string Dump(const WeightsVerification& v) { return v.DebugString(); }

class WeightsAuditTest : public ::testing::Test {
 protected:
  void SetUp() override { total_ = testing::WriteTinyModel(dir(), model_); }
  const std::string& dir() const { return tmp_.path(); }
  std::string Shard(int i) const {
    return absl::StrCat("model-0000", i, "-of-0000", model_.shards, ".safetensors");
  }
  WeightsVerification Verify(bool with_config = true) {
    WeightsAuditOptions o;
    if (with_config) {
      config_ = *ParseModelConfig(testing::ReadFileOrEmpty(dir() + "/config.json"));
      o.config = &config_;
    }
    return VerifyWeights(dir(), o);
  }
  void EditConfig(const std::string& key, int64_t value) {
    auto j = nlohmann::json::parse(testing::ReadFileOrEmpty(dir() + "/config.json"));
    j[key] = value;
    std::ofstream(dir() + "/config.json", std::ios::trunc) << j.dump();
  }

  testing::TempDir tmp_;
  testing::TinyModel model_;
  int64_t total_ = 0;
  ModelConfig config_;
};

TEST_F(WeightsAuditTest, ACleanCheckpointIsClean) {
  WeightsVerification v = Verify();
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << Dump(v);
  EXPECT_EQ(v.problems_total(), 0);
  EXPECT_EQ(v.shards(), 2);
  EXPECT_EQ(v.tensor_bytes(), total_);
  // embed, lm_head and 7 projections per layer.
  EXPECT_EQ(v.shape_checked(), 2 + 7 * model_.layers);
  EXPECT_THAT(v.shape_skip_reason(), HasSubstr("non-weight tensors"));
}

TEST_F(WeightsAuditTest, MissingShardIsNamed) {
  fs::remove(dir() + "/" + Shard(2));
  WeightsVerification v = Verify();
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_MISSING);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->file(), Shard(2));
  EXPECT_THAT(p->message(), HasSubstr("model-00002-of-00002.safetensors is named by model.safetensors.index.json"));
  // total_size cannot be compared without the shard: no second finding.
  EXPECT_EQ(Problem(v, dcufleet::v1::WEIGHTS_TOTAL_SIZE_MISMATCH), nullptr);
}

TEST_F(WeightsAuditTest, StrayShardIsNamed) {
  testing::WriteSafetensors(dir() + "/model-00003-of-00003.safetensors", {{"extra.weight", "F16", {4, 4}}});
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_STRAY);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->file(), "model-00003-of-00003.safetensors");
  EXPECT_THAT(p->message(), HasSubstr("does not name it"));
}

TEST_F(WeightsAuditTest, TruncatedShardGivesBothLengths) {
  const std::string path = dir() + "/" + Shard(1);
  const auto size = static_cast<int64_t>(fs::file_size(path));
  ASSERT_EQ(::truncate(path.c_str(), size - 1000), 0);
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->expected(), size);
  EXPECT_EQ(p->actual(), size - 1000);
  EXPECT_THAT(p->message(), HasSubstr(absl::StrCat(Shard(1), " truncated: ")));
  EXPECT_THAT(p->message(), HasSubstr(absl::StrCat("(", size - 1000, " of ", size, " bytes)")));
  EXPECT_THAT(WeightsSummary(v), HasSubstr("truncated"));
}

TEST_F(WeightsAuditTest, ShardTruncatedInsideItsHeader) {
  ASSERT_EQ(::truncate((dir() + "/" + Shard(2)).c_str(), 20), 0);
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_THAT(p->message(), HasSubstr("truncated inside its header"));
}

TEST_F(WeightsAuditTest, PaddedShardIsCaught) {
  const std::string path = dir() + "/" + Shard(2);
  const auto size = static_cast<int64_t>(fs::file_size(path));
  std::ofstream(path, std::ios::app | std::ios::binary) << std::string(512, '\0');
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_PADDED);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->expected(), size);
  EXPECT_EQ(p->actual(), size + 512);
  EXPECT_THAT(p->message(), HasSubstr("512 bytes after its last tensor"));
}

TEST_F(WeightsAuditTest, IndexAndHeadersDisagree) {
  // The index moves one tensor to the other shard.
  auto shards = testing::TinyModelTensors(model_);
  TestTensor moved = shards[Shard(1)].back();
  shards[Shard(1)].pop_back();
  shards[Shard(2)].push_back(moved);
  testing::WriteSafetensorsIndex(dir(), shards, total_);
  WeightsVerification v = Verify();
  int mismatches = 0;
  for (const auto& p : v.problems()) {
    if (p.kind() != dcufleet::v1::WEIGHTS_INDEX_MISMATCH) continue;
    ++mismatches;
    EXPECT_EQ(p.tensor(), moved.name);
  }
  EXPECT_EQ(mismatches, 2) << Dump(v);
  EXPECT_EQ(Problem(v, dcufleet::v1::WEIGHTS_INDEX_MISMATCH)->file(), Shard(1));
  EXPECT_THAT(Problem(v, dcufleet::v1::WEIGHTS_INDEX_MISMATCH)->message(),
              HasSubstr(absl::StrCat("(index: ", Shard(2), ")")));
}

TEST_F(WeightsAuditTest, TotalSizeMustBeTheSumOfTheTensors) {
  testing::WriteSafetensorsIndex(dir(), testing::TinyModelTensors(model_), total_ + 2);
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_TOTAL_SIZE_MISMATCH);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->expected(), total_ + 2);
  EXPECT_EQ(p->actual(), total_);
  EXPECT_THAT(p->message(), HasSubstr(absl::StrCat("total_size is ", total_ + 2, " bytes")));
}

TEST_F(WeightsAuditTest, IndexNamingAPathIsRefused) {
  std::ofstream(dir() + "/model.safetensors.index.json", std::ios::trunc)
      << R"({"metadata": {"total_size": 1}, "weight_map": {"a": "../../etc/passwd"}})";
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_INDEX_INVALID);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_THAT(p->message(), HasSubstr("not a file name"));
}

// --- Shapes against a corrupted config.json.

TEST_F(WeightsAuditTest, HiddenSizeEditedInConfigIsCaughtByTheWeights) {
  EditConfig("hidden_size", 96);
  WeightsVerification v = Verify();
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHAPE_MISMATCH);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->config_field(), "hidden_size");
  EXPECT_EQ(p->expected(), 96);
  EXPECT_EQ(p->actual(), 64);
  EXPECT_THAT(p->message(), HasSubstr("config.json gives hidden_size = 96 but"));
  EXPECT_EQ(p->blame(), dcufleet::v1::WEIGHTS_BLAME_UNKNOWN);
}

TEST_F(WeightsAuditTest, KvHeadsAndLayersEditedInConfig) {
  EditConfig("num_key_value_heads", 4);
  EditConfig("num_hidden_layers", 3);
  WeightsVerification v = Verify();
  bool kv = false;
  for (const auto& p : v.problems()) {
    if (p.config_field() == "num_key_value_heads × head_dim") {
      kv = true;
      EXPECT_EQ(p.expected(), 64);
      EXPECT_EQ(p.actual(), 32);
    }
  }
  EXPECT_TRUE(kv) << Dump(v);
  const auto* layers = Problem(v, dcufleet::v1::WEIGHTS_LAYER_COUNT_MISMATCH);
  ASSERT_NE(layers, nullptr) << Dump(v);
  EXPECT_EQ(layers->expected(), 3);
  EXPECT_EQ(layers->actual(), 2);
  EXPECT_THAT(layers->message(), HasSubstr("num_hidden_layers = 3 but the weights have layers 0..1 (2)"));
}

TEST_F(WeightsAuditTest, HeadDimDefaultsToHiddenOverHeads) {
  auto j = nlohmann::json::parse(testing::ReadFileOrEmpty(dir() + "/config.json"));
  j.erase("head_dim");  // 64 / 4 = 16, as written
  std::ofstream(dir() + "/config.json", std::ios::trunc) << j.dump();
  EXPECT_EQ(Verify().verdict(), dcufleet::v1::WEIGHTS_CLEAN);
}

TEST_F(WeightsAuditTest, TheCatalogSaysWhichSideIsWrong) {
  dcufleet::v1::ModelEntry entry;
  entry.set_name("tiny");
  auto* f = entry.mutable_fingerprint();
  f->set_hidden_size(64);
  f->set_num_attention_heads(4);
  f->set_num_key_value_heads(2);
  f->set_head_dim(16);
  f->set_num_hidden_layers(2);
  EditConfig("hidden_size", 96);
  config_ = *ParseModelConfig(testing::ReadFileOrEmpty(dir() + "/config.json"));
  WeightsAuditOptions o;
  o.config = &config_;
  o.catalog = &entry;
  WeightsVerification v = VerifyWeights(dir(), o);
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHAPE_MISMATCH);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->blame(), dcufleet::v1::WEIGHTS_BLAME_CONFIG);
  EXPECT_THAT(p->message(), HasSubstr("config.json is wrong"));

  // The catalog agrees with config.json: then the weights are another model's.
  f->set_hidden_size(96);
  v = VerifyWeights(dir(), o);
  p = Problem(v, dcufleet::v1::WEIGHTS_SHAPE_MISMATCH);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->blame(), dcufleet::v1::WEIGHTS_BLAME_WEIGHTS);
  EXPECT_THAT(p->message(), HasSubstr("the weights are not tiny's"));
}

TEST_F(WeightsAuditTest, QuantizedTensorsAreSkippedNotFailed) {
  // An fp8 checkpoint (weights F8_E4M3 with F32 scales) and a GPTQ-style
  // packed int32 qweight: shapes that are not the model's, never findings.
  std::vector<TestTensor> q = {
      {"model.embed_tokens.weight", "BF16", {256, 64}},
      {"model.layers.0.self_attn.q_proj.weight", "F8_E4M3", {64, 64}},
      {"model.layers.0.self_attn.q_proj.weight_scale", "F32", {1}},
      {"model.layers.0.mlp.gate_proj.qweight", "I32", {8, 128}},
      {"model.layers.0.mlp.up_proj.weight", "I8", {128, 32}},
      {"model.layers.1.mlp.down_proj.weight", "F8_E4M3", {64, 128}},
  };
  for (const auto& e : fs::directory_iterator(dir())) fs::remove(e.path());
  int64_t total = static_cast<int64_t>(testing::WriteSafetensors(dir() + "/model.safetensors", q));
  (void)total;
  std::ofstream(dir() + "/config.json") << testing::TinyModelConfigJson(model_);
  WeightsVerification v = Verify();
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << Dump(v);
  EXPECT_EQ(v.shape_checked(), 1);
  EXPECT_THAT(v.shape_skip_reason(), HasSubstr("quantized (F8_E4M3)"));
  EXPECT_THAT(v.shape_skip_reason(), HasSubstr("quantized (I8)"));
}

TEST_F(WeightsAuditTest, NoSafetensorsIsNotVerifiedNotDamaged) {
  for (const auto& e : fs::directory_iterator(dir())) fs::remove(e.path());
  std::ofstream(dir() + "/pytorch_model.bin") << "x";
  WeightsVerification v = Verify(false);
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_NOT_VERIFIED);
  EXPECT_THAT(v.not_verified_reason(), HasSubstr(".bin"));
}

// --- Content.

TEST_F(WeightsAuditTest, ContentAgainstASha256sumManifest) {
  std::string manifest;
  for (int i = 1; i <= 2; ++i) {
    absl::StrAppend(&manifest, common::Sha256Hex(testing::ReadFileOrEmpty(dir() + "/" + Shard(i))), "  ",
                    Shard(i), "\n");
  }
  std::ofstream(dir() + "/sha256sums") << manifest;
  WeightsAuditOptions o;
  o.verify_content = true;
  o.chunk_bytes = 4096;
  int calls = 0;
  int64_t last_done = 0, total = 0;
  o.progress = [&](const ContentProgress& p) {
    ++calls;
    last_done = p.done;
    total = p.total;
  };
  WeightsVerification v = VerifyWeights(dir(), o);
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << Dump(v);
  EXPECT_TRUE(v.content_verified());
  EXPECT_GT(calls, 2);
  EXPECT_EQ(last_done, total);
  EXPECT_EQ(v.content_bytes(), total);

  // One byte flipped inside a tensor: the header checks cannot see it.
  {
    std::fstream f(dir() + "/" + Shard(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x7f');
  }
  EXPECT_EQ(VerifyWeights(dir(), {}).verdict(), dcufleet::v1::WEIGHTS_CLEAN);
  v = VerifyWeights(dir(), o);
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_CHECKSUM_MISMATCH);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_EQ(p->file(), Shard(2));
  EXPECT_THAT(p->message(), HasSubstr("but sha256sums says"));
}

// Issue 19: the first clean content check of a directory without a
// manifest records one; later checks compare against it; a damaged
// directory gets none (it would bless the damage).
TEST_F(WeightsAuditTest, FirstCleanContentCheckRecordsTheManifest) {
  WeightsAuditOptions o;
  o.verify_content = true;
  WeightsVerification plain = VerifyWeights(dir(), o);
  ASSERT_NE(Problem(plain, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH), nullptr) << Dump(plain);
  EXPECT_THAT(Problem(plain, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH)->message(), HasSubstr("--record-manifest"));
  EXPECT_FALSE(fs::exists(dir() + "/sha256sums"));

  o.record_manifest = true;
  WeightsVerification v = VerifyWeights(dir(), o);
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << Dump(v);
  EXPECT_TRUE(v.manifest_recorded());
  EXPECT_TRUE(v.content_verified());
  EXPECT_EQ(v.content_manifest(), dir() + "/sha256sums");
  auto parsed = ParseSha256Manifest(testing::ReadFileOrEmpty(dir() + "/sha256sums"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ(parsed->at(Shard(1)), common::Sha256Hex(testing::ReadFileOrEmpty(dir() + "/" + Shard(1))));

  // Recorded once: the next check compares against it and catches a flip.
  {
    std::fstream f(dir() + "/" + Shard(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x11');
  }
  v = VerifyWeights(dir(), o);
  EXPECT_FALSE(v.manifest_recorded());
  ASSERT_NE(Problem(v, dcufleet::v1::WEIGHTS_CHECKSUM_MISMATCH), nullptr) << Dump(v);
}

TEST_F(WeightsAuditTest, NoManifestIsRecordedForADamagedDirectory) {
  fs::resize_file(dir() + "/" + Shard(2), fs::file_size(dir() + "/" + Shard(2)) - 16);
  WeightsAuditOptions o;
  o.verify_content = true;
  o.record_manifest = true;
  WeightsVerification v = VerifyWeights(dir(), o);
  EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  EXPECT_FALSE(v.manifest_recorded());
  EXPECT_FALSE(fs::exists(dir() + "/sha256sums"));
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_MANIFEST_MISMATCH);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_THAT(p->message(), HasSubstr("no manifest recorded"));
}

TEST(Sha256Manifest, BothFormatsAndBadLines) {
  const std::string h(64, 'a');
  auto m = ParseSha256Manifest(absl::StrCat(h, "  a.safetensors\n", h, " *./b.safetensors\n"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->size(), 2u);
  EXPECT_EQ(m->at("b.safetensors"), h);
  m = ParseSha256Manifest(absl::StrCat(R"({"files": {"a.safetensors": ")", h, R"("}})"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at("a.safetensors"), h);
  m = ParseSha256Manifest("abc  a.safetensors\n");
  EXPECT_THAT(m.status().message(), HasSubstr("line 1"));
}

// --- The agent's cache.

TEST_F(WeightsAuditTest, CacheAnswersUntilAFileChanges) {
  WeightsAuditCache cache;
  WeightsAuditOptions o;
  WeightsVerification a = cache.Verify(dir(), o, "cfg");
  EXPECT_FALSE(a.cached());
  EXPECT_TRUE(cache.Verify(dir(), o, "cfg").cached());
  EXPECT_FALSE(cache.Verify(dir(), o, "other config").cached());
  const std::string path = dir() + "/" + Shard(1);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(fs::file_size(path)) - 1), 0);
  WeightsVerification b = cache.Verify(dir(), o, "other config");
  EXPECT_FALSE(b.cached());
  EXPECT_NE(Problem(b, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED), nullptr);
}

// --- Through the directory audit (what the agent reports).

TEST_F(WeightsAuditTest, DirectoryAuditCarriesTheVerification) {
  fs::remove(dir() + "/" + Shard(2));
  AuditOptions opts;
  dcufleet::v1::AuditReport r = AuditModelDirectory(dir(), opts);
  EXPECT_EQ(r.weights().verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  EXPECT_TRUE(HasErrors(r));
  bool found = false;
  for (const auto& f : r.findings()) found = found || f.code() == "weights_damaged";
  EXPECT_TRUE(found);
  dcufleet::v1::ModelDirectory d = ToModelDirectory(r);
  EXPECT_EQ(d.weights().verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  EXPECT_EQ(AuditReportToJson(r)["weights"]["problems"][0]["kind"], "WEIGHTS_SHARD_MISSING");
}

// --- Hostile headers: the parser on its own.

class HostileHeaderTest : public ::testing::Test {
 protected:
  // The verification of a one-shard directory holding `header` (+ data).
  WeightsVerification One(const std::string& header, uint64_t data, uint64_t declared = 0) {
    testing::WriteSafetensorsRaw(tmp_.Join("model.safetensors"), header, data, declared);
    return VerifyWeights(tmp_.path(), {});
  }
  std::string Message(const std::string& header, uint64_t data, uint64_t declared = 0) {
    WeightsVerification v = One(header, data, declared);
    EXPECT_EQ(v.verdict(), dcufleet::v1::WEIGHTS_DAMAGED) << header;
    return v.problems().empty() ? "" : v.problems(0).message();
  }
  testing::TempDir tmp_;
};

TEST_F(HostileHeaderTest, HugeLengthIsRefusedWithoutReadingIt) {
  EXPECT_THAT(Message("{}", 0, 1ull << 62), HasSubstr("header length 4611686018427387904 is over"));
  EXPECT_THAT(Message("{}", 0, 100'000'001), HasSubstr("over safetensors' limit of 100000000 bytes"));
  // Under the cap but past the end of the file.
  WeightsVerification v = One("{}", 0, 5000);
  ASSERT_NE(Problem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED), nullptr) << Dump(v);
  EXPECT_THAT(v.problems(0).message(), HasSubstr("truncated inside its header: the header is 5000 bytes"));
}

TEST_F(HostileHeaderTest, TooShortForALength) {
  std::ofstream(tmp_.Join("model.safetensors")) << "abc";
  WeightsVerification v = VerifyWeights(tmp_.path(), {});
  EXPECT_THAT(v.problems(0).message(), HasSubstr("too short for the 8-byte header length"));
}

TEST_F(HostileHeaderTest, BadJsonAndNonObjects) {
  EXPECT_THAT(Message(R"({"a": {"dtype": "F16",)", 0), HasSubstr("not valid JSON at byte"));
  EXPECT_THAT(Message("[1, 2]", 0), HasSubstr("header is an array of 2, not a JSON object"));
  EXPECT_THAT(Message("42", 0), HasSubstr("not a JSON object"));
  EXPECT_THAT(Message(R"({"a": 7})", 0), HasSubstr("tensor 'a' is 7, not an object"));
  EXPECT_THAT(Message(R"({"__metadata__": {"k": 1}})", 0), HasSubstr("__metadata__ 'k' is 1, not a string"));
  EXPECT_THAT(Message("{\"a\": \"\xff\xfe\"}", 0), HasSubstr("not valid JSON"));
}

TEST_F(HostileHeaderTest, DuplicateTensorName) {
  EXPECT_THAT(Message(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},)"
                      R"( "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
                      2),
              HasSubstr("names 'a' twice"));
}

TEST_F(HostileHeaderTest, OffsetsThatAreNotCountsOrOrdered) {
  auto t = [](const std::string& offsets, const std::string& shape = "[4]") {
    return absl::StrCat(R"({"a": {"dtype": "U8", "shape": )", shape, R"(, "data_offsets": )", offsets, "}}");
  };
  EXPECT_THAT(Message(t("[-4, 0]"), 4), HasSubstr("data_offsets [-4, 0], not two non-negative integers"));
  EXPECT_THAT(Message(t("[0, 4.5]"), 4), HasSubstr("not two non-negative integers"));
  EXPECT_THAT(Message(t(R"(["0", 4])"), 4), HasSubstr("not two non-negative integers"));
  EXPECT_THAT(Message(t("[0]"), 4), HasSubstr("no \"data_offsets\" [begin, end]"));
  EXPECT_THAT(Message(t("[4, 0]"), 4), HasSubstr("begin after end"));
  EXPECT_THAT(Message(t("[0, 18446744073709551616]"), 4), HasSubstr("not two non-negative integers"));
  EXPECT_THAT(Message(t("[0, 4]", "[-1]"), 4), HasSubstr("shape entry -1, not a non-negative integer"));
  EXPECT_THAT(Message(t("[0, 4]", "[2, 3]"), 4), HasSubstr("U8 [2, 3] = 6 bytes but its data_offsets [0, 4] hold 4"));
  EXPECT_THAT(Message(t("[0, 4]", "[4294967296, 4294967296, 4294967296]"), 4), HasSubstr("overflows"));
}

TEST_F(HostileHeaderTest, OverlapsHolesAndRangesPastTheEnd) {
  const std::string overlap = R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                              R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})";
  EXPECT_THAT(Message(overlap, 6), HasSubstr("tensor 'b' [2, 6) overlaps 'a' [0, 4)"));
  const std::string hole = R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                           R"( "b": {"dtype": "U8", "shape": [2], "data_offsets": [6, 8]}})";
  EXPECT_THAT(Message(hole, 8), HasSubstr("tensor 'b' starts at 6 but 'a' ends at 4: a hole of 2 bytes"));
  const std::string late = R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})";
  EXPECT_THAT(Message(late, 6), HasSubstr("the data starts at 0"));
  // Offsets far past the end of the file: caught as truncation.
  const std::string past = R"({"a": {"dtype": "U8", "shape": [1000000], "data_offsets": [0, 1000000]}})";
  WeightsVerification v = One(past, 10);
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_SHARD_TRUNCATED);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_THAT(p->message(), HasSubstr("truncated: "));
}

TEST_F(HostileHeaderTest, UnknownDtypeIsAFindingNotACrash) {
  WeightsVerification v = One(R"({"a": {"dtype": "F3_WEIRD", "shape": [4], "data_offsets": [0, 4]}})", 4);
  const auto* p = Problem(v, dcufleet::v1::WEIGHTS_UNKNOWN_DTYPE);
  ASSERT_NE(p, nullptr) << Dump(v);
  EXPECT_THAT(p->message(), HasSubstr("dtype 'F3_WEIRD'"));
  // Sub-byte and newer dtypes are known, sized in bits.
  EXPECT_EQ(One(R"({"a": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}})", 2).verdict(),
            dcufleet::v1::WEIGHTS_CLEAN);
  EXPECT_EQ(One(R"({"a": {"dtype": "F8_E8M0", "shape": [4], "data_offsets": [0, 4]}})", 4).verdict(),
            dcufleet::v1::WEIGHTS_CLEAN);
}

TEST(SafetensorsParser, ParsesWhatTheLibraryWrites) {
  uint64_t data = 0;
  std::string json = testing::SafetensorsHeaderJson(
      {{"w", "BF16", {3, 4}}, {"b", "F32", {4}}}, {{"format", "pt"}}, &data);
  auto h = ParseSafetensorsHeaderJson(json, json.size());
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->tensors[0].name, "w");
  EXPECT_EQ(h->tensors[1].begin, 24u);
  EXPECT_EQ(h->data_bytes, 40u);
  EXPECT_EQ(h->metadata.at("format"), "pt");
  EXPECT_EQ(h->ExpectedFileBytes(), 8 + json.size() + 40);
  // Trailing spaces pad headers to alignment; they are not an error.
  auto padded = ParseSafetensorsHeaderJson(json + "    ", json.size() + 4);
  EXPECT_TRUE(padded.ok()) << padded.status();
}

}  // namespace
}  // namespace dcu::modelkit
