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

}  // namespace dcu::dcuctl
