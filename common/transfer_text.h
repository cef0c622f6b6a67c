#pragma once

#include <string>

#include "dcufleet/v1/types.pb.h"

namespace dcu::common {

// One line for a model copy as a person reads it, e.g. "copying Qwen3-32B
// from node-a: 12.0 GiB of 61.0 GiB (19%), 95.4 MiB/s, ETA 9m1s
// [model-00004-of-00017.safetensors]" — the one rendering, used by `dcuctl
// model copy --wait` and by the controller's message for a deployment that
// waits for its copy (deploy --watch, describe).
std::string DescribeModelTransfer(const dcufleet::v1::ModelTransfer& transfer);

}  // namespace dcu::common
