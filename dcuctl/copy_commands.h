#pragma once

// `dcuctl model copy MODEL --to NODE [--from NODE] [--wait] [--timeout S]`
// (issue 19, distribution): asks the controller to copy a model directory to
// a node from the nearest verified clean copy on another node. MODEL is a
// catalog name (qwen3-32b) or a directory name (Qwen3-32B). Without --wait it
// returns once the target agent started the copy; with --wait it follows the
// target's report (bytes, rate, ETA) until the copy is verified and in place
// or refused. Exit codes: 0 copied (or started), 1 refused/failed/timed out,
// 3 no usable copy or unknown node, 4 controller unreachable.

#include <ostream>
#include <string>

#include "dcuctl/client.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::dcuctl {

struct ModelCopyArgs {
  std::string model;
  std::string to;
  std::string from;
  std::string from_dir;  // a shared file system's directory on the target
  bool wait = false;
  double timeout_s = 3600;
};
int RunModelCopy(Client& client, const ModelCopyArgs& args, std::ostream& out, std::ostream& err);

// A transfer is rendered by common::DescribeModelTransfer (one line).

}  // namespace dcu::dcuctl
