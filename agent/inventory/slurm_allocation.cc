#include "agent/inventory/slurm_allocation.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dcu::agent {
namespace {

constexpr int kMaxDeviceIndex = 1023;
constexpr size_t kMaxValueLength = 4096;

// Printable and short, for error messages about hostile values.
std::string Quoted(absl::string_view v) {
  std::string out;
  for (char c : v.substr(0, 80)) out.push_back(absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : '?');
  if (v.size() > 80) out += "...";
  return absl::StrCat("'", out, "'");
}

bool ParseIndex(absl::string_view s, int* out) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(s, out) && *out >= 0 && *out <= kMaxDeviceIndex;
}

// Slurm names: job ids are digits; partitions, nodes and clusters are
// letters, digits and "_-.". Anything else did not come from Slurm.
absl::Status CheckName(absl::string_view value, absl::string_view what, bool digits_only) {
  if (value.empty() || value.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(value), ": empty or over 128 characters"));
  }
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    bool ok = digits_only ? absl::ascii_isdigit(u) : (absl::ascii_isalnum(u) || c == '_' || c == '-' || c == '.');
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(value), ": ",
                                                     digits_only ? "not a number" : "not a Slurm name"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseDeviceIndexList(absl::string_view value, absl::string_view what) {
  if (value.size() > kMaxValueLength) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", value.size(), " characters, more than ", kMaxValueLength));
  }
  std::vector<int> out;
  std::set<int> seen;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int lo = 0, hi = 0;
    size_t dash = item.find('-');
    bool ok = dash == absl::string_view::npos
                  ? ParseIndex(item, &lo) && (hi = lo, true)
                  : ParseIndex(item.substr(0, dash), &lo) && ParseIndex(item.substr(dash + 1), &hi) && lo <= hi;
    if (!ok) {
      std::string hint = absl::StartsWith(item, "GPU-") || absl::StartsWith(item, "MIG-")
                             ? " (device UUIDs are not supported: name devices by index)"
                             : "";
      return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(value), ": item ", Quoted(item),
                                                     " is not a device index 0..", kMaxDeviceIndex,
                                                     " or a range of them", hint));
    }
    for (int i = lo; i <= hi; ++i) {
      if (!seen.insert(i).second) {
        return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(value), ": device ", i, " named twice"));
      }
      out.push_back(i);
    }
  }
  return out;
}

absl::StatusOr<int64_t> ParseSlurmEpoch(absl::string_view text, absl::string_view what) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "N/A" || text == "Unknown" || text == "NONE" || text == "0") return 0;
  int64_t secs = 0;
  if (text.empty() || text.size() > 12 || !absl::SimpleAtoi(text, &secs) || secs < 0 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(text), ": not a time in epoch seconds"));
  }
  return secs;
}

absl::StatusOr<std::optional<dcufleet::v1::NodeAllocation>> ParseSlurmEnvironment(
    const std::map<std::string, std::string>& env) {
  auto get = [&env](const char* k) -> const std::string* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : &it->second;
  };
  const std::string* job = get("SLURM_JOB_ID");
  if (!job) return std::nullopt;
  dcufleet::v1::NodeAllocation a;
  a.set_scheduler("slurm");
  if (absl::Status s = CheckName(*job, "SLURM_JOB_ID", /*digits_only=*/true); !s.ok()) return s;
  a.set_job_id(*job);
  struct Named {
    const char* var;
    void (dcufleet::v1::NodeAllocation::*set)(const std::string&);
  };
  for (const Named& n : {Named{"SLURM_JOB_PARTITION", &dcufleet::v1::NodeAllocation::set_partition},
                         Named{"SLURMD_NODENAME", &dcufleet::v1::NodeAllocation::set_scheduler_node},
                         Named{"SLURM_CLUSTER_NAME", &dcufleet::v1::NodeAllocation::set_cluster}}) {
    const std::string* v = get(n.var);
    if (!v) continue;
    if (absl::Status s = CheckName(*v, n.var, /*digits_only=*/false); !s.ok()) return s;
    (a.*n.set)(*v);
  }
  if (const std::string* end = get("SLURM_JOB_END_TIME")) {
    auto secs = ParseSlurmEpoch(*end, "SLURM_JOB_END_TIME");
    if (!secs.ok()) return secs.status();
    a.set_end_time_ms(*secs * 1000);
  }
  for (const char* var : kSlurmDeviceVariables) {
    const std::string* v = get(var);
    // Slurm's word for a GRES without device files.
    if (!v || *v == "NoDevFiles") continue;
    auto idx = ParseDeviceIndexList(*v, var);
    if (!idx.ok()) return idx.status();
    for (int i : *idx) a.add_device_indices(i);
    a.set_devices_from(var);
    break;
  }
  return a;
}

absl::StatusOr<std::vector<int>> ParseScontrolGresIndices(absl::string_view scontrol_output,
                                                          absl::string_view node, absl::string_view gres_name) {
  // "     Nodes=n1 CPU_IDs=0 Mem=0 GRES=dcu:2(IDX:3-4),gpu:1(IDX:0)"
  for (absl::string_view line : absl::StrSplit(scontrol_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "Nodes=")) continue;
    absl::string_view nodes = line.substr(0, line.find(' '));
    // A node list ("n[1-2]") for several nodes with the same layout: only
    // the single-node form is matched exactly; a list must name the node.
    if (nodes != node) continue;
    size_t g = line.find("GRES=");
    if (g == absl::string_view::npos) break;
    absl::string_view gres = line.substr(g + 5);
    gres = gres.substr(0, gres.find(' '));
    std::vector<int> out;
    bool any = false;
    // Items "name[:type]:count(IDX:list)" separated by commas outside the
    // parentheses.
    size_t pos = 0;
    while (pos < gres.size()) {
      size_t open = gres.find("(IDX:", pos);
      if (open == absl::string_view::npos) break;
      size_t close = gres.find(')', open);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("scontrol GRES ", Quoted(gres), ": unclosed IDX list"));
      }
      absl::string_view name = gres.substr(pos, open - pos);
      name = name.substr(0, name.find(':'));
      absl::string_view list = gres.substr(open + 5, close - open - 5);
      pos = close + 1;
      if (pos < gres.size() && gres[pos] == ',') ++pos;
      if (!gres_name.empty() && name != gres_name) continue;
      auto idx = ParseDeviceIndexList(list, absl::StrCat("scontrol GRES ", name, " IDX"));
      if (!idx.ok()) return idx.status();
      out.insert(out.end(), idx->begin(), idx->end());
      any = true;
    }
    if (!any) break;
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("scontrol GRES ", Quoted(gres), ": a device named twice"));
    }
    return out;
  }
  return absl::NotFoundError(absl::StrCat("scontrol names no indexed GRES for node '", node, "'"));
}

absl::Status ResolveSlurmJob(common::ProcessRunner& runner, const SlurmQueryOptions& options,
                             dcufleet::v1::NodeAllocation* a, std::vector<std::string>* notes) {
  common::ProcessOptions po;
  po.timeout = options.timeout;
  po.env = options.env;
  po.max_output_bytes = 1 << 20;
  if (a->end_time_ms() == 0) {
    po.env["SLURM_TIME_FORMAT"] = "%s";
    auto r = runner.Run({options.squeue, "-h", "-j", a->job_id(), "-o", "%e"}, po);
    po.env.erase("SLURM_TIME_FORMAT");
    if (!r.ok() || r->exit_code != 0) {
      notes->push_back(absl::StrCat("slurm job '", a->job_id(), "': end time unknown: ", options.squeue, " ",
                                    r.ok() ? absl::StripAsciiWhitespace(r->stderr_data) : r.status().message()));
    } else if (auto secs = ParseSlurmEpoch(r->stdout_data, "squeue %e"); !secs.ok()) {
      notes->push_back(absl::StrCat("slurm job '", a->job_id(), "': end time unknown: ", secs.status().message()));
    } else {
      a->set_end_time_ms(*secs * 1000);
    }
  }
  if (!a->devices_from().empty()) return absl::OkStatus();
  const std::string tried = absl::StrCat("none of ", absl::StrJoin(kSlurmDeviceVariables, ", "), " is set");
  if (a->scheduler_node().empty()) {
    return absl::FailedPreconditionError(absl::StrCat("slurm job '", a->job_id(), "': ", tried,
                                                      " and SLURMD_NODENAME is not either, so ", options.scontrol,
                                                      " cannot be asked which devices this node was given"));
  }
  auto r = runner.Run({options.scontrol, "-d", "show", "job", a->job_id()}, po);
  if (!r.ok() || r->exit_code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm job '", a->job_id(), "': ", tried, ", and '", options.scontrol, " -d show job ",
                     a->job_id(), "' failed: ",
                     r.ok() ? std::string(absl::StripAsciiWhitespace(r->stderr_data)) : std::string(r.status().message())));
  }
  auto idx = ParseScontrolGresIndices(r->stdout_data, a->scheduler_node());
  if (absl::IsNotFound(idx.status())) {
    // A job given no devices on this node (no --gres): it may use none.
    notes->push_back(absl::StrCat("slurm job '", a->job_id(), "' was given no devices on node '",
                                  a->scheduler_node(), "'"));
    a->set_devices_from("scontrol -d show job");
    return absl::OkStatus();
  }
  if (!idx.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("slurm job '", a->job_id(), "': ", idx.status().message()));
  }
  for (int i : *idx) a->add_device_indices(i);
  a->set_devices_from("scontrol -d show job");
  return absl::OkStatus();
}

}  // namespace dcu::agent
