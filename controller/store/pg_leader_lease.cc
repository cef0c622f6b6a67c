#include "controller/store/pg_leader_lease.h"

#include "absl/strings/str_cat.h"
#include "common/status_util.h"
#include "controller/store/not_leader.h"

namespace dcu::controller {
namespace {

int64_t SteadyNow() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
int64_t SteadyTicks(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(absl::ToChronoNanoseconds(d))
      .count();
}

constexpr char kAcquire[] =
    "UPDATE controller_lease SET holder = ?, address = ?, token = token + 1, "
    "expires_at = clock_timestamp() + ?::bigint * interval '1 millisecond' "
    "WHERE id = 1 AND expires_at <= clock_timestamp() RETURNING token";
constexpr char kRenew[] =
    "UPDATE controller_lease SET expires_at = clock_timestamp() + ?::bigint * interval '1 millisecond' "
    "WHERE id = 1 AND token = ? AND holder = ? AND expires_at > clock_timestamp() RETURNING token";
constexpr char kRead[] =
    "SELECT holder, address, token, expires_at > clock_timestamp() FROM controller_lease "
    "WHERE id = 1";
constexpr char kFence[] =
    "SELECT 1 FROM controller_lease WHERE id = 1 AND token = ? AND expires_at > clock_timestamp() "
    "FOR SHARE";
constexpr char kCurrentLeader[] =
    "SELECT address FROM controller_lease WHERE id = 1 AND expires_at > clock_timestamp()";
constexpr char kRelease[] =
    "UPDATE controller_lease SET expires_at = 'epoch' WHERE id = 1 AND token = ?";

}  // namespace

PgLeaderLease::PgLeaderLease(std::unique_ptr<PgDatabase> db, std::string holder,
                             std::string address, LeaseOptions options)
    : db_(std::move(db)), holder_(std::move(holder)), address_(std::move(address)),
      options_(options) {}

PgLeaderLease::~PgLeaderLease() { Stop(); }

bool PgLeaderLease::IsLeader() const {
  return token_.load() != 0 && SteadyNow() < deadline_.load();
}

int64_t PgLeaderLease::token() const { return IsLeader() ? token_.load() : 0; }

std::string PgLeaderLease::LeaderAddress() const {
  absl::MutexLock lock(&mu_);
  return leader_address_;
}

void PgLeaderLease::StepDown() {
  token_.store(0);
  deadline_.store(0);
}

absl::StatusOr<LeaseRow> PgLeaderLease::Read() {
  LeaseRow row;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](PgDatabase& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(kRead));
    DCU_ASSIGN_OR_RETURN(bool found, q->Step());
    if (!found) return absl::FailedPreconditionError("controller_lease has no row: schema not migrated");
    row.holder = q->ColumnText(0);
    row.address = q->ColumnText(1);
    row.token = q->ColumnInt(2);
    row.live = q->ColumnInt(3) != 0;
    return absl::OkStatus();
  }));
  absl::MutexLock lock(&mu_);
  leader_address_ = row.live ? row.address : "";
  return row;
}

absl::StatusOr<bool> PgLeaderLease::Tick() {
  // Counted from before the statement is sent: the database sets its
  // expiry later than this, so the local deadline never outlasts it.
  const int64_t sent = SteadyNow();
  const int64_t lease_ms = absl::ToInt64Milliseconds(options_.lease);
  const int64_t held = token_.load();
  if (held != 0 && sent >= deadline_.load()) {
    // Expired locally (the process was stopped, or renewals failed): what
    // the row says no longer matters, a new lease needs a new token.
    StepDown();
  }
  int64_t got = 0;
  absl::Status s = db_->WithConnection([&](PgDatabase& db) -> absl::Status {
    if (token_.load() != 0) {
      DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(kRenew));
      q->Bind(1, lease_ms).Bind(2, held).Bind(3, holder_);
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (row) got = q->ColumnInt(0);
      return absl::OkStatus();
    }
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(kAcquire));
    q->Bind(1, holder_).Bind(2, address_).Bind(3, lease_ms);
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (row) got = q->ColumnInt(0);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;  // the local deadline decides meanwhile
  if (got == 0) {
    StepDown();
    absl::StatusOr<LeaseRow> row = Read();
    if (!row.ok()) return row.status();
    return false;
  }
  token_.store(got);
  deadline_.store(sent + SteadyTicks(options_.lease));
  {
    absl::MutexLock lock(&mu_);
    leader_address_ = address_;
  }
  return IsLeader();
}

absl::Status PgLeaderLease::Release() {
  const int64_t held = token_.load();
  StepDown();
  if (held == 0) return absl::OkStatus();
  return db_->WithConnection([&](PgDatabase& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(kRelease));
    q->Bind(1, held);
    return q->Run();
  });
}

namespace {
// The leader's address as the row says now (this process's memory of it
// may be its own, from before it was deposed); "" when none leads.
std::string CurrentLeader(PgDatabase& db) {
  auto q = db.Prepare(kCurrentLeader);
  if (!q.ok()) return "";
  auto row = (*q)->Step();
  return row.ok() && *row ? (*q)->ColumnText(0) : "";
}
}  // namespace

std::function<absl::Status(PgDatabase&)> PgLeaderLease::WriteFence() {
  return [this](PgDatabase& db) -> absl::Status {
    const int64_t mine = token();
    if (mine == 0) return NotLeaderError(CurrentLeader(db), "this controller does not hold the lease");
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(kFence));
    q->Bind(1, mine);
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) {
      // Deposed (or expired) while this process was not looking.
      if (token_.load() == mine) StepDown();
      return NotLeaderError(CurrentLeader(db),
                            absl::StrCat("lease token ", mine, " is no longer the current one"));
    }
    return absl::OkStatus();
  };
}

void PgLeaderLease::Start(std::function<void(bool leading)> on_change) {
  on_change_ = std::move(on_change);
  thread_ = std::thread([this] { Loop(); });
}

void PgLeaderLease::Loop() {
  bool was = false;
  while (true) {
    (void)Tick();  // a failed round leaves the local deadline to decide
    const bool now = IsLeader();
    if (now != was && on_change_) on_change_(now);
    was = now;
    absl::MutexLock lock(&mu_);
    auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
    mu_.AwaitWithTimeout(absl::Condition(&stop), options_.renew_every);
    if (stop_) return;
  }
}

void PgLeaderLease::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace dcu::controller
