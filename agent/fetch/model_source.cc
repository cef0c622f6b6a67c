#include "agent/fetch/model_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/path_confine.h"
#include "common/status_util.h"

namespace dcu::agent {
namespace fs = std::filesystem;

absl::Status CheckModelDirName(absl::string_view model, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", model, "' ", why));
  };
  if (model.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (model.size() > 255) return bad("is longer than 255 bytes");
  if (model.find('\0') != absl::string_view::npos) return bad("contains a NUL byte");
  if (model.find('/') != absl::string_view::npos) return bad("is not one path component (has '/')");
  if (model == "." || model == "..") return bad("is not a directory name");
  if (model[0] == '.') return bad("is hidden (names starting with '.' are not model directories)");
  return absl::OkStatus();
}

absl::Status CheckRelativeFileName(absl::string_view name, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' ", why));
  };
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " name is empty"));
  if (name.size() > 4096) return bad("is longer than 4096 bytes");
  if (name.find('\0') != absl::string_view::npos) return bad("contains a NUL byte");
  if (name[0] == '/') return bad("is absolute");
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty()) return bad("has an empty path component");
    if (part == "." || part == "..") return bad("has a '.' or '..' component");
    if (part[0] == '.') return bad("has a hidden component");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DirectoryModelSource::Resolve(const std::string& model,
                                                          const std::string& name) const {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  DCU_RETURN_IF_ERROR(CheckRelativeFileName(name));
  std::error_code ec;
  fs::path dir = fs::canonical(fs::path(root_) / model, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("model '", model, "' not found under ", root_));
  fs::path file = fs::canonical(dir / name, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("file '", name, "' not found in ", dir.string()));
  if (!common::IsWithin(file.string(), dir.string()) || file == dir) {
    return absl::PermissionDeniedError(
        absl::StrCat("file '", name, "' of model '", model, "' resolves outside its directory"));
  }
  if (!fs::is_regular_file(file, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("'", name, "' of model '", model, "' is not a regular file"));
  }
  return file.string();
}

absl::StatusOr<std::vector<SourceFile>> DirectoryModelSource::List(const std::string& model) {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  std::error_code ec;
  fs::path top = fs::path(root_) / model;
  fs::path dir = fs::canonical(top, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model '", model, "' not found under ", root_));
  }
  std::vector<SourceFile> out;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot list ", dir.string(), ": ", ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) return absl::UnavailableError(absl::StrCat("listing ", dir.string(), ": ", ec.message()));
    std::string name = fs::relative(it->path(), dir, ec).generic_string();
    if (ec) continue;
    if (it->path().filename().string()[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) continue;  // entered (not followed when a symlink)
    auto real = Resolve(model, name);
    if (!real.ok()) continue;  // escaping links, sockets, FIFOs: not part of the model
    SourceFile f;
    f.name = name;
    f.size = static_cast<int64_t>(fs::file_size(*real, ec));
    if (ec) continue;
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  return out;
}

absl::Status DirectoryModelSource::Read(const std::string& model, const std::string& name, int64_t offset,
                                        const std::function<absl::Status(absl::string_view)>& sink) {
  DCU_ASSIGN_OR_RETURN(std::string path, Resolve(model, name));
  if (offset < 0) return absl::InvalidArgumentError(absl::StrCat("negative offset ", offset, " for '", name, "'"));
  // Resolve checked a path; a link swapped in after it must not be
  // followed. The resolved path has no links, so O_NOFOLLOW refuses one
  // planted as its last component, and the opened file's own path (the
  // kernel's, /proc/self/fd) is checked again against the directory: what
  // is read is what was confined, whatever changed in between.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  {
    std::error_code ec;
    const fs::path dir = fs::canonical(fs::path(root_) / model, ec);
    const fs::path opened = fs::read_symlink(absl::StrCat("/proc/self/fd/", fd), ec);
    struct stat st{};
    if (ec || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !common::IsWithin(opened.string(), dir.string())) {
      ::close(fd);
      return absl::PermissionDeniedError(
          absl::StrCat("file '", name, "' of model '", model, "' changed while it was opened: not read"));
    }
  }
  std::string buf(chunk_bytes_, '\0');
  absl::Status result;
  int64_t at = offset;
  while (true) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), at);
    if (n < 0) {
      if (errno == EINTR) continue;
      result = absl::UnavailableError(absl::StrCat("read ", path, " at ", at, ": ", std::strerror(errno)));
      break;
    }
    if (n == 0) break;
    at += n;
    result = sink(absl::string_view(buf.data(), static_cast<size_t>(n)));
    if (!result.ok()) break;
  }
  ::close(fd);
  return result;
}

}  // namespace dcu::agent
