#include "controller/store/store_lock.h"

#include "absl/strings/str_cat.h"

namespace dcu::controller {

absl::StatusOr<StoreLock> StoreLock::Acquire(const std::string& db_path, absl::string_view holder) {
  if (db_path == ":memory:") return StoreLock("", nullptr);
  std::string path = absl::StrCat(db_path, ".lock");
  std::string who;
  auto lock = common::ExclusiveFileLock::TryAcquire(path, &who);
  if (!lock.ok()) {
    if (absl::IsAborted(lock.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", db_path, "' is owned by another dcu-controller (",
          who.empty() ? "holder unknown" : who, "; lock '", path,
          "'): one controller per store — stop that one first, or give this one another --db"));
    }
    if (absl::IsPermissionDenied(lock.status())) {
      return absl::PermissionDeniedError(
          absl::StrCat("store lock: ", lock.status().message()));
    }
    return absl::InternalError(absl::StrCat("store lock: ", lock.status().message()));
  }
  StoreLock held(path, *std::move(lock));
  if (absl::Status s = held.UpdateHolder(holder); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("store lock '", path, "': ", s.message()));
  }
  return held;
}

absl::Status StoreLock::UpdateHolder(absl::string_view holder) {
  if (lock_ == nullptr) return absl::OkStatus();
  return lock_->DescribeHolder(holder);
}

}  // namespace dcu::controller
