#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dcu::common {

struct ProcessOptions {
  // Killed (SIGKILL to its process group) after this long; the result then
  // has timed_out = true. Infinite means wait forever.
  absl::Duration timeout = absl::Seconds(30);
  // When set, the child gets exactly this environment; otherwise the parent's.
  bool replace_env = false;
  std::map<std::string, std::string> env;
  std::string working_dir;
  // Captured output is cut to this many bytes per stream (the tail is kept).
  size_t max_output_bytes = 4 << 20;
  std::string stdin_data;
  // Called on the calling thread with each piece of output as it is read
  // (1: stdout, 2: stderr), besides capturing it: a child that runs for
  // long and whose output matters while it runs (`docker attach`).
  std::function<void(int stream, absl::string_view data)> on_output;
  // Checked at least every 100 ms; once true, the child's process group is
  // killed and Run returns (`cancelled` set).
  const std::atomic<bool>* cancel = nullptr;
};

struct ProcessOutput {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // the signal, when killed by one
  bool timed_out = false;
  bool cancelled = false;  // ended through ProcessOptions::cancel
  std::string stdout_data;
  std::string stderr_data;
};

// Runs short-lived external programs (SMI tools, the memprobe helper, the
// container CLI). argv is executed directly, never through a shell.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Returns the result of a program that ran (whatever its exit code), or
  // NOT_FOUND when argv[0] cannot be executed, INVALID_ARGUMENT for an empty
  // argv, INTERNAL when the process could not be created.
  virtual absl::StatusOr<ProcessOutput> Run(const std::vector<std::string>& argv,
                                            const ProcessOptions& options) = 0;
};

// fork/exec based runner: the child gets its own process group so a timeout
// kills it and everything it started.
class SubprocessRunner : public ProcessRunner {
 public:
  absl::StatusOr<ProcessOutput> Run(const std::vector<std::string>& argv,
                                    const ProcessOptions& options) override;
};

}  // namespace dcu::common
