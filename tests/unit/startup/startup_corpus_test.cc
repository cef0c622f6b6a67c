// tests/data/startup-logs: real start-up logs with the phase and figures a
// person reads from each (index.tsv). The parser must give exactly those:
// every listed figure with the line it came from, no figure that is not
// listed, and never a phase the excerpt does not prove.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/enum_names.h"
#include "gtest/gtest.h"
#include "modelkit/startup_progress.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::StartupProgress;

std::string SourceDir() {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool HasEvidence(const StartupProgress& p, const std::string& figure) {
  for (const auto& e : p.evidence()) {
    if (e.figure() == figure && e.line_number() > 0 && !e.line().empty()) return true;
  }
  return false;
}

// The numeric figures, by their field names ("shards" and "graphs" as k/n).
std::map<std::string, double> Numbers(const StartupProgress& p) {
  return {{"seconds_per_shard", p.seconds_per_shard()},
          {"shards_eta_s", p.shards_eta_s()},
          {"weights_gib", p.weights_gib()},
          {"weights_load_s", p.weights_load_s()},
          {"torch_compile_s", p.torch_compile_s()},
          {"graph_capture_s", p.graph_capture_s()},
          {"kv_cache_gib", p.kv_cache_gib()},
          {"gpu_blocks", static_cast<double>(p.gpu_blocks())},
          {"kv_tokens", static_cast<double>(p.kv_tokens())},
          {"max_concurrency", p.max_concurrency()},
          {"max_concurrency_tokens", static_cast<double>(p.max_concurrency_tokens())},
          {"init_engine_s", p.init_engine_s()}};
}

std::string Word(absl::string_view name) {
  return absl::StrReplaceAll(name, {{" ", "_"}, {"Triton", "triton"}});
}

TEST(StartupCorpusTest, EveryLogGivesItsPhaseAndFigures) {
  const std::string dir = SourceDir() + "/tests/data/startup-logs/";
  std::string index = ReadFile(dir + "index.tsv");
  ASSERT_FALSE(index.empty()) << "no " << dir << "index.tsv";
  int files = 0, failed_files = 0, figures_checked = 0;
  std::map<std::string, int> by_phase;
  bool header = true;
  for (absl::string_view row : absl::StrSplit(index, '\n', absl::SkipEmpty())) {
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> cols = absl::StrSplit(row, '\t');
    ASSERT_GE(cols.size(), 3u) << row;
    const std::string& file = cols[0];
    ASSERT_TRUE(absl::StartsWith(cols[1], "https://")) << file << ": no source URL";
    std::string text = ReadFile(dir + file);
    ASSERT_FALSE(text.empty()) << file;
    ++files;
    StartupProgress p = ParseStartupLog(text);
    std::map<std::string, std::string> expect;
    for (absl::string_view kv : absl::StrSplit(cols[2], ' ', absl::SkipEmpty())) {
      std::pair<std::string, std::string> pair = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      expect[pair.first] = pair.second;
    }
    int errors = 0;
    auto check = [&](const std::string& key, const std::string& got) {
      std::string want = expect.count(key) ? expect[key] : "";
      EXPECT_EQ(got, want) << file << ": " << key;
      errors += got != want;
    };
    check("phase", std::string(common::StartupPhaseName(p.phase())));
    check("activity", Word(common::StartupActivityName(p.activity())));
    check("failed_in", p.failed_in() == dcufleet::v1::STARTUP_PHASE_UNSPECIFIED
                           ? (expect.count("failed_in") ? "unspecified" : "")
                           : std::string(common::StartupPhaseName(p.failed_in())));
    check("engine", p.engine());
    check("engine_version", p.engine_version());
    check("platform", p.platform());
    auto ratio = [](int k, int n) { return n > 0 ? absl::StrCat(k, "/", n) : std::string(); };
    check("shards", ratio(p.shards_loaded(), p.shards_total()));
    check("graphs", ratio(p.graphs_captured(), p.graphs_total()));
    for (const char* k : {"shards", "graphs"}) {
      if (expect.count(k)) {
        EXPECT_TRUE(HasEvidence(p, k)) << file << ": " << k << " without its line";
        ++figures_checked;
      }
    }
    for (const auto& [key, got] : Numbers(p)) {
      auto it = expect.find(key);
      if (it == expect.end()) {
        EXPECT_EQ(got, 0) << file << ": " << key << " not expected";
        errors += got != 0;
        continue;
      }
      double want = 0;
      ASSERT_TRUE(absl::SimpleAtod(it->second, &want)) << file << ": " << key;
      EXPECT_NEAR(got, want, std::max(1e-6, std::fabs(want) * 1e-4)) << file << ": " << key;
      errors += std::fabs(got - want) > std::max(1e-6, std::fabs(want) * 1e-4);
      // Where it came from (the seconds and ETA ride on the shard line).
      std::string figure = key == "seconds_per_shard" || key == "shards_eta_s" ? "shards"
                           : key == "max_concurrency_tokens"                  ? "max_concurrency"
                                                                              : key;
      EXPECT_TRUE(HasEvidence(p, figure)) << file << ": " << key << " without its line";
      ++figures_checked;
    }
    if (p.phase() != dcufleet::v1::STARTUP_PHASE_UNSPECIFIED) {
      EXPECT_TRUE(HasEvidence(p, "phase")) << file;
      EXPECT_FALSE(p.phase_line().empty()) << file;
    }
    failed_files += errors > 0;
    ++by_phase[std::string(common::StartupPhaseName(p.phase()))];
  }
  EXPECT_GE(files, 20);
  std::cout << files << " start-up logs, " << files - failed_files << " right in every figure ("
            << figures_checked << " figures with their lines); phases:";
  for (const auto& [phase, n] : by_phase) std::cout << " " << phase << "=" << n;
  std::cout << "\n";
}

}  // namespace
}  // namespace dcu::modelkit
