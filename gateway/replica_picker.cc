#include "gateway/replica_picker.h"

#include <algorithm>

namespace dcu::gateway {

double ReplicaPicker::ScoreLocked(const Replica& replica, const std::vector<Replica>& peers,
                                  absl::Time now) {
  const Stats& s = stats_[replica.Key()];
  double load = s.in_flight;
  const EngineLoad& e = replica.load;
  bool fresh = e.scraped_at_ms > 0 &&
               now - absl::FromUnixMillis(e.scraped_at_ms) <= options_.load_max_age;
  if (fresh) {
    // The engine's running count includes this gateway's requests; max()
    // avoids counting them twice while still seeing other clients' load.
    load = std::max(load, e.running) + e.waiting +
           options_.kv_cache_weight * std::max(0.0, e.kv_cache_usage - options_.kv_cache_knee);
  }
  double latency = s.latency_ms;
  if (latency <= 0) {
    // Unmeasured: assume the model's average, so a new replica is neither
    // shunned nor flooded.
    double sum = 0;
    int n = 0;
    for (const auto& p : peers) {
      auto it = stats_.find(p.Key());
      if (it != stats_.end() && it->second.latency_ms > 0) {
        sum += it->second.latency_ms;
        ++n;
      }
    }
    latency = n > 0 ? sum / n : 1.0;
  }
  return (load + 1.0) * latency;
}

std::optional<size_t> ReplicaPicker::Pick(const std::vector<Replica>& replicas,
                                          const std::set<std::string>& exclude, absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::optional<size_t> best;
  double best_score = 0;
  uint64_t best_last = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = replicas[i];
    if (!r.ready || exclude.count(r.Key())) continue;
    const Stats& st = stats_[r.Key()];
    if (st.ejected_until > now) continue;
    uint64_t last = st.last_picked;
    if (options_.policy == PickPolicy::kRoundRobin) {
      // The one picked longest ago: strict rotation over the ready set.
      if (!best || last < best_last) {
        best = i;
        best_last = last;
      }
      continue;
    }
    double score = ScoreLocked(r, replicas, now);
    if (!best || score < best_score || (score == best_score && last < best_last)) {
      best = i;
      best_score = score;
      best_last = last;
    }
  }
  if (best) {
    Stats& s = stats_[replicas[*best].Key()];
    ++s.in_flight;
    s.last_picked = ++picks_;
  }
  return best;
}

void ReplicaPicker::Finish(const std::string& key, absl::Duration elapsed, bool completed) {
  absl::MutexLock lock(&mu_);
  Stats& s = stats_[key];
  if (s.in_flight > 0) --s.in_flight;
  if (!completed) return;
  double ms = std::max(0.001, absl::ToDoubleMilliseconds(elapsed));
  s.latency_ms = s.latency_ms <= 0 ? ms
                                   : options_.latency_alpha * ms +
                                         (1.0 - options_.latency_alpha) * s.latency_ms;
}

void ReplicaPicker::Eject(const std::string& key, absl::Time until) {
  absl::MutexLock lock(&mu_);
  stats_[key].ejected_until = until;
}

double ReplicaPicker::Score(const Replica& replica, const std::vector<Replica>& peers,
                            absl::Time now) {
  absl::MutexLock lock(&mu_);
  return ScoreLocked(replica, peers, now);
}

int ReplicaPicker::InFlight(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = stats_.find(key);
  return it == stats_.end() ? 0 : it->second.in_flight;
}

}  // namespace dcu::gateway
