#include "common/ids.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace dcu::common {

std::string NewId(absl::string_view prefix) {
  static absl::Mutex mu;
  // Seeded with 256 bits, not one 32-bit draw: with 2^32 possible seeds,
  // among 2^16 process starts (controllers, standbys, restarts) two
  // replay the same sequence with probability about 1/2 (the birthday
  // bound), and ids must differ across processes (deployment uids,
  // instance ids that name containers and state directories).
  static std::mt19937_64* rng = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device(), device(), device(), device(), device()};
    return new std::mt19937_64(seed);
  }();
  uint64_t v;
  {
    absl::MutexLock lock(&mu);
    v = (*rng)();
  }
  return absl::StrCat(prefix, "-", absl::StrFormat("%012x", v & 0xffffffffffffULL));
}

std::string ValidateName(absl::string_view what, absl::string_view name) {
  if (name.empty()) return absl::StrCat(what, " must not be empty");
  if (name.size() > 63) {
    return absl::StrCat(what, " is ", name.size(), " characters long; at most 63 are allowed");
  }
  auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  auto ok = [&](char c) { return ok_first(c) || c == '-' || c == '.' || c == '_'; };
  if (!ok_first(name[0])) {
    return absl::StrCat(what, " must start with a lower-case letter or digit");
  }
  for (char c : name) {
    if (!ok(c)) {
      return absl::StrCat(what, " contains '", absl::CEscape(std::string(1, c)),
                          "'; only a-z, 0-9, '.', '_' and '-' are allowed");
    }
  }
  return "";
}

std::string InstanceIdProblem(absl::string_view id) {
  if (id.empty()) return "must not be empty";
  if (id.size() > 128) return absl::StrCat("is ", id.size(), " characters long; at most 128");
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(id[0])) return "must start with a letter or digit";
  for (char c : id) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return absl::StrCat("contains '", absl::CHexEscape(std::string(1, c)),
                          "'; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed");
    }
  }
  return "";
}

}  // namespace dcu::common
