#pragma once

// Leadership among dcu-controllers sharing one PostgreSQL database
// (issue 21; docs/architecture.md "Leadership"): a lease row
// (migrations/postgres/0005_controller_lease.sql) with a fencing token.
//
//   acquire: UPDATE … SET holder = me, token = token + 1, expires_at = now + lease
//            WHERE expires_at <= now                 (nobody holds it)
//   renew:   UPDATE … SET expires_at = now + lease
//            WHERE token = mine AND expires_at > now (every renew_every)
//   write:   every store Transaction first runs
//            SELECT … WHERE token = mine AND expires_at > now FOR SHARE
//
// "now" is the database's clock (clock_timestamp()), so the controllers'
// clocks need not agree. The FOR SHARE row lock makes a takeover (an UPDATE
// of that row) wait for writes in flight, so every committed write of the
// old leader precedes the new leader's token; a write begun after the
// takeover finds a token that is no longer its own and changes nothing. A
// leader stopped (SIGSTOP) in the middle of a transaction cannot block a
// takeover for long: the server ends a session idle in a transaction after
// PgOptions::idle_in_transaction_timeout. Locally, a leader counts its lease
// from before it sent the renewal, on the monotonic clock, and stops
// leading when that runs out even if the database cannot be reached.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/store/pg_db.h"

namespace dcu::controller {

struct LeaseOptions {
  absl::Duration lease = absl::Seconds(6);
  absl::Duration renew_every = absl::Seconds(2);
};

// What the lease row says.
struct LeaseRow {
  std::string holder;
  std::string address;
  int64_t token = 0;
  bool live = false;  // not expired on the database's clock
};

class PgLeaderLease {
 public:
  // `db`: a connection of its own (a renewal must not queue behind store
  // writes). `holder`: unique per process; `address`: this controller's
  // gRPC address, which followers hand to writers.
  PgLeaderLease(std::unique_ptr<PgDatabase> db, std::string holder, std::string address,
                LeaseOptions options = {});
  ~PgLeaderLease();

  // One round: renews when leading, else acquires when the lease is free.
  // Returns whether this process leads afterwards.
  absl::StatusOr<bool> Tick();
  // Leading: holds a token and its local deadline has not passed.
  bool IsLeader() const;
  // The token while leading, 0 otherwise.
  int64_t token() const;
  // The leader's address as last read ("" when unknown or none).
  std::string LeaderAddress() const;
  absl::StatusOr<LeaseRow> Read();
  // Ends the lease at once when leading (a clean stop hands over without
  // waiting for it to expire).
  absl::Status Release();
  // The check every store write runs first (PgDatabase::SetWriteFence):
  // NotLeaderError unless this process leads and the row still carries its
  // token, unexpired.
  std::function<absl::Status(PgDatabase&)> WriteFence();

  // Tick every renew_every on a thread; `on_change(leading)` is called on
  // every change of IsLeader() (from that thread).
  void Start(std::function<void(bool leading)> on_change);
  void Stop();

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void StepDown();
  void Loop();

  std::unique_ptr<PgDatabase> db_;
  const std::string holder_;
  const std::string address_;
  const LeaseOptions options_;
  std::atomic<int64_t> token_{0};
  // steady_clock ticks since epoch until which the lease is ours locally.
  std::atomic<int64_t> deadline_{0};
  mutable absl::Mutex mu_;
  std::string leader_address_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(bool)> on_change_;
  std::thread thread_;
};

}  // namespace dcu::controller
