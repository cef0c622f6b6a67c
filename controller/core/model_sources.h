#pragma once

// Where a node that lacks a model copies it from (issue 19, distribution):
// the one home of that choice. Pure: it reads the node views (what each
// agent last reported: its model directories with their weights verdicts,
// its ModelTransferService port) and the catalog's matching of directories
// to models.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::controller {

struct ModelCopyPlan {
  std::string model_dir;       // the directory's name under the model root
  std::string source_node;
  std::string source_address;  // HOST:PORT of its ModelTransferService
  std::string source_path;     // the directory on the source node
  // Or an HTTP mirror laid out like a Hugging Face repository (source_node
  // and source_address empty): its URL and the repository.
  std::string mirror_url;
  std::string repo;
  // Or a shared file system's directory the target node mounts, holding
  // model_dir (source_node, source_address and mirror_url empty).
  std::string shared_dir;
  // For messages: "node 'node-a' (/models/Qwen3-32B)", "mirror
  // http://mirror:8080/Qwen/Qwen3-32B" or "shared directory
  // /lustre/models/Qwen3-32B".
  std::string From() const;
  // The command that asks the target's agent to make this copy.
  dcufleet::v1::FetchModelCommand ToCommand() const;
  // What the target's agent reports as the copy's source address
  // (ModelTransfer.source_address), to tell which source a failure was of.
  std::string SourceAddress() const;
};

// Where a fleet's models come from when no node has a usable copy, nearest
// first: a shared file system's directory of models every node mounts
// (dcu-controller --model-shared-dir; each agent must list it in
// --shared-model-root) and an HTTP mirror of the hub (--model-mirror), with
// the catalog's repository for the model ("Qwen/Qwen3-32B"; its last part is
// the directory's name in both). Empty fields: none.
struct ModelOrigins {
  std::string shared_dir;
  std::string url;
  std::string repo;
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

// The copy a launch of `model` on `target` needs first (the scheduler's
// copy-first placement, issue 19): the nearest usable copy by
// PickModelSource over `views`, where `path_on_node` (the catalog's
// ModelPathOnNode: damaged copies never qualify) says where each node holds
// it. A copy of it the target reports FAILED is an error naming the source
// and the failure (FAILED_PRECONDITION; a corrupt source is not fetched
// again and again: `dcuctl model copy` retries), so the scheduler passes
// the node over; one it reports RUNNING is the plan (the launch waits).
// When no node has a usable copy, the copy comes from `origins`: the shared
// directory, then the mirror (a node's copy is known to exist and verified,
// so it is preferred). An origin the target already failed to copy from
// (not there, damaged) is passed over for the next one.
absl::StatusOr<ModelCopyPlan> PlanCopyBeforeLaunch(
    const std::string& model, const dcufleet::v1::NodeView& target,
    const std::vector<const dcufleet::v1::NodeView*>& views,
    const std::function<std::string(const dcufleet::v1::NodeView&)>& path_on_node, const ModelOrigins& origins = {});

// The plan for copying `model` to `target` from the first of `origins` that
// the target has not already failed to copy it from (its reported
// transfers), or NOT_FOUND when none is configured (`why_no_node`: why no
// node could serve it, kept in the message), FAILED_PRECONDITION naming the
// last failure when every origin failed — unless `person_retries` (dcuctl
// model copy): then the first origin again.
absl::StatusOr<ModelCopyPlan> PlanOriginCopy(const std::string& model, const ModelOrigins& origins,
                                             const dcufleet::v1::NodeView& target, const absl::Status& why_no_node,
                                             bool person_retries = false);

// `dcuctl model copy MODEL --to NODE --from-dir DIR`: the copy of `model`
// (its directory: the last part of `repo`, else `model` itself) from the
// shared directory `dir` on the target itself. INVALID_ARGUMENT for a
// relative or hostile path.
absl::StatusOr<ModelCopyPlan> PlanSharedDirCopy(const std::string& model, const std::string& repo,
                                                const std::string& dir);

// The target's report of its copy of `model_dir` (null when none).
const dcufleet::v1::ModelTransfer* FindTransfer(const dcufleet::v1::NodeView& node, const std::string& model_dir);

}  // namespace dcu::controller
