#include "modelkit/remediation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "modelkit/catalog_loader.h"
#include "modelkit/config_audit.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::modelkit {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RemediationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    for (const auto& m : catalog->model()) {
      if (m.name() == "qwen3-32b") qwen3_32b_ = m;
      if (m.name() == "qwen3.5-27b") qwen35_ = m;
    }
    for (const auto& s : catalog->stack()) {
      if (s.id() == "vllm-0.11.0-bare-dtk2604") hf_stack_ = s;
      if (s.id() == "vllm-0.6.2-image-dtk2404") old_stack_ = s;
    }
    root_ = fs::temp_directory_path() / ("remediation_test_" + std::to_string(::getpid()));
    model_dir_ = root_ / "models" / "Qwen3-32B";
    fs::create_directories(model_dir_);
    broken_ = Read(testing::ConfigsDir() + "/qwen3-32b-seed000-qwen2-no-head-dim/config.json");
    std::ofstream(model_dir_ / "config.json") << broken_;
    std::ofstream(model_dir_ / "model-00001-of-00002.safetensors") << "weights-1";
    std::ofstream(model_dir_ / "model-00002-of-00002.safetensors") << "weights-2";
    std::ofstream(model_dir_ / "tokenizer.json") << "{}";
  }
  void TearDown() override { fs::remove_all(root_); }

  dcufleet::v1::ModelEntry qwen3_32b_, qwen35_;
  dcufleet::v1::Stack hf_stack_, old_stack_;
  fs::path root_, model_dir_;
  std::string broken_;
};

TEST_F(RemediationTest, SeedConfigGetsAnOverlayWithTheThreeCorrections) {
  auto corrections = ProposeCorrections(broken_, qwen3_32b_);
  ASSERT_TRUE(corrections.ok()) << corrections.status();
  std::map<std::string, std::string> by_field;
  for (const auto& c : *corrections) by_field[c.field()] = c.new_value();
  EXPECT_EQ(by_field["architectures"], "[\"Qwen3ForCausalLM\"]");
  EXPECT_EQ(by_field["model_type"], "\"qwen3\"");
  EXPECT_EQ(by_field["head_dim"], "128");
  EXPECT_EQ(corrections->size(), 3u);

  auto entries = ListDirEntries(model_dir_.string());
  ASSERT_TRUE(entries.ok());
  RemediationOptions opts;
  opts.overlay_root = (root_ / "overlays").string();
  // Even on a stack that takes --hf-overrides the architecture must be right
  // before the engine picks its model class: an overlay.
  auto plan = PlanConfigRemediation(model_dir_.string(), *entries, broken_, qwen3_32b_, &hf_stack_, opts);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kind(), dcufleet::v1::REMEDIATION_OVERLAY_DIR);
  EXPECT_THAT(plan->overlay_dir(), HasSubstr((root_ / "overlays" / "qwen3-32b-").string()));
  EXPECT_EQ(plan->model_path(), plan->overlay_dir());
  EXPECT_EQ(plan->links_size(), 3);  // two shards and the tokenizer; config.json is replaced

  std::string before = Read(model_dir_ / "config.json");
  struct stat st_before;
  ASSERT_EQ(::stat((model_dir_ / "config.json").c_str(), &st_before), 0);
  ASSERT_TRUE(MaterializeOverlay(*plan).ok());
  // Idempotent.
  ASSERT_TRUE(MaterializeOverlay(*plan).ok());

  fs::path overlay(plan->overlay_dir());
  auto fixed = nlohmann::json::parse(Read(overlay / "config.json"));
  EXPECT_EQ(fixed["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(fixed["model_type"], "qwen3");
  EXPECT_EQ(fixed["head_dim"], 128);
  EXPECT_EQ(fixed["hidden_size"], 5120);
  EXPECT_TRUE(fs::is_symlink(overlay / "model-00001-of-00002.safetensors"));
  EXPECT_EQ(Read(overlay / "model-00002-of-00002.safetensors"), "weights-2");
  // The audit of the overlay is clean of config errors.
  AuditOptions audit;
  audit.models = {qwen3_32b_};
  audit.stacks = {hf_stack_};
  auto report = AuditModelDirectory(overlay.string(), audit);
  EXPECT_EQ(report.catalog_match(), "qwen3-32b");
  // (The fixture's shards are placeholder bytes, so the weights check
  // through the overlay's links flags them: that is the links working.)
  EXPECT_EQ(report.weights().verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  for (const auto& f : report.findings()) {
    if (f.code() == "weights_damaged") continue;
    EXPECT_NE(f.severity(), dcufleet::v1::FINDING_ERROR) << f.message();
  }
  // The user's files are untouched.
  EXPECT_EQ(Read(model_dir_ / "config.json"), before);
  struct stat st_after;
  ASSERT_EQ(::stat((model_dir_ / "config.json").c_str(), &st_after), 0);
  EXPECT_EQ(st_before.st_mtim.tv_sec, st_after.st_mtim.tv_sec);
  EXPECT_EQ(st_before.st_mtim.tv_nsec, st_after.st_mtim.tv_nsec);
  EXPECT_FALSE(fs::is_symlink(model_dir_ / "config.json"));
}

TEST_F(RemediationTest, HeadDimOnlyUsesHfOverridesWhereTheStackTakesThem) {
  nlohmann::ordered_json cfg = nlohmann::ordered_json::parse(
      Read(testing::ConfigsDir() + "/qwen3-32b/config.json"));
  cfg.erase("head_dim");
  std::string text = cfg.dump(2);
  auto plan = PlanConfigRemediation(model_dir_.string(), {"config.json"}, text, qwen3_32b_, &hf_stack_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kind(), dcufleet::v1::REMEDIATION_HF_OVERRIDES);
  EXPECT_EQ(plan->hf_overrides_json(), "{\"head_dim\":128}");
  EXPECT_THAT(plan->extra_args(), ::testing::ElementsAre("--hf-overrides", "{\"head_dim\":128}"));
  EXPECT_EQ(plan->model_path(), model_dir_.string());
  // A stack without --hf-overrides gets an overlay instead.
  auto old = PlanConfigRemediation(model_dir_.string(), {"config.json"}, text, qwen3_32b_, &old_stack_);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->kind(), dcufleet::v1::REMEDIATION_OVERLAY_DIR);
}

TEST_F(RemediationTest, NestedTextConfigIsCorrectedInPlace) {
  auto cfg = nlohmann::ordered_json::parse(
      Read(testing::ConfigsDir() + "/qwen3.5-27b-reconstructed/config.json"));
  cfg["text_config"].erase("head_dim");
  auto plan = PlanConfigRemediation(model_dir_.string(), {}, cfg.dump(), qwen35_, &hf_stack_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->corrections_size(), 1);
  EXPECT_EQ(plan->corrections(0).field(), "text_config.head_dim");
  // Nested fields go through an overlay.
  EXPECT_EQ(plan->kind(), dcufleet::v1::REMEDIATION_OVERLAY_DIR);
  auto fixed = nlohmann::json::parse(plan->corrected_config_json());
  EXPECT_EQ(fixed["text_config"]["head_dim"], 256);
  EXPECT_FALSE(fixed.contains("head_dim"));
}

TEST_F(RemediationTest, CleanConfigNeedsNothing) {
  std::string text = Read(testing::ConfigsDir() + "/qwen3-32b/config.json");
  auto plan = PlanConfigRemediation(model_dir_.string(), {}, text, qwen3_32b_, &hf_stack_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kind(), dcufleet::v1::REMEDIATION_NONE);
}

TEST_F(RemediationTest, RefusesADifferentCheckpointAndBrokenJson) {
  std::string other = Read(testing::ConfigsDir() + "/qwen2.5-7b-instruct/config.json");
  auto a = ProposeCorrections(other, qwen3_32b_);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(a.status().message(), HasSubstr("different checkpoint"));
  std::string truncated = Read(testing::ConfigsDir() + "/qwen3-32b-truncated/config.json");
  auto b = ProposeCorrections(truncated, qwen3_32b_);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(b.status().message(), HasSubstr("restore it"));
}

TEST_F(RemediationTest, RefusesAnOverlayInsideTheModelDirectory) {
  auto entries = ListDirEntries(model_dir_.string());
  ASSERT_TRUE(entries.ok());
  RemediationOptions opts;
  opts.overlay_root = (model_dir_ / "fixed").string();
  auto plan = PlanConfigRemediation(model_dir_.string(), *entries, broken_, qwen3_32b_, nullptr, opts);
  ASSERT_TRUE(plan.ok());
  absl::Status s = MaterializeOverlay(*plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(model_dir_ / "fixed"));
}

TEST_F(RemediationTest, NeverReplacesARealFileInTheOverlay) {
  auto entries = ListDirEntries(model_dir_.string());
  ASSERT_TRUE(entries.ok());
  RemediationOptions opts;
  opts.overlay_root = (root_ / "overlays").string();
  auto plan = PlanConfigRemediation(model_dir_.string(), *entries, broken_, qwen3_32b_, nullptr, opts);
  ASSERT_TRUE(plan.ok());
  fs::create_directories(plan->overlay_dir());
  std::ofstream(fs::path(plan->overlay_dir()) / "tokenizer.json") << "someone's file";
  absl::Status s = MaterializeOverlay(*plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read(fs::path(plan->overlay_dir()) / "tokenizer.json"), "someone's file");
}

}  // namespace
}  // namespace dcu::modelkit
