#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/probe/device_probe.h"
#include "agent/probe/product_table.h"
#include "common/units.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// What one backend returned, in --device_probe order.
struct BackendResult {
  std::string name;
  absl::StatusOr<ProbeReport> report;
};

struct MergeOptions {
  // Device-view "used" below this (the memprobe's own context, driver
  // reservations) is not called unreclaimed.
  int64_t unreclaimed_tolerance_bytes = common::kUnreclaimedToleranceBytes;
  const ProductTable* products = nullptr;  // default: builtin
};

// Merges per-device results of several backends into one NodeInventory.
//
// Devices are matched across backends by PCI address, then unique id, then
// (when a backend gives neither) by index. For each figure the first backend
// in order that has it wins; every figure keeps its source. Arch chain: the
// first backend with a validated arch (backends drop and record rejected
// values), then the product table by PCI id ("table:pci"); sources that
// disagree give an "arch_sources_disagree" finding. The index of a backend
// that reports the device view (HIP) is the runtime ordinal and wins.
// A failed backend becomes a node finding and a probe_log line.
void MergeDevices(const std::vector<BackendResult>& results, const MergeOptions& options,
                  dcufleet::v1::NodeInventory* node);

// After holders are attached (AttachHolders): per device
//   used           = device_total - device_free (device view), else host_used
//   unreclaimed    = used - VRAM of live holders, when above the tolerance;
//                    undetermined (0 + finding) when a live holder's VRAM
//                    is unknown
//   schedulable_free = the smaller of host_free and device_free
// plus findings for unreclaimed memory, disagreeing views, leftover and
// zombie holders.
void ComputeMemoryVerdicts(const MergeOptions& options, dcufleet::v1::NodeInventory* node);

}  // namespace dcu::agent
