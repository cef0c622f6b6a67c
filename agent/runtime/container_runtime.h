#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/runtime/attached_tail.h"

#include "agent/runtime/env_recipe.h"
#include "agent/runtime/runtime.h"
#include "common/enum_names.h"
#include "common/process_runner.h"

namespace dcu::agent {

struct ContainerRuntimeOptions {
  // "docker" or "podman" (same CLI surface for what is used here).
  std::string cli = "docker";
  // Specs of started containers: <state_dir>/containers/<id>/spec.binpb.
  std::string state_dir;
  // Device nodes passed with --device.
  std::vector<std::string> devices = {"/dev/kfd", "/dev/dri"};
  // Devices absent on the host (test machines) are skipped with a note
  // instead of failing the start.
  bool skip_missing_devices = true;
  std::vector<std::string> group_add = {"video"};
  std::string default_shm_size = "16g";
  // Host directories mounted read-only at the same path where present
  // (the DCU driver's user-space libraries).
  std::vector<std::string> readonly_host_mounts = {"/opt/hyhal"};
  // Where presence of devices and host mounts is checked ("/" in production).
  std::string host_root = "/";
  std::string name_prefix = "dcufleet-";
  // Shell inside the image, used only when the spec has source_scripts.
  std::string image_bash = "/bin/bash";
  absl::Duration cli_timeout = absl::Seconds(120);
};

// Runs an instance as a container through the docker (or podman) CLI:
//   run -d --name dcufleet-<id> --label dcufleet.instance=<id>
//       --label dcufleet.state-dir=<state_dir> --device /dev/kfd --device /dev/dri --group-add video --ipc host
//       --network host --shm-size S [-v /opt/hyhal:/opt/hyhal:ro]
//       -v MODEL:MODEL:ro [-v OVERLAY:OVERLAY:ro] -e K=V...
//       --entrypoint ARGV0 IMAGE ARGV1...
// then inspect, logs, stop, rm. List() and Recover() find containers by
// label, and only those this runtime's state directory started: another
// agent on the same host (a second Slurm allocation, a test beside this one)
// has its own state directory, and its containers are not this one's to
// adopt or stop.
class ContainerRuntime final : public Runtime {
 public:
  // INVALID_ARGUMENT when state_dir or cli is empty. `runner` is not owned
  // and must outlive the runtime.
  static absl::StatusOr<std::unique_ptr<ContainerRuntime>> Create(
      ContainerRuntimeOptions options, common::ProcessRunner* runner);

  std::string kind() const override {
    return std::string(common::RuntimeKindName(dcufleet::v1::RUNTIME_CONTAINER));
  }
  absl::StatusOr<RuntimeInstance> Start(const dcufleet::v1::InstanceSpec& spec) override;
  absl::Status Stop(absl::string_view instance_id, absl::Duration grace) override;
  absl::StatusOr<RuntimeInstance> Inspect(absl::string_view instance_id) override;
  absl::StatusOr<std::vector<RuntimeInstance>> List() override;
  absl::StatusOr<std::vector<RuntimeInstance>> Recover() override;
  absl::StatusOr<std::string> ReadLogTail(absl::string_view instance_id,
                                          size_t max_bytes) override;
  // Positions are the engine's line stamps in nanoseconds (`logs
  // --timestamps --since`), not bytes. `partial` is the line the container
  // is still writing, from an `attach` started at the first read of the
  // instance (AttachedTail) and ended once nobody reads it for a minute.
  absl::StatusOr<LogChunk> ReadLogSince(absl::string_view instance_id, int64_t since_offset,
                                        size_t max_bytes) override;
  absl::Status Remove(absl::string_view instance_id) override;

  // The `run` argv (without the CLI itself) Start() would use, and notes
  // (devices skipped, mounts absent). Inspects the image for its environment.
  absl::StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> RenderRunArgs(
      const dcufleet::v1::InstanceSpec& spec);

  // Whether the engine answers (`CLI version`); UNAVAILABLE with the reason.
  absl::Status CheckEngine();

  std::string ContainerName(absl::string_view instance_id) const;

 private:
  ContainerRuntime(ContainerRuntimeOptions options, common::ProcessRunner* runner);

  absl::StatusOr<common::ProcessOutput> Cli(const std::vector<std::string>& args,
                                            absl::Duration timeout);
  absl::StatusOr<EnvMap> ImageEnv(const std::string& image);
  // A line of `logs --timestamps` and its stamp (InfinitePast when it has
  // none), the stream it came from (1: stdout, 2: stderr), and whether it
  // is a whole number of the log driver's 16 KiB pieces (kLogPieceBytes),
  // so possibly the start of a line still being written.
  struct TimedLine {
    absl::Time at;
    std::string text;
    int stream = 1;
    bool whole_pieces = false;
  };
  // `logs --timestamps SELECTION NAME`, both streams, in stamp order.
  absl::StatusOr<std::vector<TimedLine>> ReadTimedLines(absl::string_view instance_id,
                                                        const std::vector<std::string>& selection);
  std::string SpecDir(absl::string_view instance_id) const;
  // Whether a container listed with these labels is this runtime's.
  bool Owns(absl::string_view instance_id, absl::string_view state_dir_label) const;

  const ContainerRuntimeOptions options_;
  // The state directory, absolute: the value of the owner label.
  const std::string owner_;
  common::ProcessRunner* runner_;

  // The attach of a container being read (ReadLogSince), started on the
  // first read (`*started` set then); `now`: when it is read.
  std::shared_ptr<AttachedTail> TailOf(absl::string_view instance_id, absl::Time now, bool* started);
  // Ends tails nobody read for kTailIdle, and `instance_id`'s when given
  // (the container stops or goes).
  void EndTails(absl::Time now, absl::string_view instance_id = "");
  static constexpr absl::Duration kTailIdle = absl::Seconds(60);
  absl::Mutex tails_mu_;
  std::map<std::string, std::shared_ptr<AttachedTail>, std::less<>> tails_ ABSL_GUARDED_BY(tails_mu_);
};

}  // namespace dcu::agent
