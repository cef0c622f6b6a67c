#pragma once

// dcuctl's contexts: which fleet a command talks to, and with what
// credentials, kept in a small file so that nobody retypes --controller and
// --tls-* (kubectl's kubeconfig, much smaller).
//
// Where: --dcuconfig FILE, else $DCUCONFIG, else
// $XDG_CONFIG_HOME/dcufleet/config, else ~/.config/dcufleet/config. A file
// that does not exist is an empty config.
//
// Format (INI, one setting a line; '#' or ';' starts a comment line):
//
//   current-context = prod
//
//   [context prod]
//   controller = ctl.example.internal:7070
//   ca = /home/alice/.dcufleet/ca.crt
//   cert = /home/alice/.dcufleet/alice.crt
//   key = /home/alice/.dcufleet/alice.key
//   token-file = /home/alice/.dcufleet/token
//
// A value may be "double-quoted" (\" and \\ inside) to keep blanks at its
// ends. Unknown keys, a duplicate context or key, and text outside these
// shapes are errors naming the file and line. dcuctl writes the file with
// mode 0600, atomically (a temporary file renamed over it).
//
// Precedence, per setting: a flag (--controller, --tls-ca, --tls-cert,
// --tls-key, --token-file) > its environment variable (DCUFLEET_CONTROLLER,
// DCUFLEET_TLS_CA, ...) > the context (--context NAME, else current-context)
// > the default (127.0.0.1:7070, plaintext). DCUFLEET_CONTROLLER set but
// empty is an error, not the default.

#include <functional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace dcu::dcuctl {

struct Context {
  std::string name;
  std::string controller;
  std::string ca, cert, key, token_file;
};

struct ClientConfig {
  std::string current_context;
  std::vector<Context> contexts;
  const Context* Find(absl::string_view name) const;
  Context* Find(absl::string_view name);
};

// Largest config file read.
inline constexpr size_t kMaxConfigBytes = 1 << 20;

// Reads an environment variable: nullptr when unset (std::getenv in dcuctl).
using EnvLookup = std::function<const char*(const char*)>;

struct ConfigLocation {
  std::string path;
  std::string source;  // "--dcuconfig", "$DCUCONFIG", "$XDG_CONFIG_HOME", "~/.config"
};
// INVALID_ARGUMENT when $DCUCONFIG is set but empty, or no location can be
// made (no $HOME).
absl::StatusOr<ConfigLocation> LocateConfig(const std::string& flag, const EnvLookup& env);

// INVALID_ARGUMENT "PATH:LINE: ..." for a malformed file.
absl::StatusOr<ClientConfig> ParseConfig(absl::string_view text, const std::string& path);
// ParseConfig of the file; an empty config when it does not exist.
absl::StatusOr<ClientConfig> LoadConfig(const std::string& path);
std::string SerializeConfig(const ClientConfig& config);
// Writes atomically with mode 0600 (its directory made 0700 if missing).
absl::Status SaveConfig(const std::string& path, const ClientConfig& config);

// 1-128 of [A-Za-z0-9._@:-], starting with a letter or digit.
absl::Status CheckContextName(absl::string_view name);

// The connection settings as the command line gave them (empty: not given).
struct ConnectionFlags {
  std::string controller, tls_ca, tls_cert, tls_key, token_file;
  std::string context;  // --context
};

struct ResolvedConnection {
  std::string controller;
  // Where the address came from: "--controller", "$DCUFLEET_CONTROLLER",
  // "context 'prod'", "the default".
  std::string controller_source;
  std::string tls_ca, tls_cert, tls_key, token_file;
  // The context in use ("" for none) and why ("current-context in PATH",
  // "--context").
  std::string context;
  std::string context_source;
};

// Applies the precedence above. `config` may be null (no file).
// INVALID_ARGUMENT for an empty $DCUFLEET_CONTROLLER, or a --context /
// $DCUFLEET_CONTEXT / current-context that names no context.
absl::StatusOr<ResolvedConnection> ResolveConnection(const ConnectionFlags& flags,
                                                     const EnvLookup& env,
                                                     const ClientConfig* config,
                                                     const std::string& config_path);

}  // namespace dcu::dcuctl
