#pragma once

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

// DCU_RETURN_IF_ERROR(expr): returns the status of `expr` when it is not OK.
#define DCU_RETURN_IF_ERROR(expr)                      \
  do {                                                 \
    ::absl::Status _dcu_status = (expr);               \
    if (!_dcu_status.ok()) return _dcu_status;         \
  } while (0)

#define DCU_STATUS_CONCAT_INNER(a, b) a##b
#define DCU_STATUS_CONCAT(a, b) DCU_STATUS_CONCAT_INNER(a, b)

// DCU_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr), returns its
// status on error, otherwise moves the value into `lhs`.
#define DCU_ASSIGN_OR_RETURN(lhs, expr) \
  DCU_ASSIGN_OR_RETURN_IMPL(DCU_STATUS_CONCAT(_dcu_statusor_, __LINE__), lhs, expr)
#define DCU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

namespace dcu::common {

// Returns `s` with `context: ` prepended to its message, keeping the code.
inline absl::Status Annotate(const absl::Status& s, absl::string_view context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace dcu::common
