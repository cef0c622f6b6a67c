#include "controller/store/sqlite_catalog_store.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "modelkit/catalog_loader.h"
#include "modelkit/verdict.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/store_backends.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::controller {
namespace {

using modelkit::ComputeModelVerdict;
using modelkit::ComputeStackArchVerdict;
using modelkit::LoadCatalogDir;

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One conformance suite, run on SQLite (":memory:" and a temporary file,
// STYLE.md) and on PostgreSQL (a fresh database on a real server; skipped,
// saying why, only where its binaries are not installed).
class CatalogStoreConformance : public ::testing::TestWithParam<testing::TestBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == testing::TestBackend::kPostgres) {
      if (std::string why = testing::PostgresUnavailable(); !why.empty()) GTEST_SKIP() << why;
    }
    auto stores = testing::TestStores::Open(GetParam());
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = std::move(*stores);
    store_ = stores_->set().catalog;
    auto catalog = LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *catalog;
  }
  std::unique_ptr<testing::TestStores> stores_;
  CatalogStore* store_ = nullptr;
  dcufleet::v1::CatalogFile catalog_;
};

TEST_P(CatalogStoreConformance, SchemaIsAtLeastVersion2) {
  auto v = stores_->set().SchemaVersion();
  ASSERT_TRUE(v.ok());
  EXPECT_GE(*v, 2);
}

TEST_P(CatalogStoreConformance, ImportIsIdempotent) {
  auto first = store_->ImportCatalog(catalog_, 1000);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->stacks_added_size(), 5);
  EXPECT_EQ(first->evidence_added(), catalog_.evidence_size());
  EXPECT_EQ(first->models_upserted_size(), 11);
  auto second = store_->ImportCatalog(catalog_, 2000);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->stacks_added(), IsEmpty());
  EXPECT_THAT(second->stacks_updated(), IsEmpty());
  EXPECT_EQ(second->stacks_unchanged_size(), 5);
  EXPECT_EQ(second->evidence_added(), 0);
  EXPECT_EQ(second->evidence_unchanged(), catalog_.evidence_size());
  EXPECT_THAT(second->models_upserted(), IsEmpty());

  auto stacks = store_->ListStacks();
  ASSERT_TRUE(stacks.ok());
  ASSERT_EQ(stacks->size(), 5u);
  EXPECT_EQ((*stacks)[0].id(), "vllm-0.11.0-bare-dtk2604");
  EXPECT_EQ((*stacks)[0].created_at_ms(), 1000);
  EXPECT_EQ((*stacks)[0].updated_at_ms(), 1000);

  // A changed stack is an update that keeps its creation time.
  dcufleet::v1::CatalogFile edited = catalog_;
  edited.mutable_stack(0)->set_note("edited");
  auto third = store_->ImportCatalog(edited, 3000);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->stacks_updated_size(), 1);
  auto got = store_->GetStack(edited.stack(0).id());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->note(), "edited");
  EXPECT_EQ(got->created_at_ms(), 1000);
  EXPECT_EQ(got->updated_at_ms(), 3000);
}

TEST_P(CatalogStoreConformance, ImportWithAnUnknownStackWritesNothing) {
  dcufleet::v1::CatalogFile file;
  *file.add_stack() = catalog_.stack(0);
  auto* e = file.add_evidence();
  e->set_evidence_id("orphan");
  e->set_stack_id("no-such-stack");
  e->set_arch("gfx928");
  e->set_outcome(dcufleet::v1::LAUNCH_READY);
  e->set_at_ms(1);
  auto r = store_->ImportCatalog(file, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("'no-such-stack'"));
  auto stacks = store_->ListStacks();
  ASSERT_TRUE(stacks.ok());
  EXPECT_THAT(*stacks, IsEmpty());  // the transaction rolled back
}

// A reconcile pass's launch outcomes in one transaction (issue 21: one
// commit per pass on PostgreSQL): the same answers as row by row, 450 rows
// (past one id query's slice), and all or nothing.
TEST_P(CatalogStoreConformance, EvidenceBatchIsRecordEvidenceInOneTransaction) {
  ASSERT_TRUE(store_->ImportCatalog(catalog_, 1).ok());
  EvidenceFilter all;
  all.stack_id = "vllm-0.9.2-bare-dtk2504";
  const size_t before = store_->ListEvidence(all)->size();
  std::vector<dcufleet::v1::Evidence> batch;
  for (int i = 0; i < 450; ++i) {
    dcufleet::v1::Evidence e;
    e.set_stack_id("vllm-0.9.2-bare-dtk2504");
    e.set_node(absl::StrCat("node-", i % 7));
    e.set_arch("gfx928");
    e.set_model("qwen3-8b");
    e.set_outcome(i % 3 ? dcufleet::v1::LAUNCH_READY : dcufleet::v1::LAUNCH_FAILED);
    e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
    e.set_at_ms(1800000000000 + i);
    e.set_evidence_id(absl::StrCat("ev-batch-", i));
    batch.push_back(e);
  }
  batch.push_back(batch[3]);  // the same row twice: written once
  auto added = store_->RecordEvidenceBatch(batch);
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_EQ(added->size(), batch.size());
  EXPECT_EQ(std::count(added->begin(), added->end(), true), 450);
  EXPECT_FALSE(added->back());
  EXPECT_EQ(store_->ListEvidence(all)->size(), before + 450);
  // Again: nothing new.
  added = store_->RecordEvidenceBatch(batch);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(std::count(added->begin(), added->end(), true), 0);
  // One row of an unknown stack or with an existing id and other content:
  // none of the batch is written.
  std::vector<dcufleet::v1::Evidence> bad = {batch[0], batch[1]};
  bad[0].set_evidence_id("ev-new-1");
  bad[1].set_tp(8);
  EXPECT_EQ(store_->RecordEvidenceBatch(bad).status().code(), absl::StatusCode::kAlreadyExists);
  bad[1] = batch[2];
  bad[1].set_evidence_id("ev-new-2");
  bad[1].set_stack_id("nope");
  EXPECT_EQ(store_->RecordEvidenceBatch(bad).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListEvidence(all)->size(), before + 450);
  EXPECT_TRUE(store_->RecordEvidenceBatch({})->empty());
}

TEST_P(CatalogStoreConformance, EvidenceRecordAndFilters) {
  ASSERT_TRUE(store_->ImportCatalog(catalog_, 1).ok());
  dcufleet::v1::Evidence e;
  e.set_stack_id("vllm-0.9.2-bare-dtk2504");
  e.set_node("node-a");
  e.set_arch("gfx928");
  e.set_model("qwen3-8b");
  e.set_tp(1);
  e.set_outcome(dcufleet::v1::LAUNCH_READY);
  e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
  e.set_at_ms(1800000000000);
  auto added = store_->RecordEvidence(e);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_TRUE(*added);

  EvidenceFilter f;
  f.stack_id = "vllm-0.9.2-bare-dtk2504";
  f.model = "qwen3-8b";
  auto rows = store_->ListEvidence(f);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_THAT((*rows)[0].evidence_id(), HasSubstr("ev"));
  EXPECT_EQ((*rows)[0].node(), "node-a");

  // Same id, same content: nothing written; other content: refused.
  dcufleet::v1::Evidence again = (*rows)[0];
  auto same = store_->RecordEvidence(again);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(*same);
  again.set_tp(2);
  EXPECT_EQ(store_->RecordEvidence(again).status().code(), absl::StatusCode::kAlreadyExists);
  e.set_stack_id("nope");
  EXPECT_EQ(store_->RecordEvidence(e).status().code(), absl::StatusCode::kNotFound);

  EvidenceFilter newest;
  newest.stack_id = "vllm-0.11.0-bare-dtk2604";
  newest.newest_first = true;
  newest.limit = 2;
  auto latest = store_->ListEvidence(newest);
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 2u);
  EXPECT_EQ((*latest)[0].evidence_id(), "seed000-0.11.0-qwen3-32b-triton-gfx928-no-inductor");

  // Recorded after a sequence number: every row from 0, in the order
  // recorded whatever their times; from the last one read, only what came
  // after (a row stamped earlier than the ones before it included).
  int64_t seq = 0;
  auto every = store_->ListEvidenceRecordedAfter(&seq);
  ASSERT_TRUE(every.ok()) << every.status();
  auto listed = store_->ListEvidence({});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(every->size(), listed->size());
  EXPECT_EQ(every->back().node(), "node-a");  // the one this test recorded, last
  EXPECT_GT(seq, 0);
  auto none = store_->ListEvidenceRecordedAfter(&seq);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  const int64_t before = seq;
  dcufleet::v1::Evidence late = e;
  late.set_stack_id("vllm-0.9.2-bare-dtk2504");
  late.set_evidence_id("ev-stamped-early");
  late.set_at_ms(1000);
  ASSERT_TRUE(store_->RecordEvidence(late).ok());
  auto after = store_->ListEvidenceRecordedAfter(&seq);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].evidence_id(), "ev-stamped-early");
  EXPECT_GT(seq, before);

  // Verdicts computed from what the store returns.
  auto all = store_->ListEvidence({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(ComputeStackArchVerdict("vllm-0.11.0-bare-dtk2604", "gfx928", *all).state(),
            dcufleet::v1::VERDICT_BROKEN);
  EXPECT_EQ(ComputeModelVerdict("vllm-0.9.2-bare-dtk2504", "gfx928", "qwen3-8b", *all).state(),
            dcufleet::v1::VERDICT_WORKS);
}

TEST_P(CatalogStoreConformance, Models) {
  ASSERT_TRUE(store_->ImportCatalog(catalog_, 1).ok());
  auto m = store_->GetModel("qwen3-32b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fingerprint().head_dim(), 128);
  EXPECT_EQ(m->weight_bytes(), 65524246528);
  EXPECT_EQ(store_->GetModel("nope").status().code(), absl::StatusCode::kNotFound);
  dcufleet::v1::ModelEntry changed = *m;
  changed.set_note("x");
  auto o = store_->UpsertModel(changed, 5);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, UpsertOutcome::kUpdated);
  auto same = store_->UpsertModel(changed, 6);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, UpsertOutcome::kUnchanged);
  auto list = store_->ListModels();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 11u);
  EXPECT_EQ(list->front().name(), "deepseek-r1-distill-qwen-32b");
}

TEST_P(CatalogStoreConformance, NodeModelDirectoriesAreReplacedPerNode) {
  dcufleet::v1::NodeModelDirectory a, b, c;
  a.mutable_directory()->set_path("/models/Qwen3-32B");
  a.set_model("qwen3-32b");
  a.mutable_directory()->set_config_sha256("abc");
  b.mutable_directory()->set_path("/models/Qwen3-0.6B");
  b.set_model("qwen3-0.6b");
  c.mutable_directory()->set_path("/models/Other");
  ASSERT_TRUE(store_->ReplaceNodeModelDirectories("node-a", {a, b}, 10).ok());
  ASSERT_TRUE(store_->ReplaceNodeModelDirectories("node-b", {c}, 10).ok());
  ASSERT_TRUE(store_->ReplaceNodeModelDirectories("node-a", {a}, 20).ok());
  auto dirs = store_->ListNodeModelDirectories("node-a");
  ASSERT_TRUE(dirs.ok());
  ASSERT_EQ(dirs->size(), 1u);
  EXPECT_EQ((*dirs)[0].node(), "node-a");
  EXPECT_EQ((*dirs)[0].seen_at_ms(), 20);
  EXPECT_EQ((*dirs)[0].directory().config_sha256(), "abc");
  auto all = store_->ListNodeModelDirectories("");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_P(CatalogStoreConformance, DiscoveredEnvironmentsMatchOrRegisterUntestedStacks) {
  ASSERT_TRUE(store_->ImportCatalog(catalog_, 1).ok());
  dcufleet::v1::RuntimeEnvironment known_location;
  known_location.set_kind("container");
  known_location.set_location(
      "harbor.sourcefind.cn:5443/dcu/admin/base/custom:vllm018-ubuntu22.04-dtk26.04-gemma4-0413");
  dcufleet::v1::RuntimeEnvironment same_versions;
  same_versions.set_kind("bare");
  same_versions.set_location("/data/envs/vllm092");
  (*same_versions.mutable_package_versions())["vllm"] = "0.9.2";
  (*same_versions.mutable_package_versions())["torch"] = "2.5.1";
  (*same_versions.mutable_package_versions())["triton"] = "3.0.0";
  dcufleet::v1::RuntimeEnvironment unknown;
  unknown.set_kind("bare");
  unknown.set_location("/data/envs/vllm-new");
  (*unknown.mutable_package_versions())["vllm"] = "0.10.1+das.dtk2504";
  (*unknown.mutable_package_versions())["torch"] = "2.5.1";
  (*unknown.mutable_package_versions())["triton"] = "3.1.0";
  dcufleet::v1::RuntimeEnvironment no_engine;
  no_engine.set_kind("bare");
  no_engine.set_location("/data/envs/base");
  (*no_engine.mutable_package_versions())["torch"] = "2.5.1";

  auto recorded = store_->RecordNodeEnvironments(
      "node-a", {known_location, same_versions, unknown, no_engine}, 50);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  ASSERT_EQ(recorded->size(), 3u);
  EXPECT_EQ((*recorded)[0].stack_id(), "vllm-0.18-image-dtk2604");
  EXPECT_EQ((*recorded)[1].stack_id(), "vllm-0.9.2-bare-dtk2504");
  EXPECT_FALSE((*recorded)[1].registered_new());
  EXPECT_TRUE((*recorded)[2].registered_new());
  std::string new_id = (*recorded)[2].stack_id();
  EXPECT_THAT(new_id, HasSubstr("disc-vllm-0.10.1-das.dtk2504-bare-"));
  auto created = store_->GetStack(new_id);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->origin(), "discovered:node-a");
  EXPECT_EQ(created->triton_version(), "3.1.0");
  EXPECT_THAT(created->arches(), IsEmpty());
  // Untested: no evidence.
  EXPECT_EQ(ComputeStackArchVerdict(new_id, "gfx928", {}).state(), dcufleet::v1::VERDICT_UNTESTED);

  // The same env seen from another node is the same stack, not a new one.
  auto other = store_->RecordNodeEnvironments("node-b", {unknown}, 60);
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other->size(), 1u);
  EXPECT_EQ((*other)[0].stack_id(), new_id);
  EXPECT_FALSE((*other)[0].registered_new());
  auto present = store_->ListNodeEnvironments(new_id);
  ASSERT_TRUE(present.ok());
  ASSERT_EQ(present->size(), 2u);
  EXPECT_EQ((*present)[0].node(), "node-a");
  EXPECT_EQ((*present)[1].node(), "node-b");
  auto stacks = store_->ListStacks();
  ASSERT_TRUE(stacks.ok());
  EXPECT_EQ(stacks->size(), 6u);
}

// Many nodes' directories and environments in one transaction: the same
// rows as node by node, an environment new to the catalog registered once
// although two nodes of the batch report it, and nothing written when one
// node of the batch is bad.
TEST_P(CatalogStoreConformance, NodeObservationsInOneTransactionAreWhatNodeByNodeGives) {
  ASSERT_TRUE(store_->ImportCatalog(catalog_, 1).ok());
  dcufleet::v1::NodeModelDirectory a, b;
  a.mutable_directory()->set_path("/models/Qwen3-32B");
  a.set_model("qwen3-32b");
  b.mutable_directory()->set_path("/models/Other");
  dcufleet::v1::RuntimeEnvironment unknown;
  unknown.set_kind("bare");
  unknown.set_location("/data/envs/vllm-new");
  (*unknown.mutable_package_versions())["vllm"] = "0.10.1+das.dtk2504";
  (*unknown.mutable_package_versions())["torch"] = "2.5.1";
  ASSERT_TRUE(store_->ReplaceNodeModelDirectories("node-a", {a, b}, 5).ok());
  std::vector<CatalogStore::NodeObservation> batch = {{"node-a", {a}, {unknown}}, {"node-b", {a, b}, {unknown}}};
  auto recorded = store_->RecordNodeObservations(batch, 70);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  ASSERT_EQ(recorded->size(), 2u);
  ASSERT_EQ((*recorded)[0].size(), 1u);
  ASSERT_EQ((*recorded)[1].size(), 1u);
  EXPECT_TRUE((*recorded)[0][0].registered_new());
  EXPECT_FALSE((*recorded)[1][0].registered_new()) << "registered twice in one batch";
  EXPECT_EQ((*recorded)[0][0].stack_id(), (*recorded)[1][0].stack_id());
  EXPECT_EQ(store_->ListNodeModelDirectories("node-a")->size(), 1u) << "node-a's old directory was not replaced";
  EXPECT_EQ(store_->ListNodeModelDirectories("node-b")->size(), 2u);
  EXPECT_EQ(store_->ListNodeEnvironments((*recorded)[0][0].stack_id())->size(), 2u);

  std::vector<CatalogStore::NodeObservation> bad = {{"node-c", {a}, {}}, {"", {b}, {}}};
  EXPECT_EQ(store_->RecordNodeObservations(bad, 80).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_->ListNodeModelDirectories("node-c")->empty()) << "half a batch was written";
  EXPECT_TRUE(store_->RecordNodeObservations({}, 90)->empty());
}

TEST(CatalogStoreFileTest, DataSurvivesReopen) {
  std::string path = (fs::temp_directory_path() /
                      ("catalog_store_reopen_" + std::to_string(::getpid()) + ".db"))
                         .string();
  fs::remove(path);
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok());
  {
    auto store = SqliteCatalogStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->ImportCatalog(*catalog, 1).ok());
  }
  auto store = SqliteCatalogStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto ev = (*store)->ListEvidence({});
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(static_cast<int>(ev->size()), catalog->evidence_size());
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

INSTANTIATE_TEST_SUITE_P(Backends, CatalogStoreConformance,
                         ::testing::Values(testing::TestBackend::kSqliteMemory,
                                           testing::TestBackend::kSqliteFile,
                                           testing::TestBackend::kPostgres),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace dcu::controller
