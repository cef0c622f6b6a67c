// PostgreSQL-only store behaviour (issue 21): migrations in a transaction,
// errors naming the URL, and the leader lease with its write fence — all on
// a real PostgreSQL 15 server the test starts (tests/testing/pg_server.h).
// What both backends share is in sqlite_store_test.cc's StoreConformance.
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/status_util.h"
#include "controller/store/not_leader.h"
#include "controller/store/pg_db.h"
#include "controller/store/pg_leader_lease.h"
#include "controller/store/pg_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "migrations/embedded_migrations.h"
#include "tests/testing/store_backends.h"
#include "tests/testing/test_env.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::PostgresUnavailable(); !why.empty()) GTEST_SKIP() << why;
    auto url = testing::NewPostgresDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
  }
  std::unique_ptr<PgDatabase> Connect(PgOptions options = {}) {
    auto db = PgDatabase::Open(url_, options);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  std::string url_;
};

int64_t Count(PgDatabase& db, const std::string& sql) {
  int64_t n = -1;
  absl::Status s = db.WithConnection([&](PgDatabase& c) -> absl::Status {
    auto q = c.Prepare(sql);
    if (!q.ok()) return q.status();
    auto row = (*q)->Step();
    if (!row.ok()) return row.status();
    n = (*q)->ColumnInt(0);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return n;
}

TEST_F(PgTest, EmbeddedMigrationsHaveTheSameVersionsInBothDialects) {
  const auto& sqlite = migrations::EmbeddedMigrations(migrations::Dialect::kSqlite);
  const auto& pg = migrations::EmbeddedMigrations(migrations::Dialect::kPostgres);
  ASSERT_EQ(sqlite.size(), pg.size());
  for (size_t i = 0; i < pg.size(); ++i) {
    EXPECT_EQ(sqlite[i].version, pg[i].version);
    EXPECT_EQ(sqlite[i].name, pg[i].name);
  }
  // Millisecond times do not fit PostgreSQL's INTEGER; BLOB is not a type
  // there. (The SQL without its comments, which name what they replace.)
  for (const auto& m : pg) {
    std::string code;
    for (absl::string_view line : absl::StrSplit(m.sql, '\n')) {
      if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "--")) absl::StrAppend(&code, line, "\n");
    }
    EXPECT_THAT(code, Not(HasSubstr("BLOB"))) << m.name;
    EXPECT_THAT(code, Not(HasSubstr("AUTOINCREMENT"))) << m.name;
    // Not an empty file: each makes or changes a table.
    EXPECT_THAT(code, ::testing::ContainsRegex("(CREATE|ALTER) TABLE")) << m.name;
  }
}

TEST_F(PgTest, MigrateTwiceIsStableAndReopenKeepsRows) {
  {
    auto store = PgStore::Open(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    NodeRecord n;
    n.name = "node-a";
    n.state = "Ready";
    n.registered_at_ms = 1'700'000'000'000;  // beyond 32 bits
    n.last_seen_ms = 1'700'000'000'000;
    ASSERT_TRUE((*store)->RegisterNode(n).ok());
  }
  auto again = PgStore::Open(url_);
  ASSERT_TRUE(again.ok()) << again.status();
  auto nodes = (*again)->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].registered_at_ms, 1'700'000'000'000);
  const auto& all = migrations::EmbeddedMigrations(migrations::Dialect::kPostgres);
  EXPECT_EQ(*(*again)->database()->SchemaVersion(), all.back().version);
  EXPECT_EQ(Count(*(*again)->database(), "SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(all.size()));
}

TEST_F(PgTest, FailingMigrationRollsBackWhole) {
  auto db = Connect();
  ASSERT_NE(db, nullptr);
  std::vector<migrations::Migration> ms = {
      {1, "0001_ok", "CREATE TABLE a (x BIGINT);"},
      // The first statement succeeds, the second fails: neither may remain.
      {2, "0002_broken", "CREATE TABLE b (y BIGINT); INSERT INTO nonexistent VALUES (1);"},
  };
  absl::Status s = db->Migrate(ms);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("0002_broken"));
  EXPECT_THAT(s.message(), HasSubstr("rolled back"));
  EXPECT_EQ(*db->SchemaVersion(), 1);
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'b'"), 0);
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'a'"), 1);
}

// Pipelined transactions (the default): many writes queued without waiting,
// a read in the middle that sees them, a failing statement in the middle of
// a batch that rolls the whole transaction back and names itself, a
// statement whose prepare fails, and the connection fine afterwards. The
// same with the pipeline off.
class PgPipelineTest : public PgTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PgPipelineTest, BatchesReadsErrorsAndRollbacks) {
  PgOptions options;
  options.pipeline = GetParam();
  auto db = Connect(options);
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->Transaction([](PgDatabase& c) { return c.Exec("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)"); }).ok());
  // 1,000 inserts (past the queue's slice of 256) and a count in between.
  int64_t seen_mid = -1;
  absl::Status ok = db->Transaction([&](PgDatabase& c) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto ins, c.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)"));
    for (int64_t k = 0; k < 1000; ++k) {
      ins->Bind(1, k).Bind(2, absl::StrCat("v", k));
      DCU_RETURN_IF_ERROR(ins->Run());
      DCU_RETURN_IF_ERROR(ins->Reset());
      if (k == 599) {
        DCU_ASSIGN_OR_RETURN(auto q, c.Prepare("SELECT count(*) FROM t"));
        DCU_ASSIGN_OR_RETURN(bool row, q->Step());
        if (row) seen_mid = q->ColumnInt(0);
      }
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(seen_mid, 600);
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM t"), 1000);

  // A duplicate key in the middle of a batch: nothing of the batch stays.
  absl::Status dup = db->Transaction([&](PgDatabase& c) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto ins, c.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)"));
    for (int64_t k : {5000, 5001, 7, 5002}) {
      ins->Bind(1, k).Bind(2, "x");
      DCU_RETURN_IF_ERROR(ins->Run());
      DCU_RETURN_IF_ERROR(ins->Reset());
    }
    return absl::OkStatus();
  });
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
  EXPECT_THAT(dup.message(), HasSubstr("INSERT INTO t"));
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM t WHERE k >= 5000"), 0);

  // A statement that cannot be prepared, after a queued write: both gone,
  // and the bad SQL is not remembered as prepared.
  for (int round = 0; round < 2; ++round) {
    absl::Status bad = db->Transaction([&](PgDatabase& c) -> absl::Status {
      DCU_ASSIGN_OR_RETURN(auto ins, c.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)"));
      ins->Bind(1, int64_t{6000}).Bind(2, "y");
      DCU_RETURN_IF_ERROR(ins->Run());
      DCU_ASSIGN_OR_RETURN(auto q, c.Prepare("SELECT nosuchcolumn FROM t"));
      return q->Step().status();
    });
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << round << ": " << bad;
    EXPECT_THAT(bad.message(), HasSubstr("nosuchcolumn"));
  }
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM t WHERE k = 6000"), 0);
  // A C++ error after queued writes rolls them back too.
  absl::Status mine = db->Transaction([&](PgDatabase& c) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto ins, c.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)"));
    ins->Bind(1, int64_t{6001}).Bind(2, "z");
    DCU_RETURN_IF_ERROR(ins->Run());
    return absl::FailedPreconditionError("changed my mind");
  });
  EXPECT_EQ(mine.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM t WHERE k = 6001"), 0);
  // And the connection still works, prepared statements included.
  ASSERT_TRUE(db->Transaction([&](PgDatabase& c) -> absl::Status {
                  DCU_ASSIGN_OR_RETURN(auto ins, c.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)"));
                  ins->Bind(1, int64_t{6002}).Bind(2, "w");
                  return ins->Run();
                }).ok());
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM t"), 1001);
}

INSTANTIATE_TEST_SUITE_P(PipelineOnAndOff, PgPipelineTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Pipelined" : "OneByOne"; });

TEST_F(PgTest, NewerDatabaseThanBinaryIsRefused) {
  auto db = Connect();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->Migrate({{1, "0001_a", "CREATE TABLE a (x BIGINT);"},
                           {2, "0002_b", "CREATE TABLE b (x BIGINT);"}}).ok());
  absl::Status s = db->Migrate({{1, "0001_a", "CREATE TABLE a (x BIGINT);"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("newer dcu-controller"));
}

TEST_F(PgTest, ControllersMigratingTogetherApplyEachMigrationOnce) {
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto s = PgStore::Open(url_);
      results[i] = s.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r;
  auto db = Connect();
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(migrations::EmbeddedMigrations(migrations::Dialect::kPostgres).size()));
}

TEST(PgBadInput, UnreachableServerNamesTheUrlWithoutThePassword) {
  // Port 1 on loopback: nothing listens there.
  auto db = PgDatabase::Open("postgres://dcu:s3cret@127.0.0.1:1/dcufleet");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(db.status().message(), HasSubstr("postgres://dcu:***@127.0.0.1:1/dcufleet"));
  EXPECT_THAT(db.status().message(), Not(HasSubstr("s3cret")));
}

TEST(PgBadInput, NotAUrl) {
  auto db = PgDatabase::Open("controller.db");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsPostgresUrl("controller.db"));
  EXPECT_TRUE(IsPostgresUrl("postgresql://h/db"));
}

// --- The leader lease --------------------------------------------------

class LeaseTest : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(PgStore::Open(url_).ok());  // the schema, with the lease row
  }
  std::unique_ptr<PgLeaderLease> Lease(const std::string& who, LeaseOptions options = {}) {
    PgOptions lease_conn;
    lease_conn.lock_timeout = absl::Milliseconds(500);
    return std::make_unique<PgLeaderLease>(Connect(lease_conn), who, absl::StrCat(who, ":7070"),
                                           options);
  }
  // A store whose writes are fenced by `lease`.
  std::unique_ptr<PgStore> FencedStore(PgLeaderLease& lease, PgOptions options = {}) {
    std::shared_ptr<PgDatabase> db = Connect(options);
    db->SetWriteFence(lease.WriteFence());
    return std::make_unique<PgStore>(db);
  }
  static Event Ev(const std::string& msg) { return {0, 1, "node", "n", "Normal", "R", msg}; }
};

TEST_F(LeaseTest, OneLeadsTheOtherFollowsAndIsToldWhere) {
  auto a = Lease("a");
  auto b = Lease("b");
  auto a_leads = a->Tick();
  ASSERT_TRUE(a_leads.ok()) << a_leads.status();
  EXPECT_TRUE(*a_leads);
  EXPECT_TRUE(a->IsLeader());
  EXPECT_GT(a->token(), 0);
  auto b_leads = b->Tick();
  ASSERT_TRUE(b_leads.ok()) << b_leads.status();
  EXPECT_FALSE(*b_leads);
  EXPECT_EQ(b->token(), 0);
  EXPECT_EQ(b->LeaderAddress(), "a:7070");
  // Renewal keeps the token.
  const int64_t token = a->token();
  ASSERT_TRUE(*a->Tick());
  EXPECT_EQ(a->token(), token);

  auto a_store = FencedStore(*a);
  auto b_store = FencedStore(*b);
  EXPECT_TRUE(a_store->AppendEvent(Ev("from the leader")).ok());
  absl::Status refused = b_store->AppendEvent(Ev("from a follower"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_EQ(NotLeaderAddress(refused), "a:7070") << refused;
  // Followers answer reads.
  auto events = b_store->ListEvents("", "", 0);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].message, "from the leader");
}

TEST_F(LeaseTest, ReleaseHandsOverAtOnceWithANewToken) {
  auto a = Lease("a");
  auto b = Lease("b");
  ASSERT_TRUE(*a->Tick());
  const int64_t first = a->token();
  ASSERT_FALSE(*b->Tick());
  ASSERT_TRUE(a->Release().ok());
  EXPECT_FALSE(a->IsLeader());
  ASSERT_TRUE(*b->Tick());
  EXPECT_GT(b->token(), first);
  ASSERT_FALSE(*a->Tick());
  EXPECT_EQ(a->LeaderAddress(), "b:7070");
}

TEST_F(LeaseTest, ExpiredLeaseIsTakenOverAndTheOldLeaderStepsDown) {
  LeaseOptions short_lease{absl::Milliseconds(600), absl::Milliseconds(200)};
  auto a = Lease("a", short_lease);
  auto b = Lease("b", short_lease);
  ASSERT_TRUE(*a->Tick());
  auto a_store = FencedStore(*a);
  ASSERT_TRUE(a_store->AppendEvent(Ev("before")).ok());
  // a stops renewing (as if stopped); b may take over once it expired.
  ASSERT_FALSE(*b->Tick());
  ASSERT_TRUE(testing::WaitFor([&] { auto r = b->Tick(); return r.ok() && *r; }, absl::Seconds(10)));
  EXPECT_FALSE(a->IsLeader());  // its local deadline passed too
  absl::Status late = a_store->AppendEvent(Ev("late write"));
  EXPECT_EQ(NotLeaderAddress(late), "b:7070") << late;
  // And a's next round does not win it back.
  ASSERT_FALSE(*a->Tick());
  EXPECT_FALSE(a->IsLeader());
  auto b_store = FencedStore(*b);
  auto events = b_store->ListEvents("", "", 0);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].message, "before");
}

// The database's check, not the local deadline: the row's token changed
// (another controller took the lease) while this process still believes
// it leads.
TEST_F(LeaseTest, WriteIsFencedByTheRowsTokenNotOnlyTheLocalDeadline) {
  auto a = Lease("a");
  ASSERT_TRUE(*a->Tick());
  auto a_store = FencedStore(*a);
  auto admin = Connect();
  ASSERT_TRUE(admin->WithConnection([](PgDatabase& db) {
    return db.Exec("UPDATE controller_lease SET holder = 'b', address = 'b:7070', token = token + 1");
  }).ok());
  ASSERT_TRUE(a->IsLeader()) << "the local lease of 6 s ran out: the test machine stalled";
  absl::Status refused = a_store->AppendEvent(Ev("deposed"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("no longer the current one"));
  EXPECT_FALSE(a->IsLeader()) << "a refused write must step the process down";
  EXPECT_EQ(Count(*admin, "SELECT count(*) FROM events"), 0);
}

// A leader stopped in the middle of a write transaction (its row lock on
// the lease held): the server ends its session after the idle timeout, the
// lease is taken over, and the write never commits.
TEST_F(LeaseTest, LeaderStoppedInsideATransactionCannotCommitAfterTakeover) {
  LeaseOptions short_lease{absl::Milliseconds(800), absl::Milliseconds(200)};
  auto a = Lease("a", short_lease);
  auto b = Lease("b", short_lease);
  ASSERT_TRUE(*a->Tick());
  PgOptions writer;
  writer.idle_in_transaction_timeout = absl::Milliseconds(400);
  auto a_store = FencedStore(*a, writer);
  absl::Notification inside;
  absl::Status a_result;
  std::thread stuck([&] {
    a_result = a_store->database()->Transaction([&](PgDatabase& db) -> absl::Status {
      auto ins = db.Prepare("INSERT INTO events(at_ms, subject_kind, subject, type, reason, message) "
                            "VALUES (1, 'node', 'n', 'Normal', 'R', 'stuck write')");
      if (!ins.ok()) return ins.status();
      if (absl::Status s = (*ins)->Run(); !s.ok()) return s;
      inside.Notify();
      absl::SleepFor(absl::Milliseconds(2500));  // "SIGSTOP"
      return absl::OkStatus();
    });
  });
  inside.WaitForNotification();
  EXPECT_TRUE(testing::WaitFor([&] { auto r = b->Tick(); return r.ok() && *r; }, absl::Seconds(10)));
  stuck.join();
  EXPECT_FALSE(a_result.ok()) << "the stopped leader's transaction committed after the takeover";
  auto admin = Connect();
  EXPECT_EQ(Count(*admin, "SELECT count(*) FROM events"), 0);
  // b writes (renewing first: its short lease ran on while a was stuck).
  ASSERT_TRUE(*b->Tick());
  auto b_store = FencedStore(*b);
  EXPECT_TRUE(b_store->AppendEvent(Ev("new leader")).ok());
}

TEST_F(LeaseTest, BackgroundRenewalKeepsTheLeaseAndReportsChanges) {
  LeaseOptions opts{absl::Milliseconds(900), absl::Milliseconds(150)};
  auto a = Lease("a", opts);
  absl::Mutex mu;
  std::vector<bool> changes;
  a->Start([&](bool leading) {
    absl::MutexLock lock(&mu);
    changes.push_back(leading);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return a->IsLeader(); }, absl::Seconds(5)));
  const int64_t token = a->token();
  // Several lease periods later, still the same lease.
  absl::SleepFor(absl::Milliseconds(2000));
  EXPECT_TRUE(a->IsLeader());
  EXPECT_EQ(a->token(), token);
  a->Stop();
  ASSERT_TRUE(a->Release().ok());
  absl::MutexLock lock(&mu);
  EXPECT_THAT(changes, ::testing::ElementsAre(true));
}

}  // namespace
}  // namespace dcu::controller
