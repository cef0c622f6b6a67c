#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include <memory>
#include <string>
#include <thread>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {

// A prepared statement bound to one SqliteDatabase connection. Only used while
// the database's mutex is held (inside SqliteDatabase::WithConnection).
class SqliteDatabase;

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt, SqliteDatabase* owner = nullptr)
      : db_(db), stmt_(stmt), owner_(owner) {}
  // Reset and handed back to the database's statement cache (or finalized).
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  SqliteStatement& Bind(int index, absl::string_view text);
  SqliteStatement& BindBlob(int index, absl::string_view bytes);
  SqliteStatement& Bind(int index, int64_t value);
  SqliteStatement& BindNull(int index);
  // Returns true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Runs to completion, discarding rows.
  absl::Status Run();
  absl::Status Reset();

  std::string ColumnText(int col) const;
  std::string ColumnBlob(int col) const;
  int64_t ColumnInt(int col) const;
  bool ColumnIsNull(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  SqliteDatabase* owner_;
};

// How the WAL is copied back into the database file (see CheckpointLoop).
struct SqliteWalOptions {
  // How often the checkpointer copies what it can without waiting.
  absl::Duration checkpoint_interval = absl::Milliseconds(200);
  // A WAL longer than this many frames (4 KiB pages: 16 MiB) is restarted:
  // a checkpoint that waits for the writer, after which the next write goes
  // to the start of the file again. 0 never restarts (passive only).
  int restart_after_frames = 4096;
};

// One SQLite connection in WAL mode with foreign keys and a busy timeout. All
// access is serialised through one mutex: the controller is the single writer.
class SqliteDatabase {
 public:
  // Opens (creating if needed) `path`, or ":memory:". Fails with a message
  // naming the path when the file cannot be opened, is not a database, or is
  // corrupt.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path,
                                                               SqliteWalOptions wal = {});
  ~SqliteDatabase();

  // Applies, in order, every migration whose version is above the recorded
  // one. Each migration runs in its own transaction with its schema_migrations
  // row; a failing one is rolled back whole and reported with its name.
  absl::Status Migrate(const std::vector<migrations::Migration>& migrations);
  absl::StatusOr<int> SchemaVersion();

  // Runs `fn` with the connection held exclusively.
  absl::Status WithConnection(const std::function<absl::Status(SqliteDatabase&)>& fn);
  // Runs `fn` in BEGIN IMMEDIATE ... COMMIT, rolling back on error.
  absl::Status Transaction(const std::function<absl::Status(SqliteDatabase&)>& fn);
  // A write of one statement (the Sql*Store templates): SQLite makes a lone
  // statement its own transaction, so no BEGIN/COMMIT around it.
  absl::Status Write(const std::function<absl::Status(SqliteDatabase&)>& fn) { return WithConnection(fn); }
  // The migrations' dialect (migrations/embedded_migrations.h).
  static constexpr migrations::Dialect kDialect = migrations::Dialect::kSqlite;

  // Only valid inside WithConnection/Transaction.
  absl::StatusOr<std::unique_ptr<SqliteStatement>> Prepare(absl::string_view sql);
  absl::Status Exec(absl::string_view sql);

  const std::string& path() const { return path_; }

  // Told how long each Transaction held the writer (BEGIN IMMEDIATE to the
  // end of COMMIT or ROLLBACK): dcu-controller's store latency histogram.
  // Set once, before the database is shared between threads.
  void SetTransactionObserver(std::function<void(absl::Duration, bool ok)> observer) {
    transaction_observer_ = std::move(observer);
  }

 private:
  friend class SqliteStatement;
  // Prepared statements by SQL text, reused: compiling the SQL was a quarter
  // of the reconciler's store time (callgrind on bench/scheduler).
  void Release(sqlite3_stmt* stmt);
  SqliteDatabase(std::string path, sqlite3* db, SqliteWalOptions wal)
      : path_(std::move(path)), wal_(wal), db_(db) {}
  absl::Status ExecLocked(absl::string_view sql);
  // Copies the WAL into the database file from a second connection, so that
  // the fsync a checkpoint needs never happens inside a writer's commit
  // (SQLite's automatic checkpoint runs in whichever commit crosses the
  // threshold: measured with bench/loadgen, a commit then waited up to
  // seconds and everything queued behind it). Until stop 46 this connection
  // never read the database, so it had no WAL open and every checkpoint did
  // nothing: the WAL held all the controller ever wrote (2.4 GB after three
  // placement waves at 10,000 agents; BENCHMARKS.md). Passive copies alone
  // also seldom let the log start over while the writer commits without a
  // pause (it restarts only when a write begins with every frame copied), so
  // a WAL past `restart_after_frames` is restarted.
  void StartCheckpointer();
  void CheckpointLoop();
  absl::StatusOr<int> SchemaVersionLocked();

  const std::string path_;
  const SqliteWalOptions wal_;
  std::function<void(absl::Duration, bool)> transaction_observer_;
  // Lock order: mu_ and checkpoint_mu_ are never held together (the
  // checkpointer waits under checkpoint_mu_, then checkpoints on its own
  // connection holding neither). mu_ is taken after the callers' locks
  // (DeployController::reconcile_mu_ is held across a pass's writes) and
  // nothing is called under it but SQLite.
  absl::Mutex mu_;
  sqlite3* db_;
  bool in_transaction_ = false;
  absl::flat_hash_map<std::string, std::vector<sqlite3_stmt*>> statements_;
  sqlite3* checkpoint_db_ = nullptr;
  absl::Mutex checkpoint_mu_;
  bool checkpoint_stop_ ABSL_GUARDED_BY(checkpoint_mu_) = false;
  std::thread checkpointer_;
};

// Maps an SQLite result code to a canonical status with `what` as context.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what);

}  // namespace dcu::controller
