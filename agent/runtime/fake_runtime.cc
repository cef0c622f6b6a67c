#include "agent/runtime/fake_runtime.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dcu::agent {

absl::StatusOr<RuntimeInstance> FakeRuntime::Start(const dcufleet::v1::InstanceSpec& spec) {
  absl::MutexLock lock(&mu_);
  ++start_calls_;
  if (!start_status_.ok()) return start_status_;
  if (std::string why = ValidateInstanceId(spec.instance_id()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  auto it = instances_.find(spec.instance_id());
  if (it != instances_.end() && it->second.running) {
    return absl::AlreadyExistsError(
        absl::StrCat("instance '", spec.instance_id(), "' is already running"));
  }
  RuntimeInstance ri;
  ri.instance_id = spec.instance_id();
  ri.kind = kind_;
  ri.running = true;
  ri.pid = next_pid_++;
  ri.started_at = absl::Now();
  ri.log_location = absl::StrCat("fake:", spec.instance_id());
  ri.spec = spec;
  instances_[spec.instance_id()] = ri;
  logs_[spec.instance_id()].clear();
  started_ids_.push_back(spec.instance_id());
  return ri;
}

absl::Status FakeRuntime::Stop(absl::string_view instance_id, absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  ++stop_calls_;
  if (!stop_status_.ok()) return stop_status_;
  auto it = instances_.find(std::string(instance_id));
  if (it == instances_.end()) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  it->second.stop_requested = true;
  if (it->second.running) {
    it->second.running = false;
    it->second.exit_known = true;
    it->second.exit_code = 0;
    it->second.finished_at = absl::Now();
  }
  return absl::OkStatus();
}

absl::StatusOr<RuntimeInstance> FakeRuntime::Inspect(absl::string_view instance_id) {
  absl::MutexLock lock(&mu_);
  if (!inspect_status_.ok()) return inspect_status_;
  auto it = instances_.find(std::string(instance_id));
  if (it == instances_.end()) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  return it->second;
}

absl::StatusOr<std::vector<RuntimeInstance>> FakeRuntime::List() {
  absl::MutexLock lock(&mu_);
  std::vector<RuntimeInstance> out;
  for (const auto& [id, ri] : instances_) out.push_back(ri);
  return out;
}

absl::StatusOr<std::vector<RuntimeInstance>> FakeRuntime::Recover() { return List(); }

absl::StatusOr<std::string> FakeRuntime::ReadLogTail(absl::string_view instance_id,
                                                     size_t max_bytes) {
  absl::MutexLock lock(&mu_);
  auto it = logs_.find(std::string(instance_id));
  if (it == logs_.end()) return absl::NotFoundError(absl::StrCat("no instance '", instance_id, "'"));
  const std::string& log = it->second;
  return log.size() > max_bytes ? log.substr(log.size() - max_bytes) : log;
}

absl::Status FakeRuntime::Remove(absl::string_view instance_id) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(std::string(instance_id));
  if (it == instances_.end()) return absl::OkStatus();
  if (it->second.running) {
    return absl::FailedPreconditionError(absl::StrCat("instance '", instance_id, "' is running"));
  }
  instances_.erase(it);
  logs_.erase(std::string(instance_id));
  return absl::OkStatus();
}

void FakeRuntime::set_start_status(absl::Status s) {
  absl::MutexLock lock(&mu_);
  start_status_ = std::move(s);
}
void FakeRuntime::set_stop_status(absl::Status s) {
  absl::MutexLock lock(&mu_);
  stop_status_ = std::move(s);
}
void FakeRuntime::set_inspect_status(absl::Status s) {
  absl::MutexLock lock(&mu_);
  inspect_status_ = std::move(s);
}

void FakeRuntime::SetExited(absl::string_view instance_id, int exit_code, int term_signal) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(std::string(instance_id));
  if (it == instances_.end()) return;
  it->second.running = false;
  it->second.exit_known = true;
  it->second.exit_code = term_signal ? -1 : exit_code;
  it->second.term_signal = term_signal;
  it->second.finished_at = absl::Now();
}

void FakeRuntime::AppendLog(absl::string_view instance_id, absl::string_view text) {
  absl::MutexLock lock(&mu_);
  absl::StrAppend(&logs_[std::string(instance_id)], text);
}

void FakeRuntime::AddExisting(RuntimeInstance instance) {
  absl::MutexLock lock(&mu_);
  std::string id = instance.instance_id;
  logs_[id];
  instances_[id] = std::move(instance);
}

int FakeRuntime::start_calls() const {
  absl::MutexLock lock(&mu_);
  return start_calls_;
}
int FakeRuntime::stop_calls() const {
  absl::MutexLock lock(&mu_);
  return stop_calls_;
}
std::vector<std::string> FakeRuntime::started_ids() const {
  absl::MutexLock lock(&mu_);
  return started_ids_;
}

}  // namespace dcu::agent
