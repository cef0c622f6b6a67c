// Two dcu-controllers on one PostgreSQL database, as real processes on
// loopback (issue 21): one leads and serves, the other stands by; the
// leader is stopped (SIGSTOP) past its lease, the standby takes over, and
// the old leader, woken (SIGCONT), writes nothing and exits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/store/pg_db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/store_backends.h"
#include "tests/testing/test_env.h"

namespace dcu::testing {
namespace {


std::vector<std::string> ApiKeyNames(const std::string& url) {
  std::vector<std::string> names;
  auto db = controller::PgDatabase::Open(url);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return names;
  absl::Status s = (*db)->WithConnection([&](controller::PgDatabase& c) -> absl::Status {
    auto q = c.Prepare("SELECT name FROM api_keys ORDER BY name");
    if (!q.ok()) return q.status();
    while (true) {
      auto row = (*q)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      names.push_back((*q)->ColumnText(0));
    }
  });
  EXPECT_TRUE(s.ok()) << s;
  return names;
}

class Controller {
 public:
  Controller(const TempDir& dir, const std::string& name, const std::string& url)
      : port_(FreeLoopbackPort()), port_file_(dir.Join(name + ".port")), log_(dir.Join(name + ".log")) {
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{BinPath("dcu-controller"), "--listen", Addr(), "--db", url,
                                 "--port-file", port_file_, "--lease", "2", "--lease-renew", "0.5"},
        log_);
  }
  std::string Addr() const { return absl::StrCat("127.0.0.1:", port_); }
  bool Serving() const { return std::filesystem::exists(port_file_); }
  ChildProcess& process() { return *process_; }
  std::string Log() const { return ReadFileOrEmpty(log_); }
  CmdResult Dcuctl(std::vector<std::string> args, double timeout_s = 30) const {
    std::vector<std::string> argv = {BinPath("dcuctl"), "--controller", Addr(), "--timeout", "10"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, {}, timeout_s);
  }

 private:
  int port_;
  std::string port_file_, log_;
  std::unique_ptr<ChildProcess> process_;
};

TEST(LeaderFailover, StoppedLeaderIsReplacedAndWritesNothingWhenItWakes) {
  if (std::string why = PostgresUnavailable(); !why.empty()) GTEST_SKIP() << why;
  auto url = NewPostgresDatabase();
  ASSERT_TRUE(url.ok()) << url.status();
  TempDir dir;

  Controller a(dir, "a", *url);
  ASSERT_TRUE(WaitFor([&] { return a.Serving(); }, absl::Seconds(30))) << a.Log();
  Controller b(dir, "b", *url);
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(b.Log(), "standby"); }, absl::Seconds(30)))
      << b.Log();
  EXPECT_THAT(b.Log(), ::testing::HasSubstr(a.Addr())) << "the standby names the leader";
  EXPECT_FALSE(b.Serving()) << "a standby serves while another controller leads";
  // The standby's port answers every call with where the leader is.
  CmdResult to_standby = b.Dcuctl({"apikey", "create", "via-standby"});
  EXPECT_NE(to_standby.exit_code, 0);
  EXPECT_THAT(to_standby.err, ::testing::HasSubstr(absl::StrCat("the leader is at ", a.Addr())))
      << to_standby.err;
  // Given both, dcuctl goes to the leader the standby names.
  CmdResult both = RunCmd({BinPath("dcuctl"), "--controller", absl::StrCat(b.Addr(), ",", a.Addr()),
                           "--timeout", "10", "apikey", "create", "via-list"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  // An agent given both addresses, the standby's first, reaches the leader.
  ChildProcess agent({BinPath("dcu-agent"), "--controller", absl::StrCat(b.Addr(), ",", a.Addr()),
                      "--node", "node-1", "--root",
                      SourceDir() + "/tests/fixtures/sysfs/k100ai-8x/root", "--state-dir",
                      dir.Join("agent-state"), "--max-backoff", "0.5"},
                     dir.Join("agent.log"));
  auto node_ready_on = [](const Controller& c) {
    CmdResult r = c.Dcuctl({"get", "nodes"});
    return r.exit_code == 0 && absl::StrContains(r.out, "node-1") && absl::StrContains(r.out, "Ready") &&
           !absl::StrContains(r.out, "NotReady");
  };
  EXPECT_TRUE(WaitFor([&] { return node_ready_on(a); }, absl::Seconds(30)))
      << agent.Log() << a.Log();
  // So does a gateway: it learns replicas from the leader only.
  ChildProcess gateway({BinPath("dcu-gateway"), "--controller", absl::StrCat(b.Addr(), ",", a.Addr()),
                        "--listen", absl::StrCat("127.0.0.1:", FreeLoopbackPort())},
                       dir.Join("gateway.log"));
  const std::string from_a = absl::StrCat("receiving replicas from controller '", a.Addr(), "'");
  const std::string from_b = absl::StrCat("receiving replicas from controller '", b.Addr(), "'");
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(gateway.Log(), from_a); }, absl::Seconds(20)))
      << gateway.Log();
  EXPECT_THAT(gateway.Log(), ::testing::HasSubstr(absl::StrCat("the leader is '", a.Addr(), "'")));
  EXPECT_THAT(gateway.Log(), ::testing::Not(::testing::HasSubstr(from_b)));
  CmdResult first = a.Dcuctl({"apikey", "create", "before"});
  ASSERT_EQ(first.exit_code, 0) << first.err << a.Log();

  a.process().Signal(SIGSTOP);
  // A write sent to the stopped leader waits in its socket until it wakes.
  CmdResult late;
  std::thread late_writer([&] { late = a.Dcuctl({"apikey", "create", "late"}, 60); });
  ASSERT_TRUE(WaitFor([&] { return b.Serving(); }, absl::Seconds(30)))
      << "the standby did not take over: " << b.Log();
  CmdResult on_b = b.Dcuctl({"apikey", "create", "after"});
  EXPECT_EQ(on_b.exit_code, 0) << on_b.err << b.Log();
  // The agent, cut off from the stopped leader, finds the new one.
  EXPECT_TRUE(WaitFor([&] { return node_ready_on(b); }, absl::Seconds(30)))
      << agent.Log() << b.Log();
  // The gateway's stream to the stopped leader goes silent; it moves on.
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(gateway.Log(), from_b); }, absl::Seconds(30)))
      << gateway.Log();

  a.process().Signal(SIGCONT);
  EXPECT_EQ(a.process().Wait(absl::Seconds(20)), 3) << "the woken leader must step down: " << a.Log();
  late_writer.join();
  // Refused by the write fence (NotLeader), or cut off by the exit, which
  // ever the woken process reaches first; the database says which writes
  // happened.
  EXPECT_NE(late.exit_code, 0) << "a write to the deposed leader succeeded: " << late.out;
  EXPECT_THAT(a.Log(), ::testing::HasSubstr("lost the lease"));
  EXPECT_THAT(ApiKeyNames(*url), ::testing::ElementsAre("after", "before", "via-list"));
  // b still leads and serves; a list naming the dead leader first finds it.
  CmdResult still = RunCmd({BinPath("dcuctl"), "--controller", absl::StrCat(a.Addr(), ",", b.Addr()),
                            "--timeout", "10", "apikey", "list"});
  EXPECT_EQ(still.exit_code, 0) << still.err;
  EXPECT_THAT(still.out, ::testing::HasSubstr("via-list"));
  b.process().Signal(SIGTERM);
  EXPECT_EQ(b.process().Wait(absl::Seconds(20)), 0) << b.Log();
}

}  // namespace
}  // namespace dcu::testing
