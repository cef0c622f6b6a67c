#pragma once

// Several controllers on one PostgreSQL database, one leading (issue 21):
// what a standby tells a client. The gRPC trailing-metadata key under which
// a standby names the leader's address (controller/service/standby_service.h),
// read by clients that hold several controller addresses (dcuctl
// --controller a:7070,b:7070).

namespace dcu::common {

inline constexpr char kLeaderMetadataKey[] = "dcufleet-leader";

}  // namespace dcu::common
