#pragma once

// Input rules enforced at dcufleet's edges (the controller's gRPC services,
// the agent when an assignment arrives). Every refusal is INVALID_ARGUMENT
// and names the field ("spec.served_model_name: ..."). Messages never echo a
// long or binary value: at most a short, escaped prefix.
//
// What the rules protect:
// - names end up in file names, container names, labels, SQL rows and argv:
//   ValidateName's charset (a-z 0-9 . _ -, at most 63) everywhere;
// - values that become argv elements of another program (docker, vLLM) must
//   not start with '-', or they would be read as options;
// - paths are absolute, without NUL, ':' or ',' (docker -v syntax);
// - environment variable names are POSIX names ([A-Za-z_][A-Za-z0-9_]*);
// - numbers stay in the ranges the code below assumes (no NaN, no negatives).
// Nothing here runs a shell: values are passed as argv elements, so shell
// metacharacters are only text; the rules refuse what would still be read as
// syntax by the programs we call.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/node.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::common {

// A short, escaped prefix of `value` for messages (never the whole of a
// hostile 1 MiB string).
std::string Preview(absl::string_view value, size_t max_chars = 40);

// ValidateName as a status naming `field`.
absl::Status CheckName(absl::string_view field, absl::string_view value);
// The same, but empty is allowed.
absl::Status CheckOptionalName(absl::string_view field, absl::string_view value);
// [A-Za-z_][A-Za-z0-9_]*, at most 128 characters.
absl::Status CheckEnvName(absl::string_view field, absl::string_view name);
// Printable text (UTF-8 allowed, tabs allowed, no other control characters
// and no NUL) of at most `max_bytes`.
absl::Status CheckText(absl::string_view field, absl::string_view value, size_t max_bytes);
// A name clients send to vLLM ("Qwen/Qwen3-32B"): 1-128 of [A-Za-z0-9._:/-],
// starting with a letter or digit. Empty allowed.
absl::Status CheckServedModelName(absl::string_view field, absl::string_view value);
// An absolute path without NUL, ':', ',' or newlines, at most 4095 bytes.
// Empty allowed only when `optional`.
absl::Status CheckAbsolutePath(absl::string_view field, absl::string_view value, bool optional);
absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi);

// A deployment request from dcuctl (before defaults are applied).
absl::Status ValidateDeploymentSpec(const dcufleet::v1::DeploymentSpec& spec,
                                    absl::string_view prefix = "spec");

// What an agent is asked to run. The controller builds these; the agent
// checks them again before launching (the link may be the only thing an
// attacker controls).
absl::Status ValidateInstanceSpec(const dcufleet::v1::InstanceSpec& spec,
                                  absl::string_view prefix = "instance");
absl::Status ValidateAssignment(const dcufleet::v1::Assignment& assignment);

// What an agent sends the controller: names, counts and sizes bounded so
// one node cannot bloat the controller's memory or database.
// What a node can be (docs/security.md "What a node is trusted to say"): a
// report beyond these is not a node's, whatever its size in bytes.
inline constexpr int kMaxDevicesPerNode = 64;
inline constexpr int kMaxInstancesPerNode = 256;
inline constexpr int kMaxHoldersPerDevice = 4096;
inline constexpr int kMaxModelDirectoriesPerNode = 4096;
inline constexpr int kMaxEnvironmentsPerNode = 512;
inline constexpr int kMaxForeignListenPorts = 4096;

// A node's inventory: device count, arch grammar (an empty arch means "not
// known"), printable identity text (names, PCI addresses, versions: what
// operators' terminals show).
absl::Status CheckInventory(const dcufleet::v1::NodeInventory& inventory, absl::string_view field);

absl::Status ValidateAgentMessage(const dcufleet::v1::AgentMessage& message);

}  // namespace dcu::common
