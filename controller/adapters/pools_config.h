#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dcufleet/v1/pool.pb.h"

namespace dcu::controller {

// Reads `dcu-controller --pools FILE` (a text-format PoolsConfig,
// docs/slurm.md). INVALID_ARGUMENT with FILE:LINE:COLUMN for a parse
// error, NOT_FOUND for a missing file; the pools' own rules are checked by
// NodePool::Create.
absl::StatusOr<dcufleet::v1::PoolsConfig> LoadPoolsConfigFile(const std::string& path);

}  // namespace dcu::controller
