#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

inline constexpr dcufleet::v1::FindingSeverity kInfo = dcufleet::v1::FINDING_INFO;
inline constexpr dcufleet::v1::FindingSeverity kWarning = dcufleet::v1::FINDING_WARNING;
inline constexpr dcufleet::v1::FindingSeverity kError = dcufleet::v1::FINDING_ERROR;

// Stable finding codes (machine readable; dcuctl and the diagnosis engine
// key on them).
inline constexpr char kArchRejected[] = "arch_value_rejected";
inline constexpr char kArchMissing[] = "arch_unknown";
inline constexpr char kArchDisagree[] = "arch_sources_disagree";
inline constexpr char kOldKernel[] = "kfd_gfx_target_version_absent";
inline constexpr char kFileUnreadable[] = "file_unreadable";
inline constexpr char kFileMissing[] = "file_missing";
inline constexpr char kFileMalformed[] = "file_malformed";
inline constexpr char kDrmNotMatched[] = "drm_card_not_matched";
inline constexpr char kProbeFailed[] = "probe_failed";
inline constexpr char kProbePermission[] = "probe_permission_denied";
inline constexpr char kProbeTimeout[] = "probe_timeout";
inline constexpr char kRsmiConflict[] = "rocm_smi_library_conflict";
inline constexpr char kRsmiNoInit[] = "rocm_smi_without_rsmi_init";
inline constexpr char kMemoryViewsDisagree[] = "memory_views_disagree";
inline constexpr char kUnreclaimed[] = "unreclaimed_memory";
inline constexpr char kUnreclaimedUnknown[] = "unreclaimed_undetermined";
inline constexpr char kDeviceUnmatched[] = "device_not_matched";
inline constexpr char kLeftoverHolders[] = "leftover_holders";
inline constexpr char kZombieHolders[] = "zombie_holders";
// KFD's record of a process no longer in /proc: a reset, not a reap, returns
// its memory (a zombie's parent can still reap it).
inline constexpr char kExitedHolders[] = "exited_holders";
inline constexpr char kProcUnreadable[] = "proc_unreadable";

inline dcufleet::v1::Finding MakeFinding(dcufleet::v1::FindingSeverity severity, absl::string_view code,
                                         absl::string_view field, absl::string_view message) {
  dcufleet::v1::Finding f;
  f.set_severity(severity);
  f.set_code(std::string(code));
  f.set_field(std::string(field));
  f.set_message(std::string(message));
  return f;
}

}  // namespace dcu::agent
