// `dcuctl get ... -o jsonpath=TEMPLATE` (dcuctl/jsonpath.h): a person's or a
// script's template, parsed and run over what `get deployments -o json`
// prints for a small list. Besides "no crash, no hang": a template that
// parses runs to text within kMaxOutputBytes or is refused as too large.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dcuctl/jsonpath.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/deploy.pb.h"

namespace {

const nlohmann::json& Document() {
  static const nlohmann::json* doc = [] {
    auto* j = new nlohmann::json{{"items", nlohmann::json::array()}};
    for (int i = 0; i < 3; ++i) {
      dcufleet::v1::Deployment d;
      d.mutable_spec()->set_name("qwen3-32b-" + std::to_string(i));
      d.mutable_spec()->set_model("qwen3-32b");
      d.mutable_spec()->set_replicas(i + 1);
      d.mutable_spec()->set_tp(4);
      d.mutable_status()->set_endpoint("10.0.0." + std::to_string(i) + ":8000");
      d.mutable_status()->set_created_at_ms(1783000000000 + i);
      for (int k = 0; k <= i; ++k) d.mutable_status()->add_attempts()->set_instance_id("i-" + std::to_string(k));
      (*j)["items"].push_back(dcu::dcuctl::ProtoToJson(d));
    }
    return j;
  }();
  return *doc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto t = dcu::dcuctl::JsonPathTemplate::Parse(text);
  if (!t.ok()) {
    (void)t.status().message().size();
    return 0;
  }
  auto out = t->Execute(Document());
  if (out.ok() && out->size() > dcu::dcuctl::JsonPathTemplate::kMaxOutputBytes) {
    std::fprintf(stderr, "%zu bytes of output, over the %zu bound\n", out->size(),
                 dcu::dcuctl::JsonPathTemplate::kMaxOutputBytes);
    std::abort();
  }
  return 0;
}
