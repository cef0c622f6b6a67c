#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// The environment variable that marks every process of an instance. The
// stale-process sweep and the holder scan find instances by it.
inline constexpr char kInstanceMarkerEnv[] = "DCUFLEET_INSTANCE";
// The instance's serving port, exported to its environment.
inline constexpr char kInstancePortEnv[] = "DCUFLEET_PORT";

// What a runtime observes about one instance: process or container facts
// only. Health and phases are the supervisor's business.
struct RuntimeInstance {
  std::string instance_id;
  // "bare" or "container".
  std::string kind;
  bool running = false;
  // Main process (bare) or the container's init process as the host sees it.
  int pid = 0;
  std::string container_id;
  // Valid when !running. exit_known is false when the instance ended while
  // nobody could observe how (e.g. its monitor was killed).
  bool exit_known = false;
  // Exit status; -1 when it was killed by a signal (see term_signal).
  int exit_code = -1;
  int term_signal = 0;
  // Whether Stop() was called while it was running.
  bool stop_requested = false;
  absl::Time started_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  // Where its output goes: a file path, or "docker logs NAME".
  std::string log_location;
  // Notes about how it was launched, e.g. devices skipped.
  std::vector<std::string> notes;
  // The spec it was started from (restored from disk by Recover()).
  dcufleet::v1::InstanceSpec spec;
};

// What ReadLogSince answers.
struct LogChunk {
  std::string text;            // complete lines, each ending in '\n'
  int64_t next_offset = 0;     // the position just after `text`
  // Written after the position asked for but not in `text` (more than
  // max_bytes arrived); -1 when the log was replaced (an earlier position
  // no longer exists in it) and `text` is read from its start.
  int64_t skipped_bytes = 0;
  // The line still being written after `text` (no '\n' yet: a progress
  // bar's latest redraw), not covered by next_offset: the next read gives
  // it again, whole once it ends. Empty where the runtime gives whole lines.
  std::string partial;
};

// Runs instances on this node: a bare process from a conda env, a container,
// or a fake. After Mesos' Containerizer: launch, destroy, status, containers
// and recover.
//
// Implementations are thread-safe. Methods that talk to the outside (fork,
// the container CLI) may block for seconds; callers must not hold locks.
class Runtime {
 public:
  virtual ~Runtime() = default;

  // "bare", "container", "fake".
  virtual std::string kind() const = 0;

  // Launches the instance described by `spec` and returns at once, without
  // waiting for it to serve. Returns INVALID_ARGUMENT for a spec that cannot
  // be rendered (empty id or argv, bad id characters), NOT_FOUND when the env,
  // executable, image or a source script is missing, ALREADY_EXISTS when an
  // instance with this id is running, INTERNAL when the process or container
  // could not be created. A record of an ended instance with the same id is
  // replaced.
  virtual absl::StatusOr<RuntimeInstance> Start(const dcufleet::v1::InstanceSpec& spec) = 0;

  // Stops the instance: SIGTERM (or `docker stop`), waits up to `grace`, then
  // SIGKILL, then sweeps every process still carrying the instance marker.
  // Idempotent: OK for an instance that has already ended. The record stays
  // (logs remain readable) until Remove(). NOT_FOUND for an unknown id;
  // INTERNAL when processes survive SIGKILL (named in the message).
  virtual absl::Status Stop(absl::string_view instance_id, absl::Duration grace) = 0;

  // Observes one instance. NOT_FOUND for an unknown id.
  virtual absl::StatusOr<RuntimeInstance> Inspect(absl::string_view instance_id) = 0;

  // Every instance this runtime has a record of, running or ended.
  virtual absl::StatusOr<std::vector<RuntimeInstance>> List() = 0;

  // Called once after an agent restart: finds the instances started by an
  // earlier agent (state files: pid + start time + marker; container labels)
  // and adopts them. Never kills, restarts or duplicates anything.
  virtual absl::StatusOr<std::vector<RuntimeInstance>> Recover() = 0;

  // The last `max_bytes` of the instance's combined stdout/stderr, in the
  // order written. NOT_FOUND for an unknown id.
  virtual absl::StatusOr<std::string> ReadLogTail(absl::string_view instance_id,
                                                  size_t max_bytes) = 0;

  // Following a log (dcuctl logs -f): the complete lines written after
  // position `since_offset` of the instance's log (at most the last
  // `max_bytes` of them), and the position to continue from; with
  // since_offset < 0, the tail and its position. A position is the
  // runtime's own: a byte offset of a bare instance's log, a line stamp in
  // nanoseconds of a container's. A partial last line waits for its end.
  // UNIMPLEMENTED (the default) where the log has no positions: the caller
  // then compares tails.
  virtual absl::StatusOr<LogChunk> ReadLogSince(absl::string_view instance_id, int64_t since_offset,
                                                size_t max_bytes) {
    (void)instance_id, (void)since_offset, (void)max_bytes;
    return absl::UnimplementedError("this runtime's logs have no positions");
  }

  // Forgets an instance that is not running: its record, logs and (for
  // containers) the container itself. FAILED_PRECONDITION while running; OK
  // for an unknown id.
  virtual absl::Status Remove(absl::string_view instance_id) = 0;
};

// Returns "" when `id` is usable as an instance id (common::InstanceIdProblem:
// 1-128 chars of [A-Za-z0-9._-], starting with a letter or digit), else a
// message naming the id and what is wrong with it.
std::string ValidateInstanceId(absl::string_view id);

}  // namespace dcu::agent
