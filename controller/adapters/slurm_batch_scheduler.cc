#include "controller/adapters/slurm_batch_scheduler.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dcu::controller {

namespace {

bool AllDigits(absl::string_view s) {
  return !s.empty() && s.size() <= 20 &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
}

// Slurm's job states (squeue %T, Slurm 22.05) as the pool reads them.
// COMPLETING counts as ended: the job's processes are being stopped.
const std::map<std::string, BatchJobState>& StateTable() {
  static const auto* t = new std::map<std::string, BatchJobState>{
      {"PENDING", BatchJobState::kPending},       {"CONFIGURING", BatchJobState::kPending},
      {"REQUEUED", BatchJobState::kPending},      {"REQUEUE_FED", BatchJobState::kPending},
      {"REQUEUE_HOLD", BatchJobState::kPending},  {"RESV_DEL_HOLD", BatchJobState::kPending},
      {"RUNNING", BatchJobState::kRunning},       {"RESIZING", BatchJobState::kRunning},
      {"SUSPENDED", BatchJobState::kRunning},     {"STOPPED", BatchJobState::kRunning},
      {"SIGNALING", BatchJobState::kRunning},     {"STAGE_OUT", BatchJobState::kRunning},
      {"COMPLETING", BatchJobState::kEnded},      {"COMPLETED", BatchJobState::kEnded},
      {"CANCELLED", BatchJobState::kEnded},       {"FAILED", BatchJobState::kEnded},
      {"TIMEOUT", BatchJobState::kEnded},         {"PREEMPTED", BatchJobState::kEnded},
      {"NODE_FAIL", BatchJobState::kEnded},       {"BOOT_FAIL", BatchJobState::kEnded},
      {"DEADLINE", BatchJobState::kEnded},        {"OUT_OF_MEMORY", BatchJobState::kEnded},
      {"SPECIAL_EXIT", BatchJobState::kEnded},    {"REVOKED", BatchJobState::kEnded},
  };
  return *t;
}

std::string Trimmed(const std::string& s, size_t max = 400) {
  std::string t(absl::StripAsciiWhitespace(s));
  if (t.size() > max) t = t.substr(0, max) + "...";
  return t;
}

}  // namespace

std::vector<std::string> SlurmBatchScheduler::SbatchArgv(const std::string& sbatch,
                                                         const BatchJobRequest& r) {
  std::vector<std::string> argv = {sbatch, "--parsable", absl::StrCat("--job-name=", r.name),
                                   absl::StrCat("--comment=", r.comment),
                                   absl::StrCat("--partition=", r.partition)};
  if (!r.account.empty()) argv.push_back(absl::StrCat("--account=", r.account));
  if (!r.qos.empty()) argv.push_back(absl::StrCat("--qos=", r.qos));
  if (r.gres_count > 0) argv.push_back(absl::StrCat("--gres=", r.gres, ":", r.gres_count));
  if (r.time_limit > absl::ZeroDuration()) {
    argv.push_back(absl::StrCat("--time=", absl::ToInt64Minutes(r.time_limit)));
  }
  if (!r.output.empty()) argv.push_back(absl::StrCat("--output=", r.output));
  return argv;
}

absl::StatusOr<std::string> SlurmBatchScheduler::ParseSbatch(const std::string& text) {
  std::string t(absl::StripAsciiWhitespace(text));
  std::string id = std::string(t.substr(0, t.find(';')));
  if (!AllDigits(id)) {
    return absl::InternalError(absl::StrCat("sbatch --parsable answered '", Trimmed(t, 120),
                                            "', not a job id"));
  }
  return id;
}

absl::StatusOr<std::vector<BatchJob>> SlurmBatchScheduler::ParseSqueue(const std::string& text) {
  std::vector<BatchJob> out;
  int n = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++n;
    absl::string_view line = absl::StripTrailingAsciiWhitespace(raw);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    // The comment is last and may not hold '|' (ours never does); split
    // into six at most so a stray one cannot shift the others.
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('|', 5));
    auto bad = [&](const std::string& why) {
      return absl::InternalError(absl::StrCat("squeue output line ", n, " '", Trimmed(std::string(line), 120),
                                              "': ", why, " (expected ", kSqueueFormat, ")"));
    };
    if (f.size() != 6) return bad(absl::StrCat(f.size(), " fields, not 6"));
    BatchJob j;
    j.id = std::string(absl::StripAsciiWhitespace(f[0]));
    if (!AllDigits(j.id)) return bad("the job id is not a number");
    j.scheduler_state = std::string(absl::StripAsciiWhitespace(f[1]));
    auto st = StateTable().find(j.scheduler_state);
    if (st == StateTable().end()) return bad(absl::StrCat("unknown job state '", j.scheduler_state, "'"));
    j.state = st->second;
    j.reason = std::string(absl::StripAsciiWhitespace(f[2]));
    j.nodes = std::string(absl::StripAsciiWhitespace(f[3]));
    if (j.nodes == "(null)") j.nodes.clear();
    std::string end(absl::StripAsciiWhitespace(f[4]));
    int64_t secs = 0;
    // SLURM_TIME_FORMAT=%s: epoch seconds; N/A, Unknown or 0: none.
    if (AllDigits(end) && absl::SimpleAtoi(end, &secs) && secs > 0) j.end_time = absl::FromUnixSeconds(secs);
    j.comment = std::string(absl::StripAsciiWhitespace(f[5]));
    if (j.comment == "(null)") j.comment.clear();
    out.push_back(std::move(j));
  }
  return out;
}

absl::StatusOr<common::ProcessOutput> SlurmBatchScheduler::RunSlurm(const std::vector<std::string>& argv,
                                                                    const std::string& stdin_data) {
  common::ProcessOptions o;
  o.timeout = commands_.timeout;
  o.stdin_data = stdin_data;
  // Epoch seconds for %e (local time without a zone otherwise).
  o.env["SLURM_TIME_FORMAT"] = "%s";
  if (!commands_.slurm_conf.empty()) o.env["SLURM_CONF"] = commands_.slurm_conf;
  auto r = runner_->Run(argv, o);
  if (!r.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot run '", argv[0], "': ", r.status().message()));
  }
  if (r->timed_out) {
    return absl::UnavailableError(absl::StrCat("'", argv[0], "' did not answer within ",
                                               absl::FormatDuration(commands_.timeout)));
  }
  return r;
}

absl::StatusOr<std::string> SlurmBatchScheduler::Submit(const BatchJobRequest& request) {
  auto r = RunSlurm(SbatchArgv(commands_.sbatch, request), request.script);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("sbatch refused (exit ", r->exit_code, "): ", Trimmed(r->stderr_data)));
  }
  return ParseSbatch(r->stdout_data);
}

absl::StatusOr<std::vector<BatchJob>> SlurmBatchScheduler::List(const std::string& name) {
  auto r = RunSlurm({commands_.squeue, "--noheader", "--states=all", absl::StrCat("--name=", name),
                     absl::StrCat("--format=", kSqueueFormat)},
                    "");
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat("squeue failed (exit ", r->exit_code, "): ", Trimmed(r->stderr_data)));
  }
  return ParseSqueue(r->stdout_data);
}

absl::Status SlurmBatchScheduler::Cancel(const std::string& id) {
  if (!AllDigits(id)) return absl::InvalidArgumentError(absl::StrCat("job id '", id, "' is not a number"));
  auto r = RunSlurm({commands_.scancel, id}, "");
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 && !absl::StrContains(r->stderr_data, "Invalid job id")) {
    return absl::UnavailableError(
        absl::StrCat("scancel ", id, " failed (exit ", r->exit_code, "): ", Trimmed(r->stderr_data)));
  }
  return absl::OkStatus();
}

}  // namespace dcu::controller
