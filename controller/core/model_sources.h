#pragma once

// Where a node that lacks a model copies it from (issue 19, distribution):
// the one home of that choice. Pure: it reads the node views (what each
// agent last reported: its model directories with their weights verdicts,
// its ModelTransferService port) and the catalog's matching of directories
// to models.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::controller {

struct ModelCopyPlan {
  std::string model_dir;       // the directory's name under the model root
  std::string source_node;
  std::string source_address;  // HOST:PORT of its ModelTransferService
  std::string source_path;     // the directory on the source node
};

// The copy of `model` (a catalog name, matched through `dirs`, or a
// directory name) to use for `target`. Candidates: Ready nodes other than
// the target that report the directory with a verdict that is not DAMAGED
// and serve peers (inventory.transfer_port). Nearest first: CLEAN before
// NOT_VERIFIED, then the address sharing the longest prefix with the
// target's (same rack / subnet), then the name. `from` (non-empty) forces
// the source node. Errors, each naming the nodes and why each was passed
// over: NOT_FOUND (target unknown, no usable copy), FAILED_PRECONDITION
// (target not Ready, or it has a damaged copy: the agent never writes over
// a directory), ALREADY_EXISTS (the target already has a clean or
// unverified copy).
absl::StatusOr<ModelCopyPlan> PickModelSource(const std::string& model, const std::string& target,
                                              const std::string& from,
                                              const std::vector<dcufleet::v1::NodeView>& nodes,
                                              const std::vector<dcufleet::v1::NodeModelDirectory>& dirs);

}  // namespace dcu::controller
