#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::modelkit {

// RuntimeEnvironment.kind ("bare", "container") is read with
// common::ParseRuntimeKind.

// The known stack an environment found on a node is: same kind and location,
// else same kind and the same engine, engine version, torch and triton
// versions (an image pulled under another tag, an env copied elsewhere).
// nullptr when none.
const dcufleet::v1::Stack* MatchEnvironment(const std::vector<dcufleet::v1::Stack>& stacks,
                                            const dcufleet::v1::RuntimeEnvironment& env);

// An untested stack for an environment nobody catalogued. Its id is stable
// for the same kind and location ("disc-vllm-0.9.2-bare-1a2b3c4d"), versions
// come from package_versions, the argv is the engine's OpenAI server, and it
// declares no arch and no capabilities (evidence will tell).
// INVALID_ARGUMENT when no engine (vllm, sglang) is among the packages or the
// location is empty.
absl::StatusOr<dcufleet::v1::Stack> StackFromEnvironment(const dcufleet::v1::RuntimeEnvironment& env,
                                                         absl::string_view node, int64_t now_ms);

}  // namespace dcu::modelkit
