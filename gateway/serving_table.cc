#include "gateway/serving_table.h"

#include <algorithm>
#include <set>

namespace dcu::gateway {

void ServingTable::Replace(ServingSet set) {
  auto next = std::make_shared<const ServingSet>(std::move(set));
  absl::MutexLock lock(&mu_);
  current_ = std::move(next);
}

std::shared_ptr<const ServingSet> ServingTable::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

const ServedModel* ServingTable::Find(const ServingSet& set, const std::string& name) {
  if (name.empty()) return nullptr;
  // A deployment scaled to zero answers to its name only when no other
  // does: a second deployment serving the same model goes on serving it.
  const ServedModel* at_zero = nullptr;
  for (const auto& m : set.models) {
    if (m.deployment != name) continue;
    if (!m.scaled_to_zero) return &m;
    if (!at_zero) at_zero = &m;
  }
  for (const auto& m : set.models) {
    if (m.served_model_name != name) continue;
    if (!m.scaled_to_zero) return &m;
    if (!at_zero) at_zero = &m;
  }
  return at_zero;
}

std::vector<std::string> ServingTable::Names(const ServingSet& set) {
  std::set<std::string> names;
  for (const auto& m : set.models) {
    names.insert(m.deployment);
    if (!m.served_model_name.empty()) names.insert(m.served_model_name);
  }
  return {names.begin(), names.end()};
}

}  // namespace dcu::gateway
