#include "tests/testing/slurm_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace dcu::testing {
namespace {

// The full path of a program on PATH (or in /usr/sbin, where Debian puts
// the daemons and where a non-root PATH often does not look); "" if absent.
std::string FindProgram(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("PATH")) dirs = absl::StrSplit(p, ':', absl::SkipEmpty());
  dirs.push_back("/usr/sbin");
  dirs.push_back("/usr/bin");
  for (const auto& d : dirs) {
    std::string path = absl::StrCat(d, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}


std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

constexpr const char* kClientPrograms[] = {"sbatch", "squeue", "scancel", "scontrol", "sinfo"};

}  // namespace

std::string SlurmCluster::MissingBinaries() {
  std::vector<std::string> missing;
  for (const char* p : {"slurmctld", "slurmd", "slurmstepd"}) {
    if (FindProgram(p).empty()) missing.push_back(p);
  }
  for (const char* p : kClientPrograms) {
    if (FindProgram(p).empty()) missing.push_back(p);
  }
  if (missing.empty()) return "";
  return absl::StrCat("Slurm not installed (missing ", absl::StrJoin(missing, ", "),
                      "): apt-get install slurmctld slurmd slurm-client");
}

absl::StatusOr<std::unique_ptr<SlurmCluster>> SlurmCluster::Start(SlurmClusterOptions options) {
  if (std::string why = MissingBinaries(); !why.empty()) return absl::UnavailableError(why);
  if (options.nodes < 1 || options.nodes > 16) {
    return absl::InvalidArgumentError(absl::StrCat("nodes ", options.nodes, " out of 1..16"));
  }
  std::unique_ptr<SlurmCluster> c(new SlurmCluster(std::move(options)));
  if (absl::Status s = c->WriteConfig(); !s.ok()) return s;
  if (absl::Status s = c->StartDaemons(); !s.ok()) return s;
  if (absl::Status s = c->WaitReady(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "\n", c->Logs()));
  }
  return c;
}

std::vector<std::string> SlurmCluster::node_names() const {
  std::vector<std::string> names;
  for (int i = 1; i <= options_.nodes; ++i) names.push_back(absl::StrCat("n", i));
  return names;
}

absl::Status SlurmCluster::WriteConfig() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* sub : {"etc", "state", "log", "run", "dev"}) fs::create_directories(Join(sub), ec);
  for (const auto& n : node_names()) fs::create_directories(Join("spool/" + n), ec);
  if (ec) return absl::InternalError(absl::StrCat("creating the cluster's directories: ", ec.message()));
  ctld_port_ = FreeLoopbackPort();
  for (int i = 0; i < options_.nodes; ++i) node_ports_.push_back(FreeLoopbackPort());
  if (ctld_port_ == 0) return absl::UnavailableError("no free loopback port for slurmctld");

  // gres.conf File= must name character or block devices ("is not a valid
  // character or block device" otherwise, and the GRES gets no indices):
  // symlinks to /dev/null are, for stat(), and need no root.
  std::string gres_types = absl::StrJoin(options_.gres_names, ",");
  std::string node_gres;
  std::ofstream gres(Join("etc/gres.conf"));
  for (const auto& g : options_.gres_names) {
    for (int i = 0; i < options_.gres_count; ++i) {
      fs::create_symlink("/dev/null", Join(absl::StrCat("dev/", g, i)), ec);
      if (ec) return absl::InternalError(absl::StrCat("device link for GRES '", g, "': ", ec.message()));
    }
    gres << "NodeName=n[1-" << options_.nodes << "] Name=" << g << " File=" << Join("dev/" + g)
         << "[0-" << options_.gres_count - 1 << "]\n";
    absl::StrAppend(&node_gres, node_gres.empty() ? "" : ",", g, ":", options_.gres_count);
  }
  gres.close();

  std::ofstream conf(conf_path());
  const std::string d = dir();
  // Daemons and jobs run as whoever runs the test (SlurmUser/SlurmdUser are
  // this user; as root, jobs may run as any user).
  std::string user = "root";
  if (const char* u = std::getenv("USER"); u && *u && geteuid() != 0) user = u;
  conf << "ClusterName=dcutest\n"
       << "SlurmctldHost=localhost(127.0.0.1)\n"
       << "SlurmctldPort=" << ctld_port_ << "\n"
       << "SlurmUser=" << user << "\nSlurmdUser=" << user << "\n"
       << "AuthType=auth/none\nCredType=cred/none\n"
       << "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\n"
       << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
       << "GresTypes=" << gres_types << "\n"
       << "MpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
       << "AccountingStorageType=accounting_storage/none\n"
       << "SchedulerType=sched/backfill\nReturnToService=2\n"
       // Several slurmd on one host claim the CPUs the config gives them,
       // not the host's ("Low socket*core*thread count" drains them).
       << "SlurmdParameters=config_overrides\n"
       << "SlurmctldTimeout=30\nSlurmdTimeout=30\nInactiveLimit=0\nMinJobAge=2\n"
       // Between a job's SIGTERM and its SIGKILL: time for dcu-agent to say
       // goodbye and stop its instances (Slurm's default is 30 s).
       << "KillWait=15\n"
       << "MessageTimeout=5\n"
       << "StateSaveLocation=" << d << "/state\n"
       << "SlurmdSpoolDir=" << d << "/spool/%n\n"
       << "SlurmctldPidFile=" << d << "/run/slurmctld.pid\n"
       << "SlurmdPidFile=" << d << "/run/slurmd-%n.pid\n"
       << "SlurmctldLogFile=" << d << "/log/slurmctld.log\n"
       << "SlurmdLogFile=" << d << "/log/slurmd-%n.log\n"
       << "SlurmctldDebug=info\nSlurmdDebug=info\n";
  for (int i = 0; i < options_.nodes; ++i) {
    conf << "NodeName=n" << i + 1 << " NodeAddr=127.0.0.1 NodeHostname=localhost CPUs="
         << options_.cpus_per_node << " RealMemory=1000 Gres=" << node_gres
         << " Port=" << node_ports_[i] << "\n";
  }
  conf << "PartitionName=" << options_.partition << " Nodes=n[1-" << options_.nodes
       << "] Default=YES MaxTime=INFINITE State=UP\n";
  conf.close();
  if (!conf) return absl::InternalError(absl::StrCat("cannot write '", conf_path(), "'"));
  return absl::OkStatus();
}

absl::Status SlurmCluster::StartDaemons() {
  // -D: stay in the foreground, so the pid is the daemon's.
  ctld_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{FindProgram("slurmctld"), "-D", "-f", conf_path()}, Join("log/slurmctld.out"),
      ClientEnv());
  for (const auto& n : node_names()) {
    slurmds_.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{FindProgram("slurmd"), "-D", "-N", n, "-f", conf_path()},
        Join("log/slurmd-" + n + ".out"), ClientEnv()));
  }
  return absl::OkStatus();
}

absl::Status SlurmCluster::WaitReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  std::string last;
  bool updated = false;
  while (absl::Now() < deadline) {
    if (!ctld_->Running()) return absl::UnavailableError("slurmctld exited during start-up");
    for (size_t i = 0; i < slurmds_.size(); ++i) {
      if (!slurmds_[i]->Running()) {
        return absl::UnavailableError(absl::StrCat("slurmd 'n", i + 1, "' exited during start-up"));
      }
    }
    CmdResult r = Client({"sinfo", "-h", "-N", "-o", "%N|%T|%G"}, 10);
    last = r.out + r.err;
    int idle = 0;
    std::vector<std::string> without_gres, drained;
    for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
      std::vector<std::string> f = absl::StrSplit(line, '|');
      if (f.size() != 3) continue;
      bool has_gres = true;
      for (const auto& g : options_.gres_names) {
        has_gres &= absl::StrContains(f[2], absl::StrCat(g, ":", options_.gres_count));
      }
      if (!has_gres) without_gres.push_back(f[0]);
      if (absl::StartsWith(f[1], "drain")) drained.push_back(f[0]);
      if (has_gres && absl::StartsWith(f[1], "idle")) ++idle;
    }
    if (idle == options_.nodes) return absl::OkStatus();
    // The measurement: Gres= on NodeName lines can be lost while
    // parsing, and nodes may register drained. Set and resume once.
    if (!updated && (!without_gres.empty() || !drained.empty())) {
      updated = true;
      std::string gres;
      for (const auto& g : options_.gres_names) {
        absl::StrAppend(&gres, gres.empty() ? "" : ",", g, ":", options_.gres_count);
      }
      for (const auto& n : without_gres) Client({"scontrol", "update", "nodename=" + n, "gres=" + gres});
      for (const auto& n : drained) Client({"scontrol", "update", "nodename=" + n, "state=resume"});
    }
    absl::SleepFor(absl::Milliseconds(300));
  }
  return absl::DeadlineExceededError(absl::StrCat("nodes not idle with their GRES within ",
                                                  absl::FormatDuration(options_.start_timeout),
                                                  "; last sinfo:\n", last));
}

SlurmCluster::~SlurmCluster() {
  if (ctld_ && ctld_->Running()) {
    // Cancel everything, and let the slurmstepds report completion while
    // slurmctld still listens.
    CmdResult all = Client({"squeue", "-h", "-o", "%i"}, 10);
    for (absl::string_view id : absl::StrSplit(all.out, '\n', absl::SkipEmpty())) {
      Client({"scancel", std::string(absl::StripAsciiWhitespace(id))}, 10);
    }
    WaitFor([&] { return absl::StripAsciiWhitespace(Client({"squeue", "-h", "-o", "%i"}, 10).out).empty(); },
            absl::Seconds(20));
  }
  for (auto& d : slurmds_) d->Signal(SIGTERM);
  for (auto& d : slurmds_) {
    if (d->Wait(absl::Seconds(10)) < 0) d->Signal(SIGKILL);
  }
  slurmds_.clear();
  if (ctld_) {
    ctld_->Signal(SIGTERM);
    if (ctld_->Wait(absl::Seconds(10)) < 0) ctld_->Signal(SIGKILL);
    ctld_.reset();
  }
}

std::map<std::string, std::string> SlurmCluster::ClientEnv() const {
  return {{"SLURM_CONF", conf_path()}};
}

CmdResult SlurmCluster::Client(std::vector<std::string> argv, double timeout_s) const {
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    std::string path = FindProgram(argv[0]);
    if (!path.empty()) argv[0] = path;
  }
  return RunCmd(argv, ClientEnv(), timeout_s);
}

absl::StatusOr<std::string> SlurmCluster::Submit(std::vector<std::string> sbatch_args,
                                                 std::map<std::string, std::string> job_env) const {
  std::vector<std::string> argv = {FindProgram("sbatch"), "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  for (const auto& [k, v] : ClientEnv()) job_env[k] = v;
  CmdResult r = RunCmd(argv, job_env, 30);
  if (r.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("sbatch exited ", r.exit_code, ": ", r.err, r.out));
  }
  // --parsable: "ID" or "ID;cluster".
  std::string id(absl::StripAsciiWhitespace(r.out));
  id = id.substr(0, id.find(';'));
  if (id.empty()) return absl::InternalError(absl::StrCat("sbatch printed no job id: ", r.err));
  return id;
}

std::string SlurmCluster::JobState(const std::string& job_id) const {
  CmdResult r = Client({"squeue", "-h", "-j", job_id, "-o", "%T"}, 10);
  if (r.exit_code != 0) return "";
  return std::string(absl::StripAsciiWhitespace(r.out));
}

bool SlurmCluster::WaitJobState(const std::string& job_id, const std::string& state,
                                absl::Duration timeout) const {
  return WaitFor([&] { return JobState(job_id) == state; }, timeout);
}

bool SlurmCluster::WaitJobEnded(const std::string& job_id, absl::Duration timeout) const {
  return WaitFor(
      [&] {
        std::string s = JobState(job_id);
        // squeue -j shows a finished job in its final state until MinJobAge.
        return s.empty() || s == "COMPLETED" || s == "CANCELLED" || s == "FAILED" || s == "TIMEOUT" ||
               s == "NODE_FAIL" || s == "PREEMPTED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL" ||
               s == "DEADLINE";
      },
      timeout);
}

std::string SlurmCluster::Logs() const {
  std::string out = absl::StrCat("--- slurmctld.log\n", Tail(ReadFileOrEmpty(Join("log/slurmctld.log"))),
                                 Tail(ReadFileOrEmpty(Join("log/slurmctld.out")), 1000));
  for (const auto& n : node_names()) {
    absl::StrAppend(&out, "--- slurmd-", n, ".log\n", Tail(ReadFileOrEmpty(Join("log/slurmd-" + n + ".log"))));
  }
  return out;
}

}  // namespace dcu::testing
