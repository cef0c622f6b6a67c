#pragma once

#include <ostream>
#include <string>

#include "dcuctl/client.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::dcuctl {

// dcuctl get nodes [-o table|wide|json|yaml]
// All nodes, or (`get node NAME`) one.
int RunGetNodes(Client& client, const std::string& name, std::ostream& out, std::ostream& err);
// dcuctl describe node NAME [-o json|yaml]
int RunDescribeNode(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

// The human description of one node (used by describe and tests).
void PrintNodeDescription(const dcufleet::v1::NodeView& node, std::ostream& out);

}  // namespace dcu::dcuctl
