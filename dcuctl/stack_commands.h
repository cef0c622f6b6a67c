#pragma once

#include <ostream>
#include <string>

#include "dcufleet/v1/catalog.pb.h"

namespace dcu::dcuctl {

// `dcuctl get stacks [--arch ARCH] [-o json|wide]`: one row per stack with
// its verdicts. The lead's main.cc calls FleetService.ListStacks and hands
// the response here. With `arch` set the table has the verdict and its reason
// for that arch; otherwise one "arch:verdict" per arch.
void RenderStacksTable(const dcufleet::v1::ListStacksResponse& resp, const std::string& arch,
                       bool wide, std::ostream& out);

// `dcuctl describe stack ID`: everything about one stack (versions, recipe,
// per-arch recipes and required patches, argv, capabilities, verdicts with
// reasons, where it is present, recent evidence).
void RenderStackDescription(const dcufleet::v1::GetStackResponse& resp, std::ostream& out);

// -o json for both: the proto messages as JSON with their field names.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace dcu::dcuctl
