#pragma once

// Helpers for node-truth tests: temporary copies of fixture trees, real
// child processes that hold files, running code as an unprivileged user.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/proc_stat.h"
#include "gtest/gtest.h"

namespace dcu::testing {

// A temporary directory removed at destruction, readable by everyone (so a
// child running as nobody can traverse it).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/dcu-nt-XXXXXX";
    char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    // Restore modes tests took away so removal works.
    for (auto it = std::filesystem::recursive_directory_iterator(
             path_, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      chmod(it->path().c_str(), it->is_directory() ? 0755 : 0644);
    }
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string FixtureRoot(const std::string& scenario) {
  return std::string(DCU_FIXTURES) + "/" + scenario + "/root";
}

// Copies a fixture scenario's root into `dir`/root and returns that path.
inline std::string CopyFixture(const std::string& scenario, const std::string& dir) {
  std::string dst = dir + "/root";
  std::filesystem::copy(FixtureRoot(scenario), dst, std::filesystem::copy_options::recursive);
  return dst;
}

inline void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

// A real process started from /bin/sh -c SCRIPT with exactly `env`. Its
// stdout is a pipe; ReadLine() blocks for the next line (the scripts print
// "ready" once their fds are open). Killed with SIGKILL and waited for at
// destruction unless Release()d.
class ChildProcess {
 public:
  ChildProcess(const std::string& script, const std::map<std::string, std::string>& env) {
    int p[2];
    if (pipe(p) != 0) return;
    std::vector<std::string> env_s;
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    if (!env.count("PATH")) env_s.push_back("PATH=/usr/bin:/bin");
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      close(p[0]);
      close(p[1]);
      setpgid(0, 0);
      const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
      execve("/bin/sh", const_cast<char**>(argv), envp.data());
      _exit(127);
    }
    close(p[1]);
    out_ = fdopen(p[0], "r");
  }
  ~ChildProcess() {
    if (out_) fclose(out_);
    if (pid_ > 0 && !released_) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  // ReadLine() for the scripts that print "ready" and then `exec sleep`:
  // after "ready" it also waits for that exec to finish. Until then a scan
  // may read the process mid-exec, when the kernel shows its environ empty
  // for a moment (the new image's stack is not set up yet): an instance
  // marker is not seen and a managed or leftover holder is classed as
  // unmanaged (a fresh-Debian run of scripts/test saw exactly that).
  std::string ReadReady() {
    std::string line = ReadLine();
    if (line != "ready") return line;
    const std::string proc = "/proc/" + std::to_string(pid_);
    for (int i = 0; i < 5000; ++i) {
      std::ifstream comm(proc + "/comm");
      std::string name;
      std::getline(comm, name);
      std::ifstream environ(proc + "/environ");
      // PATH is always in the environment (the constructor adds it).
      if (name == "sleep" && environ.peek() != std::ifstream::traits_type::eof()) return line;
      usleep(1000);
    }
    return "ready, but the exec of sleep did not finish within 5 s";
  }
  std::string ReadLine() {
    char buf[256];
    if (!out_ || !fgets(buf, sizeof(buf), out_)) return "";
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }
  // Waits for the process (after it was killed by someone else).
  int Wait() {
    int st = 0;
    if (pid_ > 0) waitpid(pid_, &st, 0);
    released_ = true;
    return st;
  }
  void Release() { released_ = true; }

 private:
  int pid_ = -1;
  FILE* out_ = nullptr;
  bool released_ = false;
};

// State letter from /proc/PID/stat, or 0 when the process is gone.
inline char ProcState(int pid) {
  auto stat = common::ReadProcStat("/proc", pid);
  return stat.ok() ? stat->state : 0;
}

// True when the process is gone or a zombie.
inline bool Ended(int pid) {
  char s = ProcState(pid);
  return s == 0 || s == 'Z' || s == 'X';
}

// Runs `fn` in a forked child that dropped to uid/gid 65534 (root bypasses
// file modes, so EACCES can only be seen this way) and returns its string.
inline std::string RunAsNobody(const std::function<std::string()>& fn) {
  // Already unprivileged (the agent's tests also run as nobody, issue 20):
  // permissions bind as they are, nothing to drop.
  if (geteuid() != 0) return fn();
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string out;
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      out = "cannot drop privileges";
    } else {
      out = fn();
    }
    ssize_t w = write(p[1], out.data(), out.size());
    (void)w;
    close(p[1]);
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

}  // namespace dcu::testing
