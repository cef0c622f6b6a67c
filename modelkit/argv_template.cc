#include "modelkit/argv_template.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace dcu::modelkit {

const std::vector<std::string>& KnownArgvPlaceholders() {
  static const auto* names = new std::vector<std::string>{
      "model_path", "port",  "tp",   "served_name", "max_model_len",        "max_num_seqs",
      "gpu_memory_utilization", "dtype", "host", "python", "kv_cache_memory_bytes"};
  return *names;
}

absl::StatusOr<std::vector<std::string>> ArgvPlaceholders(absl::string_view arg) {
  std::vector<std::string> out;
  const auto& known = KnownArgvPlaceholders();
  size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] == '}') {
      return absl::InvalidArgumentError(absl::StrCat("unbalanced '}' in '", arg, "'"));
    }
    if (arg[i] != '{') {
      ++i;
      continue;
    }
    size_t close = arg.find('}', i + 1);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unbalanced '{' in '", arg, "'"));
    }
    absl::string_view name = arg.substr(i + 1, close - i - 1);
    if (name.empty() || name.find('{') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("bad placeholder in '", arg, "'"));
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown placeholder '{", name, "}' in '", arg,
                                                     "' (known: model_path, port, tp, served_name, "
                                                     "max_model_len, max_num_seqs, "
                                                     "gpu_memory_utilization, dtype, host, python, "
                                                     "kv_cache_memory_bytes)"));
    }
    out.emplace_back(name);
    i = close + 1;
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> RenderArgv(
    const std::vector<std::string>& argv_template,
    const std::map<std::string, std::string>& values) {
  std::vector<std::string> out;
  out.reserve(argv_template.size());
  for (size_t index = 0; index < argv_template.size(); ++index) {
    const std::string& arg = argv_template[index];
    auto names = ArgvPlaceholders(arg);
    if (!names.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("argv[", index, "]: ", names.status().message()));
    }
    std::string rendered;
    size_t i = 0;
    while (i < arg.size()) {
      if (arg[i] != '{') {
        rendered.push_back(arg[i++]);
        continue;
      }
      size_t close = arg.find('}', i);
      std::string name = arg.substr(i + 1, close - i - 1);
      auto it = values.find(name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argv[", index, "]: no value for placeholder '{", name, "}'"));
      }
      rendered += it->second;
      i = close + 1;
    }
    out.push_back(std::move(rendered));
  }
  return out;
}

}  // namespace dcu::modelkit
