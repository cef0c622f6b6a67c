#include "common/engine_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace dcu::common {
namespace {

// The value of a sample line "NAME{labels} VALUE [TIMESTAMP]" or
// "NAME VALUE" when the line is of metric `name` exactly.
std::optional<double> SampleOf(absl::string_view line, absl::string_view name) {
  if (!absl::ConsumePrefix(&line, name)) return std::nullopt;
  if (line.empty() || (line[0] != '{' && line[0] != ' ')) return std::nullopt;
  if (line[0] == '{') {
    // Label values may hold spaces and braces inside quotes.
    bool quoted = false;
    size_t i = 1;
    for (; i < line.size(); ++i) {
      if (line[i] == '\\' && quoted) {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      } else if (line[i] == '}' && !quoted) {
        break;
      }
    }
    if (i >= line.size()) return std::nullopt;
    line.remove_prefix(i + 1);
  }
  line = absl::StripLeadingAsciiWhitespace(line);
  absl::string_view value = line.substr(0, line.find(' '));
  double v = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(value), &v)) return std::nullopt;
  // Prometheus text allows NaN and ±Inf, and SimpleAtod reads them; none is
  // a count of requests or a cache fraction, and a NaN that reached the
  // gateway's picker compared false with every other replica's load.
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<EngineLoadSample> ParseVllmLoad(const std::string& text) {
  EngineLoadSample load;
  bool seen = false;
  double kv = -1, gpu_kv = -1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
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

}  // namespace dcu::common
