#pragma once

namespace dcu::common {

// Turns absl's Mutex deadlock detector off in release builds (NDEBUG).
// The detector keeps a global lock graph and looks every acquisition up in
// it: 3-6% of the controller's CPU at 10,000 reports/s, and 28% of
// dcu-loadgen's while it stood in for 10,000 agents (perf, BENCHMARKS.md).
// Debian's absl leaves it on. Each daemon's main() calls this first; debug
// builds and every test binary keep the detector (it found real lock-order
// inversions there).
void TurnOffDeadlockDetectionInReleaseBuilds();

}  // namespace dcu::common
