// What dcuctl apply -f and edit read from a person's file: JSON or YAML
// (several documents, aliases), turned into DeploymentSpecs.
#include <cstdint>
#include <string>

#include "dcuctl/apply_commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto specs = dcu::dcuctl::SpecsFromText(text, "fuzz.yaml");
  if (specs.ok()) {
    for (const auto& s : *specs) (void)s.ByteSizeLong();
  } else {
    (void)specs.status().message().size();
  }
  return 0;
}
