#pragma once

// A real PostgreSQL 15 server (Debian's postgresql-15) for the store tests
// (issue 21): `initdb` into a temporary directory, then `postgres` itself
// (no pg_ctl daemonising, no system service) on a free loopback port, its
// socket in the same directory. PostgreSQL refuses to run as root, so when
// the tests are root the server runs as `nobody` (setpriv); the data
// directory is handed to that user. Stopped by pid (SIGINT: PostgreSQL's
// "fast" shutdown) in the destructor.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tests/testing/test_env.h"

namespace dcu::testing {

class PgServer {
 public:
  // Where Debian installs PostgreSQL 15's server binaries.
  static constexpr char kBinDir[] = "/usr/lib/postgresql/15/bin";

  // Empty when initdb and postgres are installed; otherwise the reason,
  // for GTEST_SKIP.
  static std::string MissingBinaries();

  // initdb, start, and wait until a connection is accepted. An error names
  // the step and carries the server's log tail.
  static absl::StatusOr<std::unique_ptr<PgServer>> Start();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return server_ ? server_->pid() : -1; }
  // postgres://USER@127.0.0.1:PORT/DB (the database is created when absent).
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // The URL of the default `postgres` database.
  std::string Url(const std::string& db = "postgres") const;
  std::string Log() const;

 private:
  PgServer() = default;
  TempDir dir_;
  std::string user_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> server_;
};

}  // namespace dcu::testing
