#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// Reads a conda env (or venv) at `prefix` the way an agent reports it: kind
// "bare", location = prefix, package_versions for vllm, sglang, torch,
// triton, pytorch-triton-rocm, flash_attn, transformers (from
// lib/pythonX.Y/site-packages/*.dist-info, METADATA's Version line first,
// else the directory name) and "python" (X.Y). NOT_FOUND when `prefix` has no
// lib/python*/site-packages.
absl::StatusOr<dcufleet::v1::RuntimeEnvironment> ReadCondaEnvironment(const std::string& prefix);

// Every env under the roots: each root itself when it is an env, and its
// direct children (conda's envs/ layout). Unreadable entries are skipped.
std::vector<dcufleet::v1::RuntimeEnvironment> DiscoverCondaEnvironments(
    const std::vector<std::string>& roots);

}  // namespace dcu::agent
