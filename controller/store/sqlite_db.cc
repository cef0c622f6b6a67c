#include "controller/store/sqlite_db.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_cat.h"
#include "common/status_util.h"

namespace dcu::controller {

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  std::string msg = absl::StrCat(what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(msg);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return absl::PermissionDeniedError(msg);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

SqliteStatement::~SqliteStatement() {
  if (owner_) {
    owner_->Release(stmt_);
  } else {
    sqlite3_finalize(stmt_);
  }
}

void SqliteDatabase::Release(sqlite3_stmt* stmt) {
  // Statements live only inside WithConnection/Transaction: mu_ is held.
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  auto& pool = statements_[sqlite3_sql(stmt)];
  if (pool.size() < 4) {
    pool.push_back(stmt);
  } else {
    sqlite3_finalize(stmt);
  }
}

SqliteStatement& SqliteStatement::Bind(int index, absl::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
SqliteStatement& SqliteStatement::BindBlob(int index, absl::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
SqliteStatement& SqliteStatement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
SqliteStatement& SqliteStatement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

absl::StatusOr<bool> SqliteStatement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, absl::StrCat("sqlite step '", sqlite3_sql(stmt_), "'"));
}

absl::Status SqliteStatement::Run() {
  while (true) {
    DCU_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

absl::Status SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return absl::OkStatus();
}

std::string SqliteStatement::ColumnText(int col) const {
  const unsigned char* t = sqlite3_column_text(stmt_, col);
  return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, col)) : "";
}
std::string SqliteStatement::ColumnBlob(int col) const {
  const void* b = sqlite3_column_blob(stmt_, col);
  return b ? std::string(static_cast<const char*>(b), sqlite3_column_bytes(stmt_, col)) : "";
}
int64_t SqliteStatement::ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }
bool SqliteStatement::ColumnIsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

namespace {

// Checks an existing database file before anything may write to it: opened
// read-only (SQLite never writes the main file of a read-only connection),
// the schema read (a foreign file fails here), then every row of
// `PRAGMA quick_check` read — a damaged page is reported as rows, not as an
// error code, so a check whose rows are not read passes every file. A file
// that fails is refused with the findings and left byte for byte as it was.
absl::Status CheckExistingFile(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  auto close = absl::MakeCleanup([&] { sqlite3_close(db); });
  if (rc != SQLITE_OK) return SqliteError(db, rc, "cannot open it read-only to check it");
  sqlite3_busy_timeout(db, 5000);
  sqlite3_extended_result_codes(db, 1);
  rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "reading its schema");
  sqlite3_stmt* stmt = nullptr;
  // Up to 20 findings are enough to name the damage.
  rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(20)", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "integrity check");
  std::vector<std::string> findings;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    findings.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db, rc, "integrity check");
  if (findings.size() == 1 && findings[0] == "ok") return absl::OkStatus();
  if (findings.empty()) findings.push_back("no result");
  return absl::DataLossError(absl::StrCat("integrity check failed: ", absl::StrJoin(findings, "; ")));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path,
                                                                     SqliteWalOptions wal) {
  if (path != ":memory:") {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0 && !ec) {
      if (absl::Status s = CheckExistingFile(path); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat("database '", path, "' is unusable (refused, left unchanged: ",
                                                   "restore a backup or move it away): ", s.message()));
      }
    }
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(db, rc, absl::StrCat("cannot open database '", path, "'"));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<SqliteDatabase> out(new SqliteDatabase(path, db, wal));
  sqlite3_busy_timeout(db, 5000);
  sqlite3_extended_result_codes(db, 1);
  absl::Status s;
  {
    absl::MutexLock lock(&out->mu_);
    // Reading the schema is what reveals a file that is not a database.
    s = out->ExecLocked("SELECT count(*) FROM sqlite_master");
    if (s.ok() && path != ":memory:") s = out->ExecLocked("PRAGMA journal_mode=WAL");
    if (s.ok()) s = out->ExecLocked("PRAGMA foreign_keys=ON");
    if (s.ok()) s = out->ExecLocked("PRAGMA synchronous=NORMAL");
  }
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("database '", path, "' is unusable: ", s.message()));
  }
  if (path != ":memory:") out->StartCheckpointer();
  return out;
}

void SqliteDatabase::StartCheckpointer() {
  if (sqlite3_open_v2(path_.c_str(), &checkpoint_db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    // Without it SQLite's own checkpoints still run, inside commits.
    sqlite3_close(checkpoint_db_);
    checkpoint_db_ = nullptr;
    return;
  }
  sqlite3_busy_timeout(checkpoint_db_, 5000);
  // Opens this connection's WAL: without a read, its checkpoints do nothing
  // (sqlite_db.h says what that cost).
  if (sqlite3_exec(checkpoint_db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(checkpoint_db_);
    checkpoint_db_ = nullptr;
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    sqlite3_wal_autocheckpoint(db_, 0);
  }
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
}

void SqliteDatabase::CheckpointLoop() {
  while (true) {
    {
      absl::MutexLock lock(&checkpoint_mu_);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(checkpoint_mu_) { return checkpoint_stop_; };
      checkpoint_mu_.AwaitWithTimeout(absl::Condition(&stop), wal_.checkpoint_interval);
      if (checkpoint_stop_) return;
    }
    // PASSIVE: copies what it can without waiting for (or blocking) the
    // writer. The WAL starts over only when a write begins with every frame
    // copied, which a writer that never pauses does not give it.
    int log_frames = 0;
    int copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied);
    if (rc == SQLITE_OK && wal_.restart_after_frames > 0 && log_frames > wal_.restart_after_frames) {
      // RESTART waits (busy timeout) for the writer's current transaction,
      // copies the few frames the passive pass left and holds the next
      // write until the log starts over: a stall of one short copy, against
      // a file that grows as long as the controller runs. Not TRUNCATE: the
      // file keeps its blocks, so the next writes reuse them.
      sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_RESTART, nullptr, nullptr);
    }
  }
}

SqliteDatabase::~SqliteDatabase() {
  if (checkpointer_.joinable()) {
    {
      absl::MutexLock lock(&checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpointer_.join();
  }
  if (checkpoint_db_) sqlite3_close_v2(checkpoint_db_);
  for (auto& [sql, pool] : statements_) {
    for (sqlite3_stmt* s : pool) sqlite3_finalize(s);
  }
  sqlite3_close_v2(db_);
}

absl::Status SqliteDatabase::ExecLocked(absl::string_view sql) {
  char* err = nullptr;
  std::string copy(sql);
  int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    absl::Status s = SqliteError(nullptr, rc, "sqlite");
    return absl::Status(s.code(), msg);
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::Exec(absl::string_view sql) { return ExecLocked(sql); }

absl::StatusOr<std::unique_ptr<SqliteStatement>> SqliteDatabase::Prepare(absl::string_view sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end() && !it->second.empty()) {
    sqlite3_stmt* cached = it->second.back();
    it->second.pop_back();
    return std::make_unique<SqliteStatement>(db_, cached, this);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("prepare '", sql, "'"));
  // Statements that change the schema are not kept (migrations run once).
  bool cacheable = sqlite3_stmt_readonly(stmt) || absl::StartsWithIgnoreCase(sql, "INSERT") ||
                   absl::StartsWithIgnoreCase(sql, "UPDATE") || absl::StartsWithIgnoreCase(sql, "DELETE");
  return std::make_unique<SqliteStatement>(db_, stmt, cacheable ? this : nullptr);
}

absl::Status SqliteDatabase::WithConnection(
    const std::function<absl::Status(SqliteDatabase&)>& fn) {
  absl::MutexLock lock(&mu_);
  return fn(*this);
}

absl::Status SqliteDatabase::Transaction(const std::function<absl::Status(SqliteDatabase&)>& fn) {
  absl::MutexLock lock(&mu_);
  const absl::Time start = absl::Now();
  DCU_RETURN_IF_ERROR(ExecLocked("BEGIN IMMEDIATE"));
  absl::Status s = fn(*this);
  if (s.ok()) s = ExecLocked("COMMIT");
  if (!s.ok()) (void)ExecLocked("ROLLBACK");
  if (transaction_observer_) transaction_observer_(absl::Now() - start, s.ok());
  return s;
}

absl::StatusOr<int> SqliteDatabase::SchemaVersionLocked() {
  DCU_RETURN_IF_ERROR(ExecLocked(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
      "NULL, applied_at_ms INTEGER NOT NULL)"));
  DCU_ASSIGN_OR_RETURN(auto stmt, Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  DCU_ASSIGN_OR_RETURN(bool row, stmt->Step());
  return row ? static_cast<int>(stmt->ColumnInt(0)) : 0;
}

absl::StatusOr<int> SqliteDatabase::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  return SchemaVersionLocked();
}

absl::Status SqliteDatabase::Migrate(const std::vector<migrations::Migration>& migrations) {
  absl::MutexLock lock(&mu_);
  DCU_ASSIGN_OR_RETURN(int current, SchemaVersionLocked());
  int highest_known = 0;
  for (const auto& m : migrations) highest_known = std::max(highest_known, m.version);
  if (current > highest_known) {
    return absl::FailedPreconditionError(
        absl::StrCat("database '", path_, "' has schema version ", current,
                     " but this binary knows only up to ", highest_known,
                     "; use a newer dcu-controller"));
  }
  for (const auto& m : migrations) {
    if (m.version <= current) continue;
    DCU_RETURN_IF_ERROR(ExecLocked("BEGIN IMMEDIATE"));
    absl::Status s = ExecLocked(m.sql);
    if (s.ok()) {
      auto stmt = Prepare(
          "INSERT INTO schema_migrations(version, name, applied_at_ms) VALUES (?, ?, "
          "CAST(strftime('%s','now') AS INTEGER) * 1000)");
      if (!stmt.ok()) {
        s = stmt.status();
      } else {
        (*stmt)->Bind(1, static_cast<int64_t>(m.version)).Bind(2, m.name);
        s = (*stmt)->Run();
      }
    }
    if (s.ok()) s = ExecLocked("COMMIT");
    if (!s.ok()) {
      (void)ExecLocked("ROLLBACK");
      return absl::Status(s.code(), absl::StrCat("migration '", m.name, "' failed and was rolled back: ",
                                                 s.message()));
    }
    current = m.version;
  }
  return absl::OkStatus();
}

}  // namespace dcu::controller
