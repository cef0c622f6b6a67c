#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gateway/serving_set.h"

namespace dcu::gateway {

// The current ServingSet, swapped whole on each update so that a request
// holds one consistent snapshot while it is routed. Thread-safe.
class ServingTable {
 public:
  void Replace(ServingSet set) ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<const ServingSet> Current() const ABSL_LOCKS_EXCLUDED(mu_);

  // The model a request's "model" names: a deployment name or a served model
  // name (deployment names win when both match). nullptr when unknown.
  static const ServedModel* Find(const ServingSet& set, const std::string& name);
  // Every name a request may use, sorted, for the 404's list.
  static std::vector<std::string> Names(const ServingSet& set);

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const ServingSet> current_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const ServingSet>();
};

}  // namespace dcu::gateway
