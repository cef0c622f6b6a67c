#pragma once

#include <ostream>

#include "dcuctl/client.h"
#include "dcufleet/v1/pool.pb.h"

namespace dcu::dcuctl {

// dcuctl get pools [-o table|wide|json|yaml]: the controller's node pools
// (issue 20: Slurm partitions), one line each with its jobs counted by
// state, then one line per job.
int RunGetPools(Client& client, std::ostream& out, std::ostream& err);
void PrintPools(const dcufleet::v1::ListPoolsResponse& resp, std::ostream& out, bool headers);

}  // namespace dcu::dcuctl
