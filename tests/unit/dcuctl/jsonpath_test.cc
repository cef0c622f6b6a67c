#include "dcuctl/jsonpath.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

nlohmann::json Doc() {
  return nlohmann::json::parse(R"({
    "items": [
      {"spec": {"name": "a", "tp": 2}, "status": {"phase": "DEPLOYMENT_READY", "ok": true}},
      {"spec": {"name": "b", "tp": 4}, "status": {"phase": "DEPLOYMENT_PENDING", "ok": false}}
    ],
    "kind": "List",
    "weird key": {"x": null},
    "tags": {"k1": "v1", "k2": "v2"}
  })");
}

std::string Expand(const std::string& t, const nlohmann::json& doc = Doc()) {
  auto p = JsonPathTemplate::Parse(t);
  EXPECT_TRUE(p.ok()) << t << ": " << p.status();
  if (!p.ok()) return "<parse error>";
  auto r = p->Execute(doc);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : "<run error>";
}

std::string ParseError(const std::string& t) {
  auto p = JsonPathTemplate::Parse(t);
  EXPECT_FALSE(p.ok()) << t;
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(JsonPath, FieldsIndexesAndWildcards) {
  EXPECT_EQ(Expand("{.kind}"), "List");
  EXPECT_EQ(Expand("{.items[0].spec.name}"), "a");
  EXPECT_EQ(Expand("{.items[-1].spec.name}"), "b");
  EXPECT_EQ(Expand("{.items[*].spec.name}"), "a b");
  EXPECT_EQ(Expand("{.items[*].spec.tp}"), "2 4");
  EXPECT_EQ(Expand("{.items[1].status.ok}"), "false");
  EXPECT_EQ(Expand("{$.items[0]['spec'].name}"), "a");
  EXPECT_EQ(Expand("{.tags.*}"), "v1 v2");
  EXPECT_EQ(Expand("{.items[0].spec}"), R"({"name":"a","tp":2})");
  EXPECT_EQ(Expand("{['weird key'].x}"), "");  // null prints nothing
  EXPECT_EQ(Expand("{.}"), Doc().dump());
}

TEST(JsonPath, MissingFieldsAndIndexesPrintNothing) {
  EXPECT_EQ(Expand("{.nope}"), "");
  EXPECT_EQ(Expand("{.items[7].spec.name}"), "");
  EXPECT_EQ(Expand("{.kind.deeper}"), "");
  EXPECT_EQ(Expand("x{.items[*].nope}y"), "xy");
}

TEST(JsonPath, RangeLiteralsAndText) {
  EXPECT_EQ(Expand(R"({range .items[*]}{.spec.name}={.status.phase}{"\n"}{end})"),
            "a=DEPLOYMENT_READY\nb=DEPLOYMENT_PENDING\n");
  // {range .items} walks the list too; {@} is the element, {$} the document.
  EXPECT_EQ(Expand("{range .items}[{@.spec.name} of {$.kind}]{end}"), "[a of List][b of List]");
  EXPECT_EQ(Expand("names: {.items[*].spec.name}!"), "names: a b!");
  EXPECT_EQ(Expand(R"({"tab\there"})"), "tab\there");
  // Nested ranges are relative to their element.
  nlohmann::json nested = nlohmann::json::parse(R"({"a":[{"b":[1,2]},{"b":[3]}]})");
  EXPECT_EQ(Expand("{range .a[*]}({range .b[*]}{@};{end}){end}", nested), "(1;2;)(3;)");
}

TEST(JsonPath, MalformedTemplatesNameTheColumn) {
  EXPECT_THAT(ParseError("{.items[0]"), HasSubstr("column 1: '{' is not closed by '}'"));
  EXPECT_THAT(ParseError("abc}"), HasSubstr("column 4: '}' without a '{'"));
  EXPECT_THAT(ParseError("{.items[x]}"), HasSubstr("column 9: expected an index"));
  EXPECT_THAT(ParseError("{.items[0}"), HasSubstr("column 8: '[' is not closed by ']'"));
  EXPECT_THAT(ParseError("{.items[0 x]}"), HasSubstr("column 11: expected ']', found 'x'"));
  EXPECT_THAT(ParseError("{.a.}"), HasSubstr("column 4"));
  EXPECT_THAT(ParseError("{}"), HasSubstr("column 1: empty '{}'"));
  EXPECT_THAT(ParseError("{range .items[*]}{.x}"), HasSubstr("column 2: {range} is not closed by {end}"));
  EXPECT_THAT(ParseError("{.x}{end}"), HasSubstr("column 6: {end} without a {range}"));
  EXPECT_THAT(ParseError("{name}"), HasSubstr("column 2: expected a path such as .field, found 'n'"));
  EXPECT_THAT(ParseError("{..name}"), HasSubstr("recursive descent"));
  EXPECT_THAT(ParseError("{.items[?(@.x)]}"), HasSubstr("filters"));
  EXPECT_THAT(ParseError(R"({"open})"), HasSubstr("'{' is not closed"));
  EXPECT_THAT(ParseError(R"({"a\q"})"), HasSubstr("unknown escape"));
  EXPECT_THAT(ParseError(std::string("{.a\0b}", 7)), HasSubstr("NUL"));
}

TEST(JsonPath, HostileTemplatesAreBounded) {
  // Too long, too deep: refused before running.
  EXPECT_THAT(ParseError(std::string(JsonPathTemplate::kMaxTemplateBytes + 1, 'x')), HasSubstr("at most"));
  std::string deep;
  for (int i = 0; i <= JsonPathTemplate::kMaxRangeDepth; ++i) deep += "{range $.items[*]}";
  EXPECT_THAT(ParseError(deep), HasSubstr("nested deeper"));
  // Within the limits but exploding: the output cap ends it.
  nlohmann::json big = {{"items", nlohmann::json::array()}};
  for (int i = 0; i < 64; ++i) big["items"].push_back(std::string(64, 'z'));
  std::string bomb;
  for (int i = 0; i < JsonPathTemplate::kMaxRangeDepth; ++i) bomb += "{range $.items[*]}";
  bomb += "{@}";
  for (int i = 0; i < JsonPathTemplate::kMaxRangeDepth; ++i) bomb += "{end}";
  auto p = JsonPathTemplate::Parse(bomb);
  ASSERT_TRUE(p.ok()) << p.status();
  auto r = p->Execute(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  // Garbage of every byte never crashes the parser.
  for (int c = 0; c < 256; ++c) {
    std::string t = {'{', '.', static_cast<char>(c), '}'};
    (void)JsonPathTemplate::Parse(t);
    t = {'{', static_cast<char>(c), '[', '}'};
    (void)JsonPathTemplate::Parse(t);
  }
}

}  // namespace
}  // namespace dcu::dcuctl
