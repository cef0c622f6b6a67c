#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gateway/serving_set.h"

namespace dcu::gateway {

enum class PickPolicy {
  // The least expected wait (score below); the default.
  kLeastScore,
  // Ready replicas in turn, blind to load: the baseline the tests and the
  // benchmark compare against.
  kRoundRobin,
};

struct PickerOptions {
  PickPolicy policy = PickPolicy::kLeastScore;
  // Engine load older than this is ignored (the replica is judged by the
  // gateway's own in-flight count alone).
  absl::Duration load_max_age = absl::Seconds(3);
  // Weight of each point of KV-cache use above kv_cache_knee: a nearly full
  // cache means the engine is about to preempt or queue.
  double kv_cache_knee = 0.9;
  double kv_cache_weight = 20.0;
  // Weight of the newest latency sample in the per-replica moving average.
  double latency_alpha = 0.2;
};

// Chooses the replica for each request. The score of a ready replica r is
//
//   load(r)  = max(in_flight(r), running(r)) + waiting(r)
//              + kv_cache_weight * max(0, kv_cache_usage(r) - kv_cache_knee)
//   score(r) = (load(r) + 1) * latency(r)
//
// in_flight: requests this gateway has open on r now (exact, live);
// running / waiting / kv_cache_usage: what r's engine last reported, only
// when fresher than load_max_age (it also counts other gateways' traffic);
// latency: the moving average of r's recent response times as this gateway
// saw them (the mean of the model's measured replicas while r has none).
// score is the expected time until a new request on r completes if r works
// its queue one by one at its observed speed; the least score wins, ties to
// the replica picked longest ago. docs/gateway.md says why.
//
// Thread-safe.
class ReplicaPicker {
 public:
  explicit ReplicaPicker(PickerOptions options = {}) : options_(options) {}

  // Index into `replicas` of the chosen one, among those ready and not in
  // `exclude` (keys, see Replica::Key); nullopt when there is none. Counts
  // the request as in flight on it: pair with Finish().
  std::optional<size_t> Pick(const std::vector<Replica>& replicas,
                             const std::set<std::string>& exclude, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The request picked on `key` ended after `elapsed`; `completed` when it
  // got a whole answer (only those feed the latency average).
  void Finish(const std::string& key, absl::Duration elapsed, bool completed)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The score Pick() compares (exposed for tests and docs).
  // `key` failed before answering (refused, reset, 502/503): Pick() passes
  // it over until `until`, so one dead replica costs one retry, not one per
  // request, before the source reports it gone.
  void Eject(const std::string& key, absl::Time until) ABSL_LOCKS_EXCLUDED(mu_);

  double Score(const Replica& replica, const std::vector<Replica>& peers, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  int InFlight(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Stats {
    int in_flight = 0;
    double latency_ms = 0;  // moving average; 0 = no sample yet
    uint64_t last_picked = 0;
    absl::Time ejected_until = absl::InfinitePast();
  };
  double ScoreLocked(const Replica& replica, const std::vector<Replica>& peers, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PickerOptions options_;
  absl::Mutex mu_;
  std::map<std::string, Stats> stats_ ABSL_GUARDED_BY(mu_);
  uint64_t picks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dcu::gateway
