// common/metrics: the exposition text (prometheus-cpp's serializer) as
// dcufleet's endpoints use it, and — when Debian's prometheus package is
// installed, as scripts/test does — `promtool check metrics` on it.
#include "common/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/test_env.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;

bool OnPath(const std::string& tool) {
  return testing::RunCmd({"/bin/sh", "-c", "command -v " + tool}).exit_code == 0;
}

TEST(MetricsText, GaugesHaveHelpTypeAndEscapedLabelValues) {
  MetricFamilies f;
  FamilyBuilder(&f)
      .Gauge("dcu_test_bytes", "Bytes of a test.")
      .Add({{"node", "n1"}, {"command", "say \"hi\" \\ bye\nnext"}}, 42)
      .Counter("dcu_test_events_total", "Events.")
      .Add({{"reason", "Failover"}}, 3);
  std::string text = RenderMetricsText(f);
  EXPECT_THAT(text, HasSubstr("# HELP dcu_test_bytes Bytes of a test.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE dcu_test_bytes gauge\n"));
  EXPECT_THAT(text, HasSubstr(R"(dcu_test_bytes{node="n1",command="say \"hi\" \\ bye\nnext"} 42)"));
  EXPECT_THAT(text, HasSubstr("# TYPE dcu_test_events_total counter\n"));
  EXPECT_THAT(text, HasSubstr("dcu_test_events_total{reason=\"Failover\"} 3\n"));
}

TEST(MetricsText, HistogramsHaveCumulativeBucketsSumAndCount) {
  prometheus::Registry registry;
  auto& h = prometheus::BuildHistogram()
                .Name("dcu_test_duration_seconds")
                .Help("Durations.")
                .Register(registry)
                .Add({{"k", "v"}}, prometheus::Histogram::BucketBoundaries{0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  ServedResponse r = MetricsResponse({}, {&registry});
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE dcu_test_duration_seconds histogram\n"));
  EXPECT_THAT(r.body, HasSubstr("dcu_test_duration_seconds_bucket{k=\"v\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(r.body, HasSubstr("dcu_test_duration_seconds_bucket{k=\"v\",le=\"1\"} 2\n"));
  EXPECT_THAT(r.body, HasSubstr("dcu_test_duration_seconds_bucket{k=\"v\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(r.body, HasSubstr("dcu_test_duration_seconds_count{k=\"v\"} 3\n"));
  EXPECT_THAT(r.body, HasSubstr("dcu_test_duration_seconds_sum{k=\"v\"} 5.55"));
}

TEST(MetricsText, PromtoolAcceptsTheTextAndRefusesABrokenOne) {
  if (!OnPath("promtool")) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/test installs it)";
  }
  MetricFamilies f;
  FamilyBuilder(&f)
      .Gauge("dcu_test_bytes", "Bytes.")
      .Add({{"command", "a \"b\"\n"}}, 1)
      .Counter("dcu_test_events_total", "Events.")
      .Add({}, 2);
  testing::TempDir dir;
  std::ofstream(dir.Join("good.prom")) << RenderMetricsText(f);
  // A counter without _total and no HELP: promtool's lint must object, or
  // this test could not tell a pass from a silent promtool.
  std::ofstream(dir.Join("bad.prom")) << "# TYPE dcu_bad counter\ndcu_bad 1\n";
  auto check = [&](const std::string& file) {
    return testing::RunCmd({"/bin/sh", "-c", "promtool check metrics < " + dir.Join(file)});
  };
  testing::CmdResult good = check("good.prom");
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  testing::CmdResult bad = check("bad.prom");
  EXPECT_NE(bad.exit_code, 0) << bad.out << bad.err;
}

}  // namespace
}  // namespace dcu::common
