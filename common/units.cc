#include "common/units.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dcu::common {

std::string HumanBytes(int64_t bytes) {
  const char* sign = bytes < 0 ? "-" : "";
  double v = std::fabs(static_cast<double>(bytes));
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(sign, static_cast<int64_t>(v), " B");
  return absl::StrFormat("%s%.2f %s", sign, v, kUnits[unit]);
}

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return absl::InvalidArgumentError("empty size");
  size_t i = 0;
  while (i < s.size() && (absl::ascii_isdigit(s[i]) || s[i] == '.')) ++i;
  std::string number = s.substr(0, i);
  std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.substr(i)));
  double value = 0;
  if (number.empty() || !absl::SimpleAtod(number, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("invalid size '", text, "'"));
  }
  double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib" || unit == "ki") mult = kKiB;
  else if (unit == "m" || unit == "mib" || unit == "mi") mult = kMiB;
  else if (unit == "g" || unit == "gib" || unit == "gi") mult = kGiB;
  else if (unit == "t" || unit == "tib" || unit == "ti") mult = 1024.0 * kGiB;
  else if (unit == "kb") mult = 1e3;
  else if (unit == "mb") mult = 1e6;
  else if (unit == "gb") mult = 1e9;
  else if (unit == "tb") mult = 1e12;
  else return absl::InvalidArgumentError(absl::StrCat("invalid size unit in '", text, "'"));
  double total = value * mult;
  if (total > 9.2e18) return absl::OutOfRangeError(absl::StrCat("size '", text, "' too large"));
  return static_cast<int64_t>(std::llround(total));
}

std::string HumanDuration(int64_t millis) {
  if (millis < 0) millis = 0;
  int64_t s = millis / 1000;
  if (s < 60) {
    if (millis < 10000 && millis % 1000) return absl::StrFormat("%.1fs", millis / 1000.0);
    return absl::StrCat(s, "s");
  }
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, (s % 86400) / 3600);
}

}  // namespace dcu::common
