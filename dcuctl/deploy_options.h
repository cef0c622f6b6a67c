#pragma once

#include "CLI/CLI.hpp"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::dcuctl {

// The options of `dcuctl deploy` that make a DeploymentSpec, parsed straight
// into `spec` (which must outlive `deploy`). The numeric options come from
// the table in common/deployment_rules.h: their flags, ranges, help and
// refusals are the ones the controller applies, so the CLI refuses exactly
// what the controller would and says it in the same words.
void AddDeploymentSpecOptions(CLI::App* deploy, dcufleet::v1::DeploymentSpec* spec);

// `scale --replicas`: the same rule as deploy's --replicas, and for 0
// (kubectl's scale to zero) why not and what frees the devices instead: a
// deployment's spec lives in its replicas.
CLI::Validator ScaleReplicasValidator();

}  // namespace dcu::dcuctl
