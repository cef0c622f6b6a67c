#include "agent/probe/product_table.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/probe/product_table_data.h"

namespace dcu::agent {
namespace {

bool ParseHex16(absl::string_view s, uint32_t* out) {
  if (!absl::ConsumePrefix(&s, "0x") || s.empty() || s.size() > 4) return false;
  return absl::SimpleHexAtoi(s, out);
}

}  // namespace

absl::StatusOr<ProductTable> ProductTable::Parse(absl::string_view text, absl::string_view origin) {
  ProductTable table;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> cols = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":", line_no, ": ", why, " in '", line, "'"));
    };
    if (cols.size() < 4) return bad("expected 'vendor device arch name [source...]'");
    Entry e;
    if (!ParseHex16(cols[0], &e.vendor_id)) return bad("vendor is not 0xNNNN");
    if (cols[1] != "*") {
      uint32_t d = 0;
      if (!ParseHex16(cols[1], &d)) return bad("device is not 0xNNNN or '*'");
      e.device_id = d;
    }
    if (cols[2] != "-") e.arch = std::string(cols[2]);
    if (!e.device_id && e.arch.empty()) return bad("a '*' device row needs an arch");
    e.name = std::string(cols[3]);
    e.source = absl::StrJoin(cols.begin() + 4, cols.end(), " ");
    table.entries_.push_back(std::move(e));
  }
  return table;
}

const ProductTable& ProductTable::Builtin() {
  static const ProductTable* table = [] {
    auto t = Parse(kProductTableText, "agent/probe/product_table.txt");
    // The embedded table is checked by a unit test; an error here is a build
    // defect, so fall back to an empty table rather than crash the agent.
    return new ProductTable(t.ok() ? *std::move(t) : ProductTable());
  }();
  return *table;
}

absl::StatusOr<ProductTable> ProductTable::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read product table '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

std::optional<ProductTable::Match> ProductTable::ByPciId(uint32_t vendor_id, uint32_t device_id) const {
  for (const Entry& e : entries_) {
    if (e.vendor_id == vendor_id && e.device_id && *e.device_id == device_id) {
      return Match{e.name, e.arch, absl::StrFormat("table:pci 0x%04x:0x%04x", vendor_id, device_id)};
    }
  }
  return std::nullopt;
}

std::optional<ProductTable::Match> ProductTable::ByVendorArch(uint32_t vendor_id,
                                                              absl::string_view arch) const {
  if (arch.empty()) return std::nullopt;
  for (const Entry& e : entries_) {
    if (e.vendor_id == vendor_id && !e.device_id && e.arch == arch) {
      return Match{e.name, e.arch, absl::StrFormat("table:vendor+arch 0x%04x %s", vendor_id, arch)};
    }
  }
  return std::nullopt;
}

std::string VendorName(uint32_t pci_vendor_id) {
  switch (pci_vendor_id) {
    case 0x1d94:
      return "hygon";
    case 0x1002:
      return "amd";
    case 0x10de:
      return "nvidia";
    default:
      return "";
  }
}

}  // namespace dcu::agent
