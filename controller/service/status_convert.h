#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace dcu::controller {

// absl::Status <-> grpc::Status; the canonical codes are the same numbers.
inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace dcu::controller
