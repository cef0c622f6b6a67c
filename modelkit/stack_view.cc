#include "modelkit/stack_view.h"

#include "modelkit/learned_fix.h"

#include <algorithm>

#include "modelkit/verdict.h"

namespace dcu::modelkit {

dcufleet::v1::StackView MakeStackView(const dcufleet::v1::Stack& stack,
                                      const std::vector<dcufleet::v1::Evidence>& evidence,
                                      const std::vector<dcufleet::v1::NodeEnvironment>& envs,
                                      absl::string_view arch) {
  dcufleet::v1::StackView v;
  *v.mutable_stack() = stack;
  for (auto& verdict : ComputeArchVerdicts(stack, evidence, arch)) {
    if (auto fix = LearnedFixFor(stack.id(), verdict.arch(), evidence)) {
      verdict.set_learned_fix(true);
      *v.add_learned_fixes() = std::move(*fix);
    }
    *v.add_arch_verdicts() = std::move(verdict);
  }
  for (auto& verdict : ComputeModelVerdicts(stack, evidence, arch)) {
    *v.add_model_verdicts() = std::move(verdict);
  }
  for (const auto& e : envs) {
    if (e.stack_id() == stack.id()) *v.add_present_on() = e;
  }
  return v;
}

dcufleet::v1::ListStacksResponse BuildListStacksResponse(
    const dcufleet::v1::ListStacksRequest& request, const std::vector<dcufleet::v1::Stack>& stacks,
    const std::vector<dcufleet::v1::Evidence>& evidence,
    const std::vector<dcufleet::v1::NodeEnvironment>& envs) {
  dcufleet::v1::ListStacksResponse resp;
  const std::string& arch = request.arch();
  for (const auto& s : stacks) {
    if (!arch.empty()) {
      bool declared = std::find(s.arches().begin(), s.arches().end(), arch) != s.arches().end();
      bool seen = std::any_of(evidence.begin(), evidence.end(), [&](const auto& e) {
        return e.stack_id() == s.id() && e.arch() == arch;
      });
      if (!declared && !seen) continue;
    }
    *resp.add_stacks() = MakeStackView(s, evidence, envs, arch);
  }
  return resp;
}

EffectiveRecipe RecipeFor(const dcufleet::v1::Stack& stack, absl::string_view arch) {
  EffectiveRecipe r;
  r.env = stack.env();
  r.argv_template.assign(stack.argv_template().begin(), stack.argv_template().end());
  for (const auto& recipe : stack.arch_recipes()) {
    if (recipe.arch() != arch) continue;
    for (const auto& s : recipe.env().source_scripts()) r.env.add_source_scripts(s);
    for (const auto& v : recipe.env().variables()) {
      bool replaced = false;
      for (auto& existing : *r.env.mutable_variables()) {
        if (existing.name() == v.name()) {
          existing.set_value(v.value());
          replaced = true;
        }
      }
      if (!replaced) *r.env.add_variables() = v;
    }
    // The arch's library directories must win over the base ones.
    google::protobuf::RepeatedPtrField<std::string> ld(recipe.env().ld_library_path_prefix());
    for (const auto& p : r.env.ld_library_path_prefix()) {
      if (std::find(ld.begin(), ld.end(), p) == ld.end()) *ld.Add() = p;
    }
    *r.env.mutable_ld_library_path_prefix() = ld;
    google::protobuf::RepeatedPtrField<std::string> path(recipe.env().path_prefix());
    for (const auto& p : r.env.path_prefix()) {
      if (std::find(path.begin(), path.end(), p) == path.end()) *path.Add() = p;
    }
    *r.env.mutable_path_prefix() = path;
    r.argv_template.insert(r.argv_template.end(), recipe.extra_args().begin(),
                           recipe.extra_args().end());
    r.required_patches.insert(r.required_patches.end(), recipe.required_patches().begin(),
                              recipe.required_patches().end());
  }
  return r;
}

}  // namespace dcu::modelkit
