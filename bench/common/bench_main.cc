// The main() of every Google Benchmark binary here: the benchmarks measure
// the daemons' code, so they run it as the daemons do, with absl's Mutex
// deadlock detector off in release builds (common/mutex_mode.h). Before
// stop 39 they ran with it on, which the daemons never do.
#include <benchmark/benchmark.h>

#include "common/mutex_mode.h"

int main(int argc, char** argv) {
  dcu::common::TurnOffDeadlockDetectionInReleaseBuilds();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
