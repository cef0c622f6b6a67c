#include "bench/loadgen/loadgen.h"

#include "bench/loadgen/hostile.h"
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/common/synthetic_fleet.h"
#include "common/data_path.h"
#include "common/inventory_delta.h"
#include "common/proc_stat.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "dcufleet/v1/node.grpc.pb.h"
#include "tests/testing/test_env.h"

namespace dcu::bench {
namespace {

using dcufleet::v1::AgentMessage;
using dcufleet::v1::ControllerMessage;
using dcufleet::v1::InstanceStatus;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t WallMs() { return absl::ToUnixMillis(absl::Now()); }

// Latency samples in microseconds.
class Samples {
 public:
  void Add(int64_t us) {
    absl::MutexLock lock(&mu_);
    v_.push_back(us);
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    v_.clear();
  }
  struct Summary {
    size_t count = 0;
    double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
  };
  Summary Summarize() const {
    absl::MutexLock lock(&mu_);
    Summary s;
    s.count = v_.size();
    if (v_.empty()) return s;
    std::vector<int64_t> v = v_;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
      return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
    };
    s.p50_ms = at(0.50);
    s.p90_ms = at(0.90);
    s.p99_ms = at(0.99);
    s.max_ms = static_cast<double>(v.back()) / 1000.0;
    double sum = 0;
    for (int64_t x : v) sum += static_cast<double>(x);
    s.mean_ms = sum / static_cast<double>(v.size()) / 1000.0;
    return s;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<int64_t> v_ ABSL_GUARDED_BY(mu_);
};

nlohmann::json ToJson(const Samples::Summary& s) {
  return {{"count", s.count}, {"p50_ms", s.p50_ms}, {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms}, {"max_ms", s.max_ms}, {"mean_ms", s.mean_ms}};
}

std::string Fmt(const Samples::Summary& s) {
  if (s.count == 0) return "no samples";
  return absl::StrFormat("p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms  (n=%d)", s.p50_ms,
                         s.p90_ms, s.p99_ms, s.max_ms, s.count);
}

// CPU time and memory of a process, from /proc.
struct ProcSample {
  bool ok = false;
  double cpu_s = 0;
  int64_t rss_kib = 0;
  int64_t hwm_kib = 0;
  int threads = 0;
};

ProcSample ReadProc(pid_t pid) {
  ProcSample p;
  auto stat = common::ReadProcStat("/proc", pid);
  if (!stat.ok()) return p;
  p.cpu_s = static_cast<double>(stat->utime_ticks + stat->stime_ticks) /
            static_cast<double>(sysconf(_SC_CLK_TCK));
  std::string status = testing::ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/status"));
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    auto field = [&](absl::string_view name, int64_t* out) {
      if (!absl::ConsumePrefix(&line, name)) return;
      line = absl::StripAsciiWhitespace(line);
      absl::ConsumeSuffix(&line, " kB");
      (void)absl::SimpleAtoi(line, out);
    };
    int64_t threads = 0;
    field("VmRSS:", &p.rss_kib);
    field("VmHWM:", &p.hwm_kib);
    field("Threads:", &threads);
    if (threads) p.threads = static_cast<int>(threads);
  }
  p.ok = true;
  return p;
}

double SelfCpuS() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

class Run;

// One simulated agent: its own NodeService.Connect stream (callback API), a
// Hello with an 8-device inventory, then NodeStatus whenever the ticker says
// so and InstanceEvents on phase changes. At most one write in flight: a
// status that comes due while one is being written replaces the pending one
// (counted as coalesced: the controller did not keep up).
class SimAgent final : public grpc::ClientBidiReactor<AgentMessage, ControllerMessage> {
 public:
  SimAgent(Run* run, int index, const FleetOptions& fo, bool full_reports, bool expanded_figures);

  void Connect(dcufleet::v1::NodeService::Stub* stub);
  // The ticker: a periodic report is due.
  void StatusDue();
  // Ingest mode: moves this agent's own instance one phase on and reports it.
  void CycleInstance();
  // Failover mode: the instance fails with the triton log tail.
  bool FailInstance(const std::string& instance_id);
  void Cancel() { ctx_.TryCancel(); }

  int index() const { return index_; }
  const std::string& name() const { return name_; }
  const std::string& arch() const { return arch_; }
  int64_t last_written_tag() const { return last_written_tag_.load(); }
  bool welcomed() const { return welcomed_.load(); }
  bool finished() const { return finished_.load(); }
  // The instance the agent cycles itself (ingest mode), never a deployment's.
  std::string own_instance_id() const { return absl::StrCat("lg-", index_); }
  // Instances of deployments it runs (not its own).
  int DeploymentInstances() ABSL_LOCKS_EXCLUDED(mu_);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  void Pump();
  void HandleAssignment(const dcufleet::v1::Assignment& a);
  void QueueEventLocked(const InstanceStatus& st, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Run* const run_;
  const int index_;
  const std::string name_;
  std::string arch_;
  grpc::ClientContext ctx_;
  ControllerMessage in_;
  AgentMessage hello_;
  AgentMessage status_;
  // The digest-only report (issue 22), used once the Welcome accepts it:
  // the moving figures as DeviceMemory readings, or compact (MovingFigures)
  // where the Welcome accepts that too.
  AgentMessage delta_;
  AgentMessage compact_;
  const bool full_reports_;
  const bool expanded_figures_;
  std::atomic<bool> deltas_{false};
  std::atomic<bool> compact_figures_{false};
  AgentMessage event_;
  int64_t t_start_us_ = 0;
  std::atomic<bool> welcomed_{false};
  std::atomic<bool> finished_{false};
  std::atomic<int64_t> last_written_tag_{0};

  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool status_due_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_tag_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t writing_tag_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<AgentMessage> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, InstanceStatus> instances_ ABSL_GUARDED_BY(mu_);
  int own_phase_ ABSL_GUARDED_BY(mu_) = 0;
  // The controller asked for the full inventory (InventoryRequest).
  bool full_next_ ABSL_GUARDED_BY(mu_) = false;
};

// A probe of ingest latency: report `tag` of `agent` was handed to gRPC at
// `sent_us`; poll GetNode until the node shows it.
struct Probe {
  int agent = 0;
  int64_t tag = 0;
  int64_t sent_us = 0;
};

class Run {
 public:
  Run(const LoadgenArgs& args, std::ostream& out, std::ostream& err)
      : args_(args), out_(out), err_(err) {}
  int Execute();

  // Called by agents.
  void OnWelcome(int64_t us) {
    connect_.Add(us);
    welcomed_.fetch_add(1);
  }
  void OnStreamDone(const grpc::Status& s, bool expected) {
    if (!s.ok() && !expected) {
      stream_errors_.fetch_add(1);
      absl::MutexLock lock(&mu_);
      if (first_errors_.size() < 5) {
        first_errors_.push_back(absl::StrCat("stream: ", s.error_code(), " ", s.error_message()));
      }
    }
    streams_done_.fetch_add(1);
  }
  void CountWrite(bool ok, bool status) {
    if (!ok) write_errors_.fetch_add(1);
    if (ok && status) reports_written_.fetch_add(1);
  }
  void CountCoalesced() { coalesced_.fetch_add(1); }
  void CountInventoryRequest() { inventory_requests_.fetch_add(1); }
  void CountEvent() { events_sent_.fetch_add(1); }
  bool stopping() const { return stopping_.load(); }
  // A report is being written: take it as the next probe when one is wanted.
  void MaybeProbe(int agent, int64_t tag, int64_t sent_us) {
    if (!measuring_.load() || !probe_wanted_.exchange(false)) return;
    absl::MutexLock lock(&probe_mu_);
    probe_ = Probe{agent, tag, sent_us};
    probe_ready_ = true;
  }
  // An assignment listed an instance this agent had not seen.
  void OnAssigned(SimAgent* agent, const dcufleet::v1::InstanceSpec& spec, int64_t now_us);
  bool ShouldFail(const SimAgent& agent, const dcufleet::v1::InstanceSpec& spec) const {
    return args_.mode == "failover" && spec.stack_id() == kFailStack && agent.arch() == kFailArch;
  }
  void OnFailureSent(const std::string& deployment, int attempt, int64_t now_us) {
    absl::MutexLock lock(&mu_);
    failed_at_[deployment] = {attempt, now_us};
  }
  const std::vector<std::string>& fail_tail() const { return fail_tail_; }
  const std::string& mode() const { return args_.mode; }

  static constexpr char kFailStack[] = "bench-vllm-0.11.0-bare";
  static constexpr char kFailArch[] = "gfx928";

 private:
  bool StartController();
  void StopController();
  // Dials every agent; sets connect_s_ to how long until all were welcomed
  // (or it gave up).
  bool ConnectAgents();
  double connect_s_ = 0;
  void Ticker();
  void Prober();
  bool RunIngest(nlohmann::json* j);
  // One steady-state window of the ingest figures, written into `j`.
  void MeasureWindow(nlohmann::json* j);
  bool RunPlace(nlohmann::json* j, bool failover);
  // Reports running and every node Ready before a wave starts.
  bool WaitForSteadyFleet(nlohmann::json* j);
  // Deployments lg-<first> .. lg-<first+m-1>; false when not all were
  // answered in time. Refusals are counted in `failed`.
  bool SubmitDeployments(int first, int m, std::atomic<int>* failed);
  // Waits until the controller lists `want` deployments READY.
  bool WaitReady(int want, int64_t t0, int* ready, int* total, double* ack_s);
  // Deletes lg-<first> .. and waits for the fleet to be empty again.
  // How long a wave's deletes took: every DeleteDeployment answered
  // (`answered_s`), then the fleet empty (`empty_s`), both from the first.
  struct Drain {
    double answered_s = 0;
    double empty_s = 0;
  };
  bool EmptyTheFleet(int first, int m, Drain* drain);
  bool FinalCheck(nlohmann::json* j);
  void Shutdown();
  int ScanControllerLog(nlohmann::json* j);

  const LoadgenArgs& args_;
  std::ostream& out_;
  std::ostream& err_;

  std::unique_ptr<testing::TempDir> tmp_;
  std::unique_ptr<testing::ChildProcess> controller_;
  std::string controller_log_;
  std::string address_;
  pid_t controller_pid_ = 0;

  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<dcufleet::v1::NodeService::Stub>> node_stubs_;
  std::shared_ptr<grpc::Channel> fleet_channel_;
  std::unique_ptr<dcufleet::v1::FleetService::Stub> fleet_;
  std::vector<std::unique_ptr<SimAgent>> agents_;
  std::vector<std::string> fail_tail_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> ticking_{false};
  std::atomic<bool> measuring_{false};
  std::atomic<bool> probe_wanted_{false};
  std::atomic<int64_t> welcomed_{0};
  std::atomic<int64_t> streams_done_{0};
  std::atomic<int64_t> stream_errors_{0};
  std::atomic<int64_t> write_errors_{0};
  std::atomic<int64_t> rpc_errors_{0};
  std::atomic<int64_t> reports_written_{0};
  std::atomic<int64_t> coalesced_{0};
  std::atomic<int64_t> inventory_requests_{0};
  std::atomic<int64_t> events_sent_{0};
  std::atomic<int64_t> probe_timeouts_{0};
  Samples connect_;
  Samples ingest_;          // report handed to gRPC -> GetNode shows it (client view)
  Samples ingest_server_;   // NodeStatus.sent_at_ms -> NodeView.last_seen_ms (controller clock)
  // The round trip of the GetNode that saw the report: the part of ingest_
  // that is the probe's own RPC, not the report's way in (on a saturated
  // host it is most of ingest_'s tail).
  Samples probe_round_trip_;
  Samples failover_;        // FAILED report -> next plan's Assignment at an agent

  // Lock order: probe_mu_ and mu_ are never held together; a Samples' own
  // lock is taken after either (OnAssigned adds to failover_ under mu_).
  absl::Mutex probe_mu_;
  bool probe_ready_ ABSL_GUARDED_BY(probe_mu_) = false;
  Probe probe_ ABSL_GUARDED_BY(probe_mu_);

  absl::Mutex mu_;
  std::vector<std::string> first_errors_ ABSL_GUARDED_BY(mu_);
  // Deployment -> first time an agent received an instance of it.
  std::map<std::string, int64_t> placed_at_ ABSL_GUARDED_BY(mu_);
  // Deployment -> (failed attempt, when the failure report was queued).
  std::map<std::string, std::pair<int, int64_t>> failed_at_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> failed_over_ ABSL_GUARDED_BY(mu_);
  // --failover-trace: deployment, failure queued, next assignment (Unix ms).
  std::vector<std::tuple<std::string, int64_t, int64_t>> failover_trace_ ABSL_GUARDED_BY(mu_);
  // Instances that must fail (failover mode): agent index, instance id.
  std::deque<std::pair<int, std::string>> to_fail_ ABSL_GUARDED_BY(mu_);
  int64_t instances_seen_ ABSL_GUARDED_BY(mu_) = 0;
};

SimAgent::SimAgent(Run* run, int index, const FleetOptions& fo, bool full_reports, bool expanded_figures)
    : run_(run),
      index_(index),
      name_(NodeName(index)),
      arch_(ArchForNode(index).arch),
      full_reports_(full_reports),
      expanded_figures_(expanded_figures) {
  auto* h = hello_.mutable_hello();
  h->set_node_name(name_);
  // Each simulated node its own host, as a real fleet's: from loopback they
  // would share one address and with it one port space (the controller's
  // ShareHostPorts), which no fleet of separate hosts has.
  h->set_advertise_address(
      absl::StrFormat("10.%d.%d.%d", (index >> 16) & 255, (index >> 8) & 255, index & 255));
  h->set_agent_version("0.1.0-loadgen");
  h->add_capabilities("inventory");
  *h->mutable_inventory() = MakeInventory(index, fo, WallMs());
  *status_.mutable_status()->mutable_inventory() = h->inventory();
  if (!full_reports_) {
    // As dcu-agent does (agent/link): the digest in Hello and in every
    // report; the inventory itself only when asked (it never changes here).
    const uint64_t digest = common::InventoryDigest(h->inventory());
    h->set_inventory_digest(digest);
    status_.mutable_status()->set_inventory_digest(digest);
    *delta_.mutable_status() = status_.status();
    common::MakeDelta(delta_.mutable_status());
    // The figures never move here, so every compact report is the one that
    // follows the Hello: no source changed, none sent.
    common::CompactFiguresWriter figures;
    figures.Sent(h->inventory());
    *compact_.mutable_status() = status_.status();
    figures.MakeCompactDelta(compact_.mutable_status());
  }
}

void SimAgent::Connect(dcufleet::v1::NodeService::Stub* stub) {
  t_start_us_ = NowUs();
  stub->async()->Connect(&ctx_, this);
  StartRead(&in_);
  AddHold();
  {
    absl::MutexLock lock(&mu_);
    writing_ = true;
  }
  StartWrite(&hello_);
  StartCall();
}

void SimAgent::StatusDue() {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    if (status_due_) run_->CountCoalesced();
    status_due_ = true;
  }
  Pump();
}

void SimAgent::QueueEventLocked(const InstanceStatus& st, const std::string& reason) {
  AgentMessage m;
  *m.mutable_instance_event()->mutable_status() = st;
  m.mutable_instance_event()->set_reason(reason);
  events_.push_back(std::move(m));
}

void SimAgent::CycleInstance() {
  static const dcufleet::v1::InstancePhase kCycle[] = {
      dcufleet::v1::INSTANCE_STARTING, dcufleet::v1::INSTANCE_LOADING,
      dcufleet::v1::INSTANCE_HEALTH_CHECKING, dcufleet::v1::INSTANCE_READY,
      dcufleet::v1::INSTANCE_STOPPING, dcufleet::v1::INSTANCE_STOPPED};
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    std::string id = own_instance_id();
    InstanceStatus& st = instances_[id];
    st.set_instance_id(id);
    st.set_phase(kCycle[own_phase_ % 6]);
    st.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    st.set_updated_at_ms(WallMs());
    QueueEventLocked(st, "loadgen");
    if (st.phase() == dcufleet::v1::INSTANCE_STOPPED) instances_.erase(id);
    ++own_phase_;
  }
  Pump();
}

bool SimAgent::FailInstance(const std::string& instance_id) {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return false;
    auto it = instances_.find(instance_id);
    if (it == instances_.end() || it->second.phase() == dcufleet::v1::INSTANCE_FAILED) return false;
    InstanceStatus& st = it->second;
    st.set_phase(dcufleet::v1::INSTANCE_FAILED);
    st.set_exit_code(1);
    st.set_message("engine core initialization failed");
    st.clear_log_tail();
    for (const auto& l : run_->fail_tail()) st.add_log_tail(l);
    st.set_updated_at_ms(WallMs());
    QueueEventLocked(st, "process exited with code 1");
  }
  Pump();
  return true;
}

void SimAgent::Pump() {
  AgentMessage* msg = nullptr;
  bool is_status = false;
  int64_t tag = 0;
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || done_) return;
    if (!events_.empty()) {
      event_ = std::move(events_.front());
      events_.pop_front();
      msg = &event_;
    } else if (status_due_) {
      status_due_ = false;
      const bool delta = deltas_.load() && !full_next_;
      full_next_ = false;
      AgentMessage* m = !delta ? &status_ : compact_figures_.load() ? &compact_ : &delta_;
      auto* s = m->mutable_status();
      int64_t now = WallMs();
      tag = std::max(last_tag_ + 1, now);
      last_tag_ = tag;
      // The report's identity: the controller shows it back as
      // inventory.collected_at_ms, so a poller can tell when it is visible.
      if (delta) {
        s->set_collected_at_ms(tag);
      } else {
        s->mutable_inventory()->set_collected_at_ms(tag);
      }
      s->set_sent_at_ms(tag);
      s->clear_instances();
      for (const auto& [id, st] : instances_) *s->add_instances() = st;
      msg = m;
      is_status = true;
      writing_tag_ = tag;
    } else {
      return;
    }
    writing_ = true;
  }
  if (is_status) run_->MaybeProbe(index_, tag, NowUs());
  if (!is_status) run_->CountEvent();
  StartWrite(msg);
}

void SimAgent::OnWriteDone(bool ok) {
  bool release = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (ok && writing_tag_) last_written_tag_.store(writing_tag_);
    run_->CountWrite(ok, writing_tag_ != 0);
    writing_tag_ = 0;
    if (!ok) done_ = true;
    if (done_ && !hold_released_) {
      hold_released_ = true;
      release = true;
    }
  }
  if (release) {
    RemoveHold();
    return;
  }
  Pump();
}

void SimAgent::OnReadDone(bool ok) {
  if (!ok) {
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      if (!writing_ && !hold_released_) {
        hold_released_ = true;
        release = true;
      }
    }
    if (release) RemoveHold();
    return;
  }
  int64_t now = NowUs();
  switch (in_.body_case()) {
    case ControllerMessage::kWelcome:
      deltas_.store(!full_reports_ && in_.welcome().accepts_inventory_digest());
      compact_figures_.store(!expanded_figures_ && in_.welcome().accepts_compact_figures());
      if (!welcomed_.exchange(true)) run_->OnWelcome(now - t_start_us_);
      break;
    case ControllerMessage::kInventoryRequest: {
      absl::MutexLock lock(&mu_);
      full_next_ = true;
      run_->CountInventoryRequest();
      break;
    }
    case ControllerMessage::kAssignment:
      HandleAssignment(in_.assignment());
      break;
    case ControllerMessage::kCommand: {
      absl::MutexLock lock(&mu_);
      AgentMessage m;
      m.mutable_command_result()->set_command_id(in_.command().command_id());
      m.mutable_command_result()->set_ok(false);
      m.mutable_command_result()->set_message("dcu-loadgen does not run commands");
      events_.push_back(std::move(m));
      break;
    }
    default:
      break;
  }
  StartRead(&in_);
  Pump();
}

void SimAgent::HandleAssignment(const dcufleet::v1::Assignment& a) {
  int64_t now = NowUs();
  std::vector<const dcufleet::v1::InstanceSpec*> fresh;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> ids;
    for (const auto& spec : a.instances()) {
      ids.insert(spec.instance_id());
      if (instances_.count(spec.instance_id())) continue;
      fresh.push_back(&spec);
      InstanceStatus st;
      st.set_instance_id(spec.instance_id());
      st.set_port(spec.port());
      st.set_runtime_kind(spec.runtime_kind());
      st.set_generation(a.generation());
      st.set_started_at_ms(WallMs());
      st.set_updated_at_ms(st.started_at_ms());
      if (run_->ShouldFail(*this, spec)) {
        st.set_phase(dcufleet::v1::INSTANCE_LOADING);
      } else {
        // The simulated engine is up at once: acknowledge with READY.
        st.set_phase(dcufleet::v1::INSTANCE_READY);
        st.set_ready_at_ms(st.started_at_ms());
      }
      QueueEventLocked(st, "loadgen");
      instances_[spec.instance_id()] = st;
    }
    // The assignment is the complete desired set: anything else stops (at
    // once, as the simulated engine started), reported as a real agent does.
    // The agent's own instance is not the controller's to stop.
    const std::string own = own_instance_id();
    for (auto it = instances_.begin(); it != instances_.end();) {
      if (!ids.count(it->first) && it->first != own) {
        // A failed engine is gone already: it just leaves the reports.
        if (it->second.phase() == dcufleet::v1::INSTANCE_FAILED) {
          it = instances_.erase(it);
          continue;
        }
        it->second.set_phase(dcufleet::v1::INSTANCE_STOPPED);
        it->second.set_updated_at_ms(WallMs());
        QueueEventLocked(it->second, "not in the assignment");
        it = instances_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto* spec : fresh) run_->OnAssigned(this, *spec, now);
}

int SimAgent::DeploymentInstances() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(instances_.size()) - static_cast<int>(instances_.count(own_instance_id()));
}

void SimAgent::OnDone(const grpc::Status& status) {
  finished_.store(true);
  run_->OnStreamDone(status, run_->stopping());
}

void Run::OnAssigned(SimAgent* agent, const dcufleet::v1::InstanceSpec& spec, int64_t now_us) {
  absl::MutexLock lock(&mu_);
  ++instances_seen_;
  placed_at_.try_emplace(spec.deployment(), now_us);
  auto f = failed_at_.find(spec.deployment());
  if (f != failed_at_.end() && spec.attempt() > f->second.first &&
      !failed_over_.count(spec.deployment())) {
    failed_over_.insert(spec.deployment());
    failover_.Add(now_us - f->second.second);
    if (!args_.failover_trace.empty()) {
      const int64_t now_ms = WallMs();
      failover_trace_.emplace_back(spec.deployment(), now_ms - (now_us - f->second.second) / 1000, now_ms);
    }
  }
  if (ShouldFail(*agent, spec)) to_fail_.emplace_back(agent->index(), spec.instance_id());
}

bool Run::StartController() {
  tmp_ = std::make_unique<testing::TempDir>();
  std::string bin = args_.controller_bin;
  if (bin.empty()) bin = absl::StrCat(common::ExecutableDir(), "/dcu-controller");
  std::string src = getenv("DCU_SOURCE_DIR") ? getenv("DCU_SOURCE_DIR") : DCU_SOURCE_DIR_DEFAULT;
  std::string catalog = args_.catalog.empty() ? src + "/bench/loadgen/catalog" : args_.catalog;
  std::string rules = args_.diagnosis_rules.empty() ? src + "/deploy/diagnosis/rules.txtpb"
                                                    : args_.diagnosis_rules;
  std::string port_file = tmp_->Join("port");
  controller_log_ = tmp_->Join("controller.log");
  std::vector<std::string> argv = {bin,
                                   "--listen", "127.0.0.1:0",
                                   "--port-file", port_file,
                                   "--db", args_.db.empty() ? tmp_->Join("dcufleet.db") : args_.db,
                                   "--catalog", catalog,
                                   "--diagnosis-rules", rules,
                                   "--status-interval", absl::StrCat(args_.report_interval_s)};
  if (!args_.controller_http.empty()) {
    argv.push_back("--http-listen");
    argv.push_back(args_.controller_http);
  }
  if (access(bin.c_str(), X_OK) != 0) {
    err_ << "dcu-loadgen: controller binary '" << bin << "' not found (pass --controller-bin)\n";
    return false;
  }
  controller_ = std::make_unique<testing::ChildProcess>(argv, controller_log_);
  controller_pid_ = controller_->pid();
  bool up = testing::WaitFor([&] { return !testing::ReadFileOrEmpty(port_file).empty() || !controller_->Running(); },
                             absl::Seconds(30));
  std::string port(absl::StripAsciiWhitespace(testing::ReadFileOrEmpty(port_file)));
  if (!up || port.empty()) {
    err_ << "dcu-loadgen: controller did not start; its log:\n" << controller_->Log() << "\n";
    return false;
  }
  address_ = absl::StrCat("127.0.0.1:", port);
  return true;
}

void Run::StopController() {
  if (!controller_) return;
  controller_->Signal(SIGTERM);
  if (controller_->Wait(absl::Seconds(10)) < 0) controller_->Signal(SIGKILL);
}

bool Run::ConnectAgents() {
  FleetOptions fo;
  fo.uniform = args_.uniform_fleet;
  fo.environments = {{"bare", "/opt/conda/envs/vllm-0.11.0"}, {"bare", "/opt/conda/envs/vllm-0.9.2"}};
  int per = std::max(1, args_.agents_per_connection);
  int nchan = (args_.agents + per - 1) / per;
  for (int c = 0; c < nchan; ++c) {
    grpc::ChannelArguments ca;
    // A connection of its own per channel, as separate agent hosts have.
    ca.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    ca.SetInt("dcu.loadgen.channel", c);
    ca.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
    channels_.push_back(grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), ca));
    node_stubs_.push_back(dcufleet::v1::NodeService::NewStub(channels_.back()));
  }
  for (int i = 0; i < args_.agents; ++i) agents_.push_back(std::make_unique<SimAgent>(this, i, fo, args_.full_reports,
                                                                                  args_.expanded_figures));
  int64_t t0 = NowUs();
  for (int i = 0; i < args_.agents; ++i) {
    // Pace the dialing at --connect-rate.
    int64_t due = t0 + static_cast<int64_t>(1e6 * i / std::max(1.0, args_.connect_rate));
    int64_t wait = due - NowUs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::microseconds(wait));
    agents_[i]->Connect(node_stubs_[i / per].get());
  }
  bool ok = testing::WaitFor([&] { return welcomed_.load() >= args_.agents || stream_errors_.load() > 0; },
                             absl::Seconds(args_.timeout_s));
  double all_s = static_cast<double>(NowUs() - t0) / 1e6;
  connect_s_ = all_s;
  auto s = connect_.Summarize();
  out_ << absl::StrFormat("connect: %d/%d agents welcomed in %.2f s (%.0f/s); Hello -> Welcome %s\n",
                          welcomed_.load(), args_.agents, all_s,
                          static_cast<double>(welcomed_.load()) / std::max(all_s, 1e-9), Fmt(s));
  return ok && welcomed_.load() >= args_.agents;
}

void Run::Ticker() {
  const int n = static_cast<int>(agents_.size());
  const double interval_us = args_.report_interval_s * 1e6;
  int64_t t0 = NowUs();
  int64_t triggered = 0;
  int64_t events = 0;
  size_t cursor = 0;
  while (ticking_.load()) {
    int64_t now = NowUs();
    // Agent i reports at t0 + (i/n + k) * interval: spread evenly.
    int64_t target = static_cast<int64_t>(static_cast<double>(now - t0) / interval_us * n);
    while (triggered < target) {
      agents_[triggered % n]->StatusDue();
      ++triggered;
    }
    if (args_.mode == "ingest" && args_.instance_events_per_s > 0) {
      int64_t ev_target = static_cast<int64_t>(static_cast<double>(now - t0) / 1e6 * args_.instance_events_per_s);
      while (events < ev_target) {
        // A stride walk, so consecutive events land on different agents.
        cursor = (cursor + 7919) % n;
        agents_[cursor]->CycleInstance();
        ++events;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Run::Prober() {
  grpc::ChannelArguments ca;
  ca.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  ca.SetMaxReceiveMessageSize(64 << 20);
  auto ch = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), ca);
  auto stub = dcufleet::v1::FleetService::NewStub(ch);
  const int64_t period_us = static_cast<int64_t>(1e6 / std::max(1.0, args_.probes_per_s));
  int64_t next = NowUs();
  while (!stopping_.load() && ticking_.load()) {
    int64_t now = NowUs();
    if (now < next) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(next - now, 2000)));
      continue;
    }
    probe_wanted_.store(true);
    Probe p;
    {
      absl::MutexLock lock(&probe_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(probe_mu_) { return probe_ready_; };
      if (!probe_mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(200))) continue;
      probe_ready_ = false;
      p = probe_;
    }
    next = p.sent_us + period_us;
    // Poll back to back: the error of the figure is one GetNode round trip.
    const std::string& name = agents_[p.agent]->name();
    bool seen = false;
    while (NowUs() - p.sent_us < 5000000 && !stopping_.load()) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      dcufleet::v1::GetNodeRequest req;
      req.set_name(name);
      dcufleet::v1::NodeView view;
      const int64_t asked_us = NowUs();
      grpc::Status st = stub->GetNode(&ctx, req, &view);
      if (!st.ok()) {
        if (st.error_code() != grpc::StatusCode::NOT_FOUND) rpc_errors_.fetch_add(1);
        break;
      }
      if (view.inventory().collected_at_ms() >= p.tag) {
        const int64_t answered_us = NowUs();
        ingest_.Add(answered_us - p.sent_us);
        ingest_server_.Add(1000 * std::max<int64_t>(0, view.last_seen_ms() - p.tag));
        probe_round_trip_.Add(answered_us - asked_us);
        seen = true;
        break;
      }
    }
    if (!seen && !stopping_.load()) probe_timeouts_.fetch_add(1);
  }
}

bool Run::RunIngest(nlohmann::json* j) {
  ticking_.store(true);
  std::thread ticker([this] { Ticker(); });
  std::thread prober([this] { Prober(); });
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(args_.warmup_s * 1e6)));
  MeasureWindow(j);
  if (args_.hostile > 0) {
    // The same fleet, the same window, now with hostile agents beside it:
    // the two windows' figures side by side are the measurement.
    std::vector<std::unique_ptr<dcufleet::v1::NodeService::Stub>> stubs;
    std::vector<std::unique_ptr<HostileAgent>> hostile;
    for (int i = 0; i < args_.hostile; ++i) {
      // A connection of its own, as a separate (compromised) host has.
      grpc::ChannelArguments ca;
      ca.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      ca.SetInt("dcu.loadgen.hostile", i);
      ca.SetMaxSendMessageSize(64 << 20);
      stubs.push_back(dcufleet::v1::NodeService::NewStub(
          grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), ca)));
      hostile.push_back(std::make_unique<HostileAgent>(absl::StrCat("hostile-", i), stubs.back().get()));
      hostile.back()->Start();
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    out_ << "--- under attack: " << args_.hostile
         << " hostile agent(s) flooding InstanceEvents for instances they never ran, and "
            "Hellos with 65,536 devices ---\n";
    nlohmann::json attack;
    MeasureWindow(&attack);
    for (auto& h : hostile) h->Stop();
    int64_t refused_drops = 0, dropped = 0;
    for (auto& h : hostile) {
      const HostileCounts& c = h->counts();
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      dcufleet::v1::GetNodeRequest req;
      req.set_name(h->node());
      dcufleet::v1::NodeView view;
      grpc::Status st = fleet_->GetNode(&ctx, req, &view);
      dcufleet::v1::NodeDrops drops = st.ok() ? view.drops() : dcufleet::v1::NodeDrops();
      dropped += drops.events_rate_limited() + drops.events_unknown_instance();
      refused_drops += drops.messages_refused();
      nlohmann::json hj = {{"node", h->node()},
                           {"events_sent", c.events_sent.load()},
                           {"streams", c.streams.load()},
                           {"streams_refused", c.streams_refused.load()},
                           {"hello_refused", c.hello_refused.load()},
                           {"huge_hellos", c.huge_hellos.load()},
                           {"huge_refused", c.huge_refused.load()},
                           {"huge_welcomed", c.huge_welcomed.load()},
                           {"controller_events_rate_limited", drops.events_rate_limited()},
                           {"controller_events_unknown_instance", drops.events_unknown_instance()},
                           {"controller_messages_refused", drops.messages_refused()},
                           {"controller_instances_listed", st.ok() ? view.instances_size() : -1},
                           {"controller_last_drop", drops.last_reason()}};
      attack["hostile"].push_back(hj);
      out_ << absl::StrFormat(
          "hostile '%s': %d forged events sent on %d streams (%d ended by the controller, %d of "
          "them refused at Hello); %d Hellos with 65,536 devices (%d refused, %d welcomed)\n",
          h->node(), c.events_sent.load(), c.streams.load(), c.streams_refused.load(),
          c.hello_refused.load(), c.huge_hellos.load(), c.huge_refused.load(),
          c.huge_welcomed.load());
      out_ << absl::StrFormat(
          "controller counted for '%s': %d rate-limited, %d unknown-instance events dropped, %d "
          "messages refused; the node lists %d instances (last: %s)\n",
          h->node(), drops.events_rate_limited(), drops.events_unknown_instance(),
          drops.messages_refused(), st.ok() ? view.instances_size() : -1, drops.last_reason());
    }
    attack["hostile_dropped"] = dropped;
    attack["hostile_refused"] = refused_drops;
    (*j)["under_attack"] = attack;
  }
  ticking_.store(false);
  ticker.join();
  prober.join();
  return true;
}

void Run::MeasureWindow(nlohmann::json* j) {
  ingest_.Clear();
  ingest_server_.Clear();
  probe_round_trip_.Clear();
  const int64_t timeouts0 = probe_timeouts_.load();
  ProcSample c0 = ReadProc(controller_pid_);
  double self0 = SelfCpuS();
  int64_t written0 = reports_written_.load(), events0 = events_sent_.load();
  int64_t t0 = NowUs();
  measuring_.store(true);
  double peak_cores = 0;
  int64_t peak_rss = 0;
  ProcSample prev = c0;
  int64_t prev_us = t0;
  while (NowUs() - t0 < static_cast<int64_t>(args_.duration_s * 1e6)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ProcSample s = ReadProc(controller_pid_);
    int64_t now = NowUs();
    if (s.ok && prev.ok) {
      peak_cores = std::max(peak_cores, (s.cpu_s - prev.cpu_s) / (static_cast<double>(now - prev_us) / 1e6));
    }
    peak_rss = std::max(peak_rss, s.rss_kib);
    prev = s;
    prev_us = now;
  }
  measuring_.store(false);
  // The probe in flight finishes (or times out) before the figures are read.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double secs = static_cast<double>(NowUs() - t0) / 1e6;
  ProcSample c1 = ReadProc(controller_pid_);
  double self1 = SelfCpuS();
  int64_t written = reports_written_.load() - written0;
  int64_t events = events_sent_.load() - events0;
  auto in = ingest_.Summarize();
  auto srv = ingest_server_.Summarize();
  auto rtt = probe_round_trip_.Summarize();
  const int64_t timeouts = probe_timeouts_.load() - timeouts0;
  double cores = c0.ok && c1.ok ? (c1.cpu_s - c0.cpu_s) / secs : -1;
  out_ << absl::StrFormat("steady state: %.1f s, %d reports (%.0f/s), %d instance events\n", secs,
                          written, static_cast<double>(written) / secs, events);
  out_ << "ingest latency (report handed to gRPC -> visible via FleetService.GetNode): " << Fmt(in) << "\n";
  out_ << "ingest latency (controller clock: sent_at_ms -> last_seen_ms, ms resolution): " << Fmt(srv) << "\n";
  out_ << "probe round trip (the GetNode that saw the report): " << Fmt(rtt) << "\n";
  out_ << absl::StrFormat("probe timeouts (report not visible within 5 s): %d\n", timeouts);
  if (c1.ok) {
    out_ << absl::StrFormat(
        "controller: %.2f cores average (peak 1-s %.2f), RSS %.1f MiB (peak %.1f, high-water %.1f), %d threads\n",
        cores, peak_cores, c1.rss_kib / 1024.0, peak_rss / 1024.0, c1.hwm_kib / 1024.0, c1.threads);
  }
  out_ << absl::StrFormat("loadgen itself: %.2f cores\n", (self1 - self0) / secs);
  (*j)["steady_s"] = secs;
  (*j)["reports"] = written;
  (*j)["reports_per_s"] = static_cast<double>(written) / secs;
  (*j)["instance_events"] = events;
  (*j)["ingest_latency"] = ToJson(in);
  (*j)["ingest_latency_controller_clock"] = ToJson(srv);
  (*j)["probe_round_trip"] = ToJson(rtt);
  (*j)["probe_timeouts"] = timeouts;
  (*j)["controller_cores"] = cores;
  (*j)["controller_peak_cores_1s"] = peak_cores;
  (*j)["controller_rss_mib"] = c1.rss_kib / 1024.0;
  (*j)["controller_peak_rss_mib"] = peak_rss / 1024.0;
  (*j)["controller_hwm_mib"] = c1.hwm_kib / 1024.0;
  (*j)["controller_threads"] = c1.threads;
  (*j)["loadgen_cores"] = (self1 - self0) / secs;
}

bool Run::SubmitDeployments(int first, int m, std::atomic<int>* failed) {
  std::atomic<int> in_flight{0};
  std::atomic<int> done{0};
  auto fill_spec = [&](int i, dcufleet::v1::DeploymentSpec* s) {
    s->set_name(absl::StrFormat("lg-%06d", i));
    s->set_model("qwen3-8b");
    // Mixed TP: half choose automatically, the rest ask for 1, 2, 4 or 8
    // (--tp N: all ask for N, as a batch scheduler's jobs of one shape do).
    static const int kTps[] = {0, 1, 0, 2, 0, 4, 0, 8, 0, 2};
    s->set_tp(args_.tp >= 0 ? args_.tp : kTps[i % 10]);
  };
  auto refused = [&](const std::string& what) {
    failed->fetch_add(1);
    absl::MutexLock lock(&mu_);
    if (first_errors_.size() < 5) first_errors_.push_back(what);
  };
  if (args_.deploy_batch > 0) {
    // Bulk submission (issue 22): DeployMany RPCs of --deploy-batch each, up
    // to --deploy-window deployments in flight.
    struct ManyCall {
      grpc::ClientContext ctx;
      dcufleet::v1::DeployManyRequest req;
      dcufleet::v1::DeployManyResponse resp;
    };
    for (int i = 0; i < m;) {
      const int k = std::min(args_.deploy_batch, m - i);
      while (in_flight.load() > 0 && in_flight.load() + k > std::max(args_.deploy_window, k)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      auto* call = new ManyCall;
      call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      for (int x = 0; x < k; ++x) fill_spec(first + i + x, call->req.add_requests()->mutable_spec());
      in_flight.fetch_add(k);
      fleet_->async()->DeployMany(&call->ctx, &call->req, &call->resp, [&, call, k](grpc::Status st) {
        if (!st.ok()) {
          for (int x = 0; x < k; ++x) refused(absl::StrCat("DeployMany: ", st.error_message()));
        } else {
          for (const auto& r : call->resp.results()) {
            if (r.code() != 0) refused(absl::StrCat("DeployMany result: ", r.message()));
          }
        }
        delete call;
        done.fetch_add(k);
        in_flight.fetch_sub(k);
      });
      i += k;
    }
  } else {
    struct Call {
      grpc::ClientContext ctx;
      dcufleet::v1::DeployRequest req;
      dcufleet::v1::DeployResponse resp;
    };
    for (int i = 0; i < m; ++i) {
      while (in_flight.load() >= args_.deploy_window) std::this_thread::sleep_for(std::chrono::microseconds(100));
      auto* call = new Call;
      call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      fill_spec(first + i, call->req.mutable_spec());
      in_flight.fetch_add(1);
      fleet_->async()->Deploy(&call->ctx, &call->req, &call->resp, [&, call](grpc::Status st) {
        if (!st.ok()) refused(absl::StrCat("Deploy: ", st.error_message()));
        delete call;
        done.fetch_add(1);
        in_flight.fetch_sub(1);
      });
    }
  }
  // The callbacks use this frame: wait for every one, also past the timeout.
  // Polled every 0.2 ms: the time it returns is the wave's submission time
  // (at the default 50 ms it read as a 50 ms submission).
  bool answered = testing::WaitFor([&] { return done.load() >= m; }, absl::Seconds(args_.timeout_s),
                                   absl::Microseconds(200));
  while (done.load() < m) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return answered;
}

bool Run::WaitReady(int want, int64_t t0, int* ready, int* total, double* ack_s) {
  auto count_ready = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    dcufleet::v1::ListDeploymentsResponse resp;
    grpc::Status st = fleet_->ListDeployments(&ctx, dcufleet::v1::ListDeploymentsRequest(), &resp);
    if (!st.ok()) {
      rpc_errors_.fetch_add(1);
      return false;
    }
    *ready = 0;
    *total = resp.deployments_size();
    for (const auto& d : resp.deployments()) {
      if (d.status().phase() == dcufleet::v1::DEPLOYMENT_READY) ++*ready;
    }
    return true;
  };
  bool ok = testing::WaitFor([&] { return count_ready() && *ready >= want; }, absl::Seconds(args_.timeout_s));
  *ack_s = static_cast<double>(NowUs() - t0) / 1e6;
  return ok;
}

bool Run::EmptyTheFleet(int first, int m, Drain* drain) {
  // Every deployment of the wave deleted (as many DeleteDeployment RPCs in
  // flight as Deploys were), then wait until the controller lists none and
  // no agent runs one: the next wave then starts on the fleet the first one
  // found (the scheduler counts a device taken by the controller's own
  // placements, which are gone with the deployments; a stopped instance a
  // view still lists until the node's next report holds only its port).
  std::atomic<int> in_flight{0};
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  struct Call {
    grpc::ClientContext ctx;
    dcufleet::v1::DeleteDeploymentRequest req;
    dcufleet::v1::DeleteDeploymentResponse resp;
  };
  const int64_t t0 = NowUs();
  for (int i = 0; i < m; ++i) {
    while (in_flight.load() >= args_.deploy_window) std::this_thread::sleep_for(std::chrono::microseconds(100));
    auto* call = new Call;
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    call->req.set_name(absl::StrFormat("lg-%06d", first + i));
    in_flight.fetch_add(1);
    fleet_->async()->DeleteDeployment(&call->ctx, &call->req, &call->resp, [&, call](grpc::Status st) {
      if (!st.ok() && st.error_code() != grpc::StatusCode::NOT_FOUND) {
        failed.fetch_add(1);
        absl::MutexLock lock(&mu_);
        if (first_errors_.size() < 5) first_errors_.push_back(absl::StrCat("DeleteDeployment: ", st.error_message()));
      }
      delete call;
      done.fetch_add(1);
      in_flight.fetch_sub(1);
    });
  }
  while (done.load() < m) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  drain->answered_s = static_cast<double>(NowUs() - t0) / 1e6;
  rpc_errors_.fetch_add(failed.load());
  auto listed = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    dcufleet::v1::ListDeploymentsResponse resp;
    if (!fleet_->ListDeployments(&ctx, dcufleet::v1::ListDeploymentsRequest(), &resp).ok()) return -1;
    return resp.deployments_size();
  };
  auto agents_running = [&] {
    int n = 0;
    for (const auto& a : agents_) n += a->DeploymentInstances();
    return n;
  };
  const bool empty = testing::WaitFor([&] { return listed() == 0 && agents_running() == 0; },
                                      absl::Seconds(args_.timeout_s));
  drain->empty_s = static_cast<double>(NowUs() - t0) / 1e6;
  return empty;
}

bool Run::WaitForSteadyFleet(nlohmann::json* j) {
  // Every agent has written a report since the reports started, and the
  // controller shows every node Ready. The agents report from here on (a real
  // agent reports from its Welcome; these start once every agent is
  // connected), so on a host where connecting 10,000 takes longer than the
  // controller's 15-s report timeout the first ones were silent, went
  // NotReady, and came back one by one over the first report interval --
  // measured 2026-12-05: 13,814 NotReady transitions during the first wave,
  // and placements waiting for nodes to be Ready again. A wave starts on a
  // steady fleet.
  const int64_t t0 = NowUs();
  // Report tags are wall-clock milliseconds (SimAgent::Pump), NowUs is the
  // steady clock: the cut-off is taken on the tags' clock.
  const int64_t since_ms = WallMs();
  bool reported = testing::WaitFor(
      [&] {
        for (const auto& a : agents_) {
          if (a->last_written_tag() < since_ms) return false;
        }
        return true;
      },
      absl::Seconds(args_.timeout_s));
  int ready = 0;
  bool all_ready = reported && testing::WaitFor(
                                   [&] {
                                     grpc::ClientContext ctx;
                                     ctx.set_deadline(std::chrono::system_clock::now() +
                                                      std::chrono::seconds(30));
                                     dcufleet::v1::ListNodesResponse resp;
                                     if (!fleet_->ListNodes(&ctx, dcufleet::v1::ListNodesRequest(), &resp)
                                              .ok()) {
                                       return false;
                                     }
                                     ready = 0;
                                     for (const auto& n : resp.nodes()) {
                                       ready += n.state() == dcufleet::v1::NODE_READY;
                                     }
                                     return ready >= args_.agents;
                                   },
                                   absl::Seconds(args_.timeout_s), absl::Milliseconds(500));
  const double s = static_cast<double>(NowUs() - t0) / 1e6;
  out_ << absl::StrFormat("fleet steady: every agent reported, %d/%d nodes Ready %.2f s after the reports started\n",
                          ready, args_.agents, s);
  (*j)["steady_fleet_s"] = s;
  (*j)["steady_fleet_ready"] = ready;
  if (!all_ready) {
    absl::MutexLock lock(&mu_);
    first_errors_.push_back("the fleet did not become steady (every node reporting and Ready) in time");
  }
  return all_ready;
}

bool Run::RunPlace(nlohmann::json* j, bool failover) {
  // Background: every agent keeps reporting, as a real fleet does.
  ticking_.store(true);
  std::thread ticker([this] { Ticker(); });
  if (!WaitForSteadyFleet(j)) {
    ticking_.store(false);
    ticker.join();
    return false;
  }
  const int m = args_.deployments;
  // Failover mode measures the failures of one fleet: one wave.
  const int min_waves = failover ? 1 : args_.waves;
  const double min_window_s = failover ? 0 : args_.min_window_s;
  auto placed = [&] {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(placed_at_.size());
  };
  // Summed over the waves: only the time from a wave's first Deploy to its
  // last placement counts; emptying the fleet between waves does not.
  double submit_s = 0, place_s = 0, cpu_s = 0;
  int64_t placed_total = 0;
  int failed_total = 0;
  std::vector<double> wave_rates;
  // The deletes between waves (untimed for the placement rate).
  std::vector<double> delete_answered_s, delete_empty_s;
  double delete_cpu_s = 0;
  int64_t deleted_total = 0;
  bool all = true;
  bool acked = true;
  int ready = 0, total = 0;
  double ack_s = 0;
  int wave = 0;
  int64_t wave_t0 = 0;
  for (;; ++wave) {
    const int first = wave * m;
    {
      absl::MutexLock lock(&mu_);
      placed_at_.clear();
    }
    std::atomic<int> failed{0};
    ProcSample c0 = ReadProc(controller_pid_);
    int64_t t0 = NowUs();
    wave_t0 = t0;
    SubmitDeployments(first, m, &failed);
    int64_t t_submitted = NowUs();
    rpc_errors_.fetch_add(failed.load());
    failed_total += failed.load();
    all = testing::WaitFor([&] { return placed() >= m - failed.load(); }, absl::Seconds(args_.timeout_s)) && all;
    int64_t t_placed = t0;
    int64_t t_first = 0;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [d, t] : placed_at_) {
        t_placed = std::max(t_placed, t);
        t_first = t_first == 0 ? t : std::min(t_first, t);
      }
    }
    ProcSample c1 = ReadProc(controller_pid_);
    const double wave_place_s = static_cast<double>(t_placed - t0) / 1e6;
    submit_s += static_cast<double>(t_submitted - t0) / 1e6;
    place_s += wave_place_s;
    cpu_s += c1.cpu_s - c0.cpu_s;
    placed_total += placed();
    wave_rates.push_back(placed() / std::max(wave_place_s, 1e-9));
    if (min_waves > 1 || min_window_s > 0) {
      // Where a wave's time goes: submission, then the first and the last
      // Assignment at an agent, each from the wave's first Deploy.
      out_ << absl::StrFormat("wave %d: placed %d/%d in %.3f s (%.0f/s; submitted at %.1f ms, first placement at %.1f ms)\n",
                              wave + 1, placed(), m, wave_place_s, wave_rates.back(),
                              (t_submitted - t0) / 1e3, t_first > 0 ? (t_first - t0) / 1e3 : 0.0);
    }
    if (!failover) {
      // Acknowledged: the controller records every deployment of the wave
      // READY before it is deleted.
      acked = WaitReady(m - failed.load(), t0, &ready, &total, &ack_s) && acked;
    }
    const bool enough = wave + 1 >= min_waves && place_s >= min_window_s;
    if (failover || enough || !all || !acked) break;
    Drain drain;
    ProcSample d0 = ReadProc(controller_pid_);
    if (!EmptyTheFleet(first, m, &drain)) {
      absl::MutexLock lock(&mu_);
      first_errors_.push_back(absl::StrCat("the fleet did not empty after wave ", wave + 1));
      all = false;
      break;
    }
    ProcSample d1 = ReadProc(controller_pid_);
    delete_answered_s.push_back(drain.answered_s);
    delete_empty_s.push_back(drain.empty_s);
    delete_cpu_s += d1.cpu_s - d0.cpu_s;
    deleted_total += m;
    if (min_waves > 1 || min_window_s > 0) {
      out_ << absl::StrFormat("  deleted: %d DeleteDeployment answered in %.3f s (%.0f/s), the fleet empty at %.3f s\n", m,
                              drain.answered_s, m / std::max(drain.answered_s, 1e-9), drain.empty_s);
    }
  }
  const int waves = wave + 1;
  const int submitted = waves * m;
  ProcSample cn = ReadProc(controller_pid_);
  out_ << absl::StrFormat("submitted %d deployments in %.2f s (%.0f/s, %s, TP %s, %d refused)\n", submitted,
                          submit_s, submitted / std::max(submit_s, 1e-9),
                          args_.deploy_batch > 0 ? absl::StrCat("DeployMany of ", args_.deploy_batch)
                                                 : std::string("one Deploy RPC each"),
                          args_.tp >= 0 ? absl::StrCat(args_.tp) : std::string("mixed"), failed_total);
  out_ << absl::StrFormat(
      "placed %d/%d (each persisted, then its Assignment received by the agent) %.2f s after the "
      "first Deploy%s: %.0f placements/s%s\n",
      placed_total, submitted, place_s,
      waves > 1 ? absl::StrFormat(" (summed over %d waves, each from its first Deploy to its last placement)", waves)
                : std::string(),
      placed_total / std::max(place_s, 1e-9), all ? "" : " (TIMED OUT)");
  if (waves > 1) {
    std::vector<double> sorted = wave_rates;
    std::sort(sorted.begin(), sorted.end());
    out_ << absl::StrFormat("waves: placements/s median %.0f, min %.0f, max %.0f\n", sorted[sorted.size() / 2],
                            sorted.front(), sorted.back());
  }
  if (!delete_answered_s.empty()) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double answered = median(delete_answered_s), empty = median(delete_empty_s);
    out_ << absl::StrFormat(
        "deletes between waves: %d, median per wave %.3f s until every DeleteDeployment was answered (%.0f/s), "
        "%.3f s until the fleet was empty; controller %.1f us of CPU per delete\n",
        deleted_total, answered, m / std::max(answered, 1e-9), empty,
        1e6 * delete_cpu_s / static_cast<double>(std::max<int64_t>(deleted_total, 1)));
    (*j)["delete_answered_s_median"] = answered;
    (*j)["delete_empty_s_median"] = empty;
    (*j)["deletes_per_s"] = m / std::max(answered, 1e-9);
    (*j)["controller_cpu_us_per_delete"] = 1e6 * delete_cpu_s / static_cast<double>(std::max<int64_t>(deleted_total, 1));
  }
  double cores = cpu_s / std::max(place_s, 1e-9);
  // The CPU the placements cost the controller: steadier between runs than
  // the rate, which moves with how the host's cores are shared with this
  // loadgen (BENCHMARKS.md, stop 43, compares builds by it).
  out_ << absl::StrFormat("controller during placement: %.2f cores, %.3f s of CPU (%.1f us per placement), RSS %.1f MiB\n",
                          cores, cpu_s, 1e6 * cpu_s / static_cast<double>(std::max<int64_t>(placed_total, 1)), cn.rss_kib / 1024.0);
  (*j)["deployments"] = m;
  (*j)["waves"] = waves;
  (*j)["wave_placements_per_s"] = wave_rates;
  (*j)["deploy_refused"] = failed_total;
  (*j)["deploy_batch"] = args_.deploy_batch;
  (*j)["tp"] = args_.tp;
  (*j)["submit_s"] = submit_s;
  (*j)["placed"] = placed_total;
  (*j)["place_s"] = place_s;
  (*j)["placements_per_s"] = placed_total / std::max(place_s, 1e-9);
  (*j)["controller_cores_placing"] = cores;
  (*j)["controller_cpu_s_placing"] = cpu_s;
  (*j)["controller_rss_mib"] = cn.rss_kib / 1024.0;
  if (!failover && args_.settle_s > 0) {
    // The footprint the fleet keeps, not the wave's high tide: what the
    // controller still holds once it has been idle a while (it hands free
    // allocator pages back every few seconds: common/allocator.h).
    absl::SleepFor(absl::Seconds(args_.settle_s));
    ProcSample settled = ReadProc(controller_pid_);
    out_ << absl::StrFormat("controller RSS %.0f s after the last wave's deployments were READY: %.1f MiB\n",
                            args_.settle_s, settled.rss_kib / 1024.0);
    (*j)["controller_settled_rss_mib"] = settled.rss_kib / 1024.0;
  }
  const int64_t t0 = wave_t0;  // failover mode has one wave
  if (failover) {
    int64_t to_fail = 0;
    {
      absl::MutexLock lock(&mu_);
      to_fail = static_cast<int64_t>(to_fail_.size());
    }
    out_ << absl::StrFormat("failover: %d instances of %s on %s fail at %.0f/s\n", to_fail, kFailStack,
                            kFailArch, args_.fail_rate);
    int64_t tf0 = NowUs();
    int64_t sent = 0;
    while (true) {
      std::pair<int, std::string> next;
      {
        absl::MutexLock lock(&mu_);
        if (to_fail_.empty()) break;
        next = to_fail_.front();
        to_fail_.pop_front();
      }
      int64_t due = tf0 + static_cast<int64_t>(1e6 * sent / std::max(1.0, args_.fail_rate));
      int64_t wait = due - NowUs();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::microseconds(wait));
      std::string dep;
      // The instance id is "<deployment>-<attempt>-<suffix>".
      std::vector<std::string> parts = absl::StrSplit(next.second, '-');
      int attempt = 0;
      if (parts.size() >= 3) {
        (void)absl::SimpleAtoi(parts[parts.size() - 2], &attempt);
        parts.resize(parts.size() - 2);
        dep = absl::StrJoin(parts, "-");
      }
      OnFailureSent(dep, attempt, NowUs());
      if (agents_[next.first]->FailInstance(next.second)) ++sent;
    }
    auto failed_over = [&] {
      absl::MutexLock lock(&mu_);
      return static_cast<int64_t>(failed_over_.size());
    };
    testing::WaitFor([&] { return failed_over() >= sent; }, absl::Seconds(args_.timeout_s));
    auto fo = failover_.Summarize();
    out_ << absl::StrFormat("failed over %d/%d: FAILED report -> next plan's Assignment at the agent %s\n",
                            failed_over(), sent, Fmt(fo));
    (*j)["failures_sent"] = sent;
    (*j)["failed_over"] = failed_over();
    (*j)["failover_latency"] = ToJson(fo);
    if (failed_over() < sent) {
      absl::MutexLock lock(&mu_);
      first_errors_.push_back(absl::StrCat(sent - static_cast<int64_t>(failed_over_.size()),
                                           " failures did not fail over in time"));
    }
  }
  if (failover) acked = WaitReady(m - failed_total, t0, &ready, &total, &ack_s);
  out_ << absl::StrFormat("acknowledged: %d/%d deployments READY in the controller %.2f s after the first Deploy%s\n",
                          ready, total, ack_s, waves > 1 ? " of the last wave" : "");
  (*j)["ready"] = ready;
  (*j)["ready_s"] = ack_s;
  ticking_.store(false);
  ticker.join();
  if (!all || !acked) {
    absl::MutexLock lock(&mu_);
    first_errors_.push_back(!all ? "not every deployment was placed in time"
                                 : "not every deployment became READY in time");
  }
  return all && acked;
}

bool Run::FinalCheck(nlohmann::json* j) {
  // Every agent's last written report must be what the controller shows.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int64_t mismatched = 0, checked = 0;
  for (const auto& a : agents_) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    dcufleet::v1::GetNodeRequest req;
    req.set_name(a->name());
    dcufleet::v1::NodeView view;
    grpc::Status st = fleet_->GetNode(&ctx, req, &view);
    ++checked;
    if (!st.ok()) {
      rpc_errors_.fetch_add(1);
      ++mismatched;
      continue;
    }
    if (a->last_written_tag() != 0 && view.inventory().collected_at_ms() != a->last_written_tag()) {
      ++mismatched;
    }
    if (view.state() != dcufleet::v1::NODE_READY) ++mismatched;
  }
  out_ << absl::StrFormat("final check: %d/%d nodes show their agent's last report and are Ready\n",
                          checked - mismatched, checked);
  (*j)["final_check_mismatched"] = mismatched;
  return mismatched == 0;
}

int Run::ScanControllerLog(nlohmann::json* j) {
  if (controller_log_.empty()) return 0;
  std::string log = testing::ReadFileOrEmpty(controller_log_);
  int locked = 0, warnings = 0, errors = 0;
  std::vector<std::string> shown;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    bool is_locked = absl::StrContains(line, "database is locked");
    bool warn = absl::StrContains(line, " W dcu-controller]");
    bool error = absl::StrContains(line, " E dcu-controller]");
    locked += is_locked;
    warnings += warn;
    errors += error;
    if ((is_locked || warn || error) && shown.size() < 5) shown.emplace_back(line);
  }
  out_ << absl::StrFormat("controller log: %d \"database is locked\", %d warnings, %d errors\n", locked,
                          warnings, errors);
  for (const auto& l : shown) out_ << "  " << l << "\n";
  (*j)["database_is_locked"] = locked;
  (*j)["controller_warnings"] = warnings;
  (*j)["controller_errors"] = errors;
  return locked + errors;
}

void Run::Shutdown() {
  stopping_.store(true);
  for (auto& a : agents_) a->Cancel();
  testing::WaitFor([&] { return streams_done_.load() >= static_cast<int64_t>(agents_.size()); },
                   absl::Seconds(30));
}

int Run::Execute() {
  if (args_.mode != "ingest" && args_.mode != "place" && args_.mode != "failover") {
    err_ << "dcu-loadgen: --mode must be ingest, place or failover\n";
    return 2;
  }
  if (args_.agents < 1 || args_.report_interval_s <= 0 || args_.duration_s <= 0) {
    err_ << "dcu-loadgen: --agents, --report-interval and --duration must be positive\n";
    return 2;
  }
  fail_tail_ = TritonFailureLogTail("/opt/conda/envs/vllm-0.11.0", kFailArch);
  if (args_.controller.empty()) {
    if (!StartController()) return 2;
  } else {
    address_ = args_.controller;
  }
  nlohmann::json j;
  j["mode"] = args_.mode;
  j["agents"] = args_.agents;
  j["agents_per_connection"] = args_.agents_per_connection;
  j["report_interval_s"] = args_.report_interval_s;
  j["cpus"] = std::thread::hardware_concurrency();
  out_ << absl::StrFormat("dcu-loadgen: %s, %d agents (%d per connection), a report every %.2f s each, controller %s (pid %d)\n",
                          args_.mode, args_.agents, args_.agents_per_connection, args_.report_interval_s,
                          address_, controller_pid_);
  grpc::ChannelArguments ca;
  ca.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  ca.SetMaxReceiveMessageSize(1 << 30);
  fleet_channel_ = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), ca);
  fleet_ = dcufleet::v1::FleetService::NewStub(fleet_channel_);

  bool ok = ConnectAgents();
  auto cs = connect_.Summarize();
  j["connect_latency"] = ToJson(cs);
  j["connect_s"] = connect_s_;
  j["welcomed"] = welcomed_.load();
  if (ok) {
    if (args_.mode == "ingest") {
      ok = RunIngest(&j) && ok;
      ok = FinalCheck(&j) && ok;
    } else {
      ok = RunPlace(&j, args_.mode == "failover") && ok;
    }
  }
  ProcSample last = ReadProc(controller_pid_);
  Shutdown();
  StopController();
  int log_problems = ScanControllerLog(&j);
  j["stream_errors"] = stream_errors_.load();
  j["write_errors"] = write_errors_.load();
  j["rpc_errors"] = rpc_errors_.load();
  j["coalesced_reports"] = coalesced_.load();
  j["full_reports"] = args_.full_reports;
  j["expanded_figures"] = args_.expanded_figures;
  j["inventory_requests"] = inventory_requests_.load();
  out_ << absl::StrFormat("reports: %s; %d InventoryRequests from the controller\n",
                          args_.full_reports        ? "full inventory in every report (--full-reports)"
                          : args_.expanded_figures ? "digest-only unless asked, figures as DeviceMemory (--expanded-figures)"
                                                   : "digest-only unless asked, compact figures",
                          inventory_requests_.load());
  if (last.ok) j["controller_hwm_mib"] = last.hwm_kib / 1024.0;
  out_ << absl::StrFormat("errors: %d stream, %d write, %d RPC; %d reports coalesced (came due while the last was still being written)\n",
                          stream_errors_.load(), write_errors_.load(), rpc_errors_.load(), coalesced_.load());
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : first_errors_) out_ << "  " << e << "\n";
    j["first_errors"] = first_errors_;
  }
  if (!args_.json_path.empty()) std::ofstream(args_.json_path) << j.dump(2) << "\n";
  if (!args_.failover_trace.empty()) {
    std::ofstream trace(args_.failover_trace);
    absl::MutexLock lock(&mu_);
    for (const auto& [dep, sent_ms, assigned_ms] : failover_trace_) {
      trace << dep << " " << sent_ms << " " << assigned_ms << "\n";
    }
  }
  if (!args_.keep_log.empty() && !controller_log_.empty()) {
    std::ofstream(args_.keep_log) << testing::ReadFileOrEmpty(controller_log_);
  }
  bool clean = ok && stream_errors_.load() == 0 && write_errors_.load() == 0 && rpc_errors_.load() == 0 &&
               log_problems == 0 && (args_.mode != "ingest" || probe_timeouts_.load() == 0);
  out_ << (clean ? "result: completed without errors\n" : "result: completed WITH ERRORS\n");
  return clean ? 0 : 1;
}

}  // namespace

int RunLoadgen(const LoadgenArgs& args, std::ostream& out, std::ostream& err) {
  Run run(args, out, err);
  return run.Execute();
}

}  // namespace dcu::bench
