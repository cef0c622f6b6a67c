// What dcuctl apply -f and edit read from a person's file: JSON or YAML
// (several documents, aliases), turned into DeploymentSpecs. Besides "no
// crash", the round trip a person makes: every spec read is printed as
// `get deployment -o yaml` and `-o json` print it (ProtoToJson of the
// deployment, ToYaml) and read back; it must come back unchanged, or an
// edit that changed nothing would roll the deployment out. A difference
// aborts with the printed text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dcuctl/apply_commands.h"
#include "dcuctl/output.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

void RoundTripOrDie(const dcufleet::v1::DeploymentSpec& spec, const std::string& printed,
                    const char* format) {
  auto back = dcu::dcuctl::SpecsFromText(printed, "printed");
  if (back.ok() && back->size() == 1 &&
      google::protobuf::util::MessageDifferencer::Equals(spec, back->front())) {
    return;
  }
  std::fprintf(stderr, "-o %s did not read back as it was printed (%s):\n%s\n", format,
               back.ok() ? "a different spec" : std::string(back.status().message()).c_str(),
               printed.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto specs = dcu::dcuctl::SpecsFromText(text, "fuzz.yaml");
  if (!specs.ok()) {
    (void)specs.status().message().size();
    return 0;
  }
  for (const auto& spec : *specs) {
    dcufleet::v1::Deployment d;
    *d.mutable_spec() = spec;
    const nlohmann::json printed = dcu::dcuctl::ProtoToJson(d);
    RoundTripOrDie(spec, dcu::dcuctl::ToYaml(printed), "yaml");
    RoundTripOrDie(spec, printed.dump(2), "json");
  }
  return 0;
}
