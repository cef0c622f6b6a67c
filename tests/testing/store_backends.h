#pragma once

// The backends the store conformance suites run on (issue 21): SQLite in
// memory, SQLite in a file, and PostgreSQL — a fresh database per test on one
// real PostgreSQL 15 server (pg_server.h) that the test binary starts on
// first use and stops at exit.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/store_set.h"

namespace dcu::testing {

// tests/testing/test_env.h (not included here: tests that carry their own
// SourceDir() helper include this header too).
class TempDir;

enum class TestBackend { kSqliteMemory, kSqliteFile, kPostgres };

// "SqliteMemory", "SqliteFile", "Postgres": test name suffixes.
std::string BackendName(TestBackend backend);

// Why a PostgreSQL case cannot run here ("" when it can): the server
// binaries are absent. Tests GTEST_SKIP with it.
std::string PostgresUnavailable();

// The URL of a new, empty database on the shared server.
absl::StatusOr<std::string> NewPostgresDatabase();

// One test's stores.
class TestStores {
 public:
  static absl::StatusOr<std::unique_ptr<TestStores>> Open(TestBackend backend,
                                                          controller::PgOptions pg = {});
  ~TestStores();
  controller::StoreSet& set() { return set_; }
  // What was passed to OpenStores: ":memory:", a file path or a URL.
  const std::string& db() const { return db_; }

 private:
  TestStores();
  std::unique_ptr<TempDir> dir_;
  std::string db_;
  controller::StoreSet set_;
};

}  // namespace dcu::testing
