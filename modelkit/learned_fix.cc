#include "modelkit/learned_fix.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "modelkit/verdict.h"

namespace dcu::modelkit {

using dcufleet::v1::Evidence;
using dcufleet::v1::LearnedFix;

namespace {

// A failure that says the carried fix did not do its job: one that
// implicates the stack on the arch (or the stack with this model), or a
// remediable class that the fix should have answered.
bool DemotesCarriedFix(const Evidence& e) {
  if (e.outcome() != dcufleet::v1::LAUNCH_FAILED || e.carried_fix().empty()) return false;
  switch (ScopeOf(e)) {
    case dcufleet::v1::SCOPE_STACK_ARCH:
    case dcufleet::v1::SCOPE_STACK_ARCH_MODEL:
    case dcufleet::v1::SCOPE_REMEDIABLE:
      return true;
    default:
      return false;
  }
}

void AddPrefixes(const google::protobuf::RepeatedPtrField<std::string>& add, LearnedFix* out) {
  for (const auto& p : add) {
    if (std::find(out->ld_library_path_prefix().begin(), out->ld_library_path_prefix().end(), p) ==
        out->ld_library_path_prefix().end()) {
      out->add_ld_library_path_prefix(p);
    }
  }
}

}  // namespace

bool LearnedFixEmpty(const LearnedFix& fix) {
  return fix.env().empty() && fix.ld_library_path_prefix().empty();
}

void LearnedFixTally::Add(const Evidence& e) {
  if (e.outcome() == dcufleet::v1::LAUNCH_READY && !LearnedFixEmpty(e.learned_fix())) {
    // The newest fix decides: an older one is the same lesson or an older
    // one, and must not come back if this one is demoted.
    LearnedFix fix = e.learned_fix();
    fix.set_evidence_id(e.evidence_id());
    fix.set_stack_id(e.stack_id());
    fix.set_arch(e.arch());
    fix.set_node(e.node());
    fix.set_instance_id(e.instance_id());
    fix.set_at_ms(e.at_ms());
    fix_ = std::move(fix);
    return;
  }
  // A demotion is newer than the fix it demotes; one of an older fix than
  // the one in force changes nothing.
  if (fix_ && DemotesCarriedFix(e) && e.carried_fix() == fix_->evidence_id()) fix_.reset();
}

std::optional<LearnedFix> LearnedFixFor(absl::string_view stack_id, absl::string_view arch,
                                        const std::vector<Evidence>& evidence) {
  LearnedFixTally tally;
  for (const Evidence* e : RowsInTimeOrder(evidence, stack_id, arch)) tally.Add(*e);
  return tally.fix();
}

void ApplyLearnedFix(const LearnedFix& fix, dcufleet::v1::InstanceSpec* spec) {
  if (LearnedFixEmpty(fix)) return;
  std::map<std::string, std::string> env(fix.env().begin(), fix.env().end());
  for (const auto& [k, v] : env) (*spec->mutable_env())[k] = v;
  std::vector<std::string> order(fix.ld_library_path_prefix().begin(),
                                 fix.ld_library_path_prefix().end());
  for (const auto& p : spec->ld_library_path_prefix()) {
    if (std::find(order.begin(), order.end(), p) == order.end()) order.push_back(p);
  }
  spec->clear_ld_library_path_prefix();
  for (const auto& p : order) spec->add_ld_library_path_prefix(p);
  *spec->mutable_learned_fix() = fix;
}

LearnedFix MergeLearnedFixes(const LearnedFix& a, const LearnedFix& b) {
  LearnedFix out;
  for (const auto& [k, v] : a.env()) (*out.mutable_env())[k] = v;
  for (const auto& [k, v] : b.env()) (*out.mutable_env())[k] = v;
  AddPrefixes(a.ld_library_path_prefix(), &out);
  AddPrefixes(b.ld_library_path_prefix(), &out);
  std::set<std::string> answered;
  for (const auto& c : a.answered()) {
    if (answered.insert(c).second) out.add_answered(c);
  }
  for (const auto& c : b.answered()) {
    if (answered.insert(c).second) out.add_answered(c);
  }
  return out;
}

std::string DescribeLearnedFix(const LearnedFix& fix) {
  std::vector<std::string> parts;
  if (!fix.ld_library_path_prefix().empty()) {
    parts.push_back(
        absl::StrCat("LD_LIBRARY_PATH first: ", absl::StrJoin(fix.ld_library_path_prefix(), ":")));
  }
  std::map<std::string, std::string> env(fix.env().begin(), fix.env().end());
  for (const auto& [k, v] : env) parts.push_back(absl::StrCat(k, "=", v));
  std::string out = absl::StrJoin(parts, "; ");
  if (!fix.answered().empty()) {
    absl::StrAppend(&out, " (answered ", absl::StrJoin(fix.answered(), ", "), ")");
  }
  return out;
}

}  // namespace dcu::modelkit
