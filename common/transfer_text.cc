#include "common/transfer_text.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/units.h"

namespace dcu::common {

std::string DescribeModelTransfer(const dcufleet::v1::ModelTransfer& t) {
  const std::string from =
      absl::StrCat(t.model_dir(), " from ", t.source_node().empty() ? t.source_address() : t.source_node());
  switch (t.state()) {
    case dcufleet::v1::MODEL_TRANSFER_DONE:
      return absl::StrCat("copied ", from, ": ", t.message());
    case dcufleet::v1::MODEL_TRANSFER_FAILED:
      return absl::StrCat("copy of ", from, " failed: ", t.message());
    default:
      break;
  }
  std::string line =
      absl::StrCat("copying ", from, ": ", HumanBytes(t.bytes_done()), " of ", HumanBytes(t.bytes_total()));
  if (t.bytes_total() > 0) {
    absl::StrAppend(&line, absl::StrFormat(" (%d%%)", static_cast<int>(100.0 * t.bytes_done() / t.bytes_total())));
  }
  if (t.bytes_per_second() > 0) {
    absl::StrAppend(&line, ", ", HumanBytes(static_cast<int64_t>(t.bytes_per_second())), "/s");
  }
  if (t.eta_ms() >= 0) {
    absl::StrAppend(&line, ", ETA ", absl::FormatDuration(absl::Seconds(std::ceil(t.eta_ms() / 1000.0))));
  }
  if (t.bytes_resumed() > 0) absl::StrAppend(&line, ", ", HumanBytes(t.bytes_resumed()), " resumed");
  if (!t.file().empty()) absl::StrAppend(&line, " [", t.file(), "]");
  return line;
}

}  // namespace dcu::common
