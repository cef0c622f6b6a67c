// dcu-controller migrate-store (issue 21): an SQLite site copied into a real
// PostgreSQL 15 (tests/testing/pg_server.h), read back through the
// PostgreSQL stores as the controller would after the move.
#include "controller/store/store_migration.h"

#include "absl/strings/str_cat.h"
#include "controller/store/store_lock.h"
#include "controller/store/store_set.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "modelkit/catalog_loader.h"
#include "tests/testing/store_backends.h"
#include "tests/testing/test_env.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;
using google::protobuf::util::MessageDifferencer;

NodeRecord MakeNode(const std::string& name, int devices) {
  NodeRecord r;
  r.name = name;
  r.agent_version = "0.1.0";
  r.capabilities = {"inventory", "reap"};
  for (int i = 0; i < devices; ++i) r.inventory.add_devices()->set_index(i);
  r.state = "Ready";
  r.registered_at_ms = 1000;
  r.last_seen_ms = 2000;
  return r;
}

class StoreMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::PostgresUnavailable(); !why.empty()) GTEST_SKIP() << why;
    auto url = testing::NewPostgresDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    sqlite_ = dir_.Join("controller.db");
  }

  // A site with a little of everything: nodes, events, deployments and node
  // generations, API keys, the shipped catalog and a recorded launch.
  void Populate() {
    auto s = OpenStores(sqlite_);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE(s->nodes->RegisterNode(MakeNode("node-a", 8)).ok());
    ASSERT_TRUE(s->nodes->RegisterNode(MakeNode("node-b", 4)).ok());
    std::vector<Event> events;
    for (int i = 0; i < 5; ++i) {
      events.push_back(Event{0, 1000 + i, "deployment", "chat", "Normal", "Scheduled",
                             absl::StrCat("placed replica ", i)});
    }
    ASSERT_TRUE(s->events->AppendEvents(events).ok());
    dcufleet::v1::Deployment d;
    d.mutable_spec()->set_name("chat");
    d.mutable_spec()->set_model("qwen3-8b");
    d.mutable_status()->set_message("serving");
    ASSERT_TRUE(s->deployments->PutDeployment(d).ok());
    ASSERT_TRUE(s->deployments->PutNodeGeneration("node-a", 7).ok());
    dcufleet::v1::ApiKey k;
    k.set_name("team-a");
    k.set_sha256_hex(std::string(64, 'a'));
    k.add_models("chat");
    ASSERT_TRUE(s->api_keys->CreateApiKey(k).ok());
    auto catalog = modelkit::LoadCatalogDir(testing::SourceDir() + "/deploy/catalog");
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    ASSERT_TRUE(s->catalog->ImportCatalog(*catalog, 1000).ok());
    dcufleet::v1::Evidence e;
    e.set_stack_id(catalog->stack(0).id());
    e.set_node("node-a");
    e.set_arch("gfx928");
    e.set_model("qwen3-8b");
    e.set_tp(1);
    e.set_outcome(dcufleet::v1::LAUNCH_READY);
    e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
    e.set_at_ms(1800000000000);
    ASSERT_TRUE(s->catalog->RecordEvidence(e).ok());
  }

  testing::TempDir dir_;
  std::string url_, sqlite_;
};

template <typename T>
void ExpectSameMessages(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(a[i], b[i]))
        << what << " " << i << ":\n" << a[i].DebugString() << "vs\n" << b[i].DebugString();
  }
}

TEST_F(StoreMigrationTest, EverythingArrivesAndReadsBackTheSame) {
  Populate();
  auto report = MigrateSqliteToPostgres(sqlite_, url_);
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, int64_t> rows;
  for (const auto& t : report->tables) rows[t.table] = t.rows;
  EXPECT_EQ(rows["nodes"], 2);
  EXPECT_EQ(rows["events"], 5);
  EXPECT_EQ(rows["deployments"], 1);
  EXPECT_EQ(rows["node_generations"], 1);
  EXPECT_EQ(rows["api_keys"], 1);
  EXPECT_GT(rows["stacks"], 0);
  EXPECT_GT(rows["evidence"], 0);
  EXPECT_EQ(rows.count("schema_migrations"), 0u) << "each database keeps its own";

  auto from = OpenStores(sqlite_);
  auto to = OpenStores(url_);
  ASSERT_TRUE(from.ok() && to.ok());
  auto nodes_a = from->nodes->ListNodes(), nodes_b = to->nodes->ListNodes();
  ASSERT_TRUE(nodes_a.ok() && nodes_b.ok());
  ASSERT_EQ(nodes_a->size(), nodes_b->size());
  for (size_t i = 0; i < nodes_a->size(); ++i) {
    EXPECT_EQ((*nodes_a)[i].node_id, (*nodes_b)[i].node_id) << "ids are kept";
    EXPECT_EQ((*nodes_a)[i].name, (*nodes_b)[i].name);
    EXPECT_EQ((*nodes_a)[i].last_seen_ms, (*nodes_b)[i].last_seen_ms);
    EXPECT_TRUE(MessageDifferencer::Equals((*nodes_a)[i].inventory, (*nodes_b)[i].inventory));
  }
  ExpectSameMessages(*from->deployments->ListDeployments(), *to->deployments->ListDeployments(),
                     "deployment");
  ExpectSameMessages(*from->api_keys->ListApiKeys(), *to->api_keys->ListApiKeys(), "api key");
  ExpectSameMessages(*from->catalog->ListStacks(), *to->catalog->ListStacks(), "stack");
  ExpectSameMessages(*from->catalog->ListEvidence({}), *to->catalog->ListEvidence({}), "evidence");
  auto events_b = to->events->ListEvents("deployment", "chat", 0);
  ASSERT_TRUE(events_b.ok());
  ASSERT_EQ(events_b->size(), 5u);
  EXPECT_EQ(events_b->back().message, "placed replica 4");

  // New rows continue after the copied ids (the identity sequences moved).
  ASSERT_TRUE(to->events->AppendEvent(Event{0, 9000, "deployment", "chat", "Normal", "Scaled", "after"}).ok());
  auto after = to->events->ListEvents("deployment", "chat", 0);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 6u);
  EXPECT_GT(after->back().event_id, (*events_b)[4].event_id);
}

TEST_F(StoreMigrationTest, ATargetThatHoldsRowsIsRefusedAndKeepsThem) {
  Populate();
  ASSERT_TRUE(MigrateSqliteToPostgres(sqlite_, url_).ok());
  auto again = MigrateSqliteToPostgres(sqlite_, url_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  EXPECT_THAT(again.status().message(), HasSubstr("new, empty database"));
  auto to = OpenStores(url_);
  ASSERT_TRUE(to.ok());
  EXPECT_EQ(to->nodes->ListNodes()->size(), 2u) << "nothing doubled, nothing lost";
}

TEST_F(StoreMigrationTest, AStoreInUseIsRefused) {
  Populate();
  auto held = StoreLock::Acquire(sqlite_, "pid 1 listening on 127.0.0.1:7070");
  ASSERT_TRUE(held.ok()) << held.status();
  auto r = MigrateSqliteToPostgres(sqlite_, url_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("stop that controller first"));
}

TEST_F(StoreMigrationTest, AMissingSourceIsNamed) {
  auto r = MigrateSqliteToPostgres(dir_.Join("nope.db"), url_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("nope.db"));
}

}  // namespace
}  // namespace dcu::controller
