#pragma once

// dcu-controller migrate-store (issue 21): a site that outgrew its SQLite
// file moves to PostgreSQL with its state — nodes, deployments, events,
// API keys, the catalog and its evidence — as it was when its controller
// stopped.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dcu::controller {

struct TableCopy {
  std::string table;
  int64_t rows = 0;
  // An order-free digest of the table's rows (the sum of each row's
  // SHA-256 prefix), equal on both sides or the copy is rolled back.
  std::string checksum;
};

struct StoreMigrationReport {
  int schema_version = 0;
  std::vector<TableCopy> tables;
};

// Copies every table of the SQLite store at `sqlite_path` into the
// PostgreSQL database at `postgres_url`, in one transaction that commits
// only when every table's row count and checksum match on both sides.
// Refuses (FAILED_PRECONDITION, saying what to do) while a controller holds
// the SQLite store, when the target already holds rows, or when the two
// schemas differ; both are migrated to this binary's schema first. Row ids
// are kept and the target's identity sequences set past them.
absl::StatusOr<StoreMigrationReport> MigrateSqliteToPostgres(const std::string& sqlite_path,
                                                             const std::string& postgres_url);

}  // namespace dcu::controller
