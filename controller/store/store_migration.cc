#include "controller/store/store_migration.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/hash.h"
#include "common/status_util.h"
#include "controller/store/pg_db.h"
#include "controller/store/sqlite_db.h"
#include "controller/store/store_lock.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {
namespace {

enum class ColumnKind { kInt, kBlob, kText };

struct Column {
  std::string name;
  ColumnKind kind;
};

struct Table {
  std::string name;
  std::vector<Column> columns;
  std::vector<std::string> references;  // tables its foreign keys name
};

// Tables each database keeps for itself: the migrations' own record, and
// the PostgreSQL leader lease (a fresh site elects its own leader).
bool CopiedTable(absl::string_view name) {
  return !absl::StartsWith(name, "sqlite_") && name != "schema_migrations" &&
         name != "controller_lease";
}

// The SQLite schema's declared types, by SQLite's affinity rules
// (INTEGER/BIGINT → int, BLOB → bytes, the rest text), which the
// PostgreSQL migrations mirror as BIGINT, BYTEA and TEXT.
ColumnKind KindOf(std::string declared) {
  absl::AsciiStrToUpper(&declared);
  if (absl::StrContains(declared, "INT")) return ColumnKind::kInt;
  if (absl::StrContains(declared, "BLOB") || declared.empty()) return ColumnKind::kBlob;
  return ColumnKind::kText;
}

absl::StatusOr<std::vector<Table>> ListTables(SqliteDatabase& db) {
  std::vector<Table> tables;
  DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"));
  while (true) {
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    std::string name = q->ColumnText(0);
    if (CopiedTable(name)) tables.push_back(Table{name, {}});
  }
  for (Table& t : tables) {
    DCU_ASSIGN_OR_RETURN(auto cols, db.Prepare(absl::StrCat("PRAGMA table_info(\"", t.name, "\")")));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, cols->Step());
      if (!row) break;
      t.columns.push_back(Column{cols->ColumnText(1), KindOf(cols->ColumnText(2))});
    }
    DCU_ASSIGN_OR_RETURN(auto fks, db.Prepare(absl::StrCat("PRAGMA foreign_key_list(\"", t.name, "\")")));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, fks->Step());
      if (!row) break;
      if (std::string ref = fks->ColumnText(2); ref != t.name) t.references.push_back(ref);
    }
  }
  // Referenced tables first: the target checks foreign keys row by row.
  std::vector<Table> ordered;
  while (!tables.empty()) {
    auto ready = std::find_if(tables.begin(), tables.end(), [&](const Table& t) {
      return std::all_of(t.references.begin(), t.references.end(), [&](const std::string& ref) {
        return std::none_of(tables.begin(), tables.end(), [&](const Table& o) { return o.name == ref; });
      });
    });
    if (ready == tables.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the foreign keys of '", tables.front().name, "' form a cycle: cannot order the copy"));
    }
    ordered.push_back(std::move(*ready));
    tables.erase(ready);
  }
  return ordered;
}

std::string SelectAll(const Table& t) {
  std::vector<std::string> names;
  for (const Column& c : t.columns) names.push_back(c.name);
  return absl::StrCat("SELECT ", absl::StrJoin(names, ", "), " FROM ", t.name);
}

// One row's canonical bytes (kind tag, length, value per column), the
// same whichever database it was read from.
template <typename Statement>
std::string CanonicalRow(const Table& t, const Statement& st) {
  std::string out;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const int col = static_cast<int>(i);
    if (st.ColumnIsNull(col)) {
      out += "N;";
      continue;
    }
    std::string v;
    char tag = 'T';
    switch (t.columns[i].kind) {
      case ColumnKind::kInt:
        v = absl::StrCat(st.ColumnInt(col));
        tag = 'I';
        break;
      case ColumnKind::kBlob:
        v = st.ColumnBlob(col);
        tag = 'B';
        break;
      case ColumnKind::kText:
        v = st.ColumnText(col);
        break;
    }
    absl::StrAppend(&out, std::string(1, tag), v.size(), ":", v, ";");
  }
  return out;
}

// Rows and the order-free checksum of one table, read through `db`.
template <typename Db>
absl::StatusOr<TableCopy> Digest(Db& db, const Table& t) {
  TableCopy copy{t.name, 0, ""};
  uint64_t sum = 0;
  DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(SelectAll(t)));
  while (true) {
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    uint64_t h = 0;
    const std::string hex = common::Sha256Hex(CanonicalRow(t, *q));
    if (hex.size() < 16 || !absl::SimpleHexAtoi(hex.substr(0, 16), &h)) {
      return absl::InternalError("SHA-256 is unavailable (OpenSSL)");
    }
    sum += h;  // wraps: a sum mod 2^64, independent of row order
    ++copy.rows;
  }
  copy.checksum = absl::StrFormat("%016x", sum);
  return copy;
}

absl::Status CopyTable(SqliteDatabase& from, PgDatabase& to, const Table& t) {
  std::vector<std::string> names, params;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    names.push_back(t.columns[i].name);
    params.push_back(absl::StrCat("?", i + 1));
  }
  DCU_ASSIGN_OR_RETURN(auto read, from.Prepare(SelectAll(t)));
  DCU_ASSIGN_OR_RETURN(auto write, to.Prepare(absl::StrCat("INSERT INTO ", t.name, "(",
                                                           absl::StrJoin(names, ", "), ") VALUES (",
                                                           absl::StrJoin(params, ", "), ")")));
  while (true) {
    DCU_ASSIGN_OR_RETURN(bool row, read->Step());
    if (!row) break;
    DCU_RETURN_IF_ERROR(write->Reset());
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const int col = static_cast<int>(i);
      if (read->ColumnIsNull(col)) continue;  // unbound is NULL
      switch (t.columns[i].kind) {
        case ColumnKind::kInt:
          write->Bind(col + 1, read->ColumnInt(col));
          break;
        case ColumnKind::kBlob:
          write->BindBlob(col + 1, read->ColumnBlob(col));
          break;
        case ColumnKind::kText:
          write->Bind(col + 1, read->ColumnText(col));
          break;
      }
    }
    if (absl::Status s = write->Run(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("copying into '", t.name, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoreMigrationReport> MigrateSqliteToPostgres(const std::string& sqlite_path,
                                                             const std::string& postgres_url) {
  if (access(sqlite_path.c_str(), R_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("--from '", sqlite_path, "': no readable SQLite store there"));
  }
  // The source must be still: a controller on it could write mid-copy.
  auto lock = StoreLock::Acquire(sqlite_path, absl::StrCat("dcu-controller migrate-store (pid ", getpid(), ")"));
  if (!lock.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(lock.status().message(), "; stop that controller first, then migrate"));
  }
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> from, SqliteDatabase::Open(sqlite_path));
  DCU_RETURN_IF_ERROR(from->Migrate(migrations::EmbeddedMigrations(migrations::Dialect::kSqlite)));
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> to, PgDatabase::Open(postgres_url));
  DCU_RETURN_IF_ERROR(to->Migrate(migrations::EmbeddedMigrations(migrations::Dialect::kPostgres)));
  DCU_ASSIGN_OR_RETURN(int from_version, from->SchemaVersion());
  DCU_ASSIGN_OR_RETURN(int to_version, to->SchemaVersion());
  if (from_version != to_version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "schema versions differ: '", sqlite_path, "' is at ", from_version, ", the PostgreSQL database at ",
        to_version, "; migrate with the dcu-controller that will run on it"));
  }

  StoreMigrationReport report;
  report.schema_version = from_version;
  std::vector<Table> tables;
  DCU_RETURN_IF_ERROR(from->WithConnection([&](SqliteDatabase& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(tables, ListTables(db));
    return absl::OkStatus();
  }));
  std::vector<TableCopy> expected;
  DCU_RETURN_IF_ERROR(from->Transaction([&](SqliteDatabase& src) -> absl::Status {
    // One read transaction: the digests and the copy see the same rows.
    for (const Table& t : tables) {
      DCU_ASSIGN_OR_RETURN(TableCopy d, Digest(src, t));
      expected.push_back(std::move(d));
    }
    return to->Transaction([&](PgDatabase& dst) -> absl::Status {
      for (const Table& t : tables) {
        DCU_ASSIGN_OR_RETURN(auto n, dst.Prepare(absl::StrCat("SELECT COUNT(*) FROM ", t.name)));
        DCU_ASSIGN_OR_RETURN(bool row, n->Step());
        if (row && n->ColumnInt(0) > 0) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the PostgreSQL database already holds ", n->ColumnInt(0), " rows in '", t.name,
              "': migrate into a new, empty database (nothing was copied)"));
        }
      }
      for (const Table& t : tables) DCU_RETURN_IF_ERROR(CopyTable(src, dst, t));
      // Identity columns continue after the copied ids.
      DCU_ASSIGN_OR_RETURN(auto ids, dst.Prepare(
          "SELECT table_name, column_name FROM information_schema.columns "
          "WHERE table_schema = current_schema() AND is_identity = 'YES'"));
      std::vector<std::pair<std::string, std::string>> identity;
      while (true) {
        DCU_ASSIGN_OR_RETURN(bool row, ids->Step());
        if (!row) break;
        identity.emplace_back(ids->ColumnText(0), ids->ColumnText(1));
      }
      for (const auto& [table, column] : identity) {
        DCU_ASSIGN_OR_RETURN(auto set, dst.Prepare(absl::StrCat(
            "SELECT setval(pg_get_serial_sequence('", table, "', '", column, "'), COALESCE(MAX(", column,
            "), 0) + 1, false) FROM ", table)));
        DCU_RETURN_IF_ERROR(set->Run());
      }
      // Verified before the commit: a mismatch rolls the whole copy back.
      for (size_t i = 0; i < tables.size(); ++i) {
        DCU_ASSIGN_OR_RETURN(TableCopy got, Digest(dst, tables[i]));
        if (got.rows != expected[i].rows || got.checksum != expected[i].checksum) {
          return absl::DataLossError(absl::StrCat(
              "table '", tables[i].name, "': ", expected[i].rows, " rows (checksum ", expected[i].checksum,
              ") in SQLite but ", got.rows, " (", got.checksum, ") after the copy; nothing was committed"));
        }
      }
      return absl::OkStatus();
    });
  }));
  report.tables = std::move(expected);
  return report;
}

}  // namespace dcu::controller
