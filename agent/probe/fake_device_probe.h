#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/probe/device_probe.h"

namespace dcu::agent {

// Hand-written, stateful fake (Ray FakeCgroupDriver style): tests set the
// devices and findings it reports and inject a status per method.
class FakeDeviceProbe : public DeviceProbe {
 public:
  explicit FakeDeviceProbe(std::string name = "fake") : name_(std::move(name)) {}

  std::string Name() const override { return name_; }

  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override {
    auto r = Probe();
    if (!r.ok()) return r.status();
    return r->devices;
  }

  absl::StatusOr<ProbeReport> Probe() override {
    absl::MutexLock lock(&mu_);
    ++probe_calls_;
    if (!status_.ok()) return status_;
    return report_;
  }

  void Invalidate() override {
    absl::MutexLock lock(&mu_);
    ++invalidate_calls_;
  }

  void set_devices(std::vector<dcufleet::v1::Device> devices) {
    absl::MutexLock lock(&mu_);
    report_.devices = std::move(devices);
  }
  void add_finding(dcufleet::v1::Finding f) {
    absl::MutexLock lock(&mu_);
    report_.findings.push_back(std::move(f));
  }
  void set_driver_version(std::string v) {
    absl::MutexLock lock(&mu_);
    report_.driver_version = std::move(v);
  }
  // Injected status for Probe()/Enumerate(); OK restores normal replies.
  void set_enumerate_status(absl::Status s) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(s);
  }
  int probe_calls() const {
    absl::MutexLock lock(&mu_);
    return probe_calls_;
  }
  int invalidate_calls() const {
    absl::MutexLock lock(&mu_);
    return invalidate_calls_;
  }

 private:
  const std::string name_;
  mutable absl::Mutex mu_;
  ProbeReport report_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int probe_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int invalidate_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dcu::agent
