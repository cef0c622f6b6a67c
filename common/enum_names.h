#pragma once

// The one table of display names per enum that dcufleet shows or accepts as
// text: dcuctl output, catalog rows, log and error messages, `--runtime`.
// Every other place turns these enums into words through here, so a value
// has one name and an unknown value is never silently another one.

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::common {

// "bare", "container"; "unspecified" for RUNTIME_KIND_UNSPECIFIED, "unknown"
// for a value this build does not know.
absl::string_view RuntimeKindName(dcufleet::v1::RuntimeKind kind);
// Inverse for "bare" and "container" only: "unspecified", "" and anything
// else are nullopt (a caller must refuse, not guess).
std::optional<dcufleet::v1::RuntimeKind> ParseRuntimeKind(absl::string_view name);
// The names ParseRuntimeKind accepts, in enum order: {"bare", "container"}.
std::vector<std::string> RuntimeKindNames();
// "'bare' or 'container'", for messages.
std::string RuntimeKindChoices();

// "works", "broken", "untested"; "unspecified" / "unknown" as above.
absl::string_view VerdictStateName(dcufleet::v1::VerdictState state);
std::optional<dcufleet::v1::VerdictState> ParseVerdictState(absl::string_view name);

// "info", "warning", "error"; "unspecified" / "unknown" as above.
absl::string_view FindingSeverityName(dcufleet::v1::FindingSeverity severity);
std::optional<dcufleet::v1::FindingSeverity> ParseFindingSeverity(absl::string_view name);

// "Ready", "NotReady", "Lost" (as dcuctl and the node events say them);
// "Unknown" for anything else.
absl::string_view NodeStateName(dcufleet::v1::NodeState state);

// "starting", "loading_weights", "weights_loaded", "compiling",
// "kv_cache_sized", "ready", "failed" (the words of issue 23 and of
// `dcuctl progress -o json`); "unspecified" / "unknown" as above.
absl::string_view StartupPhaseName(dcufleet::v1::StartupPhase phase);
// "distributed init", "torch.compile", "Triton kernels", "graph capture",
// "HTTP server start-up"; "" for STARTUP_ACTIVITY_UNSPECIFIED (no activity
// is a normal state, not an unnamed one).
absl::string_view StartupActivityName(dcufleet::v1::StartupActivity activity);

// "managed", "leftover", "unmanaged", "zombie", "exited" (the words of the
// inventory table, describe node and the metrics' class label); "unknown"
// for anything else.
absl::string_view HolderClassName(dcufleet::v1::HolderClass holder_class);

}  // namespace dcu::common
