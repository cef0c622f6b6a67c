#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dcu::agent {

struct LoadProgress {
  bool found = false;
  int loaded = 0;
  int total = 0;
};

// The last weight-loading progress in a vLLM log, from tqdm lines such as
// "Loading safetensors checkpoint shards:  41% Completed | 7/17 [00:10<00:14, 1.40s/it]"
// (also "Loading pt checkpoint shards"). tqdm redraws with '\r', so lines may
// be separated by '\r' as well as '\n'.
LoadProgress ParseLoadProgress(absl::string_view log_text);

// The last `max_lines` non-empty lines of a log; '\r' and '\n' both end a
// line, trailing whitespace is trimmed, and a partial first line (the tail
// was cut mid-line) is dropped when the text does not start a line.
std::vector<std::string> LastLogLines(absl::string_view log_text, size_t max_lines,
                                      bool starts_at_line = false);

}  // namespace dcu::agent
