#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::modelkit {

// A stack with its verdicts (computed from `evidence`) and where it was found
// (`envs`, rows of other stacks are skipped). With `arch` set, only that
// arch's verdicts.
dcufleet::v1::StackView MakeStackView(const dcufleet::v1::Stack& stack,
                                      const std::vector<dcufleet::v1::Evidence>& evidence,
                                      const std::vector<dcufleet::v1::NodeEnvironment>& envs,
                                      absl::string_view arch = "");

// What FleetService.ListStacks answers: every stack, or with request.arch set
// the stacks that declare that arch or have evidence on it.
dcufleet::v1::ListStacksResponse BuildListStacksResponse(
    const dcufleet::v1::ListStacksRequest& request, const std::vector<dcufleet::v1::Stack>& stacks,
    const std::vector<dcufleet::v1::Evidence>& evidence,
    const std::vector<dcufleet::v1::NodeEnvironment>& envs);

// The effective launch recipe of a stack on one arch: the base env with the
// arch recipe merged (variables override by name; the recipe's scripts run
// after the base ones; its LD_LIBRARY_PATH / PATH prefixes go in front), and
// the argv template followed by the recipe's extra args.
struct EffectiveRecipe {
  dcufleet::v1::EnvRecipe env;
  std::vector<std::string> argv_template;
  std::vector<std::string> required_patches;
};
EffectiveRecipe RecipeFor(const dcufleet::v1::Stack& stack, absl::string_view arch);

}  // namespace dcu::modelkit
