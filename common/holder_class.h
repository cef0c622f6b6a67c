#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "dcufleet/v1/types.pb.h"

namespace dcu::common {

// What a holder's class means, in one place (the agent's scanner, merger,
// metrics and table; the scheduler and dcuctl through modelkit's
// DeviceBlockOf).

// Whether a running process holds the memory KFD attributes to a holder of
// this class (managed, leftover, unmanaged). A zombie's and an exited
// record's memory is stranded: no running process uses it, so it explains
// none of a device's used memory, and only a parent's reap (a zombie) or a
// device reset (an exited record) gives it back. The agent's scanner sums
// and its memory verdict both ask this.
inline bool HolderIsLive(dcufleet::v1::HolderClass holder_class) {
  return holder_class != dcufleet::v1::HOLDER_ZOMBIE && holder_class != dcufleet::v1::HOLDER_EXITED;
}

// A leftover of an ended instance or a zombie: reaped before its device is
// placed on. (An exited holder's record is stranded memory, not a holder to
// reap: no signal reaches it.)
inline bool HolderToReap(dcufleet::v1::HolderClass holder_class) {
  return holder_class == dcufleet::v1::HOLDER_LEFTOVER || holder_class == dcufleet::v1::HOLDER_ZOMBIE;
}

// A device's holders counted by class, and the device memory each class
// holds (where the backend attributes it), indexed by the enum's value so
// that a class the proto adds is counted too. A value beyond the enum (a
// newer agent's class) counts as unspecified (index 0).
struct HolderTally {
  std::array<int, dcufleet::v1::HolderClass_ARRAYSIZE> count{};
  std::array<int64_t, dcufleet::v1::HolderClass_ARRAYSIZE> vram_bytes{};
};
inline HolderTally TallyHolders(const dcufleet::v1::Device& device) {
  HolderTally t;
  for (const auto& h : device.holders()) {
    const int c = h.holder_class();
    const size_t slot = c > 0 && c < dcufleet::v1::HolderClass_ARRAYSIZE ? static_cast<size_t>(c) : 0;
    ++t.count[slot];
    if (h.vram_bytes() > 0) t.vram_bytes[slot] += h.vram_bytes();
  }
  return t;
}

}  // namespace dcu::common
