#include "agent/inventory/inventory_merger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/probe/findings.h"
#include "common/holder_class.h"
#include "common/units.h"

namespace dcu::agent {
namespace {

using common::HumanBytes;
using dcufleet::v1::Device;
using dcufleet::v1::Finding;
using dcufleet::v1::MemoryReading;
using dcufleet::v1::NodeInventory;

bool SameFinding(const Finding& a, const Finding& b) {
  return a.code() == b.code() && a.field() == b.field() && a.message() == b.message();
}

void AddFinding(google::protobuf::RepeatedPtrField<Finding>* list, const Finding& f) {
  for (const Finding& g : *list) {
    if (SameFinding(f, g)) return;
  }
  *list->Add() = f;
}

void TakeReading(const MemoryReading& from, MemoryReading* to) {
  if (!to->valid() && from.valid()) *to = from;
}

void MergeInto(const Device& d, Device* m, const std::string& backend) {
  if (m->vendor().empty()) m->set_vendor(d.vendor());
  if (m->product_name().empty() && !d.product_name().empty()) {
    m->set_product_name(d.product_name());
    m->set_product_name_source(d.product_name_source());
  }
  if (m->unique_id().empty()) m->set_unique_id(d.unique_id());
  if (m->pci_bus().empty()) m->set_pci_bus(d.pci_bus());
  if (m->pci_vendor_id() == 0) m->set_pci_vendor_id(d.pci_vendor_id());
  if (m->pci_device_id() == 0) m->set_pci_device_id(d.pci_device_id());
  if (m->kfd_gpu_id() == 0) m->set_kfd_gpu_id(d.kfd_gpu_id());
  if (m->drm_render_minor() == 0) m->set_drm_render_minor(d.drm_render_minor());
  if (m->drm_card().empty()) {
    m->set_drm_card(d.drm_card());
    m->set_drm_match(d.drm_match());
  }
  if (m->kfd_node() == 0) m->set_kfd_node(d.kfd_node());
  if (!d.arch().empty()) {
    if (m->arch().empty()) {
      m->set_arch(d.arch());
      m->set_arch_source(d.arch_source());
    } else if (m->arch() != d.arch()) {
      AddFinding(m->mutable_findings(),
                 MakeFinding(kWarning, kArchDisagree, "arch",
                             absl::StrCat("'", m->arch(), "' from ", m->arch_source(), " but '", d.arch(),
                                          "' from ", d.arch_source(), "; using '", m->arch(), "'")));
    }
  }
  TakeReading(d.total(), m->mutable_total());
  TakeReading(d.host_used(), m->mutable_host_used());
  TakeReading(d.host_free(), m->mutable_host_free());
  TakeReading(d.device_free(), m->mutable_device_free());
  TakeReading(d.device_total(), m->mutable_device_total());
  TakeReading(d.host_reserved(), m->mutable_host_reserved());
  TakeReading(d.device_self_used(), m->mutable_device_self_used());
  if (!m->has_nvidia_minor() && d.has_nvidia_minor()) m->set_nvidia_minor(d.nvidia_minor());
  if (m->vendor_processes_source().empty() && !d.vendor_processes_source().empty()) {
    m->set_vendor_processes_source(d.vendor_processes_source());
    *m->mutable_vendor_processes() = d.vendor_processes();
  }
  for (const Finding& f : d.findings()) AddFinding(m->mutable_findings(), f);
  (void)backend;
}

std::string StatusCodeName(const absl::Status& s) { return absl::StatusCodeToString(s.code()); }

}  // namespace

void MergeDevices(const std::vector<BackendResult>& results, const MergeOptions& options, NodeInventory* node) {
  const ProductTable& products = options.products ? *options.products : ProductTable::Builtin();
  std::vector<Device> merged;
  std::vector<bool> index_from_runtime;
  for (const BackendResult& r : results) {
    if (!r.report.ok()) {
      const absl::Status& s = r.report.status();
      const char* code = kProbeFailed;
      dcufleet::v1::FindingSeverity sev = kInfo;
      if (absl::IsPermissionDenied(s)) {
        code = kProbePermission;
        sev = kError;
      } else if (absl::IsDeadlineExceeded(s)) {
        code = kProbeTimeout;
        sev = kWarning;
      } else if (absl::IsInvalidArgument(s) || absl::IsDataLoss(s) || absl::IsInternal(s)) {
        sev = kWarning;
      }
      AddFinding(node->mutable_findings(),
                 MakeFinding(sev, code, absl::StrCat("probe:", r.name), absl::StrCat(r.name, ": ", s.message())));
      node->add_probe_log(absl::StrCat(r.name, ": ", StatusCodeName(s), ": ", s.message()));
      continue;
    }
    const ProbeReport& rep = *r.report;
    node->add_probe_log(absl::StrCat(r.name, ": ok, ", rep.devices.size(), " device(s)"));
    for (const Finding& f : rep.findings) AddFinding(node->mutable_findings(), f);
    if (node->driver_version().empty()) node->set_driver_version(rep.driver_version);
    // Devices of one backend are never merged with each other (two KFD
    // partitions may share a PCI address); only with earlier backends'.
    const size_t known = merged.size();
    for (const Device& d : rep.devices) {
      Device* m = nullptr;
      size_t mi = 0;
      for (size_t i = 0; i < known && !m; ++i) {
        if (!d.pci_bus().empty() && merged[i].pci_bus() == d.pci_bus()) m = &merged[i], mi = i;
      }
      for (size_t i = 0; i < known && !m; ++i) {
        if (!d.unique_id().empty() && merged[i].unique_id() == d.unique_id()) m = &merged[i], mi = i;
      }
      if (!m && d.pci_bus().empty() && d.unique_id().empty()) {
        for (size_t i = 0; i < known && !m; ++i) {
          if (merged[i].index() == d.index()) m = &merged[i], mi = i;
        }
      }
      if (!m) {
        if (known > 0) {
          Device copy = d;
          AddFinding(copy.mutable_findings(),
                     MakeFinding(kInfo, kDeviceUnmatched, absl::StrCat("probe:", r.name),
                                 absl::StrCat("device ", d.index(), " (", d.pci_bus().empty() ? "no PCI address" : d.pci_bus(),
                                              ") was seen by ", r.name, " only")));
          merged.push_back(std::move(copy));
        } else {
          merged.push_back(d);
        }
        index_from_runtime.push_back(d.device_total().valid());
        continue;
      }
      MergeInto(d, m, r.name);
      // The runtime's ordinal (HIP) is what HIP_VISIBLE_DEVICES means.
      if (d.device_total().valid() && !index_from_runtime[mi]) {
        m->set_index(d.index());
        index_from_runtime[mi] = true;
      }
    }
  }
  for (Device& d : merged) {
    if (d.arch().empty()) {
      auto m = products.ByPciId(d.pci_vendor_id(), d.pci_device_id());
      if (m && !m->arch.empty()) {
        d.set_arch(m->arch);
        d.set_arch_source(m->source);
      } else {
        AddFinding(d.mutable_findings(),
                   MakeFinding(kWarning, kArchMissing, "arch",
                               absl::StrFormat("no source gave a valid arch for PCI 0x%04x:0x%04x at %s", d.pci_vendor_id(),
                                               d.pci_device_id(), d.pci_bus())));
      }
    }
    if (d.product_name().empty()) {
      if (auto m = products.ByVendorArch(d.pci_vendor_id(), d.arch())) {
        d.set_product_name(m->name);
        d.set_product_name_source(m->source);
      }
    }
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Device& a, const Device& b) { return a.index() < b.index(); });
  for (size_t i = 1; i < merged.size(); ++i) {
    // Without a runtime ordinal, two backends may both say "0": renumber.
    if (merged[i].index() <= merged[i - 1].index()) merged[i].set_index(merged[i - 1].index() + 1);
  }
  for (Device& d : merged) *node->add_devices() = std::move(d);
}

void ComputeMemoryVerdicts(const MergeOptions& options, NodeInventory* node) {
  const int64_t tol = options.unreclaimed_tolerance_bytes;
  for (Device& d : *node->mutable_devices()) {
    int64_t now_ms = std::max({d.total().read_at_ms(), d.device_free().read_at_ms(), d.host_used().read_at_ms()});
    // Schedulable: the smaller of the two free views.
    const MemoryReading* best = nullptr;
    for (const MemoryReading* r : {&d.host_free(), &d.device_free()}) {
      if (r->valid() && (!best || r->bytes() < best->bytes())) best = r;
    }
    d.clear_schedulable_free();
    if (best) {
      *d.mutable_schedulable_free() = *best;
      d.mutable_schedulable_free()->set_source(absl::StrCat(best->source(), " (smaller of host and device views)"));
    }
    if (d.host_free().valid() && d.device_free().valid() &&
        std::abs(d.host_free().bytes() - d.device_free().bytes()) > tol) {
      AddFinding(d.mutable_findings(),
                 MakeFinding(kWarning, kMemoryViewsDisagree, "memory",
                             absl::StrCat("host view (", d.host_free().source(), ") says ", HumanBytes(d.host_free().bytes()),
                                          " free, device view (", d.device_free().source(), ") says ",
                                          HumanBytes(d.device_free().bytes()), " free; scheduling uses the smaller")));
    }

    // Used, from the device view when there is one.
    int64_t used = -1;
    std::string used_src;
    if (d.device_total().valid() && d.device_free().valid()) {
      used = std::max<int64_t>(0, d.device_total().bytes() - d.device_free().bytes());
      used_src = absl::StrCat(d.device_free().source(), " total - free");
      // The device-view helper's own context is not a leftover.
      if (d.device_self_used().valid() && d.device_self_used().bytes() > 0) {
        used = std::max<int64_t>(0, used - d.device_self_used().bytes());
        absl::StrAppend(&used_src, " - the helper's own context");
      }
    } else if (d.host_used().valid()) {
      used = d.host_used().bytes();
      used_src = d.host_used().source();
    }
    std::vector<std::string> unknown, leftovers, zombies, exited;
    int64_t zombie_vram = 0;
    for (const auto& h : d.holders()) {
      const bool live = common::HolderIsLive(h.holder_class());
      if (live && h.vram_bytes() < 0) unknown.push_back(absl::StrCat(h.pid()));
      if (h.holder_class() == dcufleet::v1::HOLDER_LEFTOVER) {
        leftovers.push_back(absl::StrCat(h.pid(), " '", h.cmdline().substr(0, 60), "'"));
      }
      if (!live) {
        // A zombie has a parent that can still reap it; a record whose
        // process has left /proc (HOLDER_EXITED) has nobody.
        if (h.holder_class() == dcufleet::v1::HOLDER_ZOMBIE) {
          zombies.push_back(absl::StrCat(h.pid(), h.ppid() > 0 ? absl::StrCat(" (parent ", h.ppid(), " '", h.parent_cmdline().substr(0, 40), "')") : ""));
        } else {
          exited.push_back(absl::StrCat(h.pid()));
        }
        if (h.vram_bytes() > 0) zombie_vram += h.vram_bytes();
      }
    }
    int64_t explained = d.holders_vram().valid() ? d.holders_vram().bytes() : 0;
    d.set_unreclaimed_bytes(0);
    d.clear_unreclaimed();
    auto* ur = d.mutable_unreclaimed();
    ur->set_read_at_ms(now_ms);
    if (used < 0) {
      ur->set_valid(false);
      ur->set_source("unknown: no device or host view of used memory");
    } else if (!unknown.empty()) {
      ur->set_valid(false);
      ur->set_source(absl::StrCat("undetermined: live holder(s) ", absl::StrJoin(unknown, ","),
                                  " with unknown VRAM (no kfd proc vram_<gpu_id>, no vendor process list)"));
      AddFinding(d.mutable_findings(),
                 MakeFinding(kInfo, kUnreclaimedUnknown, "unreclaimed",
                             absl::StrCat(HumanBytes(used), " used (", used_src, "); VRAM of live holder(s) ",
                                          absl::StrJoin(unknown, ", "), " is unknown, so unreclaimed memory cannot be told apart")));
    } else {
      int64_t gap = std::max<int64_t>(0, used - explained);
      ur->set_valid(true);
      ur->set_source(absl::StrCat("derived:(", used_src, ") - (", d.holders_vram().source(), ")",
                                  gap > 0 && gap <= tol ? absl::StrCat("; ", HumanBytes(gap), " within tolerance") : ""));
      if (gap > tol) {
        d.set_unreclaimed_bytes(gap);
        ur->set_bytes(gap);
        AddFinding(d.mutable_findings(),
                   MakeFinding(kWarning, kUnreclaimed, "unreclaimed",
                               absl::StrCat(HumanBytes(gap), " of device memory is used with no live holder to explain it (",
                                            used_src, ": ", HumanBytes(used), " used; live holders: ", HumanBytes(explained),
                                            zombie_vram > 0 ? absl::StrCat("; zombies/exited hold ", HumanBytes(zombie_vram)) : "",
                                            "). A process that died left it behind; reaping cannot return it unless a zombie's parent reaps; "
                                            "otherwise reset the device")));
      }
    }
    if (!leftovers.empty()) {
      AddFinding(d.mutable_findings(),
                 MakeFinding(kWarning, kLeftoverHolders, "holders",
                             absl::StrCat(leftovers.size(), " leftover process(es) of ended instances hold this device: ",
                                          absl::StrJoin(leftovers, "; "), " (dcuctl node reap)")));
    }
    if (!zombies.empty()) {
      AddFinding(d.mutable_findings(),
                 MakeFinding(kWarning, kZombieHolders, "holders",
                             absl::StrCat("zombie holder(s): ", absl::StrJoin(zombies, "; "),
                                          "; only the parent can reap a zombie")));
    }
    if (!exited.empty()) {
      AddFinding(d.mutable_findings(),
                 MakeFinding(kWarning, kExitedHolders, "holders",
                             absl::StrCat("exited holder(s): ", absl::StrJoin(exited, ", "),
                                          ": no live process; KFD's record outlived it and no signal reaches it "
                                          "(reset the device)")));
    }
  }
}

}  // namespace dcu::agent
