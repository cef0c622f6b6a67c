#include "common/enum_names.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dcu::common {
namespace {

using dcufleet::v1::FindingSeverity;
using dcufleet::v1::RuntimeKind;
using dcufleet::v1::VerdictState;

// Value 0 (UNSPECIFIED) of every enum is named "unspecified" and is never
// parsed back; values outside the table are "unknown".
constexpr absl::string_view kUnspecified = "unspecified";
constexpr absl::string_view kUnknown = "unknown";

template <typename E, size_t N>
absl::string_view NameIn(const std::pair<E, absl::string_view> (&table)[N], E value) {
  if (static_cast<int>(value) == 0) return kUnspecified;
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return kUnknown;
}

template <typename E, size_t N>
std::optional<E> ParseIn(const std::pair<E, absl::string_view> (&table)[N], absl::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

constexpr std::pair<RuntimeKind, absl::string_view> kRuntimeKinds[] = {
    {dcufleet::v1::RUNTIME_BARE, "bare"},
    {dcufleet::v1::RUNTIME_CONTAINER, "container"},
};

constexpr std::pair<VerdictState, absl::string_view> kVerdictStates[] = {
    {dcufleet::v1::VERDICT_WORKS, "works"},
    {dcufleet::v1::VERDICT_BROKEN, "broken"},
    {dcufleet::v1::VERDICT_UNTESTED, "untested"},
};

constexpr std::pair<FindingSeverity, absl::string_view> kFindingSeverities[] = {
    {dcufleet::v1::FINDING_INFO, "info"},
    {dcufleet::v1::FINDING_WARNING, "warning"},
    {dcufleet::v1::FINDING_ERROR, "error"},
};

constexpr std::pair<dcufleet::v1::StartupPhase, absl::string_view> kStartupPhases[] = {
    {dcufleet::v1::STARTUP_STARTING, "starting"},
    {dcufleet::v1::STARTUP_LOADING_WEIGHTS, "loading_weights"},
    {dcufleet::v1::STARTUP_WEIGHTS_LOADED, "weights_loaded"},
    {dcufleet::v1::STARTUP_COMPILING, "compiling"},
    {dcufleet::v1::STARTUP_KV_CACHE_SIZED, "kv_cache_sized"},
    {dcufleet::v1::STARTUP_READY, "ready"},
    {dcufleet::v1::STARTUP_FAILED, "failed"},
};

constexpr std::pair<dcufleet::v1::StartupActivity, absl::string_view> kStartupActivities[] = {
    {dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT, "distributed init"},
    {dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE, "torch.compile"},
    {dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE, "Triton kernels"},
    {dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE, "graph capture"},
    {dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP, "HTTP server start-up"},
};

}  // namespace

absl::string_view StartupPhaseName(dcufleet::v1::StartupPhase phase) {
  return NameIn(kStartupPhases, phase);
}

absl::string_view StartupActivityName(dcufleet::v1::StartupActivity activity) {
  if (activity == dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED) return "";
  return NameIn(kStartupActivities, activity);
}

absl::string_view RuntimeKindName(RuntimeKind kind) { return NameIn(kRuntimeKinds, kind); }

std::optional<RuntimeKind> ParseRuntimeKind(absl::string_view name) {
  return ParseIn(kRuntimeKinds, name);
}

std::vector<std::string> RuntimeKindNames() {
  std::vector<std::string> names;
  for (const auto& [v, name] : kRuntimeKinds) names.emplace_back(name);
  return names;
}

std::string RuntimeKindChoices() {
  std::string out;
  size_t n = std::size(kRuntimeKinds);
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : i + 1 == n ? " or " : ", ", "'", kRuntimeKinds[i].second, "'");
  }
  return out;
}

absl::string_view VerdictStateName(VerdictState state) { return NameIn(kVerdictStates, state); }

std::optional<VerdictState> ParseVerdictState(absl::string_view name) {
  return ParseIn(kVerdictStates, name);
}

absl::string_view FindingSeverityName(FindingSeverity severity) {
  return NameIn(kFindingSeverities, severity);
}

std::optional<FindingSeverity> ParseFindingSeverity(absl::string_view name) {
  return ParseIn(kFindingSeverities, name);
}

absl::string_view HolderClassName(dcufleet::v1::HolderClass holder_class) {
  switch (holder_class) {
    case dcufleet::v1::HOLDER_MANAGED:
      return "managed";
    case dcufleet::v1::HOLDER_LEFTOVER:
      return "leftover";
    case dcufleet::v1::HOLDER_UNMANAGED:
      return "unmanaged";
    case dcufleet::v1::HOLDER_ZOMBIE:
      return "zombie";
    case dcufleet::v1::HOLDER_EXITED:
      return "exited";
    default:
      return "unknown";
  }
}

absl::string_view NodeStateName(dcufleet::v1::NodeState state) {
  switch (state) {
    case dcufleet::v1::NODE_READY:
      return "Ready";
    case dcufleet::v1::NODE_NOT_READY:
      return "NotReady";
    case dcufleet::v1::NODE_LOST:
      return "Lost";
    default:
      return "Unknown";
  }
}

}  // namespace dcu::common
