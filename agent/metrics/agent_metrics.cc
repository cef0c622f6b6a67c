#include "agent/metrics/agent_metrics.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/enum_names.h"
#include "common/holder_class.h"

namespace dcu::agent {

using common::FamilyBuilder;
using common::MetricFamilies;
using dcufleet::v1::Device;
using dcufleet::v1::MemoryReading;

namespace {

const char* PhaseLabel(dcufleet::v1::InstancePhase p) {
  switch (p) {
    case dcufleet::v1::INSTANCE_PENDING: return "pending";
    case dcufleet::v1::INSTANCE_STARTING: return "starting";
    case dcufleet::v1::INSTANCE_LOADING: return "loading";
    case dcufleet::v1::INSTANCE_HEALTH_CHECKING: return "health_checking";
    case dcufleet::v1::INSTANCE_READY: return "ready";
    case dcufleet::v1::INSTANCE_FAILED: return "failed";
    case dcufleet::v1::INSTANCE_STOPPING: return "stopping";
    case dcufleet::v1::INSTANCE_STOPPED: return "stopped";
    default: return "unknown";
  }
}

constexpr dcufleet::v1::InstancePhase kPhases[] = {
    dcufleet::v1::INSTANCE_PENDING,          dcufleet::v1::INSTANCE_STARTING,
    dcufleet::v1::INSTANCE_LOADING,          dcufleet::v1::INSTANCE_HEALTH_CHECKING,
    dcufleet::v1::INSTANCE_READY,            dcufleet::v1::INSTANCE_FAILED,
    dcufleet::v1::INSTANCE_STOPPING,         dcufleet::v1::INSTANCE_STOPPED};

constexpr dcufleet::v1::HolderClass kClasses[] = {
    dcufleet::v1::HOLDER_MANAGED, dcufleet::v1::HOLDER_LEFTOVER, dcufleet::v1::HOLDER_UNMANAGED,
    dcufleet::v1::HOLDER_ZOMBIE, dcufleet::v1::HOLDER_EXITED};

}  // namespace

InstanceOwners OwnersOf(const std::vector<dcufleet::v1::InstanceSpec>& specs) {
  InstanceOwners out;
  for (const auto& s : specs) {
    InstanceOwner o;
    o.deployment = s.deployment();
    absl::string_view id = s.instance_id();
    if (!o.deployment.empty() && absl::ConsumePrefix(&id, o.deployment) &&
        absl::ConsumePrefix(&id, "-r")) {
      size_t dash = id.find('-');
      int k = 0;
      if (dash != absl::string_view::npos && absl::SimpleAtoi(id.substr(0, dash), &k) && k > 0) {
        o.replica = k;
      }
    }
    out[s.instance_id()] = std::move(o);
  }
  return out;
}

MetricFamilies NodeStatusFamilies(const std::string& node, const dcufleet::v1::NodeStatus& status,
                                  const InstanceOwners& owners) {
  MetricFamilies out;
  FamilyBuilder b(&out);
  const auto& inv = status.inventory();
  auto dev = [&](const Device& d) {
    return common::MetricLabels{{"node", node}, {"device", absl::StrCat(d.index())}};
  };

  b.Gauge("dcu_device_info",
          "Always 1: a device the agent sees, with its arch, product and PCI bus.");
  for (const auto& d : inv.devices()) {
    auto l = dev(d);
    l.insert(l.end(), {{"arch", d.arch()}, {"product", d.product_name()}, {"pci_bus", d.pci_bus()},
                       {"vendor", d.vendor()}});
    b.Add(l, 1);
  }

  // The SMI's view (host) next to the device runtime's own (device): the two
  // disagree exactly when memory is held that no listed process accounts for.
  b.Gauge("dcu_device_memory_bytes",
          "Device memory by view (host: the SMI/driver's figures; device: what the device "
          "runtime itself reports) and kind (total, used, free). Only valid readings are "
          "published.");
  for (const auto& d : inv.devices()) {
    auto add = [&](const char* view, const char* kind, const MemoryReading& r) {
      if (!r.valid()) return;
      auto l = dev(d);
      l.insert(l.end(), {{"view", view}, {"kind", kind}});
      b.Add(l, static_cast<double>(r.bytes()));
    };
    add("host", "total", d.total());
    add("host", "used", d.host_used());
    add("host", "free", d.host_free());
    add("device", "total", d.device_total());
    add("device", "free", d.device_free());
    if (d.device_total().valid() && d.device_free().valid()) {
      MemoryReading used;
      used.set_valid(true);
      used.set_bytes(d.device_total().bytes() - d.device_free().bytes());
      add("device", "used", used);
    }
  }

  b.Gauge("dcu_device_unreclaimed_bytes",
          "Device memory in use that no live process holds (left by a dead process; only a "
          "reset or reboot frees it).");
  for (const auto& d : inv.devices()) b.Add(dev(d), static_cast<double>(d.unreclaimed_bytes()));

  b.Gauge("dcu_device_schedulable_free_bytes",
          "Free device memory the scheduler may count on (device view, minus unreclaimed "
          "and leftover holders).");
  for (const auto& d : inv.devices()) {
    if (d.schedulable_free().valid()) {
      b.Add(dev(d), static_cast<double>(d.schedulable_free().bytes()));
    }
  }

  b.Gauge("dcu_device_holders", "Processes holding the device, by class.");
  for (const auto& d : inv.devices()) {
    const common::HolderTally tally = common::TallyHolders(d);
    for (auto c : kClasses) {
      auto l = dev(d);
      l.emplace_back("class", common::HolderClassName(c));
      b.Add(l, tally.count[c]);
    }
  }
  b.Gauge("dcu_device_holder_memory_bytes",
          "Device memory held by processes, by holder class (where the backend attributes it).");
  for (const auto& d : inv.devices()) {
    const common::HolderTally tally = common::TallyHolders(d);
    for (auto c : kClasses) {
      auto l = dev(d);
      l.emplace_back("class", common::HolderClassName(c));
      b.Add(l, static_cast<double>(tally.vram_bytes[c]));
    }
  }

  b.Gauge("dcu_node_findings", "Findings of the last inventory, by severity.");
  {
    int sev[4] = {0, 0, 0, 0};
    auto count = [&](const auto& findings) {
      for (const auto& f : findings) {
        int s = f.severity();
        if (s >= 1 && s <= 3) ++sev[s];
      }
    };
    count(inv.findings());
    for (const auto& d : inv.devices()) count(d.findings());
    for (int s = 1; s <= 3; ++s) {
      b.Add({{"node", node},
             {"severity", std::string(common::FindingSeverityName(
                              static_cast<dcufleet::v1::FindingSeverity>(s)))}},
            sev[s]);
    }
  }

  b.Gauge("dcu_instance_phase",
          "1 for the phase each instance on this node is in, 0 for the others.");
  for (const auto& st : status.instances()) {
    for (auto p : kPhases) {
      b.Add({{"node", node}, {"instance", st.instance_id()}, {"phase", PhaseLabel(p)}},
            st.phase() == p ? 1 : 0);
    }
  }
  b.Gauge("dcu_instance_adopted",
          "1 when the agent re-adopted the instance after its own restart.");
  for (const auto& st : status.instances()) {
    b.Add({{"node", node}, {"instance", st.instance_id()}}, st.adopted() ? 1 : 0);
  }
  // The engines' own gauges (vLLM's /metrics, scraped by the agent into the
  // report), re-labelled so that one scrape of the agent serves the fleet.
  auto engine = [&](const dcufleet::v1::InstanceStatus& st) {
    common::MetricLabels l = {{"node", node}, {"instance", st.instance_id()}};
    auto it = owners.find(st.instance_id());
    l.emplace_back("deployment", it == owners.end() ? "" : it->second.deployment);
    l.emplace_back("replica", it == owners.end() ? "" : absl::StrCat(it->second.replica));
    return l;
  };
  auto scraped = [](const dcufleet::v1::InstanceStatus& st) {
    return st.has_load() && st.load().scraped_at_ms() != 0;
  };
  b.Gauge("dcu_engine_requests_running", "The engine's running requests (vllm:num_requests_running).");
  for (const auto& st : status.instances()) {
    if (scraped(st)) b.Add(engine(st), st.load().running());
  }
  b.Gauge("dcu_engine_requests_waiting", "The engine's queued requests (vllm:num_requests_waiting).");
  for (const auto& st : status.instances()) {
    if (scraped(st)) b.Add(engine(st), st.load().waiting());
  }
  b.Gauge("dcu_engine_kv_cache_usage_ratio",
          "The engine's KV-cache usage, 0 to 1 (vllm:kv_cache_usage_perc).");
  for (const auto& st : status.instances()) {
    if (scraped(st)) b.Add(engine(st), st.load().kv_cache_usage());
  }
  b.Gauge("dcu_engine_scrape_timestamp_seconds", "When the agent last read the engine's /metrics.");
  for (const auto& st : status.instances()) {
    if (scraped(st)) b.Add(engine(st), static_cast<double>(st.load().scraped_at_ms()) / 1000.0);
  }

  b.Gauge("dcu_node_report_timestamp_seconds", "When the last report was built (Unix time).");
  b.Add({{"node", node}}, static_cast<double>(inv.collected_at_ms()) / 1000.0);
  return out;
}

AgentMetrics::AgentMetrics(std::string node)
    : node_(std::move(node)),
      probe_duration_(prometheus::BuildHistogram()
                          .Name("dcu_agent_probe_duration_seconds")
                          .Help("Wall time of one device probe backend's Probe(), by backend.")
                          .Register(registry_)),
      probe_failures_(prometheus::BuildCounter()
                          .Name("dcu_agent_probe_failures_total")
                          .Help("Probes of a backend that answered with an error.")
                          .Register(registry_)),
      reports_(prometheus::BuildCounter()
                   .Name("dcu_agent_reports_total")
                   .Help("Reports (Hello and NodeStatus) built for the controller.")
                   .Register(registry_)),
      build_duration_(prometheus::BuildHistogram()
                          .Name("dcu_agent_report_build_duration_seconds")
                          .Help("Wall time to build one report (probes, process scan, discovery).")
                          .Register(registry_)
                          .Add({{"node", node_}}, prometheus::Histogram::BucketBoundaries(
                                       common::LatencyBucketsSeconds()))) {}

void AgentMetrics::OnReport(const dcufleet::v1::NodeStatus& status,
                            const std::vector<ProbeSample>& probes, absl::Duration build_took) {
  for (const auto& p : probes) {
    probe_duration_
        .Add({{"node", node_}, {"backend", p.backend}},
             prometheus::Histogram::BucketBoundaries(common::LatencyBucketsSeconds()))
        .Observe(absl::ToDoubleSeconds(p.took));
    auto& failures = probe_failures_.Add({{"node", node_}, {"backend", p.backend}});
    if (!p.ok) failures.Increment();
  }
  reports_.Add({{"node", node_}}).Increment();
  build_duration_.Observe(absl::ToDoubleSeconds(build_took));
  auto copy = std::make_shared<const dcufleet::v1::NodeStatus>(status);
  absl::MutexLock l(&mu_);
  last_ = std::move(copy);
}

void AgentMetrics::OnAssignment(const std::vector<dcufleet::v1::InstanceSpec>& specs) {
  InstanceOwners owners = OwnersOf(specs);
  absl::MutexLock l(&mu_);
  owners_ = std::move(owners);
}

common::ServedResponse AgentMetrics::Scrape() const {
  std::shared_ptr<const dcufleet::v1::NodeStatus> last;
  InstanceOwners owners;
  {
    absl::MutexLock l(&mu_);
    last = last_;
    owners = owners_;
  }
  common::MetricFamilies families;
  if (last) families = NodeStatusFamilies(node_, *last, owners);
  return common::MetricsResponse(std::move(families), {&registry_});
}

}  // namespace dcu::agent
