#pragma once

// The Slurm job a dcu-agent runs inside (issue 20): which devices the job
// was given, its id, partition and end time. The one home of what Slurm's
// variables and outputs mean; InventoryCollector only filters by the
// indices it yields (InventoryOptions::allocation).
//
// What Slurm 22.05 sets (measured, tests/integration/slurm/slurm_cluster_test):
// - Always: SLURM_JOB_ID, SLURM_JOB_PARTITION, SLURMD_NODENAME,
//   SLURM_CLUSTER_NAME. No SLURM_JOB_END_TIME (newer Slurm has it).
// - GRES "gpu" with gres.conf File=: SLURM_JOB_GPUS (SLURM_STEP_GPUS inside
//   srun), ROCR_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL;
//   never HIP_VISIBLE_DEVICES. SLURM_*_GPUS are indices into gres.conf's
//   File list, i.e. the node's device ordinals when gres.conf lists the
//   devices in ordinal order (docs/slurm.md).
// - GRES "dcu" (no gres/dcu plugin in Debian's build): no device variable
//   at all; `scontrol -d show job ID` names them per node:
//   `Nodes=n1 CPU_IDs=1 Mem=0 GRES=dcu:2(IDX:3-4)`.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/process_runner.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// The variables read, in the order they are trusted for the device list:
// Slurm's own indices first (absolute ordinals even under a device cgroup),
// then the vendor variables a site's plugin or prolog may set.
inline constexpr const char* kSlurmDeviceVariables[] = {
    "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};

// Device index lists as Slurm writes them: "0,1,3", ranges "3-5", mixed
// "0,2-3". INVALID_ARGUMENT naming `what` and the value for anything else
// (UUIDs, negative or > 1023, duplicates, empty items, over 4096 chars).
absl::StatusOr<std::vector<int>> ParseDeviceIndexList(absl::string_view value, absl::string_view what);

// Reads the job from an environment. nullopt (not an error) when
// SLURM_JOB_ID is absent: the agent is not in a job. INVALID_ARGUMENT,
// naming the variable and its value, for a hostile or malformed one. The
// result's device_indices is empty and devices_from "" when no variable
// names devices (GRES "dcu"): ask scontrol (ResolveSlurmJob). end_time_ms
// comes from SLURM_JOB_END_TIME (epoch seconds) when set.
absl::StatusOr<std::optional<dcufleet::v1::NodeAllocation>> ParseSlurmEnvironment(
    const std::map<std::string, std::string>& env);

// The IDX list of `node` in `scontrol -d show job` output, for the GRES
// named gres_name ("" = any). NOT_FOUND when the output has no line for the
// node (a job on other nodes) or the line has no indexed GRES;
// INVALID_ARGUMENT for a malformed IDX list.
absl::StatusOr<std::vector<int>> ParseScontrolGresIndices(absl::string_view scontrol_output,
                                                          absl::string_view node,
                                                          absl::string_view gres_name = "");

// squeue -o %e under SLURM_TIME_FORMAT=%s: epoch seconds; "N/A", "Unknown"
// or "NONE" (no time limit) → 0. INVALID_ARGUMENT for anything else.
absl::StatusOr<int64_t> ParseSlurmEpoch(absl::string_view text, absl::string_view what);

struct SlurmQueryOptions {
  std::string squeue = "squeue";
  std::string scontrol = "scontrol";
  absl::Duration timeout = absl::Seconds(10);
  // Added to the commands' environment (SLURM_CONF in tests).
  std::map<std::string, std::string> env;
};

// Completes an allocation parsed from the environment with what only the
// controller knows: the end time (`squeue -h -j ID -o %e`, epoch) when the
// environment lacks it, and the device indices (`scontrol -d show job ID`)
// when no variable named them. A job whose devices cannot be read at all is
// an error (FAILED_PRECONDITION naming the job and what was tried): better
// refuse to start than report devices another job holds. An end time that
// cannot be read is not: it is left 0 and the reason returned in `notes`.
absl::Status ResolveSlurmJob(common::ProcessRunner& runner, const SlurmQueryOptions& options,
                             dcufleet::v1::NodeAllocation* allocation, std::vector<std::string>* notes);

}  // namespace dcu::agent
