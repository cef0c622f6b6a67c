#include "controller/store/sqlite_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "migrations/embedded_migrations.h"
#include "tests/testing/store_backends.h"
#include "tests/testing/test_env.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;

int LatestEmbeddedVersion() {
  int v = 0;
  for (const auto& m : migrations::EmbeddedMigrations()) v = std::max(v, m.version);
  return v;
}

NodeRecord MakeNode(const std::string& name, int devices) {
  NodeRecord r;
  r.name = name;
  r.agent_version = "0.1.0";
  r.capabilities = {"inventory", "reap"};
  for (int i = 0; i < devices; ++i) r.inventory.add_devices()->set_index(i);
  r.state = "Ready";
  r.registered_at_ms = 1000;
  r.last_seen_ms = 1000;
  return r;
}

// The same conformance checks on every backend: SQLite in memory and in a
// file, PostgreSQL (a fresh database per test on a real server; skipped,
// saying why, only where the server binaries are not installed).
class StoreConformance : public ::testing::TestWithParam<testing::TestBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == testing::TestBackend::kPostgres) {
      if (std::string why = testing::PostgresUnavailable(); !why.empty()) GTEST_SKIP() << why;
    }
    auto s = testing::TestStores::Open(GetParam());
    ASSERT_TRUE(s.ok()) << s.status();
    stores_ = std::move(*s);
    nodes_ = stores_->set().nodes;
    events_ = stores_->set().events;
    deployments_ = stores_->set().deployments;
    api_keys_ = stores_->set().api_keys;
  }
  std::unique_ptr<testing::TestStores> stores_;
  NodeStore* nodes_ = nullptr;
  EventLog* events_ = nullptr;
  DeploymentStore* deployments_ = nullptr;
  ApiKeyStore* api_keys_ = nullptr;
};

TEST_P(StoreConformance, RegisterTwiceKeepsOneRowAndItsId) {
  auto first = nodes_->RegisterNode(MakeNode("node-a", 8));
  ASSERT_TRUE(first.ok()) << first.status();
  NodeRecord again = MakeNode("node-a", 4);
  again.last_seen_ms = 5000;
  again.registered_at_ms = 5000;
  auto second = nodes_->RegisterNode(again);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->node_id, second->node_id);
  EXPECT_EQ(second->registered_at_ms, 1000);
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].inventory.devices_size(), 4);
  EXPECT_EQ((*all)[0].last_seen_ms, 5000);
  EXPECT_THAT((*all)[0].capabilities, ::testing::ElementsAre("inventory", "reap"));
}

TEST_P(StoreConformance, StateAndInventoryUpdates) {
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-a", 2)).ok());
  ASSERT_TRUE(nodes_->UpdateNodeStates({{"node-a", "NotReady", "no report for 20s", 2000}}).ok());
  dcufleet::v1::NodeInventory inv;
  inv.add_devices()->set_product_name("K100_AI");
  ASSERT_TRUE(nodes_->UpdateInventory("node-a", inv, 3000).ok());
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].state, "NotReady");
  EXPECT_EQ((*all)[0].state_reason, "no report for 20s");
  EXPECT_EQ((*all)[0].inventory.devices(0).product_name(), "K100_AI");
  EXPECT_EQ((*all)[0].last_seen_ms, 3000);
  absl::Status missing = nodes_->UpdateNodeStates({{"nope", "Ready", "", 1}});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("'nope'"));
}

// A tick that finds many nodes silent stores their transitions in one
// transaction; a node deleted meanwhile does not stop the others.
TEST_P(StoreConformance, StateUpdatesInOneBatchSkipAMissingNodeAndNameIt) {
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-a", 2)).ok());
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-b", 2)).ok());
  std::vector<NodeStore::StateUpdate> updates = {
      {"node-a", "NotReady", "no report for 15s", 4000},
      {"gone-1", "NotReady", "no report for 15s", 4000},
      {"node-b", "Lost", "no report for 60s", 5000},
  };
  absl::Status s = nodes_->UpdateNodeStates(updates);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("'gone-1'"));
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  std::map<std::string, NodeRecord> by_name;
  for (const auto& n : *all) by_name[n.name] = n;
  EXPECT_EQ(by_name["node-a"].state, "NotReady");
  EXPECT_EQ(by_name["node-a"].state_reason, "no report for 15s");
  EXPECT_EQ(by_name["node-a"].last_seen_ms, 4000);
  EXPECT_EQ(by_name["node-b"].state, "Lost");
  EXPECT_EQ(by_name["node-b"].last_seen_ms, 5000);
  // All present: OK; an empty batch: OK, nothing written.
  EXPECT_TRUE(nodes_->UpdateNodeStates({{"node-a", "Ready", "reporting again", 6000}}).ok());
  EXPECT_TRUE(nodes_->UpdateNodeStates({}).ok());
  all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  by_name.clear();
  for (const auto& n : *all) by_name[n.name] = n;
  ASSERT_EQ(by_name.count("node-a"), 1u);
  EXPECT_EQ(by_name["node-a"].state, "Ready");
  EXPECT_EQ(by_name["node-b"].state, "Lost");
}

// A person's cordon (dcuctl cordon / drain) is kept on the node's row: a
// Hello's re-registration and a report's updates leave it; uncordon clears it.
TEST_P(StoreConformance, ACordonIsKeptUntilCleared) {
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-a", 8)).ok());
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-b", 8)).ok());
  dcufleet::v1::NodeCordon cordon;
  cordon.set_reason("firmware update");
  cordon.set_since_ms(5000);
  cordon.set_drain(true);
  ASSERT_TRUE(nodes_->SetNodeCordon("node-a", &cordon).ok());
  // The agent says Hello again and reports: the cordon stays.
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-a", 8)).ok());
  ASSERT_TRUE(nodes_->UpdateInventory("node-a", MakeNode("node-a", 4).inventory, 6000).ok());
  ASSERT_TRUE(nodes_->UpdateNodeStates({{"node-a", "Ready", "reporting", 6000}}).ok());
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok()) << all.status();
  std::map<std::string, NodeRecord> by_name;
  for (const auto& n : *all) by_name[n.name] = n;
  ASSERT_TRUE(by_name["node-a"].cordon.has_value());
  EXPECT_EQ(by_name["node-a"].cordon->reason(), "firmware update");
  EXPECT_EQ(by_name["node-a"].cordon->since_ms(), 5000);
  EXPECT_TRUE(by_name["node-a"].cordon->drain());
  EXPECT_FALSE(by_name["node-b"].cordon.has_value());
  ASSERT_TRUE(nodes_->SetNodeCordon("node-a", nullptr).ok());
  all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  for (const auto& n : *all) EXPECT_FALSE(n.cordon.has_value()) << n.name;
  EXPECT_EQ(nodes_->SetNodeCordon("nowhere", &cordon).code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreConformance, DeletedNodeIsGoneAndMayRegisterAgainAsNew) {
  auto a = nodes_->RegisterNode(MakeNode("hpc-12", 2));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-b", 4)).ok());
  ASSERT_TRUE(nodes_->DeleteNode("hpc-12").ok());
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].name, "node-b");
  absl::Status again = nodes_->DeleteNode("hpc-12");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound) << again;
  EXPECT_THAT(again.message(), HasSubstr("'hpc-12'"));
  EXPECT_EQ(nodes_->UpdateNodeStates({{"hpc-12", "Lost", "", 1}}).code(), absl::StatusCode::kNotFound);
  // Registered again, it is a new row.
  auto back = nodes_->RegisterNode(MakeNode("hpc-12", 2));
  ASSERT_TRUE(back.ok());
  EXPECT_NE(back->node_id, a->node_id);
}

TEST_P(StoreConformance, EventsInOrderWithLimit) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(events_->AppendEvent({0, i, "node", "node-a", "Normal", "R", std::to_string(i)}).ok());
  }
  ASSERT_TRUE(events_->AppendEvent({0, 9, "node", "node-b", "Normal", "R", "other"}).ok());
  auto last3 = events_->ListEvents("node", "node-a", 3);
  ASSERT_TRUE(last3.ok());
  ASSERT_EQ(last3->size(), 3u);
  EXPECT_EQ((*last3)[0].message, "2");
  EXPECT_EQ((*last3)[2].message, "4");
  auto all = events_->ListEvents("node", "node-a", 0);
  EXPECT_EQ(all->size(), 5u);
}

// dcuctl get events --watch: after_id pages forward from an event, oldest
// first, the subject filter still applied, and never returns what is at or
// below the id (so a watcher reads only what is new).
TEST_P(StoreConformance, EventsAfterAnIdPageForwardOldestFirst) {
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(events_->AppendEvent({0, i, "node", "node-a", "Normal", "R", std::to_string(i)}).ok());
    ASSERT_TRUE(events_->AppendEvent({0, i, "node", "node-b", "Normal", "R", "b"}).ok());
  }
  auto all = events_->ListEvents("node", "node-a", 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 6u);
  const int64_t second_id = (*all)[1].event_id;

  auto page = events_->QueryEvents(EventQuery{"node", "node-a", 2, second_id});
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].message, "2");  // the oldest above the id, not the newest two
  EXPECT_EQ((*page)[1].message, "3");
  auto rest = events_->QueryEvents(EventQuery{"node", "node-a", 2, (*page)[1].event_id});
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_EQ((*rest)[1].message, "5");
  auto none = events_->QueryEvents(EventQuery{"node", "node-a", 2, (*rest)[1].event_id});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // Every subject: node-b's events between them are in the page too.
  auto every = events_->QueryEvents(EventQuery{"", "", 0, second_id});
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->size(), 9u);  // node-a's 2..5 and node-b's from its second on
  for (const auto& e : *every) EXPECT_GT(e.event_id, second_id);
}

// dcuctl get events: every kind and subject (an empty kind / subject), the
// newest `limit`, oldest first.
TEST_P(StoreConformance, EventsOfEverySubject) {
  ASSERT_TRUE(events_->AppendEvent({0, 1, "node", "node-a", "Normal", "R", "n1"}).ok());
  ASSERT_TRUE(events_->AppendEvent({0, 2, "deployment", "d1", "Normal", "Created", "d1"}).ok());
  ASSERT_TRUE(events_->AppendEvent({0, 3, "node", "node-b", "Warning", "R", "n2"}).ok());
  auto every = events_->ListEvents("", "", 0);
  ASSERT_TRUE(every.ok());
  ASSERT_EQ(every->size(), 3u);
  EXPECT_EQ((*every)[0].message, "n1");
  EXPECT_EQ((*every)[1].subject_kind, "deployment");
  EXPECT_EQ((*every)[2].message, "n2");
  auto last2 = events_->ListEvents("", "", 2);
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ((*last2)[0].message, "d1");
  auto nodes = events_->ListEvents("node", "", 0);
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[1].subject, "node-b");
}

TEST_P(StoreConformance, EventBatchAndInventoryBatch) {
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-a", 1)).ok());
  ASSERT_TRUE(nodes_->RegisterNode(MakeNode("node-b", 1)).ok());
  dcufleet::v1::NodeInventory a, b;
  a.add_devices()->set_product_name("A");
  b.add_devices()->set_product_name("B");
  // node-gone has no row: skipped, not an error.
  ASSERT_TRUE(nodes_->UpdateInventories({{"node-a", &a}, {"node-b", &b}, {"node-gone", &a}}, 7000).ok());
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].inventory.devices(0).product_name(), "A");
  EXPECT_EQ((*all)[1].inventory.devices(0).product_name(), "B");
  EXPECT_EQ((*all)[1].last_seen_ms, 7000);
  // last_seen never goes back.
  ASSERT_TRUE(nodes_->UpdateNodeStates({{"node-a", "Ready", "", 10}}).ok());
  EXPECT_EQ((*nodes_->ListNodes())[0].last_seen_ms, 7000);

  std::vector<Event> batch;
  for (int i = 0; i < 50; ++i) batch.push_back({0, i, "deployment", "d", "Normal", "R", std::to_string(i)});
  ASSERT_TRUE(events_->AppendEvents(batch).ok());
  auto listed = events_->ListEvents("deployment", "d", 0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 50u);
  EXPECT_EQ((*listed)[49].message, "49");
  EXPECT_LT((*listed)[0].event_id, (*listed)[49].event_id);
}

dcufleet::v1::Deployment MakeDeployment(const std::string& name, int replica, int64_t revision) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name(name);
  d.mutable_spec()->set_model("qwen2.5-7b");
  d.set_replica(replica);
  d.set_revision(revision);
  d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_READY);
  d.mutable_status()->set_created_at_ms(1000);
  d.mutable_status()->set_updated_at_ms(2000 + revision);
  return d;
}

TEST_P(StoreConformance, DeploymentsReplaceListAndDelete) {
  ASSERT_TRUE(deployments_->PutDeployment(MakeDeployment("chat", 0, 1)).ok());
  ASSERT_TRUE(deployments_->PutDeployments({MakeDeployment("chat", 1, 1), MakeDeployment("chat", 0, 2),
                                            MakeDeployment("batch", 0, 1)}).ok());
  auto all = deployments_->ListDeployments();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  // In key order: "batch", "chat", "chat#1".
  EXPECT_EQ((*all)[0].spec().name(), "batch");
  EXPECT_EQ((*all)[1].revision(), 2);
  EXPECT_EQ((*all)[2].replica(), 1);
  // Several in one call; a key with no document is no error.
  ASSERT_TRUE(deployments_->DeleteDeployments({ReplicaKey("chat", 1), "batch", "never-stored"}).ok());
  all = deployments_->ListDeployments();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].spec().name(), "chat");
  EXPECT_EQ((*all)[0].replica(), 0);
  ASSERT_TRUE(deployments_->DeleteDeployments({}).ok());

  ASSERT_TRUE(deployments_->PutNodeGeneration("node-a", 5).ok());
  // Generations only go up.
  ASSERT_TRUE(deployments_->PutNodeGenerations({{"node-a", 3}, {"node-b", 9}}).ok());
  auto gens = deployments_->ListNodeGenerations();
  ASSERT_TRUE(gens.ok());
  std::map<std::string, int64_t> by_node(gens->begin(), gens->end());
  EXPECT_EQ(by_node["node-a"], 5);
  EXPECT_EQ(by_node["node-b"], 9);
}

// Issue 22: a group of Hellos registers in one transaction, in order; a
// name twice in one group is one row (the later registration updates it),
// and a name registered before keeps its id.
TEST_P(StoreConformance, RegisterNodesInOneCallKeepsOrderIdsAndOneRowPerName) {
  auto before = nodes_->RegisterNode(MakeNode("node-a", 8));
  ASSERT_TRUE(before.ok()) << before.status();
  NodeRecord a_again = MakeNode("node-a", 2);
  NodeRecord b = MakeNode("node-b", 4);
  NodeRecord b_again = MakeNode("node-b", 6);
  b_again.last_seen_ms = 7000;
  auto stored = nodes_->RegisterNodes({a_again, b, b_again});
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0].node_id, before->node_id);
  EXPECT_EQ((*stored)[0].name, "node-a");
  EXPECT_EQ((*stored)[1].name, "node-b");
  EXPECT_NE((*stored)[1].node_id, before->node_id);
  EXPECT_EQ((*stored)[2].node_id, (*stored)[1].node_id);
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  std::map<std::string, NodeRecord> by_name;
  for (auto& n : *all) by_name[n.name] = n;
  EXPECT_EQ(by_name["node-a"].inventory.devices_size(), 2);
  EXPECT_EQ(by_name["node-b"].inventory.devices_size(), 6);
  EXPECT_EQ(by_name["node-b"].last_seen_ms, 7000);
  EXPECT_TRUE(nodes_->RegisterNodes({})->empty());
}

// A group wider than one lookup statement (64 names): rows that exist in a
// later chunk keep their ids, the others are inserted once each.
TEST_P(StoreConformance, RegisterNodesAcrossLookupChunks) {
  std::map<std::string, std::string> earlier_ids;
  for (int i = 70; i < 80; ++i) {
    auto r = nodes_->RegisterNode(MakeNode(absl::StrCat("n-", i), 1));
    ASSERT_TRUE(r.ok()) << r.status();
    earlier_ids[r->name] = r->node_id;
  }
  std::vector<NodeRecord> group;
  for (int i = 0; i < 150; ++i) group.push_back(MakeNode(absl::StrCat("n-", i), 2));
  auto stored = nodes_->RegisterNodes(group);
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 150u);
  std::set<std::string> ids;
  for (const NodeRecord& r : *stored) {
    ids.insert(r.node_id);
    auto earlier = earlier_ids.find(r.name);
    if (earlier != earlier_ids.end()) EXPECT_EQ(r.node_id, earlier->second) << r.name;
  }
  EXPECT_EQ(ids.size(), 150u);
  auto all = nodes_->ListNodes();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 150u);
  for (const NodeRecord& r : *all) EXPECT_EQ(r.inventory.devices_size(), 2) << r.name;
}

TEST_P(StoreConformance, ApiKeysCreateListRevoke) {
  dcufleet::v1::ApiKey k;
  k.set_name("team-a");
  k.set_sha256_hex(std::string(64, 'a'));
  k.add_models("chat");
  k.add_models("batch");
  k.set_created_at_ms(1234);
  ASSERT_TRUE(api_keys_->CreateApiKey(k).ok());
  absl::Status again = api_keys_->CreateApiKey(k);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  dcufleet::v1::ApiKey all;
  all.set_name("ops");
  all.set_sha256_hex(std::string(64, 'b'));
  all.set_all_models(true);
  ASSERT_TRUE(api_keys_->CreateApiKey(all).ok());
  auto keys = api_keys_->ListApiKeys();
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].name(), "ops");
  EXPECT_TRUE((*keys)[0].all_models());
  EXPECT_THAT((*keys)[1].models(), ::testing::ElementsAre("chat", "batch"));
  EXPECT_EQ((*keys)[1].created_at_ms(), 1234);
  ASSERT_TRUE(api_keys_->RevokeApiKey("team-a").ok());
  EXPECT_EQ(api_keys_->RevokeApiKey("team-a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(api_keys_->ListApiKeys()->size(), 1u);
}

TEST_P(StoreConformance, SchemaIsTheLatestEmbedded) {
  auto v = stores_->set().SchemaVersion();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, LatestEmbeddedVersion());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance,
                         ::testing::Values(testing::TestBackend::kSqliteMemory,
                                           testing::TestBackend::kSqliteFile,
                                           testing::TestBackend::kPostgres),
                         [](const auto& info) { return testing::BackendName(info.param); });

TEST(SqliteMigrations, EmptyFileGetsLatestSchemaAndReopenIsStable) {
  testing::TempDir dir;
  std::string path = dir.Join("c.db");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->RegisterNode(MakeNode("node-a", 1)).ok());
    EXPECT_EQ(*(*s)->database()->SchemaVersion(), LatestEmbeddedVersion());
  }
  auto again = SqliteStore::Open(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*(*again)->database()->SchemaVersion(), LatestEmbeddedVersion());
  EXPECT_EQ((*again)->ListNodes()->size(), 1u);
}

TEST(SqliteMigrations, FailingMigrationRollsBackWhole) {
  testing::TempDir dir;
  auto db = SqliteDatabase::Open(dir.Join("m.db"));
  ASSERT_TRUE(db.ok());
  std::vector<migrations::Migration> ms = {
      {1, "0001_ok", "CREATE TABLE a (x INTEGER);"},
      // The first statement succeeds, the second fails: neither may remain.
      {2, "0002_broken", "CREATE TABLE b (y INTEGER); INSERT INTO nonexistent VALUES (1);"},
  };
  absl::Status s = (*db)->Migrate(ms);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("0002_broken"));
  EXPECT_THAT(s.message(), HasSubstr("rolled back"));
  EXPECT_EQ(*(*db)->SchemaVersion(), 1);
  bool b_exists = true;
  ASSERT_TRUE((*db)->WithConnection([&](SqliteDatabase& c) -> absl::Status {
    auto q = c.Prepare("SELECT count(*) FROM sqlite_master WHERE name = 'b'");
    if (!q.ok()) return q.status();
    auto row = (*q)->Step();
    if (!row.ok()) return row.status();
    b_exists = (*q)->ColumnInt(0) > 0;
    return absl::OkStatus();
  }).ok());
  EXPECT_FALSE(b_exists);
}

// The checkpointer's connection must have opened the WAL, or its checkpoints
// do nothing (SQLite says so only by a log size of -1): until stop 46 none
// ran, and the WAL held every byte the controller ever wrote (2.4 GB after
// three placement waves at 10,000 agents). Written rows reach the database
// file itself while the writer's connection stays open.
TEST(SqliteWal, TheCheckpointerCopiesTheWalIntoTheDatabaseFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("c.db");
  SqliteWalOptions wal;
  wal.checkpoint_interval = absl::Milliseconds(5);
  auto db = SqliteDatabase::Open(path, wal);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Migrate({{1, "0001_blobs", "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB);"}}).ok());
  const std::string body(8192, 'x');
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE((*db)->Transaction([&](SqliteDatabase& c) -> absl::Status {
      auto q = c.Prepare("INSERT INTO blobs (id, body) VALUES (?, ?)");
      if (!q.ok()) return q.status();
      (*q)->Bind(1, int64_t{i}).BindBlob(2, body);
      return (*q)->Run();
    }).ok());
  }
  auto file_size = [&] {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : int64_t{-1};
  };
  // 64 rows of 8 KiB: half a megabyte once copied in.
  const bool copied = testing::WaitFor([&] { return file_size() >= 64 * 8192; }, absl::Seconds(20));
  EXPECT_TRUE(copied) << "database file " << file_size() << " B: the WAL was never copied back";
}

// A writer that seldom pauses (the controller at 10,000 agents) seldom lets a
// passive checkpoint start the WAL over: that happens only when a write
// begins with every frame copied. Past its bound the checkpointer restarts
// the log, so the file stays near the bound instead of growing with what is
// written.
TEST(SqliteWal, AWalPastItsBoundIsRestarted) {
  testing::TempDir dir;
  const std::string path = dir.Join("r.db");
  SqliteWalOptions wal;
  wal.checkpoint_interval = absl::Milliseconds(2);
  wal.restart_after_frames = 64;  // 256 KiB of 4-KiB pages
  auto db = SqliteDatabase::Open(path, wal);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Migrate({{1, "0001_blobs", "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB);"}}).ok());
  const std::string body(8192, 'x');
  int64_t written = 0;
  int64_t largest = 0;
  for (int i = 0; i < 4000; ++i) {
    ASSERT_TRUE((*db)->Transaction([&](SqliteDatabase& c) -> absl::Status {
      // Rows replaced in place, as documents are: the database stays small,
      // only the WAL can grow.
      auto q = c.Prepare("INSERT OR REPLACE INTO blobs (id, body) VALUES (?, ?)");
      if (!q.ok()) return q.status();
      (*q)->Bind(1, int64_t{i % 16}).BindBlob(2, body);
      return (*q)->Run();
    }).ok());
    written += static_cast<int64_t>(body.size());
    struct stat st;
    if (::stat((path + "-wal").c_str(), &st) == 0) largest = std::max<int64_t>(largest, st.st_size);
    // A short gap, as between a controller's transactions: room for the
    // checkpointer to take the writer's lock.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // 32 MB written (three WAL frames per row with its overflow pages: about
  // 100 MB of frames; the passive checkpointer alone left a 70-99 MB WAL).
  // Restarted, the log stays far below that; the bound leaves room for a
  // checkpoint's fsync stalling on a loaded machine while the writes go on.
  EXPECT_LT(largest, written / 2) << "largest WAL " << largest << " B after " << written << " B written";
}

TEST(SqliteMigrations, NewerDatabaseThanBinaryIsRefused) {
  testing::TempDir dir;
  auto db = SqliteDatabase::Open(dir.Join("n.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Migrate({{1, "0001_a", "CREATE TABLE a (x);"}, {2, "0002_b", "CREATE TABLE b (x);"}}).ok());
  absl::Status s = (*db)->Migrate({{1, "0001_a", "CREATE TABLE a (x);"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("newer dcu-controller"));
}

TEST(SqliteBadInput, CorruptFileNamesThePath) {
  testing::TempDir dir;
  std::string path = dir.Join("corrupt.db");
  std::ofstream(path) << std::string(8192, 'x');
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("not a database"));
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A database whose header and schema are intact but whose last page is
// garbage: the old start-up check ran quick_check without reading its rows
// (and switched the journal mode first), so such a file started and served.
TEST(SqliteBadInput, CorruptPageIsRefusedWithTheFindingAndTheFileIsUntouched) {
  testing::TempDir dir;
  std::string path = dir.Join("damaged.db");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE((*s)->RegisterNode(MakeNode(absl::StrCat("node-", i), 8)).ok());
    }
  }
  std::string bytes = FileBytes(path);
  ASSERT_GT(bytes.size(), 4u * 4096);
  // Overwrite the last page (nodes rows or an index leaf) with garbage.
  const size_t page = 4096;
  size_t last = (bytes.size() / page - 1) * page;
  for (size_t i = last; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5 ^ (i * 31));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const std::string before = FileBytes(path);

  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok()) << "a database with a garbage page was accepted";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("left unchanged"));
  EXPECT_EQ(FileBytes(path), before) << "a refused database file was modified";
}

// A healthy file passes the read-only check and keeps its rows.
TEST(SqliteBadInput, HealthyFilePassesTheCheckAndReopens) {
  testing::TempDir dir;
  std::string path = dir.Join("ok.db");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->RegisterNode(MakeNode("node-a", 2)).ok());
  }
  auto s = SqliteStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  auto nodes = (*s)->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 1u);
}

TEST(SqliteBadInput, UnwritableDirectoryNamesThePath) {
  if (geteuid() == 0) {
    // root ignores directory permissions; use a path under a regular file instead.
    testing::TempDir dir;
    std::ofstream(dir.Join("file")) << "x";
    std::string path = dir.Join("file/sub/c.db");
    auto s = SqliteStore::Open(path);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.status().message(), HasSubstr(path));
    return;
  }
  testing::TempDir dir;
  chmod(dir.path().c_str(), 0500);
  std::string path = dir.Join("c.db");
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace dcu::controller
