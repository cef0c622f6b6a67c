#include "dcuctl/model_commands.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "modelkit/catalog_loader.h"
#include "modelkit/stack_view.h"
#include "dcuctl/stack_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/safetensors_writer.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::dcuctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Configs() { return testing::ConfigsDir(); }

TEST(ModelAuditCommandTest, SeedConfigAsJson) {
  ModelAuditArgs args;
  args.path = Configs() + "/qwen3-32b-seed000-qwen2-no-head-dim/config.json";
  args.output = "json";
  args.catalog_dir = testing::CatalogDir();
  args.model = "qwen3-32b";
  std::ostringstream out, err;
  EXPECT_EQ(RunModelAudit(args, out, err), 8) << err.str();
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["architecture"], "Qwen2ForCausalLM");
  EXPECT_EQ(j["head_dim"], 80);
  EXPECT_EQ(j["head_dim_source"], "derived");
  EXPECT_EQ(j["catalog_match"], "qwen3-32b");
  EXPECT_EQ(j["weight_bytes"], 65524246528);
  std::set<std::string> codes;
  for (const auto& f : j["findings"]) codes.insert(f["code"]);
  EXPECT_TRUE(codes.count("architecture_mismatch"));
  EXPECT_TRUE(codes.count("head_dim_missing"));
  EXPECT_TRUE(codes.count("head_size_unsupported"));
}

TEST(ModelAuditCommandTest, FixPlanAndOverlayForTheSeedDirectory) {
  fs::path root = fs::temp_directory_path() / ("model_commands_test_" + std::to_string(::getpid()));
  fs::path dir = root / "Qwen3-32B";
  fs::create_directories(dir);
  fs::copy_file(Configs() + "/qwen3-32b-seed000-qwen2-no-head-dim/config.json", dir / "config.json");
  // A real (one-tensor) safetensors file: the weights checks read its header
  // through the overlay's link too.
  testing::WriteSafetensors((dir / "model.safetensors").string(), {{"model.norm.weight", "BF16", {5120}}});
  ModelAuditArgs args;
  args.path = dir.string();
  args.catalog_dir = testing::CatalogDir();
  args.stacks = {"vllm-0.11.0-bare-dtk2604"};
  args.fix_plan = true;
  args.apply_overlay = true;
  args.overlay_root = (root / "overlays").string();
  std::ostringstream out, err;
  EXPECT_EQ(RunModelAudit(args, out, err), 8) << err.str();
  std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("CATALOG      qwen3-32b (matched by alias)"));
  EXPECT_THAT(text, HasSubstr("head_dim_missing"));
  EXPECT_THAT(text, HasSubstr("Remediation: overlay directory"));
  EXPECT_THAT(text, HasSubstr("head_dim: (absent) -> 128"));
  // The overlay exists and audits clean against the same stack.
  fs::path overlay;
  for (const auto& e : fs::directory_iterator(root / "overlays")) overlay = e.path();
  ASSERT_FALSE(overlay.empty());
  ModelAuditArgs again = args;
  again.path = overlay.string();
  again.fix_plan = false;
  again.apply_overlay = false;
  again.model = "qwen3-32b";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunModelAudit(again, out2, err2), 0) << out2.str() << err2.str();
  fs::remove_all(root);
}

TEST(ModelAuditCommandTest, DamagedWeightsExitWithFindingsAndNameTheFile) {
  fs::path dir = fs::temp_directory_path() / ("model_audit_weights_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  testing::WriteTinyModel(dir.string(), testing::TinyModel{});
  ModelAuditArgs args;
  args.path = dir.string();
  args.catalog_dir = testing::CatalogDir();
  std::ostringstream out, err;
  RunModelAudit(args, out, err);
  EXPECT_THAT(out.str(), HasSubstr("VERIFIED     clean: 2 shard(s)"));
  EXPECT_THAT(out.str(), Not(HasSubstr("weights_damaged")));
  // --verify-content without a manifest is a finding, not a silent pass.
  args.verify_content = true;
  std::ostringstream out1, err1;
  EXPECT_EQ(RunModelAudit(args, out1, err1), 8);
  EXPECT_THAT(out1.str(), HasSubstr("no manifest in the directory"));
  args.verify_content = false;
  const fs::path shard = dir / "model-00001-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 100);
  std::ostringstream out2, err2;
  EXPECT_EQ(RunModelAudit(args, out2, err2), 8);
  EXPECT_THAT(out2.str(), HasSubstr("VERIFIED     DAMAGED (1 problem(s))"));
  EXPECT_THAT(out2.str(), HasSubstr("shard_truncated  model-00001-of-00002.safetensors truncated: "));
  fs::remove_all(dir);
}

// --record-manifest (issue 19): a clean directory without a manifest gets
// one written, the output says so, and the next --verify-content checks
// against it; a damaged directory gets none.
TEST(ModelAuditCommandTest, RecordManifestWritesOneForACleanDirectoryOnly) {
  fs::path dir = fs::temp_directory_path() / ("model_audit_record_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::WriteTinyModel(dir.string(), testing::TinyModel{});
  ModelAuditArgs args;
  args.path = dir.string();
  args.catalog_dir = testing::CatalogDir();
  args.record_manifest = true;
  // (The tiny model's head size is a finding of its own for the catalog's
  // stacks, so the exit code says "findings" either way; the weights'
  // lines are what is checked.)
  std::ostringstream out, err;
  RunModelAudit(args, out, err);
  EXPECT_THAT(out.str(), HasSubstr("VERIFIED     clean: 2 shard(s)"));
  EXPECT_THAT(out.str(), HasSubstr("recorded in " + (dir / "sha256sums").string() + " (there was no manifest)"));
  ASSERT_TRUE(fs::exists(dir / "sha256sums"));
  args.record_manifest = false;
  args.verify_content = true;
  std::ostringstream out1, err1;
  RunModelAudit(args, out1, err1);
  EXPECT_THAT(out1.str(), HasSubstr("VERIFIED     clean: 2 shard(s)"));
  EXPECT_THAT(out1.str(), HasSubstr("against " + (dir / "sha256sums").string()));
  EXPECT_THAT(out1.str(), Not(HasSubstr("no manifest")));

  fs::path other = dir.string() + "-damaged";
  fs::remove_all(other);
  fs::create_directories(other);
  testing::WriteTinyModel(other.string(), testing::TinyModel{});
  const fs::path shard = other / "model-00002-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 64);
  args.path = other.string();
  args.verify_content = false;
  args.record_manifest = true;
  std::ostringstream out2, err2;
  EXPECT_EQ(RunModelAudit(args, out2, err2), 8);
  EXPECT_THAT(out2.str(), HasSubstr("no manifest recorded"));
  EXPECT_FALSE(fs::exists(other / "sha256sums"));
  fs::remove_all(dir);
  fs::remove_all(other);
}

TEST(ModelAuditCommandTest, TruncatedConfigIsAFindingNotAUsageError) {
  ModelAuditArgs args;
  args.path = Configs() + "/qwen3-32b-truncated/config.json";
  args.catalog_dir = testing::CatalogDir();
  std::ostringstream out, err;
  EXPECT_EQ(RunModelAudit(args, out, err), 8);
  EXPECT_THAT(out.str(), HasSubstr("invalid JSON at line 18 column 25"));
}

TEST(ModelAuditCommandTest, CleanConfigExitsZeroAndUsageErrorsExitTwo) {
  ModelAuditArgs args;
  args.path = Configs() + "/qwen3-30b-a3b/config.json";
  args.catalog_dir = testing::CatalogDir();
  std::ostringstream out, err;
  EXPECT_EQ(RunModelAudit(args, out, err), 0) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("128 experts, 8 per token"));

  ModelAuditArgs missing;
  missing.path = "/nonexistent/model";
  std::ostringstream o2, e2;
  EXPECT_EQ(RunModelAudit(missing, o2, e2), 2);
  EXPECT_THAT(e2.str(), HasSubstr("does not exist"));

  ModelAuditArgs bad_catalog = args;
  bad_catalog.catalog_dir = "/nonexistent/catalog";
  std::ostringstream o3, e3;
  EXPECT_EQ(RunModelAudit(bad_catalog, o3, e3), 2);

  ModelAuditArgs bad_stack = args;
  bad_stack.stacks = {"no-such-stack"};
  std::ostringstream o4, e4;
  EXPECT_EQ(RunModelAudit(bad_stack, o4, e4), 2);
  EXPECT_THAT(e4.str(), HasSubstr("'no-such-stack'"));
}

TEST(ModelPlanCommandTest, Qwen3_32BOnK100) {
  ModelPlanArgs args;
  args.model = "qwen3-32b";
  args.catalog_dir = testing::CatalogDir();
  args.device_total = "65520MiB";
  args.device_free = "4.8GiB";
  args.tp = 4;
  args.max_model_len = 32768;
  std::ostringstream out, err;
  EXPECT_EQ(RunModelPlan(args, out, err), 5) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("Free memory on device (4.8/63.98 GiB)"));
  args.device_free = "";
  args.tp = 0;
  args.output = "json";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunModelPlan(args, out2, err2), 0) << err2.str();
  auto j = nlohmann::json::parse(out2.str());
  EXPECT_EQ(j["tp"], 2);
  EXPECT_EQ(j["tp_chosen"], true);
  args.device_total = "lots";
  std::ostringstream out3, err3;
  EXPECT_EQ(RunModelPlan(args, out3, err3), 2);
}

TEST(StackRenderTest, TablesAndDescription) {
  auto catalog = modelkit::LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok());
  std::vector<dcufleet::v1::Stack> stacks(catalog->stack().begin(), catalog->stack().end());
  std::vector<dcufleet::v1::Evidence> evidence(catalog->evidence().begin(), catalog->evidence().end());
  dcufleet::v1::NodeEnvironment env;
  env.set_node("node-a");
  env.set_stack_id("vllm-0.9.2-bare-dtk2504");
  env.mutable_environment()->set_location("/opt/conda/envs/vllm-0.9.2-dtk2504");
  dcufleet::v1::ListStacksRequest req;
  req.set_arch("gfx928");
  auto resp = modelkit::BuildListStacksResponse(req, stacks, evidence, {env});
  std::ostringstream table;
  RenderStacksTable(resp, "gfx928", /*wide=*/false, table);
  EXPECT_THAT(table.str(), HasSubstr("ID"));
  EXPECT_THAT(table.str(), HasSubstr("broken on gfx928: triton_unsupported_gpu_target, 3 launches, last 2026-07-12"));
  EXPECT_THAT(table.str(), HasSubstr("node-a"));

  std::ostringstream all;
  RenderStacksTable(modelkit::BuildListStacksResponse({}, stacks, evidence, {}), "", false, all);
  EXPECT_THAT(all.str(), HasSubstr("gfx906:works gfx928:untested"));

  const dcufleet::v1::Stack* image = nullptr;
  for (const auto& s : stacks) {
    if (s.id() == "vllm-0.18-image-dtk2604") image = &s;
  }
  ASSERT_NE(image, nullptr);
  dcufleet::v1::GetStackResponse get;
  *get.mutable_view() = modelkit::MakeStackView(*image, evidence, {});
  for (const auto& e : evidence) {
    if (e.stack_id() == image->id()) *get.add_evidence() = e;
  }
  std::ostringstream desc;
  RenderStackDescription(get, desc);
  std::string d = desc.str();
  EXPECT_THAT(d, HasSubstr("Recipe for gfx906:"));
  EXPECT_THAT(d, HasSubstr("VLLM_ROCM_USE_SKINNY_GEMM=0"));
  EXPECT_THAT(d, HasSubstr("LD_LIBRARY_PATH=/opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib"));
  EXPECT_THAT(d, HasSubstr("requires: triton 3.4.0 rebuilt"));
  EXPECT_THAT(d, HasSubstr("gfx906: works on gfx906"));
  EXPECT_THAT(d, HasSubstr("failed missing_custom_op"));
  auto json = nlohmann::json::parse(ToJson(get));
  EXPECT_EQ(json["view"]["stack"]["id"], "vllm-0.18-image-dtk2604");
}

}  // namespace
}  // namespace dcu::dcuctl
