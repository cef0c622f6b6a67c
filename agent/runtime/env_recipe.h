#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/process_runner.h"
#include "dcufleet/v1/types.pb.h"

// Rendering a stack's environment recipe: the environment a DTK env.sh
// produces, variables, LD_LIBRARY_PATH prefixes in order, the visible
// devices, the port and the instance marker. Shared by the bare and the
// container runtime.
namespace dcu::agent {

using EnvMap = std::map<std::string, std::string>;

// The shell code that sources a script and prints the resulting environment.
// The script path is passed as "$1" (a separate argv element), never pasted
// into the code: argv = {bash, "-c", kSourceScriptCode, "dcufleet-source", path}.
// Only bash builtins: inside an image the one tool promised is the shell
// (ContainerRuntimeOptions::image_bash); `env` may be absent there.
inline constexpr char kSourceScriptCode[] =
    "set -a; . \"$1\" >/dev/null 2>&1; set +a; "
    "for __dcufleet_v in $(compgen -e); do "
    "printf '%s=%s\\0' \"$__dcufleet_v\" \"${!__dcufleet_v}\"; done";

// What a bare instance starts from: nothing of the agent's environment except
// HOME, a standard PATH with the env's bin/ first, and a UTF-8 locale.
EnvMap BaseProcessEnv(absl::string_view env_prefix, absl::string_view home);

// Parses `env -0` output. Drops the shell's own variables (_, SHLVL, PWD,
// OLDPWD) which describe the capturing shell, not the recipe.
EnvMap ParseEnvZ(absl::string_view text);

// Sources `script` with bash under exactly `env` and returns the environment
// it leaves. NOT_FOUND when the script does not exist, INTERNAL when bash
// fails or prints nothing, DEADLINE_EXCEEDED on timeout.
absl::StatusOr<EnvMap> CaptureSourcedEnv(common::ProcessRunner& runner, absl::string_view bash,
                                         absl::string_view script, const EnvMap& env,
                                         absl::Duration timeout);

// `prefixes` in order, then the parts of `existing` not already listed.
// Empty parts are dropped.
std::string PrependSearchPath(const std::vector<std::string>& prefixes,
                              absl::string_view existing);

inline constexpr char kPythonUnbufferedEnv[] = "PYTHONUNBUFFERED";

// Applies, in this order: PYTHONUNBUFFERED=1 where the environment has no
// value for it, spec.env, LD_LIBRARY_PATH prefixes, the visible
// devices variable (spec.visible_devices_env, default HIP_VISIBLE_DEVICES),
// DCUFLEET_PORT and the DCUFLEET_INSTANCE marker. The marker and the device
// variable win over anything in spec.env.
void ApplyRecipe(const dcufleet::v1::InstanceSpec& spec, EnvMap* env);

// Creates spec.overlay_dir when spec.overlay_config_json is set: a directory
// of symlinks to every entry of spec.model_path except config.json, plus the
// corrected config.json, so a bad config is fixed without touching the
// model's files. No-op when either field is empty. Returns notes.
absl::StatusOr<std::vector<std::string>> PrepareModelOverlay(
    const dcufleet::v1::InstanceSpec& spec);

}  // namespace dcu::agent
