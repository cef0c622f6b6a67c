#include "agent/probe/pci_bus.h"

#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace dcu::agent {

std::string NormalizePciBusId(absl::string_view raw) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw));
  std::vector<std::string> parts = absl::StrSplit(s, ':');
  if (parts.size() != 3) return s;
  uint32_t domain = 0, bus = 0, dev = 0, fn = 0;
  if (parts[0].empty() || parts[0].size() > 8 || !absl::SimpleHexAtoi(parts[0], &domain)) return s;
  if (parts[1].empty() || parts[1].size() > 2 || !absl::SimpleHexAtoi(parts[1], &bus)) return s;
  std::vector<std::string> df = absl::StrSplit(parts[2], '.');
  if (df.empty() || df.size() > 2 || df[0].empty() || df[0].size() > 2 || !absl::SimpleHexAtoi(df[0], &dev)) return s;
  if (df.size() == 2 && (df[1].size() != 1 || !absl::SimpleHexAtoi(df[1], &fn))) return s;
  // Two calls, not one with a chosen format: absl::StrFormat checks its
  // format at compile time, which needs a constant (clang refuses a ?:).
  if (domain > 0xffff) return absl::StrFormat("%08x:%02x:%02x.%x", domain, bus, dev, fn);
  return absl::StrFormat("%04x:%02x:%02x.%x", domain, bus, dev, fn);
}

}  // namespace dcu::agent
