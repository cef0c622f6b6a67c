#include "controller/store/pg_db.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_util.h"

namespace dcu::controller {
namespace {

// Type oids (catalog/pg_type.h is in the server headers, not libpq-dev).
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kInt8Oid = 20;
constexpr Oid kBoolOid = 16;

// Serialises schema migrations of controllers starting together
// ("dcumigr" as a number).
constexpr int64_t kMigrationLockKey = 0x6463756d696772;

// `?` -> `$k` (k counting up) and `?N` -> `$N`; returns the parameter count.
// The stores' SQL has no `?` inside string literals.
std::string TranslatePlaceholders(absl::string_view sql, int* params) {
  std::string out;
  out.reserve(sql.size() + 8);
  int next = 0, highest = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] != '?') {
      out.push_back(sql[i]);
      continue;
    }
    size_t j = i + 1;
    while (j < sql.size() && absl::ascii_isdigit(static_cast<unsigned char>(sql[j]))) ++j;
    int n = 0;
    if (j > i + 1) {
      (void)absl::SimpleAtoi(sql.substr(i + 1, j - i - 1), &n);
    } else {
      n = ++next;
    }
    highest = std::max(highest, n);
    absl::StrAppend(&out, "$", n);
    i = j - 1;
  }
  *params = highest;
  return out;
}

}  // namespace

bool IsPostgresUrl(absl::string_view db) {
  return absl::StartsWith(db, "postgres://") || absl::StartsWith(db, "postgresql://");
}

std::string RedactPostgresUrl(absl::string_view url) {
  // scheme://user:password@host… -> scheme://user:***@host…
  size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return std::string(url);
  size_t at = url.find('@', scheme + 3);
  if (at == absl::string_view::npos) return std::string(url);
  size_t colon = url.find(':', scheme + 3);
  if (colon == absl::string_view::npos || colon > at) return std::string(url);
  return absl::StrCat(url.substr(0, colon + 1), "***", url.substr(at));
}

PgStatement::PgStatement(PgDatabase* db, std::string name, std::string sql, int params)
    : db_(db), name_(std::move(name)), sql_(std::move(sql)), values_(params),
      formats_(params, 0), bound_(params, false) {}

PgStatement::~PgStatement() {
  if (result_) PQclear(result_);
}

PgStatement& PgStatement::Bind(int index, absl::string_view text) {
  if (index >= 1 && index <= static_cast<int>(values_.size())) {
    values_[index - 1].assign(text.data(), text.size());
    formats_[index - 1] = 0;
    bound_[index - 1] = true;
  }
  return *this;
}
PgStatement& PgStatement::BindBlob(int index, absl::string_view bytes) {
  Bind(index, bytes);
  if (index >= 1 && index <= static_cast<int>(values_.size())) formats_[index - 1] = 1;
  return *this;
}
PgStatement& PgStatement::Bind(int index, int64_t value) { return Bind(index, absl::StrCat(value)); }

absl::Status PgStatement::Execute(bool rows_wanted) {
  std::vector<const char*> values(values_.size());
  std::vector<int> lengths(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    values[i] = bound_[i] ? values_[i].c_str() : nullptr;  // unbound: NULL
    lengths[i] = static_cast<int>(values_[i].size());
  }
  if (result_) PQclear(result_);
  result_ = nullptr;
  row_ = -1;
  if (db_->pipelined_) {
    // Sent now (libpq copies the parameters into its buffer), answered later.
    if (PQsendQueryPrepared(db_->conn_, name_.c_str(), static_cast<int>(values.size()), values.data(),
                            lengths.data(), formats_.data(), /*resultFormat=*/1) != 1) {
      return db_->Error(nullptr, absl::StrCat("postgres '", sql_, "'"));
    }
    DCU_RETURN_IF_ERROR(db_->QueueLocked(absl::StrCat("postgres '", sql_, "'")));
    if (rows_wanted) {
      // Everything queued before it, then its own rows.
      DCU_RETURN_IF_ERROR(db_->DrainLocked(&result_));
      if (!result_) return absl::InternalError(absl::StrCat("postgres '", sql_, "': no result"));
      return absl::OkStatus();
    }
    // A long batch is read in slices, so neither side's buffers fill up
    // while the other waits.
    constexpr size_t kMaxQueued = 256;
    if (db_->queued_.size() >= kMaxQueued) return db_->DrainLocked(nullptr);
    return absl::OkStatus();
  }
  // Results in binary: bytea arrives as its bytes, integers as big-endian.
  result_ = PQexecPrepared(db_->conn_, name_.c_str(), static_cast<int>(values.size()),
                           values.data(), lengths.data(), formats_.data(), /*resultFormat=*/1);
  row_ = -1;
  ExecStatusType st = PQresultStatus(result_);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    absl::Status s = db_->Error(result_, absl::StrCat("postgres '", sql_, "'"));
    PQclear(result_);
    result_ = nullptr;
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> PgStatement::Step() {
  if (!result_) DCU_RETURN_IF_ERROR(Execute(/*rows_wanted=*/true));
  ++row_;
  return row_ < PQntuples(result_);
}

absl::Status PgStatement::Run() {
  if (!result_) return Execute(/*rows_wanted=*/false);
  return absl::OkStatus();
}

absl::Status PgStatement::Reset() {
  if (result_) PQclear(result_);
  result_ = nullptr;
  row_ = -1;
  std::fill(bound_.begin(), bound_.end(), false);
  return absl::OkStatus();
}

int64_t PgStatement::AffectedRows() const {
  if (!result_) return 0;
  int64_t n = 0;
  (void)absl::SimpleAtoi(PQcmdTuples(result_), &n);
  return n;
}

std::string PgStatement::ColumnText(int col) const {
  if (!result_ || row_ < 0 || PQgetisnull(result_, row_, col)) return "";
  return std::string(PQgetvalue(result_, row_, col), PQgetlength(result_, row_, col));
}
std::string PgStatement::ColumnBlob(int col) const { return ColumnText(col); }
bool PgStatement::ColumnIsNull(int col) const {
  return !result_ || row_ < 0 || PQgetisnull(result_, row_, col);
}

int64_t PgStatement::ColumnInt(int col) const {
  if (ColumnIsNull(col)) return 0;
  const char* v = PQgetvalue(result_, row_, col);
  const int len = PQgetlength(result_, row_, col);
  const Oid type = PQftype(result_, col);
  if (type == kInt8Oid && len == 8) {
    uint32_t hi, lo;
    std::memcpy(&hi, v, 4);
    std::memcpy(&lo, v + 4, 4);
    return static_cast<int64_t>((static_cast<uint64_t>(ntohl(hi)) << 32) | ntohl(lo));
  }
  if (type == kInt4Oid && len == 4) {
    uint32_t x;
    std::memcpy(&x, v, 4);
    return static_cast<int32_t>(ntohl(x));
  }
  if (type == kInt2Oid && len == 2) {
    uint16_t x;
    std::memcpy(&x, v, 2);
    return static_cast<int16_t>(ntohs(x));
  }
  if (type == kBoolOid && len == 1) return v[0] != 0;
  return 0;
}

absl::StatusOr<std::unique_ptr<PgDatabase>> PgDatabase::Open(const std::string& url,
                                                              PgOptions options) {
  if (!IsPostgresUrl(url)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", url, "' is not a postgres:// or postgresql:// URL"));
  }
  std::unique_ptr<PgDatabase> db(new PgDatabase(url, RedactPostgresUrl(url), options));
  absl::MutexLock lock(&db->mu_);
  DCU_RETURN_IF_ERROR(db->ConnectLocked());
  return db;
}

PgDatabase::~PgDatabase() {
  if (conn_) PQfinish(conn_);
}

absl::Status PgDatabase::ConnectLocked() {
  if (conn_) PQfinish(conn_);
  prepared_.clear();
  // Keywords beside the URL: libpq lets later ones override it.
  const std::string timeout = absl::StrCat(absl::ToInt64Seconds(options_.connect_timeout));
  const char* keys[] = {"dbname", "connect_timeout", "application_name", "keepalives",
                        "keepalives_idle", "keepalives_interval", "keepalives_count", nullptr};
  const char* values[] = {url_.c_str(), timeout.c_str(), "dcu-controller", "1", "5", "2", "3",
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string err = absl::StripTrailingAsciiWhitespace(PQerrorMessage(conn_)).data();
    return absl::UnavailableError(
        absl::StrCat("cannot connect to PostgreSQL at '", redacted_, "': ", err));
  }
  // Quiet the server's NOTICEs (CREATE TABLE IF NOT EXISTS …) on stderr.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  DCU_RETURN_IF_ERROR(ExecLocked(absl::StrCat(
      "SET idle_in_transaction_session_timeout = ",
      absl::ToInt64Milliseconds(options_.idle_in_transaction_timeout))));
  return ExecLocked(absl::StrCat("SET lock_timeout = ", absl::ToInt64Milliseconds(options_.lock_timeout)));
}

absl::Status PgDatabase::EnsureConnectedLocked() {
  if (conn_ && PQstatus(conn_) == CONNECTION_OK) return absl::OkStatus();
  return ConnectLocked();
}

absl::Status PgDatabase::Error(PGresult* res, absl::string_view what) {
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = res ? PQresultErrorMessage(res) : PQerrorMessage(conn_);
  if (msg.empty()) msg = PQerrorMessage(conn_);
  msg = absl::StrCat(what, ": ", absl::StripTrailingAsciiWhitespace(msg));
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat(msg, " (connection to '", redacted_, "' lost)"));
  }
  absl::string_view s = state ? state : "";
  if (absl::StartsWith(s, "23")) return absl::AlreadyExistsError(msg);  // integrity constraint
  if (s == "40001" || s == "40P01") return absl::AbortedError(msg);      // serialization, deadlock
  if (absl::StartsWith(s, "08") || absl::StartsWith(s, "57") || s == "25P03") {
    return absl::UnavailableError(msg);  // connection, shutdown, idle-in-transaction timeout
  }
  if (absl::StartsWith(s, "42")) return absl::InvalidArgumentError(msg);  // syntax, undefined
  if (s == "53100") return absl::ResourceExhaustedError(msg);               // disk full
  return absl::InternalError(msg);
}

absl::Status PgDatabase::ExecLocked(absl::string_view sql) {
  std::string copy(sql);
  if (pipelined_) {
    // One statement, answered before this returns (PQexec is not allowed
    // in pipeline mode).
    if (PQsendQueryParams(conn_, copy.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) {
      return Error(nullptr, "postgres");
    }
    DCU_RETURN_IF_ERROR(QueueLocked(absl::StrCat("postgres '", copy, "'")));
    return DrainLocked(nullptr);
  }
  PGresult* res = PQexec(conn_, copy.c_str());
  ExecStatusType st = PQresultStatus(res);
  absl::Status s = absl::OkStatus();
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    s = Error(res, "postgres");
  } else if (copy == "COMMIT" && std::string(PQcmdStatus(res)) == "ROLLBACK") {
    // COMMIT of a transaction a failed statement aborted rolls back.
    s = absl::AbortedError("postgres: the transaction was aborted and rolled back");
  }
  PQclear(res);
  return s;
}

absl::Status PgDatabase::Exec(absl::string_view sql) { return ExecLocked(sql); }

absl::StatusOr<std::unique_ptr<PgStatement>> PgDatabase::Prepare(absl::string_view sql) {
  int params = 0;
  std::string translated = TranslatePlaceholders(sql, &params);
  auto it = prepared_.find(translated);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("dcu_s", next_statement_++);
    if (pipelined_) {
      // Queued like the statements; forgotten again if it fails.
      if (PQsendPrepare(conn_, name.c_str(), translated.c_str(), params, nullptr) != 1) {
        return Error(nullptr, absl::StrCat("prepare '", translated, "'"));
      }
      DCU_RETURN_IF_ERROR(QueueLocked(absl::StrCat("prepare '", translated, "'"), translated));
    } else {
      PGresult* res = PQprepare(conn_, name.c_str(), translated.c_str(), params, nullptr);
      if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        absl::Status s = Error(res, absl::StrCat("prepare '", translated, "'"));
        PQclear(res);
        return s;
      }
      PQclear(res);
    }
    it = prepared_.emplace(translated, std::make_pair(name, params)).first;
  }
  return std::unique_ptr<PgStatement>(
      new PgStatement(this, it->second.first, std::move(translated), it->second.second));
}

absl::Status PgDatabase::WithConnection(const std::function<absl::Status(PgDatabase&)>& fn) {
  absl::MutexLock lock(&mu_);
  DCU_RETURN_IF_ERROR(EnsureConnectedLocked());
  return fn(*this);
}

absl::Status PgDatabase::QueueLocked(std::string what, std::string prepared_key) {
  queued_.push_back({std::move(what), std::move(prepared_key)});
  // A sync after every command (it also flushes): the server answers each
  // with ReadyForQuery, so whenever it has run all it received it is "idle
  // in transaction" and idle_in_transaction_session_timeout is armed. A
  // controller stopped (SIGSTOP) between two commands of a batch therefore
  // loses its session, and the lease row lock with it, after the timeout,
  // as without the pipeline; a batch flushed without syncs would hold its
  // locks for as long as the process stays stopped (found by
  // LeaseTest.LeaderStoppedInsideATransactionCannotCommitAfterTakeover).
  if (PQpipelineSync(conn_) != 1) return Error(nullptr, absl::StrCat(queued_.back().what, ": sending"));
  return absl::OkStatus();
}

absl::Status PgDatabase::DrainLocked(PGresult** last) {
  if (queued_.empty()) return absl::OkStatus();
  if (PQflush(conn_) != 0) {
    queued_.clear();
    return Error(nullptr, "postgres: sending the pipeline");
  }
  absl::Status first = absl::OkStatus();
  std::vector<Queued> queued;
  queued.swap(queued_);
  for (size_t i = 0; i < queued.size(); ++i) {
    PGresult* res = PQgetResult(conn_);
    if (res == nullptr) {
      if (first.ok()) first = Error(nullptr, absl::StrCat(queued[i].what, ": no answer"));
      break;
    }
    // Each command's results end with a NULL, then its sync's result.
    while (PGresult* extra = PQgetResult(conn_)) PQclear(extra);
    PGresult* sync = PQgetResult(conn_);
    const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    if (sync) PQclear(sync);
    if (!synced && first.ok()) first = Error(nullptr, absl::StrCat(queued[i].what, ": pipeline out of step"));
    const ExecStatusType st = PQresultStatus(res);
    const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
      if (!queued[i].prepared_key.empty()) prepared_.erase(queued[i].prepared_key);
      // After the first error the transaction is aborted: what follows
      // fails with 25P02 and says nothing new.
      if (first.ok()) first = Error(res, queued[i].what);
    } else if (queued[i].what == "COMMIT" && std::string(PQcmdStatus(res)) == "ROLLBACK") {
      if (first.ok()) first = absl::AbortedError("postgres: the transaction was aborted and rolled back");
    }
    if (ok && last != nullptr && i + 1 == queued.size()) {
      *last = res;
    } else {
      PQclear(res);
    }
  }
  return first;
}

absl::Status PgDatabase::PipelinedTransactionLocked(const std::function<absl::Status(PgDatabase&)>& fn) {
  pipelined_ = true;
  queued_.clear();
  absl::Status s = absl::OkStatus();
  if (PQsendQueryParams(conn_, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) {
    s = Error(nullptr, "postgres 'BEGIN'");
  } else {
    s = QueueLocked("BEGIN");
  }
  if (s.ok() && fence_) s = fence_(*this);
  if (s.ok()) s = fn(*this);
  if (s.ok()) {
    if (PQsendQueryParams(conn_, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) {
      s = Error(nullptr, "postgres 'COMMIT'");
    } else {
      s = QueueLocked("COMMIT");
    }
  }
  // Whatever was queued is answered before the pipeline ends (on an error,
  // the statements queued before it ran inside the transaction; the
  // ROLLBACK below undoes them).
  absl::Status synced = PQstatus(conn_) == CONNECTION_OK ? DrainLocked(nullptr) : absl::OkStatus();
  if (s.ok()) s = synced;
  queued_.clear();
  pipelined_ = false;
  if (PQstatus(conn_) == CONNECTION_OK && PQexitPipelineMode(conn_) != 1) {
    // Should not happen once synced; a fresh connection is the safe state.
    PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
    if (s.ok()) s = absl::UnavailableError("postgres: could not leave pipeline mode; reconnecting");
  }
  return s;
}

absl::Status PgDatabase::Transaction(const std::function<absl::Status(PgDatabase&)>& fn) {
  absl::MutexLock lock(&mu_);
  const absl::Time start = absl::Now();
  DCU_RETURN_IF_ERROR(EnsureConnectedLocked());
  if (options_.pipeline && PQenterPipelineMode(conn_) == 1) {
    absl::Status s = PipelinedTransactionLocked(fn);
    if (!s.ok() && conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) (void)ExecLocked("ROLLBACK");
    if (transaction_observer_) transaction_observer_(absl::Now() - start, s.ok());
    return s;
  }
  DCU_RETURN_IF_ERROR(ExecLocked("BEGIN"));
  absl::Status s = fence_ ? fence_(*this) : absl::OkStatus();
  if (s.ok()) s = fn(*this);
  if (s.ok()) s = ExecLocked("COMMIT");
  if (!s.ok() && PQstatus(conn_) == CONNECTION_OK) (void)ExecLocked("ROLLBACK");
  if (transaction_observer_) transaction_observer_(absl::Now() - start, s.ok());
  return s;
}

absl::StatusOr<int> PgDatabase::SchemaVersionLocked() {
  DCU_ASSIGN_OR_RETURN(auto q, Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  DCU_ASSIGN_OR_RETURN(bool row, q->Step());
  return row ? static_cast<int>(q->ColumnInt(0)) : 0;
}

absl::StatusOr<int> PgDatabase::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  DCU_RETURN_IF_ERROR(EnsureConnectedLocked());
  return SchemaVersionLocked();
}

absl::Status PgDatabase::Migrate(const std::vector<migrations::Migration>& migrations) {
  absl::MutexLock lock(&mu_);
  DCU_RETURN_IF_ERROR(EnsureConnectedLocked());
  const std::string take_lock = absl::StrCat("SELECT pg_advisory_xact_lock(", kMigrationLockKey, ")");
  DCU_RETURN_IF_ERROR(ExecLocked("BEGIN"));
  absl::Status s = ExecLocked(take_lock);
  if (s.ok()) {
    s = ExecLocked(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
        "NULL, applied_at_ms BIGINT NOT NULL)");
  }
  if (s.ok()) s = ExecLocked("COMMIT");
  if (!s.ok()) {
    (void)ExecLocked("ROLLBACK");
    return absl::Status(s.code(), absl::StrCat("database '", redacted_, "': ", s.message()));
  }
  int highest_known = 0;
  for (const auto& m : migrations) highest_known = std::max(highest_known, m.version);
  for (const auto& m : migrations) {
    DCU_RETURN_IF_ERROR(ExecLocked("BEGIN"));
    s = ExecLocked(take_lock);
    int current = 0;
    if (s.ok()) {
      // Read under the lock: another controller may have just applied it.
      absl::StatusOr<int> v = SchemaVersionLocked();
      s = v.status();
      if (v.ok()) current = *v;
    }
    if (s.ok() && current > highest_known) {
      (void)ExecLocked("ROLLBACK");
      return absl::FailedPreconditionError(
          absl::StrCat("database '", redacted_, "' has schema version ", current,
                       " but this binary knows only up to ", highest_known,
                       "; use a newer dcu-controller"));
    }
    if (s.ok() && m.version <= current) {
      (void)ExecLocked("ROLLBACK");
      continue;
    }
    if (s.ok()) s = ExecLocked(m.sql);
    if (s.ok()) {
      auto ins = Prepare(
          "INSERT INTO schema_migrations(version, name, applied_at_ms) VALUES (?, ?, "
          "(extract(epoch from now()) * 1000)::bigint)");
      s = ins.status();
      if (ins.ok()) {
        (*ins)->Bind(1, static_cast<int64_t>(m.version)).Bind(2, m.name);
        s = (*ins)->Run();
      }
    }
    if (s.ok()) s = ExecLocked("COMMIT");
    if (!s.ok()) {
      (void)ExecLocked("ROLLBACK");
      return absl::Status(s.code(), absl::StrCat("migration '", m.name, "' failed and was rolled back: ",
                                                 s.message()));
    }
  }
  // When no migration applied, the first SchemaVersion check above covered
  // "newer than the binary" only if some migration ran its loop body.
  DCU_ASSIGN_OR_RETURN(int current, SchemaVersionLocked());
  if (current > highest_known) {
    return absl::FailedPreconditionError(
        absl::StrCat("database '", redacted_, "' has schema version ", current,
                     " but this binary knows only up to ", highest_known,
                     "; use a newer dcu-controller"));
  }
  return absl::OkStatus();
}

}  // namespace dcu::controller
