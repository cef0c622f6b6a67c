#include "tests/testing/store_backends.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tests/testing/pg_server.h"
#include "tests/testing/test_env.h"

namespace dcu::testing {
namespace {

absl::Mutex server_mu;

// Started on first use; the static's destructor stops it (by pid) at exit.
absl::StatusOr<PgServer*> SharedServer() {
  static std::unique_ptr<PgServer> server;
  static absl::Status failed;
  absl::MutexLock lock(&server_mu);
  if (server) return server.get();
  if (!failed.ok()) return failed;
  auto started = PgServer::Start();
  if (!started.ok()) {
    failed = started.status();
    return failed;
  }
  server = std::move(*started);
  return server.get();
}

}  // namespace

std::string BackendName(TestBackend backend) {
  switch (backend) {
    case TestBackend::kSqliteMemory: return "SqliteMemory";
    case TestBackend::kSqliteFile: return "SqliteFile";
    case TestBackend::kPostgres: return "Postgres";
  }
  return "Unknown";
}

std::string PostgresUnavailable() { return PgServer::MissingBinaries(); }

absl::StatusOr<std::string> NewPostgresDatabase() {
  static std::atomic<int> next{0};
  auto server = SharedServer();
  if (!server.ok()) return server.status();
  return (*server)->CreateDatabase(absl::StrCat("dcutest_", getpid(), "_", next++));
}

TestStores::TestStores() : dir_(std::make_unique<TempDir>()) {}
TestStores::~TestStores() = default;

absl::StatusOr<std::unique_ptr<TestStores>> TestStores::Open(TestBackend backend,
                                                             controller::PgOptions pg) {
  std::unique_ptr<TestStores> t(new TestStores());
  switch (backend) {
    case TestBackend::kSqliteMemory:
      t->db_ = ":memory:";
      break;
    case TestBackend::kSqliteFile:
      t->db_ = t->dir_->Join("store.db");
      break;
    case TestBackend::kPostgres: {
      auto url = NewPostgresDatabase();
      if (!url.ok()) return url.status();
      t->db_ = *url;
      break;
    }
  }
  auto set = controller::OpenStores(t->db_, pg);
  if (!set.ok()) return set.status();
  t->set_ = std::move(*set);
  return t;
}

}  // namespace dcu::testing
