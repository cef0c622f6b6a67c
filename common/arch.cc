#include "common/arch.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace dcu::common {
namespace {

bool IsHexDigit(char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f'); }

absl::Status Reject(absl::string_view arch, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("arch '", arch.substr(0, 64), arch.size() > 64 ? "..." : "", "' rejected: ", why));
}

}  // namespace

absl::Status ValidateArch(absl::string_view arch) {
  if (arch.empty()) return Reject(arch, "empty");
  if (absl::StartsWith(arch, "gfx")) {
    absl::string_view digits = arch.substr(3);
    // major is 1 or 2 decimal digits, then one decimal minor, one hex step.
    if (digits.size() != 3 && digits.size() != 4) {
      return Reject(arch, "expected gfx + 3 or 4 digits (major, minor, hex stepping)");
    }
    absl::string_view major = digits.substr(0, digits.size() - 2);
    for (char c : major) {
      if (!absl::ascii_isdigit(c)) return Reject(arch, "major version is not decimal");
    }
    int major_v = 0;
    for (char c : major) major_v = major_v * 10 + (c - '0');
    if (major.size() == 2 && major[0] == '0') return Reject(arch, "major version has a leading zero");
    if (major_v < 6 || major_v > 12) return Reject(arch, "major version outside 6..12");
    if (!absl::ascii_isdigit(digits[digits.size() - 2])) return Reject(arch, "minor version is not decimal");
    if (!IsHexDigit(digits.back())) return Reject(arch, "stepping is not a lower-case hex digit");
    return absl::OkStatus();
  }
  if (absl::StartsWith(arch, "sm_")) {
    absl::string_view rest = arch.substr(3);
    size_t n = 0;
    while (n < rest.size() && absl::ascii_isdigit(rest[n])) ++n;
    if (n < 2 || n > 3) return Reject(arch, "expected sm_ + 2 or 3 digits");
    if (rest.size() - n > 1 || (rest.size() - n == 1 && !absl::ascii_islower(rest[n]))) {
      return Reject(arch, "unexpected suffix after sm_ digits");
    }
    return absl::OkStatus();
  }
  return Reject(arch, "not a gfx or sm_ name");
}

absl::StatusOr<std::string> NormalizeArch(absl::string_view raw) {
  std::string arch = absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw));
  size_t colon = arch.find(':');
  if (colon != std::string::npos) arch.resize(colon);
  absl::Status s = ValidateArch(arch);
  if (!s.ok()) return s;
  return arch;
}

absl::StatusOr<std::string> DecodeGfxTargetVersion(uint64_t value) {
  if (value == 0) return absl::NotFoundError("gfx_target_version is 0");
  uint64_t major = value / 10000, minor = (value / 100) % 100, step = value % 100;
  if (major < 6 || major > 12 || minor > 9 || step > 15) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gfx_target_version ", value, " does not decode to an ISA name (major ", major, ", minor ",
        minor, ", stepping ", step, ")"));
  }
  std::string arch = absl::StrFormat("gfx%d%d%x", major, minor, step);
  absl::Status s = ValidateArch(arch);
  if (!s.ok()) return s;
  return arch;
}

}  // namespace dcu::common
