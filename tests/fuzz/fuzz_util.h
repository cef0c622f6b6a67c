#pragma once

// Helpers shared by the fuzz targets: split one input into several files'
// contents, and write them under a per-process scratch tree.

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dcu::fuzz {

// Splits `data` on the line "@@" into exactly `n` parts (missing parts are
// empty; extra separators stay in the last part). Seeds stay readable.
inline std::vector<std::string> SplitInput(const uint8_t* data, size_t size, size_t n) {
  std::string s(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t pos = 0;
  while (parts.size() + 1 < n) {
    size_t sep = s.find("\n@@\n", pos);
    if (sep == std::string::npos) break;
    parts.push_back(s.substr(pos, sep - pos));
    pos = sep + 4;
  }
  parts.push_back(s.substr(pos));
  parts.resize(n);
  return parts;
}

// A scratch directory made once per process (fuzzers run millions of
// inputs; the tree is rewritten in place).
// It lives in /dev/shm when there is one: rewriting files with O_TRUNC on a
// disk file system flushes on close and runs ~50x slower. Removed at exit.
inline const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const char* tmp = getenv("DCU_FUZZ_TMPDIR");
    if (!(tmp && *tmp)) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/dcu-fuzz-XXXXXX";
    char* made = mkdtemp(t.data());
    auto* d = new std::string(made ? made : "/tmp/dcu-fuzz-fallback");
    if (made) {
      atexit([] {
        nftw(ScratchDir().c_str(),
             [](const char* path, const struct stat*, int, struct FTW*) { return remove(path); }, 16,
             FTW_DEPTH | FTW_PHYS);
      });
    }
    return d;
  }();
  return *dir;
}

inline void MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
  }
}

inline void WriteFile(const std::string& path, const std::string& data) {
  MakeDirs(path.substr(0, path.rfind('/')));
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fd);
}

inline void Symlink(const std::string& target, const std::string& path) {
  MakeDirs(path.substr(0, path.rfind('/')));
  unlink(path.c_str());
  // Symlink targets are C strings: cut at the first NUL, keep it non-empty.
  std::string t = target.substr(0, target.find('\0'));
  if (t.empty()) t = "x";
  if (t.size() > 4000) t.resize(4000);
  (void)symlink(t.c_str(), path.c_str());
}

}  // namespace dcu::fuzz
