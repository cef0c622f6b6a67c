#include "controller/store/catalog_import.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/discovery/env_discovery.h"
#include "controller/store/sqlite_catalog_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::controller {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(CatalogImportTest, StartupLoadThenImportRequestReferringToStoredStacks) {
  auto store = SqliteCatalogStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  auto loaded = LoadCatalogDirInto(**store, testing::CatalogDir(), 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->stacks_added_size(), 5);

  dcufleet::v1::ImportCatalogRequest req;
  auto* f = req.add_files();
  f->set_name("new-evidence.txtpb");
  f->set_text(R"pb(evidence {
  evidence_id: "site-probe-1"
  stack_id: "vllm-0.9.2-bare-dtk2504"
  arch: "gfx936"
  outcome: LAUNCH_FAILED
  failure_class: "triton_unsupported_gpu_target"
  kind: EVIDENCE_PROBE
  at_ms: 1790000000000
}
)pb");
  auto resp = ImportCatalogRequestInto(**store, req, 2);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->evidence_added(), 1);
  auto again = ImportCatalogRequestInto(**store, req, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->evidence_unchanged(), 1);

  f->set_text("evidence { evidence_id: \"x\" stack_id: \"vllm-0.9.2-bare-dtk2504\" arch: \"gfx9\" }");
  auto bad = ImportCatalogRequestInto(**store, req, 4);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("new-evidence.txtpb:1:"));
}

TEST(EnvDiscoveryTest, ReadsVersionsFromSitePackages) {
  fs::path root = fs::temp_directory_path() / ("env_discovery_test_" + std::to_string(::getpid()));
  fs::path site = root / "envs" / "vllm092" / "lib" / "python3.10" / "site-packages";
  fs::create_directories(site / "vllm-0.9.2+das.opt1.dtk2504.dist-info");
  std::ofstream(site / "vllm-0.9.2+das.opt1.dtk2504.dist-info" / "METADATA")
      << "Metadata-Version: 2.1\nName: vllm\nVersion: 0.9.2+das.opt1.dtk2504\n\nbody\n";
  fs::create_directories(site / "torch-2.5.1+das.opt1.dtk2504.dist-info");
  fs::create_directories(site / "triton-3.0.0.dist-info");
  fs::create_directories(site / "flash_attn-2.6.1.dist-info");
  fs::create_directories(site / "numpy-1.25.0.dist-info");
  fs::create_directories(root / "envs" / "empty");
  auto envs = agent::DiscoverCondaEnvironments({(root / "envs").string(), "/nonexistent"});
  ASSERT_EQ(envs.size(), 1u);
  const auto& v = envs[0].package_versions();
  EXPECT_EQ(envs[0].kind(), "bare");
  EXPECT_EQ(v.at("vllm"), "0.9.2+das.opt1.dtk2504");
  EXPECT_EQ(v.at("torch"), "2.5.1+das.opt1.dtk2504");
  EXPECT_EQ(v.at("triton"), "3.0.0");
  EXPECT_EQ(v.at("flash_attn"), "2.6.1");
  EXPECT_EQ(v.at("python"), "3.10");
  EXPECT_EQ(v.count("numpy"), 0u);
  // The vendor build's local version suffix still matches the catalog's 0.9.2 stack.
  auto store = SqliteCatalogStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(LoadCatalogDirInto(**store, testing::CatalogDir(), 1).ok());
  auto recorded = (*store)->RecordNodeEnvironments("node-a", envs, 2);
  ASSERT_TRUE(recorded.ok());
  ASSERT_EQ(recorded->size(), 1u);
  EXPECT_EQ((*recorded)[0].stack_id(), "vllm-0.9.2-bare-dtk2504");
  fs::remove_all(root);
}

}  // namespace
}  // namespace dcu::controller
