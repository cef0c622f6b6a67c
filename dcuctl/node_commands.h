#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::dcuctl {

// dcuctl get nodes [-o table|wide|json|yaml]
// All nodes, or (`get node NAME`) one.
int RunGetNodes(Client& client, const std::string& name, std::ostream& out, std::ostream& err);
// dcuctl describe node NAME [-o json|yaml]
int RunDescribeNode(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

// `get nodes`' table and one node's row of it (--watch prints rows).
Table NodesTable(const dcufleet::v1::ListNodesResponse& resp, bool wide);
std::vector<std::string> NodeRow(const dcufleet::v1::NodeView& node, bool wide);

// The human description of one node (used by describe and tests).
void PrintNodeDescription(const dcufleet::v1::NodeView& node, std::ostream& out);

// dcuctl cordon NODE, drain NODE, uncordon NODE (kubectl's): a cordoned node
// gets no new replicas and keeps what it runs; a drained one also has its
// replicas moved elsewhere, each only once its replacement is Ready. Kept by
// the controller across restarts. Exit 0; 3 no such node; 1 a drain --wait
// that timed out.
struct CordonArgs {
  enum class Action { kCordon, kDrain, kUncordon };
  Action action = Action::kCordon;
  std::string node;
  std::string reason;
  // drain: wait until no replica is on the node (0 = forever).
  bool wait = false;
  double timeout_s = 600;
};
int RunCordon(Client& client, const CordonArgs& args, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
