// dcuctl apply -f: what a file declares, read back from what `get -o json`
// prints, and every refusal naming what and where.
#include "common/utf8.h"
#include "dcuctl/apply_commands.h"

#include "absl/strings/str_cat.h"
#include "dcuctl/output.h"
#include "dcuctl/yaml_input.h"
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
  auto specs = SpecsFromText(ProtoToJson(d).dump(2), "chat.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_TRUE(SameSpec((*specs)[0], d.spec())) << (*specs)[0].DebugString();
  EXPECT_EQ((*specs)[0].restarted_at_ms(), 1796000000123);
}

TEST(ApplyTest, ListsAndBareSpecsInFileOrder) {
  nlohmann::json list = {{"deployments", {ProtoToJson(Sample("a")), ProtoToJson(Sample("b"))}}};
  auto specs = SpecsFromText(list.dump(), "all.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name(), "a");
  EXPECT_EQ((*specs)[1].name(), "b");

  nlohmann::json items = {{"items", {ProtoToJson(Sample("c").spec())}}};
  specs = SpecsFromText(items.dump(), "items.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].name(), "c");

  // A bare spec, hand-written: timestamps as the proto's integers are read too.
  specs = SpecsFromText(R"({"model": "qwen3-32b", "replicas": 3, "restarted_at_ms": "5"})", "mine.json");
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ((*specs)[0].replicas(), 3);
  EXPECT_EQ((*specs)[0].restarted_at_ms(), 5);
}

TEST(ApplyTest, RefusalsNameTheFileAndThePlace) {
  auto refused = [](const std::string& text) {
    auto specs = SpecsFromText(text, "f.json");
    EXPECT_FALSE(specs.ok()) << text;
    return specs.ok() ? std::string() : std::string(specs.status().message());
  };
  EXPECT_THAT(refused("{\"model\": \"qwen3-32b\",}"), HasSubstr("f.json: not JSON (byte"));
  EXPECT_THAT(refused("[1e99999]"), HasSubstr("number overflow"));  // an exception of another kind
  // YAML: the line and column of what is wrong.
  EXPECT_THAT(refused("spec:\n  model: [qwen3-32b\n"), HasSubstr("f.json: line "));
  EXPECT_THAT(refused("spec:\n  model: a\n  model: b\n"), HasSubstr("line 3, column 3: 'model' is given twice"));
  EXPECT_THAT(refused("model: qwen3-32b\nmax_num_seq: 8\n"), HasSubstr("max_num_seq"));
  EXPECT_THAT(refused("---\n---\n"), HasSubstr("empty"));
  EXPECT_THAT(refused("model: qwen3-32b\n---\nname: x\n"), HasSubstr("f.json: document 2: no model"));
  // A misspelt field is refused, named (kubectl's strict validation).
  EXPECT_THAT(refused(R"({"model": "qwen3-32b", "max_num_seq": 8})"), HasSubstr("max_num_seq"));
  EXPECT_THAT(refused(R"({"spec": {"model": "qwen3-32b", "restarted_at": "yesterday"}})"),
              HasSubstr("f.json: spec: restarted_at: 'yesterday' is not an RFC 3339 time"));
  // A time before 1970 would print as null (unset), so it is refused in
  // every form it can be written (the manifest fuzz target's round trip).
  EXPECT_THAT(refused(R"({"spec": {"model": "m", "restarted_at": "1013-12-06T23:52:33.965Z"}})"),
              HasSubstr("f.json: spec: restarted_at: \"1013-12-06T23:52:33.965Z\" is before 1970-01-01"));
  EXPECT_THAT(refused(R"({"model": "m", "restarted_at_ms": -5})"), HasSubstr("restarted_at_ms: -5 is before 1970"));
  EXPECT_THAT(refused("model: m\nrestarted_at_ms: -5\n"), HasSubstr("restarted_at_ms: \"-5\" is before 1970"));
  EXPECT_THAT(refused(R"({"deployments": [{"spec": {"model": "m"}}, {"spec": {"tp": "x"}}]})"),
              HasSubstr("f.json: deployments[1]: spec:"));
  EXPECT_THAT(refused(R"({"deployments": []})"), HasSubstr("\"deployments\" is empty"));
  EXPECT_THAT(refused(R"({"deployments": {"a": 1}})"), HasSubstr("\"deployments\" is not a list"));
  EXPECT_THAT(refused(R"({"name": "x"})"), HasSubstr("f.json: no model"));
  EXPECT_THAT(refused("[1, 2]"), HasSubstr("a deployment is a set of fields"));
  EXPECT_THAT(refused("\"qwen3-32b\""), HasSubstr("a deployment is a set of fields"));
  // Deep nesting is an error, not a crash (complete and valid JSON too).
  std::string deep = R"({"spec": {"model": "m", "name": )";
  deep += std::string(200000, '[') + std::string(200000, ']') + "}}";
  EXPECT_THAT(refused(deep), HasSubstr("nested deeper than 64"));
  // Brackets inside strings are not nesting.
  auto quoted = SpecsFromText(R"({"model": "qwen3-32b", "name": "a", "node": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"["})",
                              "q.json");
  ASSERT_TRUE(quoted.ok()) << quoted.status();
  EXPECT_EQ((*quoted)[0].node().substr(0, 3), "[[[");
}

// YAML, as kubectl's manifests: what `get -o yaml` prints reads back as the
// same spec; names that look like numbers stay names; several documents.
TEST(ApplyTest, YamlOfWhatGetPrintsAndHandWrittenManifests) {
  dcufleet::v1::Deployment d = Sample("chat");
  auto specs = SpecsFromText(ToYaml(ProtoToJson(d)), "chat.yaml");
  ASSERT_TRUE(specs.ok()) << specs.status() << "\n" << ToYaml(ProtoToJson(d));
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_TRUE(SameSpec((*specs)[0], d.spec())) << (*specs)[0].DebugString();

  specs = SpecsFromText(
      "# two deployments\n"
      "model: qwen3-32b\n"
      "name: 1234\n"              // a name, though it reads as a number
      "replicas: 2\n"
      "gpu_memory_utilization: 0.85\n"
      "restarted_at: null\n"
      "---\n"
      "spec:\n"
      "  model: qwen3-32b\n"
      "  name: \"second\"\n"
      "  max_model_len: 32768\n",
      "two.yaml");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name(), "1234");
  EXPECT_EQ((*specs)[0].replicas(), 2);
  EXPECT_DOUBLE_EQ((*specs)[0].gpu_memory_utilization(), 0.85);
  EXPECT_EQ((*specs)[1].name(), "second");
  EXPECT_EQ((*specs)[1].max_model_len(), 32768);

  // A list as `get deployments -o yaml` prints it.
  nlohmann::json list = {{"deployments", {ProtoToJson(Sample("a")), ProtoToJson(Sample("b"))}}};
  specs = SpecsFromText(ToYaml(list), "all.yaml");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[1].name(), "b");
}

// Bytes that are not UTF-8 are refused where they are (found by the
// manifest fuzzer: one in a YAML key ended dcuctl with an exception);
// well-formed UTF-8, a Chinese comment for one, is read.
TEST(ApplyTest, TextThatIsNotUtf8IsRefusedAtItsByte) {
  auto bad = SpecsFromText("model: q\x95\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("f.yaml: not UTF-8 (byte 8)"));
  auto good = SpecsFromText("# \xe4\xb8\xad\xe6\x96\x87 comment\nmodel: qwen3-32b\n", "f.yaml");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(common::FirstInvalidUtf8Byte("ok \xe4\xb8\xad \xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(common::FirstInvalidUtf8Byte("a\xc0\x80"), 1u);          // overlong
  EXPECT_EQ(common::FirstInvalidUtf8Byte("ab\xed\xa0\x80"), 2u);    // a surrogate
  EXPECT_EQ(common::FirstInvalidUtf8Byte("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(common::FirstInvalidUtf8Byte("abc\xe4\xb8"), 3u);        // cut short
}

// A small file whose aliases stand for a huge tree stops at the budget.
TEST(ApplyTest, YamlAliasesCannotExpandWithoutBound) {
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'j'; ++c) {
    laughs += absl::StrCat(std::string(1, c), ": &", std::string(1, c), " [*", prev, ", *", prev, ", *", prev,
                           ", *", prev, ", *", prev, ", *", prev, ", *", prev, ", *", prev, ", *", prev,
                           ", *", prev, "]\n");
    prev = std::string(1, c);
  }
  laughs += "model: qwen3-32b\n";
  auto specs = SpecsFromText(laughs, "laughs.yaml");
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(specs.status().message(), HasSubstr("more than 200000 values"));
  // Deep block nesting is refused too, not recursed into.
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += std::string(i, ' ') + "k:\n";
  auto nested = SpecsFromText(deep, "deep.yaml");
  EXPECT_FALSE(nested.ok());
}

}  // namespace
}  // namespace dcu::dcuctl
