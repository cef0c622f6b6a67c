#include "common/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dcu::common {
namespace {

void AppendCapped(std::string* out, const char* data, size_t n, size_t cap) {
  out->append(data, n);
  if (out->size() > cap) out->erase(0, out->size() - cap);
}

}  // namespace

absl::StatusOr<ProcessOutput> SubprocessRunner::Run(const std::vector<std::string>& argv,
                                                    const ProcessOptions& options) {
  if (argv.empty() || argv[0].empty()) return absl::InvalidArgumentError("empty argv");
  int out_pipe[2], err_pipe[2], in_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC) ||
      pipe2(exec_pipe, O_CLOEXEC)) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  // Build everything the child needs before fork: only async-signal-safe
  // calls happen between fork and exec.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (options.replace_env) {
    for (const auto& [k, v] : options.env) env_strings.push_back(absl::StrCat(k, "=", v));
  } else {
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      size_t eq = kv.find('=');
      if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : options.env) merged[k] = v;
    for (const auto& [k, v] : merged) env_strings.push_back(absl::StrCat(k, "=", v));
  }
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) {
      int e = errno;
      ssize_t w = write(exec_pipe[1], &e, sizeof(e));
      (void)w;
      _exit(127);
    }
    execve(args[0], args.data(), envp.data());
    if (errno == ENOENT && argv[0].find('/') == std::string::npos) {
      execvpe(args[0], args.data(), envp.data());
    }
    int e = errno;
    ssize_t w = write(exec_pipe[1], &e, sizeof(e));
    (void)w;
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  close(exec_pipe[0]);
  if (got == sizeof(exec_errno)) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(in_pipe[1]);
    waitpid(pid, nullptr, 0);
    return absl::NotFoundError(absl::StrCat("cannot execute '", argv[0], "': ", strerror(exec_errno)));
  }
  if (!options.stdin_data.empty()) {
    signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(in_pipe[1], options.stdin_data.data(), options.stdin_data.size());
    (void)w;
  }
  close(in_pipe[1]);

  ProcessOutput result;
  absl::Time deadline = options.timeout == absl::InfiniteDuration()
                            ? absl::InfiniteFuture()
                            : absl::Now() + options.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (options.cancel != nullptr && options.cancel->load()) {
      result.cancelled = true;
      break;
    }
    int wait_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    }
    if (options.cancel != nullptr && (wait_ms < 0 || wait_ms > 100)) wait_ms = 100;
    int rc = poll(fds, 2, wait_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        AppendCapped(i == 0 ? &result.stdout_data : &result.stderr_data, buf,
                     static_cast<size_t>(n), options.max_output_bytes);
        if (options.on_output) options.on_output(i + 1, absl::string_view(buf, static_cast<size_t>(n)));
      }
    }
  }
  if (result.timed_out || result.cancelled) kill(-pid, SIGKILL);
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever the child left in its group (grandchildren) goes too on timeout.
  if (result.timed_out || result.cancelled) kill(-pid, SIGKILL);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = -1;
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace dcu::common
