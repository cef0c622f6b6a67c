#pragma once

#include "dcufleet/v1/types.pb.h"

namespace dcu::common {

// Whether a running process holds the memory KFD attributes to a holder of
// this class (managed, leftover, unmanaged). A zombie's and an exited
// record's memory is stranded: no running process uses it, so it explains
// none of a device's used memory, and only a parent's reap (a zombie) or a
// device reset (an exited record) gives it back. The agent's scanner sums
// and its memory verdict both ask this.
inline bool HolderIsLive(dcufleet::v1::HolderClass holder_class) {
  return holder_class != dcufleet::v1::HOLDER_ZOMBIE && holder_class != dcufleet::v1::HOLDER_EXITED;
}

}  // namespace dcu::common
