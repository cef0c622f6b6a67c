#include "agent/runtime/container_runtime.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/enum_names.h"
#include "common/legacy_fields.h"
#include "common/logging.h"
#include "common/status_util.h"
#include "nlohmann/json.hpp"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kLabelInstance[] = "dcufleet.instance";
constexpr char kLabelDeployment[] = "dcufleet.deployment";
constexpr char kLabelAttempt[] = "dcufleet.attempt";
// The agent state directory that started the container.
constexpr char kLabelOwner[] = "dcufleet.state-dir";
constexpr char kSpecFile[] = "spec.binpb";
constexpr char kStopFile[] = "stop_requested";

bool PathExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string HostPath(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return absl::StrCat(absl::StripSuffix(root, "/"), path);
}

bool NoSuchObject(const common::ProcessOutput& out) {
  std::string all = absl::StrCat(out.stderr_data, out.stdout_data);
  return absl::StrContains(all, "No such object") || absl::StrContains(all, "No such container") ||
         absl::StrContains(all, "no such container") ||
         absl::StrContains(all, "no such object");
}

absl::Time ParseDockerTime(const std::string& s) {
  absl::Time t;
  std::string err;
  if (s.empty() || absl::StartsWith(s, "0001-01-01")) return absl::InfinitePast();
  if (!absl::ParseTime(absl::RFC3339_full, s, &t, &err)) return absl::InfinitePast();
  return t;
}

// The log driver keeps a line longer than its buffer as pieces of 16 KiB
// (moby's copier, defaultBufSize), and `logs --timestamps` prints a stamp
// before each piece: "T AAAA…T AAAA…T AA…" for one line (measured on Docker
// 20.10: the line's first stamp, repeated). The stamps between the pieces
// are not the engine's output; a piece followed by anything else is left
// as it is.
constexpr size_t kLogPieceBytes = 16 * 1024;

std::string JoinLogPieces(absl::string_view text, absl::string_view stamp_and_space) {
  std::string out;
  out.reserve(text.size());
  const size_t w = stamp_and_space.size();
  while (text.size() > kLogPieceBytes) {
    absl::string_view next = text.substr(kLogPieceBytes);
    if (next.size() < w || next[w - 1] != ' ' ||
        ParseDockerTime(std::string(next.substr(0, w - 1))) == absl::InfinitePast()) {
      break;
    }
    out.append(text.data(), kLogPieceBytes);
    text = next.substr(w);
  }
  out.append(text.data(), text.size());
  return out;
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {
std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  return ec ? dir : p.lexically_normal().string();
}
}  // namespace

ContainerRuntime::ContainerRuntime(ContainerRuntimeOptions options, common::ProcessRunner* runner)
    : options_(std::move(options)), owner_(AbsoluteDir(options_.state_dir)), runner_(runner) {}

absl::StatusOr<std::unique_ptr<ContainerRuntime>> ContainerRuntime::Create(
    ContainerRuntimeOptions options, common::ProcessRunner* runner) {
  if (options.cli.empty()) return absl::InvalidArgumentError("container runtime: cli is empty");
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("container runtime: state_dir is empty");
  }
  if (runner == nullptr) return absl::InvalidArgumentError("container runtime: no process runner");
  std::error_code ec;
  fs::create_directories(fs::path(options.state_dir) / "containers", ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("container runtime: cannot create '",
                                            options.state_dir, "/containers': ", ec.message()));
  }
  return std::unique_ptr<ContainerRuntime>(new ContainerRuntime(std::move(options), runner));
}

std::string ContainerRuntime::ContainerName(absl::string_view instance_id) const {
  return absl::StrCat(options_.name_prefix, instance_id);
}

std::string ContainerRuntime::SpecDir(absl::string_view instance_id) const {
  return absl::StrCat(options_.state_dir, "/containers/", instance_id);
}

bool ContainerRuntime::Owns(absl::string_view instance_id,
                            absl::string_view state_dir_label) const {
  if (!state_dir_label.empty() && state_dir_label != "<no value>") {
    return state_dir_label == owner_;
  }
  // Started by an agent older than the owner label: this state directory's
  // only if it holds the container's spec.
  return PathExists(absl::StrCat(SpecDir(instance_id), "/", kSpecFile));
}

absl::StatusOr<common::ProcessOutput> ContainerRuntime::Cli(const std::vector<std::string>& args,
                                                            absl::Duration timeout) {
  std::vector<std::string> argv = {options_.cli};
  argv.insert(argv.end(), args.begin(), args.end());
  common::ProcessOptions opts;
  opts.timeout = timeout;
  auto out = runner_->Run(argv, opts);
  if (!out.ok()) {
    if (out.status().code() == absl::StatusCode::kNotFound) {
      return absl::UnavailableError(
          absl::StrCat("container CLI '", options_.cli, "': ", out.status().message()));
    }
    return out.status();
  }
  if (out->timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("'", options_.cli, " ", args.empty() ? "" : args[0],
                                                    "' took longer than ",
                                                    absl::FormatDuration(timeout)));
  }
  return out;
}

absl::Status ContainerRuntime::CheckEngine() {
  auto out = Cli({"version", "--format", "{{.Server.Version}}"}, absl::Seconds(20));
  if (!out.ok()) return absl::UnavailableError(std::string(out.status().message()));
  if (out->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(
        "container engine not answering ('", options_.cli,
        " version' exited ", out->exit_code, "): ", absl::StripAsciiWhitespace(out->stderr_data)));
  }
  return absl::OkStatus();
}

absl::StatusOr<EnvMap> ContainerRuntime::ImageEnv(const std::string& image) {
  DCU_ASSIGN_OR_RETURN(common::ProcessOutput out,
                       Cli({"image", "inspect", "--format", "{{json .Config.Env}}", image},
                           options_.cli_timeout));
  if (out.exit_code != 0) {
    return absl::NotFoundError(absl::StrCat("image '", image, "' not found: ",
                                            absl::StripAsciiWhitespace(out.stderr_data)));
  }
  EnvMap env;
  try {
    json j = json::parse(out.stdout_data);
    if (j.is_array()) {
      for (const auto& kv : j) {
        std::string s = kv.get<std::string>();
        size_t eq = s.find('=');
        if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
      }
    }
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("image '", image, "' env: ", e.what()));
  }
  return env;
}

absl::StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>>
ContainerRuntime::RenderRunArgs(const dcufleet::v1::InstanceSpec& spec) {
  if (std::string why = ValidateInstanceId(spec.instance_id()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const std::string& image = spec.runtime_location();
  if (image.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("instance '", spec.instance_id(), "': runtime_location (image) is empty"));
  }
  std::vector<std::string> notes;
  std::vector<std::string> args = {"run", "-d", "--name", ContainerName(spec.instance_id()),
                                   "--label", absl::StrCat(kLabelInstance, "=", spec.instance_id())};
  if (!spec.deployment().empty()) {
    args.insert(args.end(), {"--label", absl::StrCat(kLabelDeployment, "=", spec.deployment())});
  }
  if (spec.attempt() > 0) {
    args.insert(args.end(), {"--label", absl::StrCat(kLabelAttempt, "=", spec.attempt())});
  }
  args.insert(args.end(), {"--label", absl::StrCat(kLabelOwner, "=", owner_)});
  for (const auto& dev : options_.devices) {
    if (PathExists(HostPath(options_.host_root, dev))) {
      args.insert(args.end(), {"--device", dev});
    } else if (options_.skip_missing_devices) {
      notes.push_back(absl::StrCat("device '", dev, "' absent on host: --device skipped"));
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat("instance '", spec.instance_id(), "': device '", dev, "' absent on host"));
    }
  }
  for (const auto& g : options_.group_add) args.insert(args.end(), {"--group-add", g});
  args.insert(args.end(), {"--ipc", "host", "--network", "host", "--shm-size",
                           spec.shm_size().empty() ? options_.default_shm_size : spec.shm_size()});
  for (const auto& m : options_.readonly_host_mounts) {
    if (PathExists(HostPath(options_.host_root, m))) {
      args.insert(args.end(), {"-v", absl::StrCat(m, ":", m, ":ro")});
    } else {
      notes.push_back(absl::StrCat("host directory '", m, "' absent: not mounted"));
    }
  }
  if (!spec.model_path().empty()) {
    if (!PathExists(spec.model_path())) {
      return absl::NotFoundError(absl::StrCat("instance '", spec.instance_id(),
                                              "': model directory '", spec.model_path(),
                                              "' not found"));
    }
    args.insert(args.end(), {"-v", absl::StrCat(spec.model_path(), ":", spec.model_path(), ":ro")});
  }
  DCU_ASSIGN_OR_RETURN(std::vector<std::string> overlay_notes, PrepareModelOverlay(spec));
  if (!overlay_notes.empty()) {
    notes.insert(notes.end(), overlay_notes.begin(), overlay_notes.end());
    args.insert(args.end(),
                {"-v", absl::StrCat(spec.overlay_dir(), ":", spec.overlay_dir(), ":ro")});
  }

  DCU_ASSIGN_OR_RETURN(EnvMap image_env, ImageEnv(image));
  EnvMap env = image_env;
  for (const auto& script : spec.source_scripts()) {
    // The script lives in the image (e.g. /opt/dtk/env.sh): source it there
    // in a throw-away container and keep what it changed.
    DCU_ASSIGN_OR_RETURN(
        common::ProcessOutput out,
        Cli({"run", "--rm", "--network", "none", "--entrypoint", options_.image_bash, image, "-c",
             kSourceScriptCode, "dcufleet-source", script},
            options_.cli_timeout));
    EnvMap captured = ParseEnvZ(out.stdout_data);
    if (out.exit_code != 0 || captured.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "instance '", spec.instance_id(), "': sourcing '", script, "' in image '", image,
          "' failed (exit ", out.exit_code, "): ", absl::StripAsciiWhitespace(out.stderr_data)));
    }
    captured.erase("HOSTNAME");
    for (const auto& [k, v] : captured) env[k] = v;
    notes.push_back(absl::StrCat("sourced '", script, "' in image"));
  }
  ApplyRecipe(spec, &env);
  for (const auto& [k, v] : env) {
    auto it = image_env.find(k);
    if (it != image_env.end() && it->second == v) continue;
    args.insert(args.end(), {"-e", absl::StrCat(k, "=", v)});
  }
  if (spec.argv_size() > 0) {
    // The spec's argv is the whole command line: it replaces any entrypoint.
    args.insert(args.end(), {"--entrypoint", spec.argv(0), image});
    for (int i = 1; i < spec.argv_size(); ++i) args.push_back(spec.argv(i));
  } else {
    args.push_back(image);
  }
  return std::make_pair(std::move(args), std::move(notes));
}

absl::StatusOr<RuntimeInstance> ContainerRuntime::Start(const dcufleet::v1::InstanceSpec& spec) {
  if (std::string why = ValidateInstanceId(spec.instance_id()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  auto existing = Inspect(spec.instance_id());
  if (existing.ok()) {
    if (existing->running) {
      return absl::AlreadyExistsError(absl::StrCat("instance '", spec.instance_id(),
                                                   "' is already running (container ",
                                                   existing->container_id.substr(0, 12), ")"));
    }
    auto rm = Cli({"rm", "-f", ContainerName(spec.instance_id())}, options_.cli_timeout);
    if (!rm.ok()) return rm.status();
  }
  DCU_ASSIGN_OR_RETURN(auto rendered, RenderRunArgs(spec));
  std::string dir = SpecDir(spec.instance_id());
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::remove(absl::StrCat(dir, "/", kStopFile), ec);
  {
    std::ofstream out(absl::StrCat(dir, "/", kSpecFile), std::ios::binary | std::ios::trunc);
    spec.SerializeToOstream(&out);
    std::ofstream notes(absl::StrCat(dir, "/notes"), std::ios::trunc);
    for (const auto& n : rendered.second) notes << n << "\n";
  }
  DCU_ASSIGN_OR_RETURN(common::ProcessOutput out, Cli(rendered.first, options_.cli_timeout));
  if (out.exit_code != 0) {
    std::string err(absl::StripAsciiWhitespace(out.stderr_data));
    // A container created but not started still holds the name.
    Cli({"rm", "-f", ContainerName(spec.instance_id())}, options_.cli_timeout).IgnoreError();
    std::string msg = absl::StrCat("instance '", spec.instance_id(), "': '", options_.cli,
                                   " run' exited ", out.exit_code, ": ", err);
    if (absl::StrContains(err, "Unable to find image") ||
        absl::StrContains(err, "No such image") || absl::StrContains(err, "not found")) {
      return absl::NotFoundError(msg);
    }
    return absl::InternalError(msg);
  }
  for (const auto& n : rendered.second) {
    DCU_LOG_INFO("instance '", spec.instance_id(), "': ", n);
  }
  return Inspect(spec.instance_id());
}

absl::StatusOr<RuntimeInstance> ContainerRuntime::Inspect(absl::string_view instance_id) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  // The supervisor inspects every instance it runs now and then: a tail
  // that was read once (a `logs -f` that ended) does not run for days.
  EndTails(absl::Now());
  std::string name = ContainerName(instance_id);
  DCU_ASSIGN_OR_RETURN(common::ProcessOutput out,
                       Cli({"inspect", "--type", "container", name}, options_.cli_timeout));
  if (out.exit_code != 0) {
    if (NoSuchObject(out)) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
    return absl::UnavailableError(absl::StrCat("'", options_.cli, " inspect ", name, "' exited ",
                                               out.exit_code, ": ",
                                               absl::StripAsciiWhitespace(out.stderr_data)));
  }
  RuntimeInstance ri;
  ri.instance_id = std::string(instance_id);
  ri.kind = std::string(common::RuntimeKindName(dcufleet::v1::RUNTIME_CONTAINER));
  ri.log_location = absl::StrCat(options_.cli, " logs ", name);
  try {
    json arr = json::parse(out.stdout_data);
    if (!arr.is_array() || arr.empty()) {
      return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
    }
    const json& c = arr[0];
    ri.container_id = c.value("Id", "");
    const json& s = c.at("State");
    ri.running = s.value("Running", false);
    ri.pid = s.value("Pid", 0);
    ri.started_at = ParseDockerTime(s.value("StartedAt", ""));
    if (!ri.running) {
      ri.exit_known = ri.started_at != absl::InfinitePast();
      ri.exit_code = s.value("ExitCode", -1);
      // The CLI reports 128+N for a process killed by signal N.
      if (ri.exit_code > 128 && ri.exit_code < 128 + 65) ri.term_signal = ri.exit_code - 128;
      ri.finished_at = ParseDockerTime(s.value("FinishedAt", ""));
      if (s.value("OOMKilled", false)) ri.notes.push_back("container was OOM-killed");
    }
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("'", options_.cli, " inspect ", name, "': ", e.what()));
  }
  std::string dir = SpecDir(instance_id);
  if (auto bytes = ReadText(absl::StrCat(dir, "/", kSpecFile)); bytes.ok()) {
    ri.spec.ParseFromString(*bytes);
    common::UpgradeLegacyFields(&ri.spec);  // written by an older agent
  } else {
    ri.spec.set_instance_id(std::string(instance_id));
    ri.spec.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
  }
  if (auto notes = ReadText(absl::StrCat(dir, "/notes")); notes.ok()) {
    for (absl::string_view n : absl::StrSplit(*notes, '\n', absl::SkipEmpty())) {
      ri.notes.emplace_back(n);
    }
  }
  ri.stop_requested = PathExists(absl::StrCat(dir, "/", kStopFile));
  return ri;
}

absl::Status ContainerRuntime::Stop(absl::string_view instance_id, absl::Duration grace) {
  EndTails(absl::Now(), instance_id);
  DCU_ASSIGN_OR_RETURN(RuntimeInstance ri, Inspect(instance_id));
  if (!ri.running) return absl::OkStatus();
  std::string dir = SpecDir(instance_id);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream(absl::StrCat(dir, "/", kStopFile)) << "1\n";
  int64_t secs = std::max<int64_t>(0, absl::ToInt64Seconds(grace));
  DCU_ASSIGN_OR_RETURN(
      common::ProcessOutput out,
      Cli({"stop", "-t", absl::StrCat(secs), ContainerName(instance_id)},
          grace + options_.cli_timeout));
  if (out.exit_code != 0 && !NoSuchObject(out)) {
    return absl::InternalError(absl::StrCat("'", options_.cli, " stop ",
                                            ContainerName(instance_id), "' exited ",
                                            out.exit_code, ": ",
                                            absl::StripAsciiWhitespace(out.stderr_data)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RuntimeInstance>> ContainerRuntime::List() {
  DCU_ASSIGN_OR_RETURN(
      common::ProcessOutput out,
      Cli({"ps", "-a", "--filter", absl::StrCat("label=", kLabelInstance), "--format",
           absl::StrCat("{{.Label \"", kLabelInstance, "\"}}\t{{.Label \"", kLabelOwner, "\"}}")},
          options_.cli_timeout));
  if (out.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("'", options_.cli, " ps' exited ", out.exit_code,
                                               ": ", absl::StripAsciiWhitespace(out.stderr_data)));
  }
  std::vector<RuntimeInstance> all;
  for (absl::string_view line : absl::StrSplit(out.stdout_data, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> labels = absl::StrSplit(line, '\t');
    std::string id(absl::StripAsciiWhitespace(labels.first));
    if (!ValidateInstanceId(id).empty()) continue;
    if (!Owns(id, absl::StripAsciiWhitespace(labels.second))) continue;
    auto ri = Inspect(id);
    if (ri.ok()) all.push_back(*std::move(ri));
  }
  return all;
}

absl::StatusOr<std::vector<RuntimeInstance>> ContainerRuntime::Recover() {
  DCU_ASSIGN_OR_RETURN(std::vector<RuntimeInstance> all, List());
  for (const auto& ri : all) {
    DCU_LOG_INFO("instance '", ri.instance_id, "': found container ",
                 ri.container_id.substr(0, 12), ri.running ? " running (adopted)" : " ended");
  }
  return all;
}

absl::StatusOr<std::vector<ContainerRuntime::TimedLine>> ContainerRuntime::ReadTimedLines(
    absl::string_view instance_id, const std::vector<std::string>& selection) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  std::vector<std::string> argv = {"logs", "--timestamps"};
  argv.insert(argv.end(), selection.begin(), selection.end());
  argv.push_back(ContainerName(instance_id));
  DCU_ASSIGN_OR_RETURN(common::ProcessOutput out, Cli(argv, options_.cli_timeout));
  if (out.exit_code != 0) {
    if (NoSuchObject(out)) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
    return absl::UnavailableError(absl::StrCat("'", options_.cli, " logs' exited ", out.exit_code,
                                               ": ", absl::StripAsciiWhitespace(out.stderr_data)));
  }
  // stdout and stderr come back separately; their timestamps restore the
  // order in which the instance wrote them.
  std::vector<TimedLine> lines;
  int stream_number = 0;
  for (const std::string* stream : {&out.stdout_data, &out.stderr_data}) {
    ++stream_number;
    for (absl::string_view l : absl::StrSplit(*stream, '\n', absl::SkipEmpty())) {
      size_t sp = l.find(' ');
      TimedLine line{absl::InfinitePast(), std::string(l), stream_number};
      if (sp != absl::string_view::npos) {
        absl::Time t = ParseDockerTime(std::string(l.substr(0, sp)));
        if (t != absl::InfinitePast()) {
          line.at = t;
          line.text = JoinLogPieces(l.substr(sp + 1), l.substr(0, sp + 1));
          line.whole_pieces = !line.text.empty() && line.text.size() % kLogPieceBytes == 0;
        }
      }
      lines.push_back(std::move(line));
    }
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const TimedLine& a, const TimedLine& b) { return a.at < b.at; });
  return lines;
}

absl::StatusOr<std::string> ContainerRuntime::ReadLogTail(absl::string_view instance_id,
                                                          size_t max_bytes) {
  DCU_ASSIGN_OR_RETURN(std::vector<TimedLine> lines, ReadTimedLines(instance_id, {"--tail", "2000"}));
  std::string data;
  for (const auto& l : lines) absl::StrAppend(&data, l.text, "\n");
  if (data.size() > max_bytes) data.erase(0, data.size() - max_bytes);
  return data;
}

absl::StatusOr<LogChunk> ContainerRuntime::ReadLogSince(absl::string_view instance_id,
                                                        int64_t since_offset, size_t max_bytes) {
  // A container's log has no byte positions; the engine stamps each line
  // with the time it read it, to the nanosecond, and `logs --since T`
  // gives the lines stamped T and later. The position is the last line's
  // stamp in nanoseconds: the next read asks from it and keeps what is
  // stamped after it. (Two lines of one stream never shared a stamp here:
  // docker 20.10, 5,000 lines written in one burst. A line of the other
  // stream stamped before the last one but written after the read would be
  // missed: a window of microseconds.)
  //
  // At most the last `bound` lines either way: an adopted container's first
  // read from position 0 would otherwise stream its whole log (days of
  // access lines) through the CLI for the end that fits. Lines are seldom
  // under 32 bytes, so the bound rarely cuts into what fits; what it leaves
  // out beyond that is skipped uncounted (skipped_bytes is then a floor).
  const std::string bound = absl::StrCat(std::max<size_t>(2000, max_bytes / 32));
  std::vector<std::string> selection = {"--tail", bound};
  if (since_offset >= 0) {
    selection = {"--since",
                 absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", absl::FromUnixNanos(since_offset), absl::UTCTimeZone()),
                 "--tail", bound};
  }
  // Started before the read: what the container writes from now on is seen
  // by one or the other.
  const absl::Time now = absl::Now();
  bool attach_started = false;
  std::shared_ptr<AttachedTail> tail = TailOf(instance_id, now, &attach_started);
  DCU_ASSIGN_OR_RETURN(std::vector<TimedLine> lines, ReadTimedLines(instance_id, selection));
  LogChunk chunk;
  if (tail != nullptr && tail->Running()) {
    // A stream's last line that is whole 16 KiB pieces while that stream
    // is still writing a line is that line's beginning, stamped with its
    // first piece: the whole line comes later with the same stamp, which a
    // position past it would drop. It and everything stamped from it on
    // wait for the next read (the position stays before it). On the read
    // that starts the attach (the first after an agent restart) nothing
    // tells yet whether the line goes on: it waits one read.
    absl::Time hold_from = absl::InfiniteFuture();
    for (int stream = 1; stream <= 2; ++stream) {
      for (size_t i = lines.size(); i > 0; --i) {
        const TimedLine& l = lines[i - 1];
        if (l.stream != stream) continue;
        if (l.whole_pieces && (attach_started || tail->Writing(stream))) {
          hold_from = std::min(hold_from, l.at);
        }
        break;
      }
    }
    if (hold_from != absl::InfiniteFuture()) {
      lines.erase(std::find_if(lines.begin(), lines.end(),
                               [&](const TimedLine& l) { return l.at >= hold_from; }),
                  lines.end());
    }
    chunk.partial = tail->Latest();
  }
  chunk.next_offset = std::max<int64_t>(0, since_offset);
  size_t first = 0;
  if (since_offset >= 0) {
    while (first < lines.size() && absl::ToUnixNanos(lines[first].at) <= since_offset) ++first;
  }
  // The end that fits; more than fits is skipped (and counted, when
  // following from a position: a tail leaves earlier lines out by design).
  size_t bytes = 0;
  size_t keep_from = lines.size();
  while (keep_from > first && bytes + lines[keep_from - 1].text.size() + 1 <= max_bytes) {
    bytes += lines[--keep_from].text.size() + 1;
  }
  if (since_offset >= 0) {
    for (size_t i = first; i < keep_from; ++i) chunk.skipped_bytes += lines[i].text.size() + 1;
  }
  for (size_t i = keep_from; i < lines.size(); ++i) absl::StrAppend(&chunk.text, lines[i].text, "\n");
  for (size_t i = lines.size(); i > first; --i) {
    if (lines[i - 1].at != absl::InfinitePast()) {
      chunk.next_offset = std::max(chunk.next_offset, absl::ToUnixNanos(lines[i - 1].at));
      break;
    }
  }
  return chunk;
}

std::shared_ptr<AttachedTail> ContainerRuntime::TailOf(absl::string_view instance_id, absl::Time now,
                                                       bool* started) {
  EndTails(now);
  absl::MutexLock lock(&tails_mu_);
  auto it = tails_.find(instance_id);
  *started = it == tails_.end();
  if (it == tails_.end()) {
    it = tails_
             .emplace(std::string(instance_id),
                      std::make_shared<AttachedTail>(
                          runner_, std::vector<std::string>{options_.cli, "attach", "--no-stdin",
                                                            "--sig-proxy=false", ContainerName(instance_id)}))
             .first;
  }
  it->second->Use(now);
  return it->second;
}

void ContainerRuntime::EndTails(absl::Time now, absl::string_view instance_id) {
  std::vector<std::shared_ptr<AttachedTail>> ended;
  {
    absl::MutexLock lock(&tails_mu_);
    for (auto it = tails_.begin(); it != tails_.end();) {
      // One whose attach ended (the container exited) is kept while it is
      // read: another attach of a stopped container would fail again.
      const bool end = it->first == instance_id || now - it->second->last_used() > kTailIdle;
      if (end) {
        ended.push_back(std::move(it->second));
        it = tails_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Destroyed here, outside the lock: each ends its attach and joins.
}

absl::Status ContainerRuntime::Remove(absl::string_view instance_id) {
  if (std::string why = ValidateInstanceId(instance_id); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  EndTails(absl::Now(), instance_id);
  auto ri = Inspect(instance_id);
  if (ri.ok() && ri->running) {
    return absl::FailedPreconditionError(
        absl::StrCat("instance '", instance_id, "' is running (container ",
                     ri->container_id.substr(0, 12), ")"));
  }
  if (ri.ok()) {
    DCU_ASSIGN_OR_RETURN(common::ProcessOutput out,
                         Cli({"rm", "-f", ContainerName(instance_id)}, options_.cli_timeout));
    if (out.exit_code != 0 && !NoSuchObject(out)) {
      return absl::InternalError(absl::StrCat("'", options_.cli, " rm' exited ", out.exit_code,
                                              ": ", absl::StripAsciiWhitespace(out.stderr_data)));
    }
  } else if (ri.status().code() != absl::StatusCode::kNotFound) {
    return ri.status();
  }
  std::error_code ec;
  fs::remove_all(SpecDir(instance_id), ec);
  return absl::OkStatus();
}

}  // namespace dcu::agent
