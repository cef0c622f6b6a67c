// dcuctl apply -f: what a file declares, read back from what `get -o json`
// prints, and every refusal naming what and where.
#include "dcuctl/apply_commands.h"

#include "dcuctl/output.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

dcufleet::v1::Deployment Sample(const std::string& name) {
  dcufleet::v1::Deployment d;
  auto* s = d.mutable_spec();
  s->set_name(name);
  s->set_model("qwen3-32b");
  s->set_tp(4);
  s->set_replicas(2);
  s->set_max_model_len(32768);  // int64: a JSON string
  s->set_gpu_memory_utilization(0.85);
  s->set_restarted_at_ms(1796000000123);  // printed as RFC 3339
  d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_READY);
  d.mutable_status()->set_created_at_ms(1796000000000);
  d.set_revision(7);
  return d;
}

bool SameSpec(const dcufleet::v1::DeploymentSpec& a, const dcufleet::v1::DeploymentSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST(ApplyTest, WhatGetPrintsIsReadBackAsTheSameSpec) {
  const dcufleet::v1::Deployment d = Sample("chat");
  auto specs = SpecsFromJson(ProtoToJson(d).dump(2), "chat.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_TRUE(SameSpec((*specs)[0], d.spec())) << (*specs)[0].DebugString();
  EXPECT_EQ((*specs)[0].restarted_at_ms(), 1796000000123);
}

TEST(ApplyTest, ListsAndBareSpecsInFileOrder) {
  nlohmann::json list = {{"deployments", {ProtoToJson(Sample("a")), ProtoToJson(Sample("b"))}}};
  auto specs = SpecsFromJson(list.dump(), "all.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name(), "a");
  EXPECT_EQ((*specs)[1].name(), "b");

  nlohmann::json items = {{"items", {ProtoToJson(Sample("c").spec())}}};
  specs = SpecsFromJson(items.dump(), "items.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].name(), "c");

  // A bare spec, hand-written: timestamps as the proto's integers are read too.
  specs = SpecsFromJson(R"({"model": "qwen3-32b", "replicas": 3, "restarted_at_ms": "5"})", "mine.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ((*specs)[0].replicas(), 3);
  EXPECT_EQ((*specs)[0].restarted_at_ms(), 5);
}

TEST(ApplyTest, RefusalsNameTheFileAndThePlace) {
  auto refused = [](const std::string& text) {
    auto specs = SpecsFromJson(text, "f.json");
    EXPECT_FALSE(specs.ok()) << text;
    return specs.ok() ? std::string() : std::string(specs.status().message());
  };
  // YAML: said what is read instead.
  EXPECT_THAT(refused("spec:\n  model: qwen3-32b\n"), HasSubstr("f.json: not JSON"));
  EXPECT_THAT(refused("spec:\n  model: qwen3-32b\n"), HasSubstr("YAML is not read"));
  EXPECT_THAT(refused("{\"model\": \"qwen3-32b\",}"), HasSubstr("f.json: not JSON (byte"));
  // A misspelt field is refused, named (kubectl's strict validation).
  EXPECT_THAT(refused(R"({"model": "qwen3-32b", "max_num_seq": 8})"), HasSubstr("max_num_seq"));
  EXPECT_THAT(refused(R"({"spec": {"model": "qwen3-32b", "restarted_at": "yesterday"}})"),
              HasSubstr("f.json: spec: restarted_at: 'yesterday' is not an RFC 3339 time"));
  EXPECT_THAT(refused(R"({"deployments": [{"spec": {"model": "m"}}, {"spec": {"tp": "x"}}]})"),
              HasSubstr("f.json: deployments[1]: spec:"));
  EXPECT_THAT(refused(R"({"deployments": []})"), HasSubstr("\"deployments\" is empty"));
  EXPECT_THAT(refused(R"({"deployments": {"a": 1}})"), HasSubstr("\"deployments\" is not a list"));
  EXPECT_THAT(refused(R"({"name": "x"})"), HasSubstr("f.json: no model"));
  EXPECT_THAT(refused("[1, 2]"), HasSubstr("a deployment is a JSON object"));
  EXPECT_THAT(refused("\"qwen3-32b\""), HasSubstr("a deployment is a JSON object"));
  // Deep nesting is an error, not a crash (complete and valid JSON too).
  std::string deep = R"({"spec": {"model": "m", "name": )";
  deep += std::string(200000, '[') + std::string(200000, ']') + "}}";
  EXPECT_THAT(refused(deep), HasSubstr("nested deeper than 64"));
  // Brackets inside strings are not nesting.
  auto quoted = SpecsFromJson(R"({"model": "qwen3-32b", "name": "a", "node": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"["})",
                              "q.json");
  ASSERT_TRUE(quoted.ok()) << quoted.status();
  EXPECT_EQ((*quoted)[0].node().substr(0, 3), "[[[");
}

}  // namespace
}  // namespace dcu::dcuctl
