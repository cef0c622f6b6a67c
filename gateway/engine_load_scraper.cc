#include "gateway/engine_load_scraper.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace dcu::gateway {
namespace {

// The value of a sample line "NAME{labels} VALUE" or "NAME VALUE" when the
// line is of metric `name`.
std::optional<double> SampleOf(absl::string_view line, absl::string_view name) {
  if (!absl::ConsumePrefix(&line, name)) return std::nullopt;
  if (line.empty() || (line[0] != '{' && line[0] != ' ')) return std::nullopt;
  size_t space = line.rfind(' ');
  if (space == absl::string_view::npos) return std::nullopt;
  double v = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(line.substr(space + 1)), &v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<EngineLoad> ParseVllmLoad(const std::string& text) {
  EngineLoad load;
  bool seen = false;
  double kv = -1, gpu_kv = -1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (auto v = SampleOf(line, "vllm:num_requests_running")) {
      load.running += *v;
      seen = true;
    } else if (auto v = SampleOf(line, "vllm:num_requests_waiting")) {
      load.waiting += *v;
      seen = true;
    } else if (auto v = SampleOf(line, "vllm:kv_cache_usage_perc")) {
      kv = std::max(kv, *v);
    } else if (auto v = SampleOf(line, "vllm:gpu_cache_usage_perc")) {
      gpu_kv = std::max(gpu_kv, *v);
    }
  }
  if (!seen) return std::nullopt;
  load.kv_cache_usage = std::clamp(kv >= 0 ? kv : std::max(0.0, gpu_kv), 0.0, 1.0);
  return load;
}

ScrapingReplicaSource::ScrapingReplicaSource(std::unique_ptr<ReplicaSource> inner,
                                             std::unique_ptr<common::HttpClient> http,
                                             absl::Duration interval)
    : inner_(std::move(inner)), http_(std::move(http)), interval_(interval) {}

absl::Status ScrapingReplicaSource::Start(UpdateFn on_update) {
  on_update_ = std::move(on_update);
  absl::Status s = inner_->Start([this](ServingSet set) {
    {
      absl::MutexLock lock(&mu_);
      latest_ = set;
      ++generation_;
    }
    on_update_(std::move(set));
  });
  if (!s.ok()) return s;
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ScrapingReplicaSource::Stop() {
  inner_->Stop();
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ScrapingReplicaSource::Loop() {
  while (true) {
    ServingSet set;
    uint64_t generation = 0;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
      set = latest_;
      generation = generation_;
    }
    for (auto& model : set.models) {
      for (auto& r : model.replicas) {
        common::HttpRequest req;
        req.host = r.host;
        req.port = r.port;
        req.path = "/metrics";
        req.timeout = std::min(interval_, absl::Milliseconds(500));
        auto resp = http_->Send(req);
        if (!resp.ok() || resp->status != 200) continue;
        if (auto load = ParseVllmLoad(resp->body)) {
          r.load = *load;
          r.load.scraped_at_ms = absl::ToUnixMillis(absl::Now());
        }
      }
    }
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      // A newer set from the source meanwhile wins; its loads come next round.
      if (generation_ != generation) continue;
    }
    on_update_(std::move(set));
  }
}

}  // namespace dcu::gateway
