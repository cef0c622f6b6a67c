#include "dcuctl/output.h"

#include <sstream>

#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

TEST(ProtoToJson, TimestampsAreRfc3339UtcWherePresentAndNullWhereNot) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name("q");
  d.mutable_status()->set_created_at_ms(1796145600123);  // 2026-12-01T17:20:00.123Z
  d.mutable_status()->set_ready_at_ms(0);
  auto* a = d.mutable_status()->add_attempts();
  a->set_created_at_ms(1796145601000);
  a->set_backoff_ms(2500);  // a duration, not a time
  (*d.mutable_status()->mutable_extra_env())["X_AT_MS"] = "5";
  d.set_revision(7);
  nlohmann::json j = ProtoToJson(d);
  EXPECT_EQ(j["status"]["created_at"], "2026-12-01T17:20:00.123Z") << j.dump(2);
  EXPECT_FALSE(j["status"].contains("created_at_ms"));
  EXPECT_TRUE(j["status"]["ready_at"].is_null());
  EXPECT_EQ(j["status"]["attempts"][0]["created_at"], "2026-12-01T17:20:01.000Z");
  // Other 64-bit integers keep proto3's JSON rule: strings.
  EXPECT_EQ(j["status"]["attempts"][0]["backoff_ms"], "2500");
  EXPECT_EQ(j["revision"], "7");
  // A map's keys are data, whatever they look like.
  EXPECT_EQ(j["status"]["extra_env"]["X_AT_MS"], "5");
}

TEST(ProtoToJson, EventTimesAndNodeTimes) {
  dcufleet::v1::ListEventsResponse r;
  r.add_events()->set_at_ms(86400000);
  nlohmann::json j = ProtoToJson(r);
  EXPECT_EQ(j["events"][0]["at"], "1970-01-02T00:00:00.000Z");
  dcufleet::v1::NodeView n;
  n.set_last_seen_ms(1000);
  n.set_connected_since_ms(2000);
  j = ProtoToJson(n);
  EXPECT_EQ(j["last_seen"], "1970-01-01T00:00:01.000Z");
  EXPECT_EQ(j["connected_since"], "1970-01-01T00:00:02.000Z");
  EXPECT_TRUE(j["registered_at"].is_null());
  EXPECT_TRUE(IsTimestampField("at_ms"));
  EXPECT_FALSE(IsTimestampField("grace_ms"));
  EXPECT_FALSE(IsTimestampField("duration_ms"));
}

TEST(OutputFormat, TheChoicesAndTheirErrors) {
  for (const char* ok : {"table", "wide", "json", "yaml", "name", "jsonpath={.items[*].spec.name}"}) {
    EXPECT_TRUE(CheckOutputFormat(ok).ok()) << ok;
  }
  EXPECT_THAT(CheckOutputFormat("xml").message(), HasSubstr("unknown output format 'xml'"));
  EXPECT_THAT(CheckOutputFormat("jsonpath").message(), HasSubstr("needs a template"));
  EXPECT_THAT(CheckOutputFormat("jsonpath={.a").message(), HasSubstr("column 1"));
  std::ostringstream out, err;
  EXPECT_EQ(PrintDocument({{"a", {{"b", "c"}}}}, "jsonpath={.a.b}", out, err), 0);
  EXPECT_EQ(out.str(), "c");
}

TEST(Table, NoHeadersAndRowsPaddedToTheTable) {
  Table t({"NAME", "STATUS"});
  t.AddRow({"node-a", "Ready"});
  std::ostringstream with, without;
  t.Print(with);
  t.Print(without, /*header=*/false);
  EXPECT_EQ(with.str(), "NAME     STATUS\nnode-a   Ready\n");
  EXPECT_EQ(without.str(), "node-a   Ready\n");
  EXPECT_EQ(Table::FormatRow({"b", "NotReady"}, t.Widths()), "b        NotReady");
}

}  // namespace
}  // namespace dcu::dcuctl
