// The product table parser (agent/probe/product_table.txt format) and the
// dcu-memprobe output parser (JSON Lines), both node-side data.
#include <cstdint>

#include "agent/probe/hip_device_probe.h"
#include "agent/probe/product_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = dcu::agent::ProductTable::Parse(text, "fuzz.txt");
  if (table.ok()) {
    (void)table->ByPciId(0x1d94, 0x6310);
    (void)table->ByVendorArch(0x1d94, "gfx936");
  }
  dcu::common::ProcessOutput out;
  out.exit_code = size % 3 == 0 ? 1 : 0;
  out.stdout_data = std::string(text);
  auto report = dcu::agent::ParseMemprobeOutput(out, absl::Seconds(5), 1700000000000);
  if (report.ok()) (void)report->devices.size();
  return 0;
}
