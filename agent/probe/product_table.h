#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::agent {

// Marketing names and ISAs of accelerators by PCI id, kept as data
// (agent/probe/product_table.txt) rather than code so that a new card is a
// one-line change and a node can be given a newer table without a rebuild.
class ProductTable {
 public:
  struct Entry {
    uint32_t vendor_id = 0;
    // nullopt = any device of the vendor with this arch (a weaker match).
    std::optional<uint32_t> device_id;
    std::string arch;  // "" when unknown
    std::string name;
    std::string source;
  };
  struct Match {
    std::string name;
    std::string arch;
    // "table:pci 0x1d94:0x6210" or "table:vendor+arch 0x1d94 gfx936".
    std::string source;
  };

  // Parses the table text; INVALID_ARGUMENT names `origin` and the line.
  static absl::StatusOr<ProductTable> Parse(absl::string_view text, absl::string_view origin);
  // The table compiled into the binary.
  static const ProductTable& Builtin();
  static absl::StatusOr<ProductTable> LoadFile(const std::string& path);

  // Exact (vendor, device) row.
  std::optional<Match> ByPciId(uint32_t vendor_id, uint32_t device_id) const;
  // A vendor-wide row for this arch ("0x1d94 * gfx936 BW1000").
  std::optional<Match> ByVendorArch(uint32_t vendor_id, absl::string_view arch) const;

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// "hygon" (0x1d94), "amd" (0x1002), "nvidia" (0x10de), "" otherwise.
std::string VendorName(uint32_t pci_vendor_id);

}  // namespace dcu::agent
