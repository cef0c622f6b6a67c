#pragma once

#include <functional>

#include "absl/status/status.h"
#include "gateway/serving_set.h"

namespace dcu::gateway {

// Where the gateway learns its replicas. Start() delivers the first set it
// can and every later change through `on_update`, from its own thread; a
// source that loses its upstream keeps quiet (the gateway keeps the last set)
// and delivers again once it is back.
class ReplicaSource {
 public:
  using UpdateFn = std::function<void(ServingSet)>;
  virtual ~ReplicaSource() = default;
  // INVALID_ARGUMENT / NOT_FOUND when the source cannot start at all (a
  // missing or malformed file); a controller that is merely away is not an
  // error: the source retries.
  virtual absl::Status Start(UpdateFn on_update) = 0;
  // Stops delivering; returns once no callback runs any more.
  virtual void Stop() = 0;
};

}  // namespace dcu::gateway
