#include "common/mutex_mode.h"

#include "absl/synchronization/mutex.h"

namespace dcu::common {

void TurnOffDeadlockDetectionInReleaseBuilds() {
#ifdef NDEBUG
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
}

}  // namespace dcu::common
