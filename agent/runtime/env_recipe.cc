#include "agent/runtime/env_recipe.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/runtime/runtime.h"

namespace dcu::agent {

EnvMap BaseProcessEnv(absl::string_view env_prefix, absl::string_view home) {
  EnvMap env;
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  if (!env_prefix.empty()) path = absl::StrCat(env_prefix, "/bin:", path);
  env["PATH"] = path;
  env["HOME"] = home.empty() ? "/root" : std::string(home);
  env["LANG"] = "C.UTF-8";
  env["LC_ALL"] = "C.UTF-8";
  if (!env_prefix.empty()) {
    // What `conda activate` would set; some launch scripts read it.
    env["CONDA_PREFIX"] = std::string(env_prefix);
  }
  return env;
}

EnvMap ParseEnvZ(absl::string_view text) {
  static const std::set<std::string> kShellVars = {"_", "SHLVL", "PWD", "OLDPWD"};
  EnvMap env;
  for (absl::string_view kv : absl::StrSplit(text, '\0', absl::SkipEmpty())) {
    size_t eq = kv.find('=');
    if (eq == absl::string_view::npos || eq == 0) continue;
    std::string key(kv.substr(0, eq));
    if (kShellVars.count(key)) continue;
    env[key] = std::string(kv.substr(eq + 1));
  }
  return env;
}

absl::StatusOr<EnvMap> CaptureSourcedEnv(common::ProcessRunner& runner, absl::string_view bash,
                                         absl::string_view script, const EnvMap& env,
                                         absl::Duration timeout) {
  struct stat st;
  std::string script_path(script);
  if (stat(script_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("source script '", script, "' not found"));
  }
  common::ProcessOptions opts;
  opts.replace_env = true;
  opts.env = env;
  opts.timeout = timeout;
  auto out = runner.Run(
      {std::string(bash), "-c", kSourceScriptCode, "dcufleet-source", script_path}, opts);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("sourcing '", script, "': ", out.status().message()));
  }
  if (out->timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat("sourcing '", script, "' took longer than ", absl::FormatDuration(timeout)));
  }
  EnvMap result = ParseEnvZ(out->stdout_data);
  if (out->exit_code != 0 || result.empty()) {
    return absl::InternalError(absl::StrCat("sourcing '", script, "' failed (exit ",
                                            out->exit_code, "): ", out->stderr_data));
  }
  return result;
}

std::string PrependSearchPath(const std::vector<std::string>& prefixes,
                              absl::string_view existing) {
  std::vector<std::string> parts;
  std::set<std::string> seen;
  for (const auto& p : prefixes) {
    if (p.empty() || !seen.insert(p).second) continue;
    parts.push_back(p);
  }
  for (absl::string_view p : absl::StrSplit(existing, ':', absl::SkipEmpty())) {
    if (!seen.insert(std::string(p)).second) continue;
    parts.emplace_back(p);
  }
  return absl::StrJoin(parts, ":");
}

void ApplyRecipe(const dcufleet::v1::InstanceSpec& spec, EnvMap* env) {
  // Python block-buffers stdout written to a file or a pipe (8 KiB): a
  // print() reaches the log, the start-up follower and the diagnosis only
  // when the buffer fills or the process exits, and not at all when it is
  // killed (a stall, a stop). vLLM's own log lines flush, print()s and some
  // libraries' lines do not. What the env or the image sets, and spec.env,
  // win.
  env->emplace(kPythonUnbufferedEnv, "1");
  for (const auto& [k, v] : spec.env()) (*env)[k] = v;
  if (spec.ld_library_path_prefix_size() > 0) {
    std::vector<std::string> prefixes(spec.ld_library_path_prefix().begin(),
                                      spec.ld_library_path_prefix().end());
    auto it = env->find("LD_LIBRARY_PATH");
    (*env)["LD_LIBRARY_PATH"] =
        PrependSearchPath(prefixes, it == env->end() ? "" : it->second);
  }
  if (spec.device_indices_size() > 0) {
    std::string var =
        spec.visible_devices_env().empty() ? "HIP_VISIBLE_DEVICES" : spec.visible_devices_env();
    (*env)[var] = absl::StrJoin(spec.device_indices(), ",");
  }
  if (spec.port() > 0) (*env)[kInstancePortEnv] = absl::StrCat(spec.port());
  (*env)[kInstanceMarkerEnv] = spec.instance_id();
}

absl::StatusOr<std::vector<std::string>> PrepareModelOverlay(
    const dcufleet::v1::InstanceSpec& spec) {
  std::vector<std::string> notes;
  if (spec.overlay_dir().empty() || spec.overlay_config_json().empty()) return notes;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path model(spec.model_path());
  fs::path overlay(spec.overlay_dir());
  if (spec.model_path().empty() || !fs::is_directory(model, ec)) {
    return absl::NotFoundError(
        absl::StrCat("overlay: model directory '", spec.model_path(), "' not found"));
  }
  fs::create_directories(overlay, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("overlay: cannot create '", spec.overlay_dir(), "': ", ec.message()));
  }
  int linked = 0;
  for (const auto& entry : fs::directory_iterator(model, ec)) {
    std::string name = entry.path().filename().string();
    if (name == "config.json") continue;
    fs::path link = overlay / name;
    fs::remove(link, ec);
    fs::create_symlink(entry.path(), link, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("overlay: cannot link '", link.string(), "': ", ec.message()));
    }
    ++linked;
  }
  fs::path cfg = overlay / "config.json";
  fs::remove(cfg, ec);
  std::ofstream out(cfg, std::ios::trunc);
  out << spec.overlay_config_json();
  if (!out) {
    return absl::InternalError(absl::StrCat("overlay: cannot write '", cfg.string(), "'"));
  }
  notes.push_back(absl::StrCat("model overlay '", spec.overlay_dir(), "': ", linked,
                               " entries linked from '", spec.model_path(),
                               "', config.json replaced"));
  return notes;
}

}  // namespace dcu::agent
