#include "tests/testing/pg_server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dcu::testing {
namespace {

// The bootstrap superuser initdb creates; trust auth on loopback only.
constexpr char kUser[] = "dcu";


std::string Tail(const std::string& s, size_t n = 3000) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

}  // namespace

std::string PgServer::MissingBinaries() {
  for (const char* b : {"initdb", "postgres"}) {
    std::string path = absl::StrCat(kBinDir, "/", b);
    if (access(path.c_str(), X_OK) != 0) {
      return absl::StrCat(path, " not found: install Debian's postgresql-15 "
                          "(scripts/lib/common.sh ensure_deps)");
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<PgServer>> PgServer::Start() {
  if (std::string missing = MissingBinaries(); !missing.empty()) {
    return absl::FailedPreconditionError(missing);
  }
  std::unique_ptr<PgServer> pg(new PgServer());
  pg->user_ = kUser;
  const std::string data = pg->dir_.Join("data");
  std::filesystem::create_directory(data);
  chmod(data.c_str(), 0700);
  // PostgreSQL will not run as root: run it as nobody, which then needs to
  // reach and own its data directory.
  std::vector<std::string> prefix = {"/usr/bin/env", absl::StrCat("--chdir=", data)};
  if (geteuid() == 0) {
    const passwd* nobody = getpwnam("nobody");
    if (nobody == nullptr) return absl::FailedPreconditionError("running as root and there is no user 'nobody' to run PostgreSQL as");
    chmod(pg->dir_.path().c_str(), 0755);
    if (chown(data.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      return absl::InternalError(absl::StrCat("chown ", data, " to nobody failed"));
    }
    prefix.insert(prefix.end(), {"/usr/bin/setpriv", absl::StrCat("--reuid=", nobody->pw_uid),
                                 absl::StrCat("--regid=", nobody->pw_gid), "--clear-groups", "--"});
  }
  {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {absl::StrCat(kBinDir, "/initdb"), "-D", data, "-U", kUser,
                             "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"});
    ChildProcess initdb(argv, pg->dir_.Join("initdb.log"));
    int rc = initdb.Wait(absl::Seconds(120));
    if (rc != 0) {
      return absl::InternalError(absl::StrCat("initdb -D ", data, " exited ", rc, ": ",
                                              Tail(initdb.Log())));
    }
  }
  pg->port_ = FreeLoopbackPort();
  std::vector<std::string> argv = prefix;
  // fsync off: a test server's durability is not under test, its speed is
  // felt by every test (the store's own commit path is unchanged).
  argv.insert(argv.end(), {absl::StrCat(kBinDir, "/postgres"), "-D", data, "-p",
                           std::to_string(pg->port_), "-k", data, "-c",
                           "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                           "max_connections=40", "-c", "shared_buffers=16MB"});
  pg->server_ = std::make_unique<ChildProcess>(argv, pg->dir_.Join("postgres.log"));
  const std::string conninfo = absl::StrCat("host=127.0.0.1 port=", pg->port_, " user=", kUser,
                                            " dbname=postgres connect_timeout=2");
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (true) {
    PGconn* c = PQconnectdb(conninfo.c_str());
    bool ok = PQstatus(c) == CONNECTION_OK;
    PQfinish(c);
    if (ok) break;
    if (!pg->server_->Running()) {
      return absl::InternalError(absl::StrCat("postgres on port ", pg->port_, " exited: ", Tail(pg->Log())));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("postgres on port ", pg->port_,
                                                      " accepted no connection in 60 s: ", Tail(pg->Log())));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return pg;
}

PgServer::~PgServer() {
  if (server_) {
    server_->Signal(SIGINT);  // fast shutdown: active sessions are ended
    if (server_->Wait(absl::Seconds(20)) < 0) server_->Signal(SIGKILL);
    server_.reset();  // kills the process group if anything is left
  }
}

std::string PgServer::Url(const std::string& db) const {
  return absl::StrCat("postgres://", user_, "@127.0.0.1:", port_, "/", db);
}

absl::StatusOr<std::string> PgServer::CreateDatabase(const std::string& name) {
  PGconn* c = PQconnectdb(Url().c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string err = PQerrorMessage(c);
    PQfinish(c);
    return absl::UnavailableError(absl::StrCat("connect to ", Url(), ": ", err));
  }
  PGresult* r = PQexec(c, absl::StrCat("CREATE DATABASE \"", name, "\"").c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string err = PQerrorMessage(c);
  PQclear(r);
  PQfinish(c);
  if (!ok) return absl::InternalError(absl::StrCat("CREATE DATABASE ", name, ": ", err));
  return Url(name);
}

std::string PgServer::Log() const { return server_ ? server_->Log() : ""; }

}  // namespace dcu::testing
