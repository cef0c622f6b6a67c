#include "agent/fetch/model_fetch.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "common/file_lock.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/status_util.h"
#include "common/units.h"
#include "modelkit/config_audit.h"
#include "modelkit/safetensors.h"
#include "modelkit/weights_audit.h"

namespace dcu::agent {
namespace fs = std::filesystem;

absl::StatusOr<int64_t> StatvfsFreeBytes(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) {
    return absl::UnavailableError(absl::StrCat("statvfs ", path, ": ", std::strerror(errno)));
  }
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

namespace {

// What one model's files may add up to: 1 PiB, a thousand times the largest
// open checkpoints (DeepSeek-V3's 671B in BF16 is ~1.3 TiB). Sums of sizes
// up to it stay far inside int64_t.
constexpr int64_t kMaxListedBytes = int64_t{1} << 50;

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      // ENOSPC here means something else filled the disk after our check.
      return absl::ResourceExhaustedError(absl::StrCat("write ", path, ": ", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// sha256 of the first `bytes` bytes of `path` into `sha` (a resumed .part).
absl::Status HashPrefix(const std::string& path, int64_t bytes, common::Sha256Stream* sha) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  std::string buf(4 << 20, '\0');
  int64_t at = 0;
  while (at < bytes) {
    ssize_t n = ::pread(fd, buf.data(), std::min<int64_t>(buf.size(), bytes - at), at);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ::close(fd);
      return absl::DataLossError(absl::StrCat("re-reading ", path, " at ", at, " failed"));
    }
    sha->Update(absl::string_view(buf.data(), n));
    at += n;
  }
  ::close(fd);
  return absl::OkStatus();
}

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool IsManifestName(const std::string& name) {
  for (const auto& m : modelkit::ManifestNames()) {
    if (name == m) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<FetchResult> ModelFetcher::Fetch(ModelSource& source, const std::string& model,
                                                const FetchOptions& options) {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  std::string from = source.Describe();
  std::string what = absl::StrCat("fetching model '", model, "' from ", from);
  const absl::Time started = clock_.Now();
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": model root ", root_, " is not a directory"));
  }
  const std::string partial_root = root_ + "/.partial";
  fs::create_directories(partial_root, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(what, ": cannot create ", partial_root, ": ", ec.message()));
  auto lock = common::ExclusiveFileLock::TryAcquire(partial_root + "/" + model + ".lock");
  if (!lock.ok()) {
    if (absl::IsAborted(lock.status())) {
      return absl::AbortedError(
          absl::StrCat(what, ": a transfer of model '", model, "' is already running on this node"));
    }
    return common::Annotate(lock.status(), what);
  }
  const std::string final_dir = root_ + "/" + model;
  if (fs::exists(fs::symlink_status(final_dir, ec))) {
    return absl::AlreadyExistsError(absl::StrCat("model '", model, "' is already present at ", final_dir));
  }

  auto listing = source.List(model);
  if (!listing.ok()) return common::Annotate(listing.status(), what);
  std::vector<SourceFile> files = *std::move(listing);
  // A peer names itself in its listing.
  from = source.Describe();
  what = absl::StrCat("fetching model '", model, "' from ", from);
  if (files.empty()) return absl::NotFoundError(absl::StrCat(what, ": the source lists no files"));
  std::set<std::string> seen;
  int64_t listed_bytes = 0;
  for (const auto& f : files) {
    DCU_RETURN_IF_ERROR(common::Annotate(CheckRelativeFileName(f.name, "file"), what));
    if (f.size < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": file '", f.name, "' has a negative size"));
    // A mirror's Content-Length or a peer's listing is its word: sizes that
    // add up past any model are refused here, before the sums below
    // (which would overflow, and pass the disk-space check) take them.
    if (f.size > kMaxListedBytes - listed_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": the listed sizes add up to more than ", common::HumanBytes(kMaxListedBytes), " (file '", f.name,
          "' is listed at ", f.size, " bytes); the source is broken or not a model store"));
    }
    listed_bytes += f.size;
    if (absl::EndsWith(f.name, ".part")) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": file '", f.name, "' ends in .part (reserved)"));
    }
    if (!seen.insert(f.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": file '", f.name, "' listed twice"));
    }
  }
  // The manifest first: it gives the other files' sha256.
  std::stable_partition(files.begin(), files.end(), [](const SourceFile& f) { return IsManifestName(f.name); });

  const std::string dir = PartialDir(model);
  FetchResult result;
  result.path = final_dir;
  result.files = static_cast<int>(files.size());
  // What is already here from an interrupted run.
  for (const auto& f : files) {
    result.bytes_total += f.size;
    const std::string done_path = dir + "/" + f.name;
    const std::string part_path = done_path + ".part";
    if (fs::is_regular_file(done_path, ec) && static_cast<int64_t>(fs::file_size(done_path, ec)) == f.size) {
      result.bytes_resumed += f.size;
    } else if (fs::is_regular_file(part_path, ec)) {
      result.bytes_resumed += std::min<int64_t>(static_cast<int64_t>(fs::file_size(part_path, ec)), f.size);
    }
  }
  const int64_t needed = result.bytes_total - result.bytes_resumed;
  auto free_bytes = free_space_(root_);
  if (!free_bytes.ok()) return common::Annotate(free_bytes.status(), what);
  if (needed + options.reserve_bytes > *free_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "not enough disk space for model '", model, "' on ", root_, ": needs ", common::HumanBytes(needed),
        " more (", common::HumanBytes(result.bytes_total), " in all, ", common::HumanBytes(options.reserve_bytes),
        " kept free), ", common::HumanBytes(*free_bytes), " free; nothing was written"));
  }
  fs::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(what, ": cannot create ", dir, ": ", ec.message()));

  auto discard = [&](absl::Status s) {
    fs::remove_all(dir, ec);
    return absl::Status(s.code(), absl::StrCat(what, ": ", s.message(), "; the partial copy was removed"));
  };

  FetchProgress progress;
  progress.model = model;
  progress.files_total = result.files;
  progress.bytes_total = result.bytes_total;
  progress.bytes_resumed = result.bytes_resumed;
  absl::Time last_report = absl::InfinitePast();
  int64_t bytes_before = 0;  // bytes of the files before the current one
  auto report = [&](bool force) {
    if (!options.progress) return;
    const absl::Time now = clock_.Now();
    if (!force && now - last_report < options.progress_every) return;
    last_report = now;
    const double secs = absl::ToDoubleSeconds(now - started);
    progress.bytes_per_second = secs > 0 ? static_cast<double>(result.bytes_copied) / secs : 0;
    const int64_t left = progress.bytes_total - progress.bytes_done;
    progress.eta = left == 0 ? absl::ZeroDuration()
                   : progress.bytes_per_second > 0 ? absl::Seconds(left / progress.bytes_per_second)
                                                  : absl::InfiniteDuration();
    options.progress(progress);
  };

  std::map<std::string, std::string> expected_sha;
  // The manifest this copy records, when the source has none.
  const bool record = options.record_manifest &&
                      std::none_of(files.begin(), files.end(), [](const SourceFile& f) { return IsManifestName(f.name); });
  std::map<std::string, std::string> recorded_sha;
  for (const auto& f : files) {
    const bool record_this = record && absl::EndsWith(f.name, ".safetensors");
    const std::string done_path = dir + "/" + f.name;
    const std::string part_path = done_path + ".part";
    progress.file = f.name;
    if (fs::is_regular_file(done_path, ec) && static_cast<int64_t>(fs::file_size(done_path, ec)) == f.size) {
      // Checked before its rename in the run that wrote it.
      bytes_before += f.size;
      progress.bytes_done = bytes_before;
      ++progress.files_done;
      if (expected_sha.count(f.name)) ++result.files_hashed;
      if (record_this) {
        common::Sha256Stream sha;
        absl::Status s = HashPrefix(done_path, f.size, &sha);
        if (!s.ok()) return common::Annotate(s, what);
        recorded_sha[f.name] = sha.FinalHex();
      }
    } else {
      fs::create_directories(fs::path(done_path).parent_path(), ec);
      int fd = ::open(part_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return absl::UnavailableError(absl::StrCat(what, ": open ", part_path, ": ", std::strerror(errno)));
      int64_t have = static_cast<int64_t>(fs::file_size(part_path, ec));
      if (ec || have > f.size) {
        // Longer than the source's file: not a prefix of it; start over.
        if (::ftruncate(fd, 0) != 0) {
          ::close(fd);
          return absl::UnavailableError(absl::StrCat(what, ": truncate ", part_path, ": ", std::strerror(errno)));
        }
        have = 0;
      }
      ::lseek(fd, have, SEEK_SET);
      auto sha_it = expected_sha.find(f.name);
      const bool hash = sha_it != expected_sha.end() || record_this;
      common::Sha256Stream sha;
      if (hash && have > 0) {
        absl::Status s = HashPrefix(part_path, have, &sha);
        if (!s.ok()) {
          ::close(fd);
          return common::Annotate(s, what);
        }
      }
      int64_t at = have;
      progress.bytes_done = bytes_before + at;
      absl::Status read = source.Read(model, f.name, have, [&](absl::string_view chunk) -> absl::Status {
        if (at + static_cast<int64_t>(chunk.size()) > f.size) {
          return absl::DataLossError(absl::StrCat("file '", f.name, "' sent more than the ", f.size,
                                                  " bytes its listing says"));
        }
        DCU_RETURN_IF_ERROR(WriteAll(fd, chunk, part_path));
        if (hash) sha.Update(chunk);
        at += static_cast<int64_t>(chunk.size());
        result.bytes_copied += static_cast<int64_t>(chunk.size());
        progress.bytes_done = bytes_before + at;
        report(/*force=*/false);
        if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
        return absl::OkStatus();
      });
      const bool synced = ::fdatasync(fd) == 0;
      ::close(fd);
      if (!read.ok()) {
        if (read.code() == absl::StatusCode::kDataLoss) {
          fs::remove(part_path, ec);
          return discard(read);
        }
        return absl::Status(read.code(), absl::StrCat(what, ": ", read.message(), " (", at, " of ", f.size,
                                                      " bytes of '", f.name, "' kept; fetch again to resume)"));
      }
      if (!synced) return absl::UnavailableError(absl::StrCat(what, ": fdatasync ", part_path, ": ", std::strerror(errno)));
      if (at < f.size) {
        return absl::UnavailableError(absl::StrCat(what, ": the source ended '", f.name, "' at ", at, " of ", f.size,
                                                   " bytes (kept; fetch again to resume)"));
      }
      // The file is complete: check it before it takes its name.
      if (absl::EndsWith(f.name, ".safetensors")) {
        uint64_t file_bytes = 0;
        auto header = modelkit::ReadSafetensorsHeader(part_path, &file_bytes);
        if (!header.ok()) {
          return discard(absl::DataLossError(
              absl::StrCat("shard '", f.name, "' from ", from, " is damaged: ", header.status().message())));
        }
        if (header->ExpectedFileBytes() != file_bytes) {
          return discard(absl::DataLossError(absl::StrFormat(
              "shard '%s' from %s is damaged: its header needs %d bytes, the file has %d", f.name, from,
              header->ExpectedFileBytes(), file_bytes)));
        }
      }
      const std::string got = hash ? sha.FinalHex() : "";
      if (record_this) recorded_sha[f.name] = got;
      if (sha_it != expected_sha.end()) {
        if (got != sha_it->second) {
          return discard(absl::DataLossError(absl::StrCat("file '", f.name, "' from ", from, " has sha256 ", got,
                                                          ", the manifest says ", sha_it->second)));
        }
        ++result.files_hashed;
      }
      if (::rename(part_path.c_str(), done_path.c_str()) != 0) {
        return absl::UnavailableError(absl::StrCat(what, ": rename ", part_path, ": ", std::strerror(errno)));
      }
      bytes_before += f.size;
      ++progress.files_done;
    }
    if (IsManifestName(f.name)) {
      auto text = common::ReadSmallFile(done_path, 16 << 20);
      if (text.ok()) {
        auto parsed = modelkit::ParseSha256Manifest(*text);
        if (!parsed.ok()) {
          return discard(absl::DataLossError(absl::StrCat("manifest '", f.name, "': ", parsed.status().message())));
        }
        for (auto& [name, hex] : *parsed) expected_sha.emplace(name, hex);
      }
    }
  }
  progress.file.clear();
  report(/*force=*/true);

  // The directory as a whole: index against shards, shapes against config.json.
  modelkit::WeightsAuditOptions audit;
  modelkit::ModelConfig config;
  auto config_text = common::ReadSmallFile(dir + "/config.json", 4 << 20);
  if (config_text.ok()) {
    auto parsed = modelkit::ParseModelConfig(*config_text);
    if (parsed.ok()) {
      config = *std::move(parsed);
      audit.config = &config;
    }
  }
  result.weights = modelkit::VerifyWeights(dir, audit);
  if (result.weights.verdict() == dcufleet::v1::WEIGHTS_DAMAGED) {
    return discard(absl::DataLossError(absl::StrCat("the copy fails verification: ",
                                                    modelkit::WeightsSummary(result.weights))));
  }
  if (record && !recorded_sha.empty()) {
    // Every shard passed its header and length checks and the directory
    // verified clean: what arrived is on record from now on.
    absl::Status w =
        modelkit::WriteSha256Manifest(dir + "/" + modelkit::ManifestNames().front(), recorded_sha);
    // A verified copy is not thrown away for want of its manifest.
    result.manifest_recorded = w.ok();
    if (!w.ok()) result.manifest_error = std::string(w.message());
  }
  SyncDir(dir);
  if (::rename(dir.c_str(), final_dir.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(what, ": rename ", dir, " to ", final_dir, ": ", std::strerror(errno)));
  }
  SyncDir(root_);
  result.took = clock_.Now() - started;
  return result;
}

}  // namespace dcu::agent
