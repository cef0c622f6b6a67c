#pragma once

namespace dcu::dcuctl {

// dcuctl's exit codes; scripts may rely on them (docs/dcuctl.md).
inline constexpr int kExitOk = 0;
// The request reached the controller and failed; wait: timed out.
inline constexpr int kExitFailed = 1;
// Bad command line or bad input file.
inline constexpr int kExitUsage = 2;
// The named object does not exist.
inline constexpr int kExitNotFound = 3;
// The controller could not be reached, or what answers is not a dcufleet controller.
inline constexpr int kExitUnreachable = 4;
// Deploy: nothing in the fleet fits.
inline constexpr int kExitUnschedulable = 5;
// Deploy --wait: the deployment failed and no plan remains.
inline constexpr int kExitDeployFailed = 6;
// Refused: not authenticated or not allowed.
inline constexpr int kExitDenied = 7;
// The check ran and found problems: model audit (errors in the config,
// damaged safetensors weights),
// diagnose (a failure recognised in the log). 0 means none found.
inline constexpr int kExitFindings = 8;

}  // namespace dcu::dcuctl
