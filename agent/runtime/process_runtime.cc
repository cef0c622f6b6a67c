#include "agent/runtime/process_runtime.h"

#include "common/enum_names.h"
#include "common/fs_util.h"
#include "common/legacy_fields.h"
#include "common/net.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "agent/runtime/proc_util.h"
#include "common/logging.h"
#include "common/proc_stat.h"
#include "common/status_util.h"
#include "nlohmann/json.hpp"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kStateFile[] = "state.json";
constexpr char kSpecFile[] = "spec.binpb";
constexpr char kLogFile[] = "output.log";
// The first words of a log a launch writes (what tells a copy-truncated log
// from a fresh one).
constexpr char kLaunchHeader[] = "dcufleet: starting instance";
constexpr char kExitFile[] = "exit_status";

struct InstanceState {
  std::string instance_id;
  int pid = 0;
  uint64_t start_ticks = 0;
  std::string boot_id;
  int monitor_pid = 0;
  uint64_t monitor_start_ticks = 0;
  int64_t started_at_ms = 0;
  bool stop_requested = false;
  std::string executable;
  std::vector<std::string> notes;
};

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status SaveState(const std::string& dir, const InstanceState& st) {
  json j = {{"instance_id", st.instance_id},   {"pid", st.pid},
            {"start_ticks", st.start_ticks},   {"boot_id", st.boot_id},
            {"monitor_pid", st.monitor_pid},   {"monitor_start_ticks", st.monitor_start_ticks},
            {"started_at_ms", st.started_at_ms},
            {"stop_requested", st.stop_requested},
            {"marker", absl::StrCat(kInstanceMarkerEnv, "=", st.instance_id)},
            {"executable", st.executable},     {"notes", st.notes}};
  return common::WriteFileAtomically(absl::StrCat(dir, "/", kStateFile), j.dump(2));
}

absl::StatusOr<InstanceState> LoadState(const std::string& dir) {
  std::string path = absl::StrCat(dir, "/", kStateFile);
  DCU_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  InstanceState st;
  try {
    json j = json::parse(text);
    st.instance_id = j.at("instance_id").get<std::string>();
    st.pid = j.at("pid").get<int>();
    st.start_ticks = j.at("start_ticks").get<uint64_t>();
    st.boot_id = j.value("boot_id", "");
    st.monitor_pid = j.value("monitor_pid", 0);
    st.monitor_start_ticks = j.value("monitor_start_ticks", uint64_t{0});
    st.started_at_ms = j.value("started_at_ms", int64_t{0});
    st.stop_requested = j.value("stop_requested", false);
    st.executable = j.value("executable", "");
    st.notes = j.value("notes", std::vector<std::string>{});
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat(path, ": ", e.what()));
  }
  return st;
}

absl::StatusOr<InstanceState> AdoptByMarker(const std::string& proc_root,
                                            const std::string& boot_id, const std::string& dir,
                                            absl::string_view instance_id) {
  // The spec is written before the fork and the state file after it: an
  // agent stopped in between leaves a running server that only its marker
  // names. The server is the session leader (it called setsid) carrying
  // the marker; its workers inherit the marker but lead no session.
  std::error_code ec;
  if (!fs::exists(absl::StrCat(dir, "/", kSpecFile), ec)) {
    return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  }
  for (int pid : FindPidsWithEnv(proc_root, kInstanceMarkerEnv, instance_id)) {
    auto stat = common::ReadProcStat(proc_root, pid);
    if (!stat.ok() || stat->sid != pid) continue;
    InstanceState st;
    st.instance_id = std::string(instance_id);
    st.pid = pid;
    st.start_ticks = stat->start_ticks;
    st.boot_id = boot_id;
    st.started_at_ms = absl::ToUnixMillis(absl::Now());
    st.notes = {"adopted by its marker: the agent stopped between starting it and recording it"};
    // Its parent is the monitor that records the exit status, when alive.
    if (auto mstat = common::ReadProcStat(proc_root, stat->ppid);
        mstat.ok() && mstat->comm == "dcu-instmon") {
      st.monitor_pid = stat->ppid;
      st.monitor_start_ticks = mstat->start_ticks;
    }
    DCU_RETURN_IF_ERROR(SaveState(dir, st));
    DCU_LOG_WARN("instance '", instance_id, "': no state file but pid ", pid,
                 " carries its marker: adopted (the agent stopped inside the start window)");
    return st;
  }
  return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
}


// exit_status as the monitor writes it: "exited CODE MS" or "signaled SIG MS".
struct ExitStatus {
  bool known = false;
  int exit_code = -1;
  int term_signal = 0;
  int64_t at_ms = 0;
};

ExitStatus LoadExit(const std::string& dir) {
  ExitStatus es;
  auto text = ReadText(absl::StrCat(dir, "/", kExitFile));
  if (!text.ok()) return es;
  std::vector<std::string> f = absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ');
  int value = 0;
  if (f.size() < 2 || !absl::SimpleAtoi(f[1], &value)) return es;
  if (f.size() >= 3 && !absl::SimpleAtoi(f[2], &es.at_ms)) es.at_ms = 0;
  if (f[0] == "exited") {
    es.known = true;
    es.exit_code = value;
  } else if (f[0] == "signaled") {
    es.known = true;
    es.exit_code = -1;
    es.term_signal = value;
  }
  return es;
}

// ---- async-signal-safe helpers for the forked monitor ----

// Appends the decimal form of v to buf at *pos.
void AppendNum(char* buf, size_t* pos, int64_t v) {
  char tmp[24];
  int n = 0;
  bool neg = v < 0;
  uint64_t u = neg ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  do {
    tmp[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (neg) buf[(*pos)++] = '-';
  while (n > 0) buf[(*pos)++] = tmp[--n];
}

void AppendStr(char* buf, size_t* pos, const char* s) {
  while (*s) buf[(*pos)++] = *s++;
}

void CloseFrom(int lowfd) {
  // close_range(2) (Linux 5.9); fall back to a bounded loop.
  if (syscall(SYS_close_range, lowfd, ~0U, 0) != 0) {
    for (int fd = lowfd; fd < 65536; ++fd) close(fd);
  }
}

struct LaunchResult {
  int monitor_pid = 0;
  int server_pid = 0;
};

absl::StatusOr<LaunchResult> LaunchMonitored(const ProcessRuntime::LaunchPlan& plan,
                                             const std::string& dir) {
  // Everything the children need is built before fork: only
  // async-signal-safe calls happen in them (the agent is multi-threaded).
  std::vector<char*> argv;
  for (const auto& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : plan.env) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string log_path = absl::StrCat(dir, "/", kLogFile);
  std::string exit_path = absl::StrCat(dir, "/", kExitFile);
  std::string exit_tmp = absl::StrCat(exit_path, ".tmp");
  const char* exe = plan.executable.c_str();

  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(absl::StrCat("open '", log_path, "': ", strerror(errno)));
  }
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  int info[2];
  if (null_fd < 0 || pipe2(info, O_CLOEXEC) != 0) {
    int e = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return absl::InternalError(absl::StrCat("pipe: ", strerror(e)));
  }

  pid_t monitor = fork();
  if (monitor < 0) {
    int e = errno;
    close(log_fd);
    close(null_fd);
    close(info[0]);
    close(info[1]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(e)));
  }
  if (monitor == 0) {
    // ---- monitor ----
    setsid();
    prctl(PR_SET_NAME, "dcu-instmon", 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    // The agent may be gone when we report: a closed pipe must not kill us.
    signal(SIGPIPE, SIG_IGN);
    close(info[0]);
    int execp[2];
    int report[2] = {0, 0};
    if (pipe2(execp, O_CLOEXEC) != 0) {
      report[1] = errno;
      ssize_t w = write(info[1], report, sizeof(report));
      (void)w;
      _exit(1);
    }
    pid_t server = fork();
    if (server == 0) {
      // ---- server ----
      close(execp[0]);
      setsid();  // own session and process group (pgid == pid)
      signal(SIGPIPE, SIG_DFL);
      dup2(null_fd, STDIN_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      // Nothing of the agent's descriptors leaks into the instance.
      int keep = execp[1];
      for (int fd = 3; fd < keep; ++fd) close(fd);
      CloseFrom(keep + 1);
      if (chdir(dir.c_str()) != 0) {
        // Not fatal: the instance runs from wherever it is.
      }
      execve(exe, argv.data(), envp.data());
      int e = errno;
      ssize_t w = write(keep, &e, sizeof(e));
      (void)w;
      _exit(127);
    }
    close(execp[1]);
    report[0] = server;
    if (server < 0) {
      report[1] = errno;
    } else {
      int e = 0;
      ssize_t n;
      do {
        n = read(execp[0], &e, sizeof(e));
      } while (n < 0 && errno == EINTR);
      if (n == static_cast<ssize_t>(sizeof(e))) report[1] = e;
    }
    close(execp[0]);
    ssize_t w = write(info[1], report, sizeof(report));
    (void)w;
    // Hold nothing of the agent's: not its sockets, not its stdio (a test
    // harness waits for EOF on those).
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    CloseFrom(3);
    if (server < 0) _exit(1);
    int status = 0;
    while (waitpid(server, &status, 0) < 0 && errno == EINTR) {
    }
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
    char buf[96];
    size_t pos = 0;
    if (WIFSIGNALED(status)) {
      AppendStr(buf, &pos, "signaled ");
      AppendNum(buf, &pos, WTERMSIG(status));
    } else {
      AppendStr(buf, &pos, "exited ");
      AppendNum(buf, &pos, WEXITSTATUS(status));
    }
    AppendStr(buf, &pos, " ");
    AppendNum(buf, &pos, ms);
    AppendStr(buf, &pos, "\n");
    int fd = open(exit_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ww = write(fd, buf, pos);
      (void)ww;
      close(fd);
      rename(exit_tmp.c_str(), exit_path.c_str());
    }
    _exit(0);
  }
  // ---- agent ----
  close(log_fd);
  close(null_fd);
  close(info[1]);
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = read(info[0], report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  close(info[0]);
  if (n != static_cast<ssize_t>(sizeof(report)) || report[0] <= 0) {
    waitpid(monitor, nullptr, 0);
    return absl::InternalError(absl::StrCat("instance monitor failed to start the server: ",
                                            report[1] ? strerror(report[1]) : "no report"));
  }
  if (report[1] != 0) {
    waitpid(monitor, nullptr, 0);
    std::string msg = absl::StrCat("cannot execute '", plan.executable, "': ", strerror(report[1]));
    if (report[1] == ENOENT || report[1] == EACCES || report[1] == ENOEXEC) {
      return absl::NotFoundError(msg);
    }
    return absl::InternalError(msg);
  }
  return LaunchResult{monitor, report[0]};
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}


}  // namespace

ProcessRuntime::ProcessRuntime(ProcessRuntimeOptions options, common::ProcessRunner* runner,
                               std::unique_ptr<common::ProcessRunner> owned_runner)
    : options_(std::move(options)),
      owned_runner_(std::move(owned_runner)),
      runner_(runner != nullptr ? runner : owned_runner_.get()),
      boot_id_(ReadBootId(options_.proc_root)) {}

absl::StatusOr<std::unique_ptr<ProcessRuntime>> ProcessRuntime::Create(
    ProcessRuntimeOptions options, common::ProcessRunner* runner) {
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("process runtime: state_dir is empty");
  }
  std::error_code ec;
  fs::create_directories(fs::path(options.state_dir) / "instances", ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("process runtime: cannot create '",
                                            options.state_dir, "/instances': ", ec.message()));
  }
  if (options.home.empty()) {
    const char* home = getenv("HOME");
    options.home = home != nullptr && *home != '\0' ? home : "/root";
  }
  std::unique_ptr<common::ProcessRunner> owned;
  if (runner == nullptr) owned = std::make_unique<common::SubprocessRunner>();
  return std::unique_ptr<ProcessRuntime>(
      new ProcessRuntime(std::move(options), runner, std::move(owned)));
}

std::string ProcessRuntime::InstanceDir(absl::string_view instance_id) const {
  return absl::StrCat(options_.state_dir, "/instances/", instance_id);
}

absl::StatusOr<ProcessRuntime::LaunchPlan> ProcessRuntime::Render(
    const dcufleet::v1::InstanceSpec& spec) {
  if (std::string why = ValidateInstanceId(spec.instance_id()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  if (spec.argv_size() == 0 || spec.argv(0).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("instance '", spec.instance_id(), "': argv is empty"));
  }
  const std::string& prefix = spec.runtime_location();
  std::error_code ec;
  if (!prefix.empty() && !fs::is_directory(prefix, ec)) {
    return absl::NotFoundError(absl::StrCat("instance '", spec.instance_id(),
                                            "': conda env '", prefix, "' not found"));
  }
  LaunchPlan plan;
  plan.env = BaseProcessEnv(prefix, options_.home);
  for (const auto& script : spec.source_scripts()) {
    auto env = CaptureSourcedEnv(*runner_, options_.bash, script, plan.env,
                                 options_.source_timeout);
    if (!env.ok()) {
      return common::Annotate(env.status(), absl::StrCat("instance '", spec.instance_id(), "'"));
    }
    plan.env = *std::move(env);
    plan.notes.push_back(absl::StrCat("sourced '", script, "'"));
  }
  ApplyRecipe(spec, &plan.env);
  plan.argv.assign(spec.argv().begin(), spec.argv().end());
  const std::string& arg0 = plan.argv[0];
  if (arg0.find('/') != std::string::npos) {
    plan.executable = arg0;
    if (!IsExecutableFile(arg0)) {
      return absl::NotFoundError(absl::StrCat("instance '", spec.instance_id(),
                                              "': executable '", arg0, "' not found"));
    }
  } else {
    for (absl::string_view dir : absl::StrSplit(plan.env["PATH"], ':', absl::SkipEmpty())) {
      std::string cand = absl::StrCat(dir, "/", arg0);
      if (IsExecutableFile(cand)) {
        plan.executable = cand;
        break;
      }
    }
    if (plan.executable.empty()) {
      return absl::NotFoundError(absl::StrCat("instance '", spec.instance_id(), "': '", arg0,
                                              "' not found in PATH '", plan.env["PATH"], "'"));
    }
    // argv[0] as the program sees it: the full path, as a shell would give
    // (python derives sys.prefix from it).
    plan.argv[0] = plan.executable;
  }
  DCU_ASSIGN_OR_RETURN(std::vector<std::string> overlay_notes, PrepareModelOverlay(spec));
  plan.notes.insert(plan.notes.end(), overlay_notes.begin(), overlay_notes.end());
  return plan;
}

void ProcessRuntime::RotateLogs(const std::string& dir) {
  std::error_code ec;
  std::string base = absl::StrCat(dir, "/", kLogFile);
  if (!fs::exists(base, ec)) return;
  for (int i = options_.keep_logs - 1; i >= 1; --i) {
    std::string from = absl::StrCat(base, ".", i);
    if (fs::exists(from, ec)) fs::rename(from, absl::StrCat(base, ".", i + 1), ec);
  }
  if (options_.keep_logs >= 1) {
    fs::rename(base, absl::StrCat(base, ".1"), ec);
  } else {
    fs::remove(base, ec);
  }
}

absl::StatusOr<RuntimeInstance> ProcessRuntime::Start(const dcufleet::v1::InstanceSpec& spec) {
  if (std::string why = ValidateInstanceId(spec.instance_id()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const std::string dir = InstanceDir(spec.instance_id());
  if (auto existing = Inspect(spec.instance_id()); existing.ok() && existing->running) {
    return absl::AlreadyExistsError(absl::StrCat("instance '", spec.instance_id(),
                                                 "' is already running (pid ",
                                                 existing->pid, ")"));
  }
  DCU_ASSIGN_OR_RETURN(LaunchPlan plan, Render(spec));
  // Another server on the port would answer our health checks for us: refuse
  // the launch with the same words vLLM's uvicorn prints, so the controller's
  // diagnosis (port_in_use) picks another port.
  if (spec.port() > 0) {
    if (absl::Status port = common::CheckTcpPortFree(spec.port()); !port.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', ",
          spec.port(), "): address already in use (", port.message(), ")"));
    }
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", dir, "': ", ec.message()));
  RotateLogs(dir);
  fs::remove(absl::StrCat(dir, "/", kExitFile), ec);
  fs::remove(absl::StrCat(dir, "/", kStateFile), ec);
  std::string spec_bytes;
  spec.SerializeToString(&spec_bytes);
  DCU_RETURN_IF_ERROR(common::WriteFileAtomically(absl::StrCat(dir, "/", kSpecFile), spec_bytes));
  {
    // A header in the log says what was launched, for whoever reads it later.
    std::ofstream log(absl::StrCat(dir, "/", kLogFile), std::ios::app);
    log << kLaunchHeader << " '" << spec.instance_id() << "': " << plan.executable;
    for (size_t i = 1; i < plan.argv.size(); ++i) log << " " << plan.argv[i];
    log << "\n";
  }

  absl::Time started = absl::Now();
  DCU_ASSIGN_OR_RETURN(LaunchResult launched, LaunchMonitored(plan, dir));
  {
    absl::MutexLock lock(&mu_);
    monitors_.insert(launched.monitor_pid);
  }
  InstanceState st;
  st.instance_id = spec.instance_id();
  st.pid = launched.server_pid;
  st.boot_id = boot_id_;
  st.monitor_pid = launched.monitor_pid;
  st.started_at_ms = absl::ToUnixMillis(started);
  st.executable = plan.executable;
  st.notes = plan.notes;
  if (auto mstat = common::ReadProcStat(options_.proc_root, launched.monitor_pid); mstat.ok()) {
    st.monitor_start_ticks = mstat->start_ticks;
  }
  auto stat = common::ReadProcStat(options_.proc_root, launched.server_pid);
  // A server that already exited leaves start_ticks 0: it never matches.
  if (stat.ok()) st.start_ticks = stat->start_ticks;
  DCU_RETURN_IF_ERROR(SaveState(dir, st));
  DCU_LOG_INFO("instance '", spec.instance_id(), "' started: pid ", st.pid, " (",
               plan.executable, ")");
  return Inspect(spec.instance_id());
}

void ProcessRuntime::ReapMonitors() {
  absl::MutexLock lock(&mu_);
  for (auto it = monitors_.begin(); it != monitors_.end();) {
    pid_t r = waitpid(*it, nullptr, WNOHANG);
    if (r == *it || (r < 0 && errno == ECHILD)) {
      it = monitors_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<RuntimeInstance> ProcessRuntime::Inspect(absl::string_view instance_id) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  ReapMonitors();
  const std::string dir = InstanceDir(instance_id);
  auto st = LoadState(dir);
  if (!st.ok() && st.status().code() == absl::StatusCode::kNotFound) {
    st = AdoptByMarker(options_.proc_root, boot_id_, dir, instance_id);
  }
  if (!st.ok()) {
    if (st.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
    }
    return st.status();
  }
  RuntimeInstance ri;
  ri.instance_id = st->instance_id;
  ri.kind = std::string(common::RuntimeKindName(dcufleet::v1::RUNTIME_BARE));
  ri.pid = st->pid;
  ri.stop_requested = st->stop_requested;
  ri.started_at = absl::FromUnixMillis(st->started_at_ms);
  ri.log_location = absl::StrCat(dir, "/", kLogFile);
  ri.notes = st->notes;
  if (auto spec_bytes = ReadText(absl::StrCat(dir, "/", kSpecFile)); spec_bytes.ok()) {
    ri.spec.ParseFromString(*spec_bytes);
    common::UpgradeLegacyFields(&ri.spec);  // written by an older agent
  }
  bool same_boot = st->boot_id.empty() || boot_id_.empty() || st->boot_id == boot_id_;
  ri.running = same_boot && ProcessAlive(options_.proc_root, st->pid, st->start_ticks);
  if (ri.running) {
    // Pid and start time match; the marker settles it when /proc lets us read
    // the environment (it does not for other users' processes).
    auto env = ReadProcEnviron(options_.proc_root, st->pid);
    if (env.ok()) {
      auto it = env->find(kInstanceMarkerEnv);
      if (it == env->end() || it->second != st->instance_id) ri.running = false;
    }
  }
  if (!ri.running) {
    ExitStatus es = LoadExit(dir);
    // The server is gone but its monitor may not have written the status
    // yet (it reaps, then writes): give it a moment rather than report
    // "unknown".
    absl::Time wait_until = absl::Now() + absl::Seconds(2);
    while (!es.known && st->monitor_start_ticks != 0 && absl::Now() < wait_until &&
           ProcessAlive(options_.proc_root, st->monitor_pid, st->monitor_start_ticks)) {
      absl::SleepFor(absl::Milliseconds(5));
      es = LoadExit(dir);
    }
    // The monitor may have written the status and exited between the read
    // above and the check that it is alive: read once more (seen as
    // "exit status unknown" for a crash whose code was on disk).
    if (!es.known) es = LoadExit(dir);
    ri.exit_known = es.known;
    ri.exit_code = es.exit_code;
    ri.term_signal = es.term_signal;
    if (es.at_ms > 0) ri.finished_at = absl::FromUnixMillis(es.at_ms);
  } else if (options_.max_log_bytes > 0) {
    std::error_code ec;
    std::string log = ri.log_location;
    auto size = fs::file_size(log, ec);
    if (!ec && static_cast<int64_t>(size) > options_.max_log_bytes) {
      // copytruncate: the server appends (O_APPEND) and goes on at offset 0.
      std::string rotated = absl::StrCat(log, ".1");
      for (int i = options_.keep_logs - 1; i >= 1; --i) {
        std::string from = absl::StrCat(log, ".", i);
        if (fs::exists(from, ec)) fs::rename(from, absl::StrCat(log, ".", i + 1), ec);
      }
      fs::copy_file(log, rotated, fs::copy_options::overwrite_existing, ec);
      if (!ec) truncate(log.c_str(), 0);
    }
  }
  return ri;
}

absl::Status ProcessRuntime::Stop(absl::string_view instance_id, absl::Duration grace) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const std::string dir = InstanceDir(instance_id);
  auto st = LoadState(dir);
  if (!st.ok()) {
    if (st.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
    }
    return st.status();
  }
  DCU_ASSIGN_OR_RETURN(RuntimeInstance ri, Inspect(instance_id));
  // Only a running instance is marked as stopped on request: an instance
  // that had already ended keeps its own story (the sweep still runs).
  if (ri.running && !st->stop_requested) {
    st->stop_requested = true;
    DCU_RETURN_IF_ERROR(SaveState(dir, *st));
  }
  if (ri.running) {
    auto stat = common::ReadProcStat(options_.proc_root, st->pid);
    // The server leads its own group; signal the whole group.
    pid_t target = stat.ok() && stat->pgid == st->pid ? -st->pid : st->pid;
    kill(target, SIGTERM);
    absl::Time deadline = absl::Now() + grace;
    while (absl::Now() < deadline &&
           ProcessAlive(options_.proc_root, st->pid, st->start_ticks)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (ProcessAlive(options_.proc_root, st->pid, st->start_ticks)) {
      DCU_LOG_WARN("instance '", instance_id, "': pid ", st->pid, " outlived its ",
                   absl::FormatDuration(grace), " grace; SIGKILL");
      kill(target, SIGKILL);
    } else {
      // Stragglers of a group whose leader exited on SIGTERM.
      kill(target, SIGKILL);
    }
    deadline = absl::Now() + absl::Seconds(2);
    while (absl::Now() < deadline &&
           ProcessAlive(options_.proc_root, st->pid, st->start_ticks)) {
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  // Sweep: anything still carrying the marker (workers that left the group,
  // children of a parent that was killed) goes too.
  absl::Time deadline = absl::Now() + options_.sweep_timeout;
  std::vector<int> left;
  for (;;) {
    left = FindPidsWithEnv(options_.proc_root, kInstanceMarkerEnv, instance_id);
    if (left.empty() || absl::Now() >= deadline) break;
    for (int pid : left) {
      DCU_LOG_INFO("instance '", instance_id, "': sweeping marked pid ", pid);
      kill(pid, SIGKILL);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  // Give the monitor a moment to record the exit status, then reap it.
  absl::Time exit_deadline = absl::Now() + absl::Seconds(1);
  std::error_code ec;
  while (absl::Now() < exit_deadline && !fs::exists(absl::StrCat(dir, "/", kExitFile), ec)) {
    auto monitor = common::ReadProcStat(options_.proc_root, st->monitor_pid);
    if (!monitor.ok() || monitor->state == 'Z') break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ReapMonitors();
  if (!left.empty()) {
    return absl::InternalError(absl::StrCat("instance '", instance_id, "': ", left.size(),
                                            " process(es) survive SIGKILL, first pid ",
                                            left.front()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RuntimeInstance>> ProcessRuntime::List() {
  std::vector<RuntimeInstance> out;
  std::error_code ec;
  fs::path root = fs::path(options_.state_dir) / "instances";
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    std::string id = entry.path().filename().string();
    if (!ValidateInstanceId(id).empty()) continue;
    auto ri = Inspect(id);
    if (ri.ok()) {
      out.push_back(*std::move(ri));
    } else if (ri.status().code() != absl::StatusCode::kNotFound) {
      DCU_LOG_WARN("instance '", id, "': unreadable state: ", ri.status().message());
    }
  }
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot list '", root.string(), "': ", ec.message()));
  }
  return out;
}

absl::StatusOr<std::vector<RuntimeInstance>> ProcessRuntime::Recover() {
  DCU_ASSIGN_OR_RETURN(std::vector<RuntimeInstance> all, List());
  for (const auto& ri : all) {
    if (ri.running) {
      DCU_LOG_INFO("instance '", ri.instance_id, "': adopted running pid ", ri.pid);
    } else {
      DCU_LOG_INFO("instance '", ri.instance_id, "': found ended",
                   ri.exit_known ? absl::StrCat(" (exit ", ri.exit_code, ", signal ",
                                                ri.term_signal, ")")
                                 : std::string(" (exit status unknown)"));
    }
  }
  return all;
}

namespace {

// Bytes [from, end) of a file, at most the last `max_bytes` of them, and
// where they start. A missing file reads as empty; a file that shrank
// while read gives what was there.
struct FileRange {
  std::string data;
  int64_t start = 0;
  int64_t size = 0;  // the file's size when it was opened
  // `data` begins a line: it starts the file or follows a '\n'. A range cut
  // at a line's end has nothing to drop.
  bool starts_at_line = true;
};

FileRange ReadRange(const std::string& path, int64_t from, size_t max_bytes) {
  FileRange r;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return r;
  r.size = std::max<int64_t>(0, static_cast<int64_t>(in.tellg()));
  int64_t start = std::clamp<int64_t>(from, 0, r.size);
  if (r.size - start > static_cast<int64_t>(max_bytes)) start = r.size - static_cast<int64_t>(max_bytes);
  r.start = start;
  // One byte before the range too, to tell whether it begins a line.
  const int64_t before = start > 0 ? 1 : 0;
  in.seekg(start - before);
  r.data.resize(static_cast<size_t>(r.size - start + before));
  in.read(r.data.data(), static_cast<std::streamsize>(r.data.size()));
  r.data.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  if (before > 0 && !r.data.empty()) {
    r.starts_at_line = r.data.front() == '\n';
    r.data.erase(0, 1);
  }
  return r;
}

// Drops the bytes up to and including the first '\n' of a range that
// does not begin a line (a line cut at its start); returns how many were
// dropped.
int64_t DropPartialFirstLine(std::string* data, bool starts_at_line) {
  if (starts_at_line) return 0;
  size_t nl = data->find('\n');
  size_t cut = nl == std::string::npos ? data->size() : nl + 1;
  data->erase(0, cut);
  return static_cast<int64_t>(cut);
}

// The last `max_bytes` of an instance's log in the order written: the end
// of output.log and, when that whole file was read and it does not start
// with the launch header (it was copy-truncated while running), what
// output.log.1 adds in front. After a restart .1 belongs to the previous
// run: the header is there, and .1 is not read.
struct LogTail {
  FileRange rotated;  // from output.log.1; empty when not read
  FileRange current;
};

LogTail TailOfLog(const std::string& log, size_t max_bytes) {
  LogTail t;
  t.current = ReadRange(log, 0, max_bytes);
  if (t.current.start == 0 && t.current.data.size() < max_bytes &&
      t.current.data.rfind(kLaunchHeader, 0) != 0) {
    t.rotated = ReadRange(absl::StrCat(log, ".1"), 0, max_bytes - t.current.data.size());
  }
  return t;
}

}  // namespace

absl::StatusOr<std::string> ProcessRuntime::ReadLogTail(absl::string_view instance_id,
                                                        size_t max_bytes) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const std::string dir = InstanceDir(instance_id);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  LogTail t = TailOfLog(absl::StrCat(dir, "/", kLogFile), max_bytes);
  return t.rotated.data + t.current.data;
}

absl::StatusOr<LogChunk> ProcessRuntime::ReadLogSince(absl::string_view instance_id,
                                                      int64_t since_offset, size_t max_bytes) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const std::string dir = InstanceDir(instance_id);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  const std::string log = absl::StrCat(dir, "/", kLogFile);
  const std::string rotated = absl::StrCat(log, ".1");
  LogChunk chunk;
  FileRange current;
  std::string before;  // what output.log.1 adds in front of `current`
  bool before_starts_at_line = true;
  if (since_offset < 0) {
    // The tail, less a line its start cut.
    LogTail t = TailOfLog(log, max_bytes);
    current = std::move(t.current);
    current.start += DropPartialFirstLine(&current.data, current.starts_at_line);
    DropPartialFirstLine(&t.rotated.data, t.rotated.starts_at_line);
    before = std::move(t.rotated.data);
  } else {
    const FileRange probe = ReadRange(log, 0, 0);
    if (since_offset <= probe.size) {
      current = ReadRange(log, since_offset, max_bytes);
      chunk.skipped_bytes = current.start - since_offset;
      if (current.start < since_offset) {
        // Truncated between the two opens: nothing this time; the next
        // read finds the position past the end and reads on in .1.
        current = FileRange{};
        current.start = since_offset;
        chunk.skipped_bytes = 0;
      }
    } else if (FileRange old = ReadRange(rotated, since_offset, 0); old.size >= since_offset) {
      // Copy-truncated since that position: the rest of the old content is
      // in output.log.1, then output.log from its start.
      current = ReadRange(log, 0, max_bytes);
      const size_t room = max_bytes - current.data.size();
      if (current.start > 0 || room == 0) {
        chunk.skipped_bytes = (old.size - since_offset) + current.start;
      } else {
        old = ReadRange(rotated, since_offset, room);
        chunk.skipped_bytes = old.start - since_offset;
        before = std::move(old.data);
        before_starts_at_line = old.starts_at_line;
      }
    } else {
      // Neither file reaches that position: the log was replaced.
      current = ReadRange(log, 0, max_bytes);
      chunk.skipped_bytes = -1;
    }
    if (chunk.skipped_bytes > 0) {
      // A cut inside a line skips that line too.
      if (!before.empty()) {
        chunk.skipped_bytes += DropPartialFirstLine(&before, before_starts_at_line);
      } else {
        const int64_t dropped = DropPartialFirstLine(&current.data, current.starts_at_line);
        chunk.skipped_bytes += dropped;
        current.start += dropped;
      }
    } else if (chunk.skipped_bytes == 0 &&
               !(before.empty() ? current.starts_at_line : before_starts_at_line)) {
      // A position inside a line: the rest of a line an earlier read cut and
      // dropped whole (longer than that read's room). Its end is skipped
      // too, or it would arrive as a line of its own; until the line ends
      // no line is answered and the position stays, so the bytes are
      // counted once, when its end is found. What it has so far is the
      // partial line (a bar's latest redraw, for the start-up follower).
      std::string& head = before.empty() ? current.data : before;
      const size_t nl = head.find('\n');
      if (nl == std::string::npos && before.empty()) {
        chunk.partial = std::move(current.data);
        chunk.next_offset = since_offset;
        return chunk;
      }
      const int64_t dropped = DropPartialFirstLine(&head, /*starts_at_line=*/false);
      chunk.skipped_bytes += dropped;
      if (before.empty()) current.start += dropped;
    }
  }
  std::string text = before + current.data;
  int64_t end = current.start + static_cast<int64_t>(current.data.size());
  // A last line without its '\n' is still being written: it waits.
  const size_t last_nl = text.rfind('\n');
  const size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
  const int64_t partial = static_cast<int64_t>(text.size() - complete);
  if (partial <= static_cast<int64_t>(current.data.size())) {
    chunk.partial = text.substr(complete);
    text.resize(complete);
    end -= partial;
  } else {
    // The unfinished line began in output.log.1: its start cannot be asked
    // for again, so it is given as it is.
    text.push_back('\n');
  }
  chunk.text = std::move(text);
  chunk.next_offset = end;
  return chunk;
}

absl::Status ProcessRuntime::Remove(absl::string_view instance_id) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  auto ri = Inspect(instance_id);
  if (!ri.ok()) {
    if (ri.status().code() == absl::StatusCode::kNotFound) {
      std::error_code ec;
      fs::remove_all(InstanceDir(instance_id), ec);
      return absl::OkStatus();
    }
    return ri.status();
  }
  if (ri->running) {
    return absl::FailedPreconditionError(
        absl::StrCat("instance '", instance_id, "' is running (pid ", ri->pid, ")"));
  }
  std::error_code ec;
  fs::remove_all(InstanceDir(instance_id), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot remove '", InstanceDir(instance_id), "': ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace dcu::agent
