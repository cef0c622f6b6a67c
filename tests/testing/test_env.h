#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace dcu::testing {

// Source root and binary dir, from the environment dcu_test() sets.
std::string SourceDir();
// A TCP port free on loopback now (bound to port 0, then released; 0 when
// none could be had): for servers a test starts on a port it names.
int FreeLoopbackPort();
std::string BinDir();
std::string BinPath(const std::string& name);

// A fresh temporary directory, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A real child process (fork/exec, its own process group), stdout+stderr to a
// log file. Killed with SIGKILL on destruction if still running.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> argv, std::string log_path,
               std::map<std::string, std::string> extra_env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int sig);
  // Waits for exit; returns the exit code, 128+signal, or -1 on timeout.
  int Wait(absl::Duration timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::string log_path_;
};

// Polls `pred` every `poll` until true or `timeout`.
bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout,
             absl::Duration poll = absl::Milliseconds(50));

std::string ReadFileOrEmpty(const std::string& path);

}  // namespace dcu::testing
