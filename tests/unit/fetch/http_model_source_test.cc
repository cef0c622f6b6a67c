// HttpModelSource against a real HTTP server on loopback (issue 19): a tiny
// safetensors checkpoint the test writes, served like a Hugging Face mirror
// (`/<repo>/resolve/main/<file>`, with Range) by tests/testing's
// RangeHttpServer, fetched by ModelFetcher: every shard verified and
// renamed into place; a connection cut half-way through a shard and the
// copy resumed with a Range request; a mirror that ignores Range; a shard
// corrupted on the mirror refused with nothing half-written.
#include "agent/fetch/http_model_source.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/fetch/model_fetch.h"
#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/range_http_server.h"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

class HttpModelSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(mirror_dir());
    fs::create_directories(dst_root());
    model_.hidden = 256;
    model_.intermediate = 512;
    model_.vocab = 1024;
    model_.layers = 4;
    model_.shards = 3;
    testing::WriteTinyModel(mirror_dir(), model_);
    std::ofstream out(mirror_dir() + "/sha256sums");
    for (const auto& e : fs::directory_iterator(mirror_dir())) {
      if (e.path().filename() == "sha256sums") continue;
      out << common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())) << "  " << e.path().filename().string()
          << "\n";
    }
  }
  std::string mirror_dir() const { return tmp_.Join("mirror/Qwen/Tiny"); }
  std::string dst_root() const { return tmp_.Join("dst"); }
  std::string Shard(int i) const { return absl::StrCat("model-0000", i, "-of-0000", model_.shards, ".safetensors"); }
  std::unique_ptr<HttpModelSource> Source() {
    auto s = HttpModelSource::Create(server_.url(), "Qwen/Tiny", absl::Seconds(5));
    EXPECT_TRUE(s.ok()) << s.status();
    return *std::move(s);
  }
  void ExpectSameFiles() {
    for (const auto& e : fs::directory_iterator(mirror_dir())) {
      const std::string name = e.path().filename().string();
      EXPECT_EQ(testing::ReadFileOrEmpty(dst_root() + "/Tiny/" + name), testing::ReadFileOrEmpty(e.path().string()))
          << name;
    }
  }
  FetchOptions Options() {
    FetchOptions o;
    o.reserve_bytes = 0;
    return o;
  }

  testing::TempDir tmp_;
  testing::TinyModel model_;
  testing::RangeHttpServer server_{tmp_.Join("mirror/Qwen/Tiny")};
};

TEST_F(HttpModelSourceTest, ListsTheRepositoryFromItsIndexAndFetchesEveryShardVerified) {
  auto source = Source();
  auto files = source->List("Tiny");
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<std::string> names;
  for (const auto& f : *files) {
    names.push_back(f.name);
    EXPECT_EQ(f.size, static_cast<int64_t>(fs::file_size(mirror_dir() + "/" + f.name))) << f.name;
  }
  EXPECT_THAT(names, ::testing::ElementsAre("config.json", Shard(1), Shard(2), Shard(3),
                                            "model.safetensors.index.json", "sha256sums"));
  ModelFetcher fetcher(dst_root());
  auto r = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->files, 6);
  EXPECT_EQ(r->files_hashed, 5);  // every file but the manifest, against its sha256
  EXPECT_EQ(r->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << r->weights.DebugString();
  ExpectSameFiles();
}

TEST_F(HttpModelSourceTest, ConnectionCutHalfWayThroughAShardResumesWithARangeRequest) {
  const int64_t shard_size = static_cast<int64_t>(fs::file_size(mirror_dir() + "/" + Shard(2)));
  const int64_t cut = shard_size / 2;
  server_.CutNextBodyOf(Shard(2), cut);
  ModelFetcher fetcher(dst_root());
  auto source = Source();
  auto first = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_THAT(first.status().message(), HasSubstr("fetch again to resume"));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  const std::string part = fetcher.PartialDir("Tiny") + "/" + Shard(2) + ".part";
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(part)), cut);

  auto second = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GE(second->bytes_resumed, cut);
  EXPECT_LT(second->bytes_copied, second->bytes_total);
  EXPECT_EQ(second->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN);
  ExpectSameFiles();
  EXPECT_THAT(server_.Requests(), Contains(absl::StrCat("GET ", Shard(2), " bytes=", cut, "-")));
}

TEST_F(HttpModelSourceTest, AMirrorThatIgnoresRangeIsReadFromTheStartAndStillResumesCorrectly) {
  server_.IgnoreRange(true);
  server_.CutNextBodyOf(Shard(3), 1000);
  ModelFetcher fetcher(dst_root());
  auto source = Source();
  ASSERT_EQ(fetcher.Fetch(*source, "Tiny", Options()).status().code(), absl::StatusCode::kUnavailable);
  auto second = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_TRUE(second.ok()) << second.status();
  ExpectSameFiles();
}

TEST_F(HttpModelSourceTest, AShardCorruptedOnTheMirrorIsRefusedWithNothingHalfWritten) {
  // Same length and header, one data byte flipped: only the sha256 can tell.
  {
    const std::string shard = mirror_dir() + "/" + Shard(2);
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(shard) - 10));
    f.put('\x7f');
  }
  ModelFetcher fetcher(dst_root());
  auto source = Source();
  auto r = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(Shard(2)));
  EXPECT_THAT(r.status().message(), HasSubstr("mirror http://127.0.0.1:"));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
}

TEST_F(HttpModelSourceTest, ATruncatedShardOnTheMirrorIsRefusedByItsHeader) {
  fs::remove(mirror_dir() + "/sha256sums");
  fs::resize_file(mirror_dir() + "/" + Shard(1), fs::file_size(mirror_dir() + "/" + Shard(1)) - 100);
  ModelFetcher fetcher(dst_root());
  auto source = Source();
  auto r = fetcher.Fetch(*source, "Tiny", Options());
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(Shard(1)));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
}

TEST_F(HttpModelSourceTest, MissingRepositoryAndBadUrlsAreClearErrors) {
  // (The test server serves its directory under any repository name: an
  // empty one has no such model.)
  fs::create_directories(tmp_.Join("empty"));
  testing::RangeHttpServer empty(tmp_.Join("empty"));
  auto missing = HttpModelSource::Create(empty.url(), "Qwen/Nope");
  ASSERT_TRUE(missing.ok());
  auto l = (*missing)->List("Nope");
  EXPECT_EQ(l.status().code(), absl::StatusCode::kNotFound) << l.status();
  EXPECT_THAT(l.status().message(), HasSubstr("Qwen/Nope: config.json: HTTP 404"));

  EXPECT_EQ(ParseMirrorUrl("https://mirror/hf").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(ParseMirrorUrl("ftp://mirror").status().message(), HasSubstr("does not start with http://"));
  EXPECT_THAT(ParseMirrorUrl("http://mirror:99999").status().message(), HasSubstr("invalid port"));
  EXPECT_THAT(HttpModelSource::Create(server_.url(), "../etc").status().message(), HasSubstr("'..'"));
  auto u = ParseMirrorUrl("http://10.0.0.5:8080/hf/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.0.0.5");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->prefix, "/hf");

  // Nothing listens: UNAVAILABLE naming the mirror.
  auto gone = HttpModelSource::Create("http://127.0.0.1:1", "Qwen/Tiny", absl::Seconds(2));
  ASSERT_TRUE(gone.ok());
  auto g = (*gone)->List("Tiny");
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnavailable) << g.status();
  EXPECT_THAT(g.status().message(), HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace dcu::agent
