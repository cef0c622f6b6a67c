#pragma once

#include <string>
#include <vector>

namespace dcu::migrations {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// SQLite (the embedded default) or PostgreSQL (--db postgres://…, issue 21).
enum class Dialect { kSqlite, kPostgres };

// All migrations/NNNN_name.sql files compiled into the binary, in order; for
// kPostgres, migrations/postgres/NNNN_name.sql where that exists. Both
// dialects have the same versions and names.
const std::vector<Migration>& EmbeddedMigrations(Dialect dialect = Dialect::kSqlite);

}  // namespace dcu::migrations
