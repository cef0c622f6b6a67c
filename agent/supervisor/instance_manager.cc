#include "agent/supervisor/instance_manager.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/enum_names.h"
#include "common/logging.h"
#include "google/protobuf/util/message_differencer.h"

namespace dcu::agent {

using dcufleet::v1::InstanceSpec;
using dcufleet::v1::InstanceStatus;

InstanceManager::InstanceManager(std::map<std::string, Runtime*> runtimes,
                                 common::HttpClient* http, common::Clock* clock, Options options,
                                 InstanceStatusListener listener)
    : runtimes_(std::move(runtimes)),
      http_(http),
      clock_(clock),
      options_(std::move(options)),
      listener_(std::move(listener)) {
  if (options_.housekeeping_interval > absl::ZeroDuration()) {
    housekeeper_ = std::thread([this] {
      for (;;) {
        {
          absl::MutexLock lock(&mu_);
          mu_.AwaitWithTimeout(absl::Condition(&shutdown_), options_.housekeeping_interval);
          if (shutdown_) return;
        }
        Housekeep();
      }
    });
  }
}

InstanceManager::~InstanceManager() { Shutdown(); }

void InstanceManager::Publish(const InstanceStatus& status) {
  if (listener_) listener_(status);
}

std::unique_ptr<InstanceSupervisor> InstanceManager::MakeSupervisor(const InstanceSpec& spec) {
  Runtime* runtime = nullptr;
  std::string reason;
  // The kind is never guessed: an unspecified or unknown kind fails the
  // instance with a reason instead of running it some other way.
  std::string kind(common::RuntimeKindName(spec.runtime_kind()));
  auto it = runtimes_.find(kind);
  if (!common::ParseRuntimeKind(kind)) {
    reason = absl::StrCat("runtime_kind ", kind, " (", static_cast<int>(spec.runtime_kind()),
                          ") of instance '", spec.instance_id(), "': must be ",
                          common::RuntimeKindChoices(), "; refusing to guess");
  } else if (it != runtimes_.end()) {
    runtime = it->second;
  } else {
    std::vector<std::string> kinds;
    for (const auto& [k, r] : runtimes_) kinds.push_back(k);
    reason = absl::StrCat("no runtime '", kind, "' on this node (available: ",
                          absl::StrJoin(kinds, ", "), ")");
  }
  auto sup = std::make_unique<InstanceSupervisor>(
      spec, runtime, http_, clock_, options_.supervisor,
      [this](const InstanceStatus& s) { Publish(s); }, reason);
  sup->set_generation(generation_);
  return sup;
}

absl::Status InstanceManager::Recover() {
  absl::Status first_error;
  for (const auto& [kind, runtime] : runtimes_) {
    auto found = runtime->Recover();
    if (!found.ok()) {
      DCU_LOG_WARN("recover: runtime '", kind, "': ", found.status().message());
      if (first_error.ok()) {
        first_error = absl::Status(found.status().code(),
                                   absl::StrCat("runtime '", kind, "': ", found.status().message()));
      }
      continue;
    }
    absl::MutexLock lock(&mu_);
    for (auto& ri : *found) {
      if (supervisors_.count(ri.instance_id)) continue;
      InstanceSpec spec = ri.spec;
      spec.set_instance_id(ri.instance_id);
      // The runtime that found it decides its kind ("fake" in tests names none).
      if (auto k = common::ParseRuntimeKind(kind)) spec.set_runtime_kind(*k);
      auto sup = MakeSupervisor(spec);
      sup->Begin(ri);
      supervisors_[ri.instance_id] = std::move(sup);
    }
  }
  return first_error;
}

void InstanceManager::Apply(int64_t generation, std::vector<InstanceSpec> specs) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  if (generation < generation_) {
    DCU_LOG_INFO("assignment generation ", generation, " is older than ", generation_,
                 ": ignored");
    return;
  }
  generation_ = generation;
  std::map<std::string, InstanceSpec> desired;
  for (auto& s : specs) {
    std::string id = s.instance_id();
    if (desired.count(id)) {
      DCU_LOG_WARN("assignment generation ", generation, ": instance '", id,
                   "' listed twice; the first is used");
      continue;
    }
    desired.emplace(std::move(id), std::move(s));
  }
  // Stop what is no longer wanted.
  for (auto& [id, sup] : supervisors_) {
    if (!desired.count(id) && !sup->stop_requested()) {
      DCU_LOG_INFO("instance '", id, "' is not in generation ", generation, ": stopping");
      sup->RequestStop();
    }
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    it = desired.count(it->first) ? std::next(it) : pending_.erase(it);
  }
  // Start what is missing; keep what runs.
  for (auto& [id, spec] : desired) {
    auto it = supervisors_.find(id);
    if (it == supervisors_.end()) {
      auto sup = MakeSupervisor(spec);
      sup->Begin();
      supervisors_[id] = std::move(sup);
      continue;
    }
    InstanceSupervisor& sup = *it->second;
    bool same = google::protobuf::util::MessageDifferencer::Equals(sup.spec(), spec);
    if (same && !sup.stop_requested()) {
      sup.set_generation(generation);
      continue;
    }
    if (same && sup.stop_requested()) {
      // Wanted again while stopping: start afresh once stopped.
      pending_[id] = spec;
      continue;
    }
    // An adopted container whose spec file was lost has only its id: it is
    // kept as it is rather than restarted over an unknowable difference.
    bool spec_unknown = sup.status().adopted() && sup.spec().argv_size() == 0;
    if (!spec_unknown) {
      DCU_LOG_INFO("instance '", id, "': spec changed in generation ", generation,
                   ": replacing");
      sup.RequestStop();
      pending_[id] = spec;
    } else {
      sup.set_generation(generation);
    }
  }
}

void InstanceManager::Housekeep() {
  std::vector<std::unique_ptr<InstanceSupervisor>> to_join;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    for (auto it = supervisors_.begin(); it != supervisors_.end();) {
      InstanceSupervisor& sup = *it->second;
      if (sup.done() && sup.status().phase() == dcufleet::v1::INSTANCE_STOPPED) {
        to_join.push_back(std::move(it->second));
        it = supervisors_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (supervisors_.count(it->first)) {
        ++it;
        continue;
      }
      auto sup = MakeSupervisor(it->second);
      sup->Begin();
      supervisors_[it->first] = std::move(sup);
      it = pending_.erase(it);
    }
  }
  for (auto& sup : to_join) sup->Join();
}

std::vector<InstanceStatus> InstanceManager::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<InstanceStatus> out;
  for (const auto& [id, sup] : supervisors_) out.push_back(sup->status());
  return out;
}

bool InstanceManager::HoldsNothing() const {
  absl::MutexLock lock(&mu_);
  return supervisors_.empty() && pending_.empty();
}

int64_t InstanceManager::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

void InstanceManager::Shutdown() {
  std::map<std::string, std::unique_ptr<InstanceSupervisor>> sups;
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
    sups.swap(supervisors_);
    pending_.clear();
  }
  if (housekeeper_.joinable()) housekeeper_.join();
  for (auto& [id, sup] : sups) sup->Detach();
  for (auto& [id, sup] : sups) sup->Join();
}

absl::Status InstanceManager::StopAllAndWait(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    pending_.clear();
    for (auto& [id, sup] : supervisors_) sup->RequestStop();
  }
  absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    Housekeep();
    std::vector<std::string> left;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [id, sup] : supervisors_) left.push_back(id);
    }
    if (left.empty()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("instances still stopping: ", absl::StrJoin(left, ", ")));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace dcu::agent
