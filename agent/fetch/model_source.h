#pragma once

// Where a model directory's files come from when a node fetches a model it
// lacks (issue 19, distribution): a directory on this node or a shared file
// system (DirectoryModelSource), a peer agent over its authenticated
// ModelTransferService (agent/transfer PeerModelSource). ModelFetcher
// (model_fetch.h) is the one consumer; it never trusts what a source says:
// names are checked, lengths counted, shards verified before they are
// renamed into place.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::agent {

struct SourceFile {
  // Relative to the model directory, '/'-separated ("config.json",
  // "model-00001-of-00002.safetensors", "original/params.json").
  std::string name;
  int64_t size = 0;
};

class ModelSource {
 public:
  virtual ~ModelSource() = default;

  // For messages: "node 'node-a' (127.0.0.1:7101)", "/shared/models".
  virtual std::string Describe() const = 0;

  // The regular files of model directory `model` (one path component, the
  // directory's name under the source's model root), sorted by name.
  // NOT_FOUND when the source has no such directory; UNAVAILABLE when the
  // source cannot be reached; INVALID_ARGUMENT for a hostile `model`.
  virtual absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) = 0;

  // Streams file `name` of `model` from byte `offset` to its end, calling
  // `sink` with each chunk in order; stops and returns the sink's status
  // when it is not OK. A source that ends early returns OK with fewer
  // bytes: the caller counts. UNAVAILABLE when the source went away (the
  // caller resumes later from what it has).
  virtual absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                            const std::function<absl::Status(absl::string_view)>& sink) = 0;
};

// INVALID_ARGUMENT naming `what` unless `model` is one plain path
// component: not empty, not "." or "..", no '/', no NUL, not hidden
// (".partial" is the fetcher's own), at most 255 bytes.
absl::Status CheckModelDirName(absl::string_view model, absl::string_view what = "model");

// INVALID_ARGUMENT naming `what` unless `name` is a relative path of plain
// components (no "", ".", ".." components, no leading '/', no NUL, no
// hidden component), at most 4096 bytes.
absl::Status CheckRelativeFileName(absl::string_view name, absl::string_view what = "file");

// A model directory under `root` on this node's file system (a model root
// of this node, a shared file system's mount). Lists regular files
// recursively, skipping hidden entries; symlinks are followed only when
// they resolve inside the model directory (a planted link cannot make the
// source serve /etc/shadow). Reads with pread in `chunk_bytes` pieces.
class DirectoryModelSource : public ModelSource {
 public:
  explicit DirectoryModelSource(std::string root, size_t chunk_bytes = 1 << 20)
      : root_(std::move(root)), chunk_bytes_(chunk_bytes) {}
  std::string Describe() const override { return root_; }
  absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) override;
  absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                    const std::function<absl::Status(absl::string_view)>& sink) override;

  // The real path of `name` in `model`, confined to the model directory:
  // INVALID_ARGUMENT for a hostile name, NOT_FOUND when absent,
  // PERMISSION_DENIED when it resolves outside the directory, FAILED_
  // PRECONDITION when it is not a regular file. The agent's transfer
  // service uses it too, so one rule confines both.
  absl::StatusOr<std::string> Resolve(const std::string& model, const std::string& name) const;

 private:
  const std::string root_;
  const size_t chunk_bytes_;
};

}  // namespace dcu::agent
