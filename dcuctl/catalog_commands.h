#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"

namespace dcu::dcuctl {

// dcuctl get stacks [--arch ARCH] [-o wide|json|yaml]
int RunGetStacks(Client& client, const std::string& arch, std::ostream& out, std::ostream& err);
// dcuctl describe stack ID
int RunDescribeStack(Client& client, const std::string& id, std::ostream& out, std::ostream& err);
// dcuctl stack import FILE... [--dry-run]: all files or none.
int RunStackImport(Client& client, const std::vector<std::string>& files, bool dry_run,
                   std::ostream& out, std::ostream& err);
// dcuctl get models
int RunGetModels(Client& client, std::ostream& out, std::ostream& err);
// dcuctl diagnose deployment NAME: the findings of its failed attempts.
int RunDiagnoseDeployment(Client& client, const std::string& name, std::ostream& out,
                          std::ostream& err);

}  // namespace dcu::dcuctl
