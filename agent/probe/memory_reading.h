#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// A valid memory figure as every probe reports it: the bytes, where they came
// from ("sysfs:card0/device/mem_info_vram_total", "nvml:nvmlDeviceGetMemoryInfo")
// and when they were read.
inline dcufleet::v1::MemoryReading MakeReading(int64_t bytes, absl::string_view source,
                                               int64_t now_ms) {
  dcufleet::v1::MemoryReading r;
  r.set_bytes(bytes);
  r.set_source(std::string(source));
  r.set_valid(true);
  r.set_read_at_ms(now_ms);
  return r;
}

}  // namespace dcu::agent
