#pragma once

// The PostgreSQL side of the store (issue 21): one libpq connection behind
// one mutex, with the same shape as SqliteDatabase (sqlite_db.h) so that the
// pg_* stores read like their SQLite twins: Prepare / Bind / Step / Column*,
// WithConnection for reads, Transaction for writes. What differs:
//   - Statements are PQprepare'd once per connection and reused (by SQL
//     text); `?` and `?N` placeholders are rewritten to `$N`, so the SQL of
//     the two backends differs only where the dialects do.
//   - Every Transaction first runs the write fence, when one is set (the
//     leader lease, pg_leader_lease.h): a write by a controller that is not
//     (or no longer) the leader fails before it changes anything.
//   - A lost connection is re-established on the next call (its prepared
//     statements with it); the call that saw it fail reports UNAVAILABLE.
//   - A Transaction runs in libpq's pipeline mode (PgOptions::pipeline):
//     BEGIN, the fence and every statement that returns no rows are sent,
//     each with its own sync, without waiting for their answers; a
//     statement whose rows are read (Step) waits for everything before it,
//     and COMMIT waits for the rest. (The sync per command keeps the
//     server's idle-in-transaction timeout armed between commands: a
//     stopped leader still loses its session and its lease lock.) A transaction of N writes is then about two round trips
//     instead of N + 3 (what made persisted placements ~8x slower than on
//     SQLite, BENCHMARKS.md). An error of a queued statement surfaces at
//     the next Step or at COMMIT, and the transaction is rolled back whole,
//     as before.

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {

class PgDatabase;

// True for "postgres://…" and "postgresql://…" (libpq's URI forms): what
// --db takes for PostgreSQL; anything else is an SQLite file.
bool IsPostgresUrl(absl::string_view db);
// The URL without its password, for messages and logs.
std::string RedactPostgresUrl(absl::string_view url);

// A prepared statement of one PgDatabase connection; only used inside
// WithConnection/Transaction. Executed by the first Step() or Run() after
// the binds; Reset() clears the binds and the rows for the next execution.
class PgStatement {
 public:
  ~PgStatement();
  PgStatement(const PgStatement&) = delete;
  PgStatement& operator=(const PgStatement&) = delete;

  PgStatement& Bind(int index, absl::string_view text);
  PgStatement& BindBlob(int index, absl::string_view bytes);
  PgStatement& Bind(int index, int64_t value);
  // True when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Executes (if not yet), discarding rows.
  absl::Status Run();
  absl::Status Reset();
  // Rows affected by the last execution (UPDATE/DELETE/INSERT).
  int64_t AffectedRows() const;

  std::string ColumnText(int col) const;
  std::string ColumnBlob(int col) const;
  int64_t ColumnInt(int col) const;
  bool ColumnIsNull(int col) const;

 private:
  friend class PgDatabase;
  PgStatement(PgDatabase* db, std::string name, std::string sql, int params);
  // Sends the statement; in a pipelined transaction its answer is read now
  // only when `rows_wanted` (Step), else later.
  absl::Status Execute(bool rows_wanted);

  PgDatabase* db_;
  std::string name_;
  std::string sql_;
  std::vector<std::string> values_;
  std::vector<int> formats_;
  std::vector<bool> bound_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

struct PgOptions {
  // A transaction left open this long (a controller stopped, SIGSTOP, in
  // the middle of one) is ended by the server, so the lease row it holds
  // FOR SHARE cannot block a takeover for longer than this.
  absl::Duration idle_in_transaction_timeout = absl::Seconds(2);
  // When set, a statement waiting this long for a row lock fails (the
  // lease's connection: a round that cannot get the row is retried).
  absl::Duration lock_timeout = absl::ZeroDuration();
  // libpq's connect_timeout.
  absl::Duration connect_timeout = absl::Seconds(5);
  // Transactions in pipeline mode (above). false: one round trip per
  // statement (DCU_PG_PIPELINE=0 for the controller, to compare).
  bool pipeline = true;
};

class PgDatabase {
 public:
  // Connects to `url` (postgres://user[:password]@host[:port]/db[?…]).
  // Fails naming the URL (without its password) and libpq's reason.
  static absl::StatusOr<std::unique_ptr<PgDatabase>> Open(const std::string& url,
                                                          PgOptions options = {});
  ~PgDatabase();

  // As SqliteDatabase::Migrate: every migration above the recorded version,
  // each in its own transaction with its schema_migrations row; a failing
  // one is rolled back whole and named; a newer database is refused.
  // Controllers starting together serialise on an advisory lock, so each
  // migration is applied once.
  absl::Status Migrate(const std::vector<migrations::Migration>& migrations);
  absl::StatusOr<int> SchemaVersion();

  // Runs `fn` with the connection held exclusively: reads.
  absl::Status WithConnection(const std::function<absl::Status(PgDatabase&)>& fn);
  // BEGIN, the write fence (when set), `fn`, COMMIT; ROLLBACK on error.
  absl::Status Transaction(const std::function<absl::Status(PgDatabase&)>& fn);
  // A write of one statement (the Sql*Store templates): a Transaction too,
  // so that the write fence (the leader's lease) guards every write.
  absl::Status Write(const std::function<absl::Status(PgDatabase&)>& fn) { return Transaction(fn); }
  // The migrations' dialect (migrations/embedded_migrations.h).
  static constexpr migrations::Dialect kDialect = migrations::Dialect::kPostgres;

  // Only valid inside WithConnection/Transaction.
  absl::StatusOr<std::unique_ptr<PgStatement>> Prepare(absl::string_view sql);
  absl::Status Exec(absl::string_view sql);

  // Run first inside every Transaction; a non-OK status aborts it. Set once,
  // before the database is shared between threads.
  void SetWriteFence(std::function<absl::Status(PgDatabase&)> fence) { fence_ = std::move(fence); }
  void SetTransactionObserver(std::function<void(absl::Duration, bool ok)> observer) {
    transaction_observer_ = std::move(observer);
  }

  const std::string& url() const { return url_; }

 private:
  friend class PgStatement;
  PgDatabase(std::string url, std::string redacted, PgOptions options)
      : url_(std::move(url)), redacted_(std::move(redacted)), options_(options) {}
  absl::Status ConnectLocked();
  absl::Status EnsureConnectedLocked();
  absl::Status ExecLocked(absl::string_view sql);
  // Pipeline mode (inside a pipelined Transaction): a command just sent is
  // followed by a sync and queued, its answer read later; DrainLocked reads
  // every queued answer (the last one's result into `*last` when not null,
  // owned by the caller) and returns the first error of them; statements
  // whose prepare failed are forgotten.
  absl::Status QueueLocked(std::string what, std::string prepared_key = "");
  absl::Status DrainLocked(PGresult** last);
  absl::Status PipelinedTransactionLocked(const std::function<absl::Status(PgDatabase&)>& fn);
  absl::StatusOr<int> SchemaVersionLocked();
  // Maps a failed result (or a connection error when `res` is null) to a
  // canonical status with `what` as context.
  absl::Status Error(PGresult* res, absl::string_view what);

  const std::string url_;
  const std::string redacted_;
  const PgOptions options_;
  std::function<absl::Status(PgDatabase&)> fence_;
  std::function<void(absl::Duration, bool)> transaction_observer_;
  // Taken after the callers' locks, like SqliteDatabase::mu_; nothing but
  // libpq is called under it.
  absl::Mutex mu_;
  PGconn* conn_ = nullptr;
  // Translated SQL -> server-side statement name, for this connection.
  absl::flat_hash_map<std::string, std::pair<std::string, int>> prepared_;
  int next_statement_ = 0;
  // In a pipelined Transaction: the commands sent whose answers are not
  // read yet, in order (what they were, for errors; the prepared_ key of a
  // PQsendPrepare).
  struct Queued {
    std::string what;
    std::string prepared_key;
  };
  bool pipelined_ = false;
  std::vector<Queued> queued_;
};

}  // namespace dcu::controller
