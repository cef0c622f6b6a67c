#include "controller/core/node_pool.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/logging.h"

namespace dcu::controller {

using dcufleet::v1::PoolJobView;
using dcufleet::v1::SlurmPoolConfig;

namespace {

constexpr size_t kEndedJobsKept = 32;

absl::Status Bad(const SlurmPoolConfig& c, const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("slurm pool '", c.name(), "': ", field, ": ", why));
}

bool PlainWord(const std::string& s) {
  // Slurm names (partition, account, QoS, GRES): no spaces, no shell or
  // option characters, so that an argv element cannot turn into two.
  if (s.empty() || s.size() > 64 || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::string Quote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodePool>> NodePool::Create(SlurmPoolConfig c,
                                                           BatchScheduler* scheduler,
                                                           const common::Clock* clock) {
  const std::string& n = c.name();
  if (n.empty() || n.size() > 32 || !absl::ascii_islower(static_cast<unsigned char>(n[0])) ||
      !std::all_of(n.begin(), n.end(), [](char ch) {
        return absl::ascii_islower(static_cast<unsigned char>(ch)) ||
               absl::ascii_isdigit(static_cast<unsigned char>(ch)) || ch == '-';
      })) {
    return Bad(c, "name", "must be 1-32 of [a-z0-9-], starting with a letter");
  }
  if (!PlainWord(c.partition())) return Bad(c, "partition", "required, a Slurm name");
  if (!c.account().empty() && !PlainWord(c.account())) return Bad(c, "account", "not a Slurm name");
  if (!c.qos().empty() && !PlainWord(c.qos())) return Bad(c, "qos", "not a Slurm name");
  if (c.device_type().empty()) c.set_device_type("dcu");
  if (!PlainWord(c.device_type())) return Bad(c, "device_type", "not a name");
  for (const auto& [type, gres] : c.gres()) {
    if (!PlainWord(type) || !PlainWord(gres)) {
      return Bad(c, "gres", absl::StrCat("'", type, "' -> '", gres, "' is not a name -> GRES name"));
    }
  }
  if (c.max_devices_per_job() == 0) c.set_max_devices_per_job(8);
  if (c.max_devices_per_job() < 1 || c.max_devices_per_job() > 64) {
    return Bad(c, "max_devices_per_job", "1 to 64");
  }
  if (c.default_devices() == 0) c.set_default_devices(1);
  if (c.default_devices() < 1 || c.default_devices() > c.max_devices_per_job()) {
    return Bad(c, "default_devices", "1 to max_devices_per_job");
  }
  if (c.time_limit_minutes() < 0) return Bad(c, "time_limit_minutes", "must not be negative");
  if (c.max_jobs() == 0) c.set_max_jobs(4);
  if (c.max_jobs() < 1 || c.max_jobs() > 1000) return Bad(c, "max_jobs", "1 to 1000");
  if (c.agent_argv().empty() || c.agent_argv(0).empty()) {
    return Bad(c, "agent_argv", "required: the dcu-agent path (and the site's flags)");
  }
  for (const auto& a : c.agent_argv()) {
    if (a == "--controller" || a == "--node" || a == "--state-dir" ||
        absl::StartsWith(a, "--controller=") || absl::StartsWith(a, "--node=") ||
        absl::StartsWith(a, "--state-dir=")) {
      return Bad(c, "agent_argv", absl::StrCat("'", a, "' is set by the controller"));
    }
  }
  for (const auto& [k, v] : c.agent_env()) {
    if (k.empty() || absl::ascii_isdigit(static_cast<unsigned char>(k[0])) ||
        !std::all_of(k.begin(), k.end(), [](char ch) {
          return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        })) {
      return Bad(c, "agent_env", absl::StrCat("'", k, "' is not a variable name"));
    }
    if (absl::StrContains(v, '\0')) return Bad(c, "agent_env", absl::StrCat("'", k, "' holds a NUL"));
  }
  if (c.state_dir().empty()) c.set_state_dir("${SLURM_TMPDIR:-/tmp}");
  if (c.output().empty()) c.set_output("/dev/null");
  if (c.sbatch().empty()) c.set_sbatch("sbatch");
  if (c.squeue().empty()) c.set_squeue("squeue");
  if (c.scancel().empty()) c.set_scancel("scancel");
  if (c.poll_interval_ms() == 0) c.set_poll_interval_ms(2000);
  if (c.poll_interval_ms() < 100) return Bad(c, "poll_interval_ms", "at least 100");
  if (c.resubmit_after_ms() == 0) c.set_resubmit_after_ms(10000);
  if (c.resubmit_after_ms() < 0) return Bad(c, "resubmit_after_ms", "must not be negative");
  std::unique_ptr<NodePool> pool(new NodePool(std::move(c), scheduler, clock));
  pool->SetDefaultControllerAddress("");
  return pool;
}

void NodePool::SetDefaultControllerAddress(const std::string& address) {
  absl::MutexLock lock(&mu_);
  controller_address_ = config_.controller_address().empty() ? address : config_.controller_address();
}

std::string NodePool::ControllerAddress() const {
  absl::MutexLock lock(&mu_);
  return controller_address_;
}

NodePool::~NodePool() { Stop(); }

std::string NodePool::JobScript(const SlurmPoolConfig& c, const std::string& controller_address) {
  std::string s = absl::StrCat("#!/bin/bash\n# dcufleet pool '", c.name(),
                               "': dcu-agent for the devices of this job (docs/slurm.md)\n");
  for (const auto& [k, v] : std::map<std::string, std::string>(c.agent_env().begin(),
                                                               c.agent_env().end())) {
    absl::StrAppend(&s, "export ", k, "=", Quote(v), "\n");
  }
  std::vector<std::string> argv;
  for (const auto& a : c.agent_argv()) argv.push_back(Quote(a));
  // The state directory is not quoted whole: its default expands
  // ${SLURM_TMPDIR:-/tmp} in the job. The pool's name is [a-z0-9-].
  absl::StrAppend(&s, "exec ", absl::StrJoin(argv, " "), " --controller ",
                  Quote(controller_address), " --node \"", c.name(), "-$SLURM_JOB_ID\"",
                  " --state-dir \"", c.state_dir(), "/", c.name(), "-$SLURM_JOB_ID\"\n");
  return s;
}

int NodePool::DevicesFor(const dcufleet::v1::DeploymentSpec& spec) const {
  return spec.tp() > 0 ? spec.tp() : config_.default_devices();
}

std::string NodePool::CannotProvide(int devices) const {
  if (devices > config_.max_devices_per_job()) {
    return absl::StrCat("pool '", name(), "' gives a job at most ", config_.max_devices_per_job(),
                        " devices, ", devices, " needed");
  }
  return "";
}

bool NodePool::Live(const Job& j) {
  return j.view.state() == dcufleet::v1::POOL_JOB_SUBMITTING ||
         j.view.state() == dcufleet::v1::POOL_JOB_PENDING ||
         j.view.state() == dcufleet::v1::POOL_JOB_RUNNING;
}

void NodePool::SetDemand(Demand demand) {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, devices] : demand.unplaceable) {
    if (!demand_.unplaceable.count(key)) wake_ = true;
  }
  demand_ = std::move(demand);
}

std::string NodePool::LineOf(const Job& j) const {
  const PoolJobView& v = j.view;
  switch (v.state()) {
    case dcufleet::v1::POOL_JOB_SUBMITTING:
      return absl::StrCat("pool '", name(), "': submitting a job for ", v.devices(), " devices");
    case dcufleet::v1::POOL_JOB_PENDING:
      return absl::StrCat("pool '", name(), "': slurm job ", v.job_id(), " PENDING (",
                          v.reason().empty() ? "no reason given" : v.reason(), ")");
    case dcufleet::v1::POOL_JOB_RUNNING:
      return absl::StrCat("pool '", name(), "': slurm job ", v.job_id(), " RUNNING on ",
                          v.slurm_nodes(), ", waiting for node '", v.node(), "'");
    case dcufleet::v1::POOL_JOB_ENDED:
      return absl::StrCat("pool '", name(), "': slurm job ", v.job_id(), " ended (",
                          v.slurm_state(), ")");
    default:
      return "";
  }
}

std::optional<PoolJobView> NodePool::JobFor(const std::string& key, std::string* line) const {
  absl::MutexLock lock(&mu_);
  const Job* best = nullptr;
  for (const auto& [id, j] : jobs_) {
    if (j.view.for_replica() != key) continue;
    // The live job, else the latest.
    if (!best || (Live(j) && !Live(*best)) ||
        (Live(j) == Live(*best) && j.view.submitted_at_ms() >= best->view.submitted_at_ms())) {
      best = &j;
    }
  }
  std::string why;
  if (auto it = submit_error_.find(key); it != submit_error_.end()) why = it->second;
  const int live = static_cast<int>(std::count_if(jobs_.begin(), jobs_.end(),
                                                  [](const auto& kv) { return Live(kv.second); }));
  if (line) {
    if (best && Live(*best)) {
      *line = LineOf(*best);
    } else if (!why.empty()) {
      *line = absl::StrCat("pool '", name(), "': sbatch failed: ", why);
    } else if (live >= config_.max_jobs()) {
      *line = absl::StrCat("pool '", name(), "' is at its limit of ", config_.max_jobs(), " jobs");
    } else if (best) {
      *line = absl::StrCat(LineOf(*best), "; submitting another");
    } else {
      *line = absl::StrCat("pool '", name(), "': submitting a job");
    }
  }
  if (!best) return std::nullopt;
  return best->view;
}

bool NodePool::HasLiveJob(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, j] : jobs_) {
    if (j.view.for_replica() == key && Live(j)) return true;
  }
  return false;
}

dcufleet::v1::PoolView NodePool::View() const {
  absl::MutexLock lock(&mu_);
  dcufleet::v1::PoolView v;
  v.set_name(name());
  v.set_kind("slurm");
  v.set_partition(config_.partition());
  v.set_max_jobs(config_.max_jobs());
  v.set_error(error_);
  for (const auto& [id, j] : jobs_) *v.add_jobs() = j.view;
  return v;
}

void NodePool::SyncOnce() {
  const std::string job_name = absl::StrCat("dcufleet-", name());
  absl::StatusOr<std::vector<BatchJob>> listed = scheduler_->List(job_name);
  const absl::Time now = clock_->Now();
  std::vector<std::pair<std::string, std::string>> ended;  // id, why
  std::vector<std::string> cancel;
  std::vector<std::pair<std::string, int>> submit;  // key, devices
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    if (!listed.ok()) {
      // Without Slurm's answer nothing is decided: no job is declared
      // ended, none submitted twice.
      std::string e = absl::StrCat("squeue: ", listed.status().message());
      if (e != error_) DCU_LOG_WARN("pool '", name(), "': ", e);
      changed |= e != error_;
      error_ = std::move(e);
    } else {
      changed |= !error_.empty();
      error_.clear();
      std::set<std::string> seen;
      for (const BatchJob& b : *listed) {
        seen.insert(b.id);
        auto [it, inserted] = jobs_.try_emplace(b.id);
        Job& j = it->second;
        PoolJobView before = j.view;
        if (inserted) {
          // Found in the queue (a restart, or sbatch answered after a
          // timeout): the comment says whose it is.
          j.view.set_pool(name());
          j.view.set_job_id(b.id);
          j.view.set_for_replica(b.comment);
          j.view.set_node(NodeName(b.id));
        }
        j.view.set_state(b.state == BatchJobState::kPending   ? dcufleet::v1::POOL_JOB_PENDING
                         : b.state == BatchJobState::kRunning ? dcufleet::v1::POOL_JOB_RUNNING
                                                              : dcufleet::v1::POOL_JOB_ENDED);
        j.view.set_slurm_state(b.scheduler_state);
        j.view.set_reason(b.reason);
        j.view.set_slurm_nodes(b.nodes);
        j.view.set_end_time_ms(b.end_time == absl::InfinitePast() ? 0 : absl::ToUnixMillis(b.end_time));
        if (before.state() != dcufleet::v1::POOL_JOB_ENDED &&
            j.view.state() == dcufleet::v1::POOL_JOB_ENDED) {
          j.ended_at = now;
          last_end_[j.view.for_replica()] = now;
          ended.emplace_back(b.id, absl::StrCat("slurm job '", b.id, "' ended (", b.scheduler_state, ")"));
        }
        changed |= before.state() != j.view.state() || before.reason() != j.view.reason() ||
                   before.slurm_nodes() != j.view.slurm_nodes();
      }
      for (auto& [id, j] : jobs_) {
        if (seen.count(id) || !Live(j) || j.view.state() == dcufleet::v1::POOL_JOB_SUBMITTING) continue;
        // Slurm lists an ended job for MinJobAge; one no longer listed at
        // all has ended too.
        j.view.set_state(dcufleet::v1::POOL_JOB_ENDED);
        j.view.set_slurm_state("GONE");
        j.ended_at = now;
        last_end_[j.view.for_replica()] = now;
        ended.emplace_back(id, absl::StrCat("slurm job '", id, "' is no longer in the queue"));
        changed = true;
      }
      // Cancel: a live job no waiting replica wants whose node holds
      // nothing.
      int live = 0;
      std::set<std::string> has_live;
      for (auto& [id, j] : jobs_) {
        if (!Live(j)) continue;
        const std::string& key = j.view.for_replica();
        const bool wanted = demand_.unplaceable.count(key) || demand_.waiting.count(key);
        if (j.view.state() != dcufleet::v1::POOL_JOB_SUBMITTING && !wanted &&
            !demand_.busy_jobs.count(id)) {
          if (!j.cancel_sent) {
            j.cancel_sent = true;
            cancel.push_back(id);
          }
          continue;
        }
        ++live;
        has_live.insert(key);
      }
      // Submit: replicas that fit nowhere, have no live job, and whose
      // last job did not end just now; while the pool has room.
      for (const auto& [key, devices] : demand_.unplaceable) {
        if (live >= config_.max_jobs() || controller_address_.empty()) break;
        if (has_live.count(key)) continue;
        auto le = last_end_.find(key);
        if (le != last_end_.end() && now - le->second < absl::Milliseconds(config_.resubmit_after_ms())) {
          continue;
        }
        Job& j = jobs_[absl::StrCat("submit:", key)];
        j.view.set_pool(name());
        j.view.set_state(dcufleet::v1::POOL_JOB_SUBMITTING);
        j.view.set_for_replica(key);
        j.view.set_devices(devices);
        j.view.set_submitted_at_ms(absl::ToUnixMillis(now));
        submit.emplace_back(key, devices);
        ++live;
        changed = true;
      }
      // Keep the last few ended jobs for `get pools`.
      std::vector<std::pair<absl::Time, std::string>> old;
      for (const auto& [id, j] : jobs_) {
        if (j.view.state() == dcufleet::v1::POOL_JOB_ENDED) old.emplace_back(j.ended_at, id);
      }
      std::sort(old.begin(), old.end());
      for (size_t i = 0; i + kEndedJobsKept < old.size(); ++i) jobs_.erase(old[i].second);
    }
  }
  for (const auto& id : cancel) {
    DCU_LOG_INFO("pool '", name(), "': cancelling slurm job '", id, "' (nothing runs or waits on it)");
    if (absl::Status s = scheduler_->Cancel(id); !s.ok()) {
      DCU_LOG_WARN("pool '", name(), "': scancel '", id, "': ", s.message());
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(id);
      if (it != jobs_.end()) it->second.cancel_sent = false;  // tried again next sync
    }
  }
  const std::string address = ControllerAddress();
  for (const auto& [key, devices] : submit) {
    BatchJobRequest r;
    r.name = absl::StrCat("dcufleet-", name());
    r.comment = key;
    r.partition = config_.partition();
    r.account = config_.account();
    r.qos = config_.qos();
    auto g = config_.gres().find(config_.device_type());
    r.gres = g == config_.gres().end() ? config_.device_type() : g->second;
    r.gres_count = devices;
    r.time_limit = absl::Minutes(config_.time_limit_minutes());
    r.output = config_.output();
    r.script = JobScript(config_, address);
    absl::StatusOr<std::string> id = scheduler_->Submit(r);
    absl::MutexLock lock(&mu_);
    auto node = jobs_.extract(absl::StrCat("submit:", key));
    if (!id.ok()) {
      DCU_LOG_WARN("pool '", name(), "': sbatch for '", key, "': ", id.status().message());
      submit_error_[key] = std::string(id.status().message());
      // Not again at once: sbatch refusing is not cured by asking again.
      last_end_[key] = clock_->Now();
      continue;
    }
    submit_error_.erase(key);
    DCU_LOG_INFO("pool '", name(), "': submitted slurm job '", *id, "' for '", key, "' (", r.gres,
                 ":", devices, ")");
    Job j = node.empty() ? Job{} : std::move(node.mapped());
    j.view.set_job_id(*id);
    j.view.set_state(dcufleet::v1::POOL_JOB_PENDING);
    j.view.set_slurm_state("PENDING");
    j.view.set_node(NodeName(*id));
    auto [it, inserted] = jobs_.try_emplace(*id, std::move(j));
    if (!inserted) {
      // A listing raced ahead of sbatch's answer: keep its state, add ours.
      it->second.view.set_devices(devices);
      it->second.view.set_submitted_at_ms(j.view.submitted_at_ms());
    }
  }
  for (const auto& [id, why] : ended) {
    DCU_LOG_INFO("pool '", name(), "': ", why);
    if (on_job_ended_) on_job_ended_(id, why);
  }
  if ((changed || !submit.empty() || !cancel.empty()) && on_change_) on_change_();
}

void NodePool::Start() {
  thread_ = std::thread([this] { Run(); });
}

void NodePool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void NodePool::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wake_ || stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&woken), absl::Milliseconds(config_.poll_interval_ms()));
      if (stop_) return;
      wake_ = false;
    }
    SyncOnce();
  }
}

}  // namespace dcu::controller
