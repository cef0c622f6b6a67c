#pragma once

// What the controller learns from a fixed failure (issue 15): the
// remediations that made a launch of a stack on an arch Ready become part of
// that stack's recipe on that arch. Nothing is stored apart: the fix is read
// back from the evidence (the Ready row's learned_fix), so it survives
// restarts, is the same on every node, and can be demoted by later evidence.

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::modelkit {

// The fix in force for (stack, arch): the newest Ready launch that recorded
// one, unless a later launch that carried it failed for a reason that
// implicates the stack (its scope is the stack's, or a remediable class
// came back): then none, and the next Ready launch teaches it again.
// Failures of the node or the moment (port in use, memory held by others,
// unknown) and of the model's config never demote a fix. The result carries
// where it was learned (evidence id, node, instance, time).
std::optional<dcufleet::v1::LearnedFix> LearnedFixFor(
    absl::string_view stack_id, absl::string_view arch,
    const std::vector<dcufleet::v1::Evidence>& evidence);

// The same fold, row by row, for a caller that keeps it (the controller adds
// a row per launch): rows oldest first, rows of one millisecond in the order
// recorded; Add is O(1).
class LearnedFixTally {
 public:
  void Add(const dcufleet::v1::Evidence& row);
  const std::optional<dcufleet::v1::LearnedFix>& fix() const { return fix_; }

 private:
  std::optional<dcufleet::v1::LearnedFix> fix_;
};

// Adds `fix` to a rendered launch: its variables set (they win over the
// recipe's: they exist to fix it), its library directories first. The spec
// records which fix it carries (learned_fix).
void ApplyLearnedFix(const dcufleet::v1::LearnedFix& fix, dcufleet::v1::InstanceSpec* spec);

// `a` then what `b` adds: variables of `b` win, library directories of `b`
// after those of `a` that it does not repeat, answered classes of both.
dcufleet::v1::LearnedFix MergeLearnedFixes(const dcufleet::v1::LearnedFix& a,
                                           const dcufleet::v1::LearnedFix& b);

// True when the fix changes nothing in a launch.
bool LearnedFixEmpty(const dcufleet::v1::LearnedFix& fix);

// "LD_LIBRARY_PATH first: /opt/dtk/lib/rocm_smi; VLLM_X=0 (answered shared_lib_undefined_symbol)".
std::string DescribeLearnedFix(const dcufleet::v1::LearnedFix& fix);

}  // namespace dcu::modelkit
