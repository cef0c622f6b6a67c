#pragma once

// Brings a model directory to this node (issue 19, distribution): the one
// home of how a copy is written, resumed and checked before anything may
// launch from it.
//
//   <root>/.partial/<model>.lock        flock: one transfer of a model per node
//   <root>/.partial/<model>/<file>.part bytes as they arrive; resumed from
//                                       their length after an interruption
//   <root>/.partial/<model>/<file>      a file that passed its checks
//   <root>/<model>                      renamed into place once every file
//                                       is there and VerifyWeights is clean
//
// Order: lock, refuse when the model is already present, list the source,
// check every name, then the free space (statvfs) for what is still
// missing plus a reserve — a clear RESOURCE_EXHAUSTED before a byte is
// written, never a half-filled disk. Each file is checked before its rename:
// its length against the listing, a safetensors shard's header against its
// length (modelkit/safetensors), and its sha256 when the source's manifest
// (sha256sums, SHA256SUMS, sha256sums.json) names one. A file that fails is
// deleted with its .part (resuming bad bytes would keep them) and the whole
// partial directory with it; an interrupted read (the source went away)
// keeps the .part for the next attempt. Discovery never reports .partial:
// it lists only directories directly under the root.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/fetch/model_source.h"
#include "common/clock.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

struct FetchProgress {
  std::string model;
  std::string file;  // the file being copied ("" before the first, after the last)
  int files_done = 0;
  int files_total = 0;
  int64_t bytes_done = 0;   // present in the destination (resumed bytes count)
  int64_t bytes_total = 0;
  int64_t bytes_resumed = 0;  // found in .part/finished files at the start
  double bytes_per_second = 0;  // this run's copied bytes over its time
  absl::Duration eta = absl::InfiniteDuration();
};

struct FetchOptions {
  // Kept free on the destination file system beyond the model's bytes.
  int64_t reserve_bytes = 64 << 20;
  // Called after each chunk at most every `progress_every` (and at the end).
  std::function<void(const FetchProgress&)> progress;
  absl::Duration progress_every = absl::Milliseconds(200);
  // Stops the copy (CANCELLED, the .part files kept) when it returns true;
  // asked after each chunk. May be empty.
  std::function<bool()> cancelled;
  // When the source lists no manifest: hash every shard as it arrives and,
  // once the copy verifies clean, write `sha256sums` into it, so the next
  // content check here and every copy made from this node compare against
  // what arrived (issue 19: "a manifest recorded when a directory first
  // verified clean"). Costs hashing on the copy's thread.
  bool record_manifest = true;
};

struct FetchResult {
  std::string path;  // <root>/<model>
  int64_t bytes_total = 0;
  int64_t bytes_copied = 0;   // this run
  int64_t bytes_resumed = 0;  // kept from an earlier, interrupted run
  int files = 0;
  int files_hashed = 0;  // checked against the manifest's sha256
  bool manifest_recorded = false;  // sha256sums written (FetchOptions::record_manifest)
  std::string manifest_error;      // why it could not be written, when it could not
  absl::Duration took;
  dcufleet::v1::WeightsVerification weights;
};

// Free bytes for an unprivileged writer on the file system of `path`.
using FreeSpaceFn = std::function<absl::StatusOr<int64_t>(const std::string& path)>;
absl::StatusOr<int64_t> StatvfsFreeBytes(const std::string& path);

class ModelFetcher {
 public:
  explicit ModelFetcher(std::string model_root, common::Clock& clock = common::RealClock::Get(),
                        FreeSpaceFn free_space = StatvfsFreeBytes)
      : root_(std::move(model_root)), clock_(clock), free_space_(std::move(free_space)) {}

  // Copies model directory `model` from `source` into the root. Errors name
  // the model, the file and the source:
  //   INVALID_ARGUMENT    a hostile model or file name from the source
  //   ALREADY_EXISTS      <root>/<model> is already there (nothing done)
  //   ABORTED             another transfer of this model runs on this node
  //   RESOURCE_EXHAUSTED  not enough free space (need, free, where)
  //   DATA_LOSS           a file failed its checks (length, header, sha256)
  //                       or the copy is not clean (VerifyWeights); the
  //                       partial directory is removed
  //   UNAVAILABLE         the source went away; the .part files are kept
  //   CANCELLED           options.cancelled; the .part files are kept
  absl::StatusOr<FetchResult> Fetch(ModelSource& source, const std::string& model,
                                    const FetchOptions& options = {});

  const std::string& root() const { return root_; }
  std::string PartialDir(const std::string& model) const { return root_ + "/.partial/" + model; }

 private:
  const std::string root_;
  common::Clock& clock_;
  const FreeSpaceFn free_space_;
};

}  // namespace dcu::agent
