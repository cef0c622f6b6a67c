// ModelFetcher on real files: a tiny safetensors checkpoint the test writes,
// copied from a DirectoryModelSource into a second model root; interrupted
// and resumed; a damaged source refused with nothing visible in the root.
#include "agent/fetch/model_fetch.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    out.push_back(fs::relative(e.path(), dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Passes reads through to a real source and fails after `fail_after` bytes
// (the network dropping mid-transfer).
class FlakySource : public ModelSource {
 public:
  FlakySource(ModelSource& inner, int64_t fail_after) : inner_(inner), budget_(fail_after) {}
  std::string Describe() const override { return "flaky " + inner_.Describe(); }
  absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) override { return inner_.List(model); }
  absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                    const std::function<absl::Status(absl::string_view)>& sink) override {
    reads.push_back(absl::StrCat(name, "@", offset));
    return inner_.Read(model, name, offset, [&](absl::string_view chunk) -> absl::Status {
      if (budget_ <= 0) return absl::UnavailableError("connection reset");
      if (static_cast<int64_t>(chunk.size()) > budget_) chunk = chunk.substr(0, budget_);
      budget_ -= static_cast<int64_t>(chunk.size());
      absl::Status s = sink(chunk);
      if (s.ok() && budget_ <= 0) return absl::UnavailableError("connection reset");
      return s;
    });
  }
  std::vector<std::string> reads;

 private:
  ModelSource& inner_;
  int64_t budget_;
};

class ModelFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(src_root() + "/Tiny");
    fs::create_directories(dst_root());
    model_.hidden = 256;
    model_.intermediate = 512;
    model_.vocab = 1024;
    model_.layers = 4;
    model_.shards = 3;
    testing::WriteTinyModel(src_root() + "/Tiny", model_);
  }
  std::string src_root() const { return tmp_.Join("src"); }
  std::string dst_root() const { return tmp_.Join("dst"); }
  std::string Shard(int i) const { return absl::StrCat("model-0000", i, "-of-0000", model_.shards, ".safetensors"); }
  void WriteManifest() {
    std::ofstream out(src_root() + "/Tiny/sha256sums");
    for (const auto& e : fs::directory_iterator(src_root() + "/Tiny")) {
      if (e.path().filename() == "sha256sums") continue;
      out << common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())) << "  "
          << e.path().filename().string() << "\n";
    }
  }
  int64_t SourceBytes() {
    int64_t n = 0;
    for (const auto& e : fs::directory_iterator(src_root() + "/Tiny")) n += fs::file_size(e.path());
    return n;
  }

  testing::TempDir tmp_;
  testing::TinyModel model_;
};

TEST_F(ModelFetchTest, CopiesEveryFileVerifiedAndRenamesIntoPlace) {
  WriteManifest();
  DirectoryModelSource source(src_root(), /*chunk_bytes=*/4096);
  ModelFetcher fetcher(dst_root());
  std::vector<FetchProgress> seen;
  FetchOptions o;
  o.reserve_bytes = 0;
  o.progress_every = absl::ZeroDuration();
  o.progress = [&](const FetchProgress& p) { seen.push_back(p); };
  auto r = fetcher.Fetch(source, "Tiny", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->path, dst_root() + "/Tiny");
  EXPECT_EQ(r->bytes_total, SourceBytes());
  EXPECT_EQ(r->bytes_copied, SourceBytes());
  EXPECT_EQ(r->bytes_resumed, 0);
  EXPECT_EQ(r->files_hashed, r->files - 1);  // every file but the manifest itself
  EXPECT_EQ(r->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN) << r->weights.DebugString();
  for (const auto& e : fs::directory_iterator(src_root() + "/Tiny")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(testing::ReadFileOrEmpty(dst_root() + "/Tiny/" + name), testing::ReadFileOrEmpty(e.path().string()))
        << name;
  }
  // Nothing of the transfer is left but the lock file.
  EXPECT_THAT(Entries(dst_root() + "/.partial"), ::testing::ElementsAre("Tiny.lock"));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().bytes_done, SourceBytes());
  EXPECT_EQ(seen.back().files_done, r->files);
  EXPECT_EQ(seen.back().eta, absl::ZeroDuration());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);

  // A second fetch of a present model does nothing.
  auto again = fetcher.Fetch(source, "Tiny", o);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
}

TEST_F(ModelFetchTest, InterruptedHalfWayResumesFromThePartFile) {
  WriteManifest();
  DirectoryModelSource inner(src_root(), /*chunk_bytes=*/4096);
  const int64_t total = SourceBytes();
  FlakySource flaky(inner, total / 2);
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  auto first = fetcher.Fetch(flaky, "Tiny", o);
  ASSERT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_THAT(first.status().message(), HasSubstr("fetch again to resume"));
  // Nothing is visible as a model; the bytes are kept under .partial.
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  int64_t kept = 0;
  bool has_part = false;
  for (const auto& e : fs::directory_iterator(fetcher.PartialDir("Tiny"))) {
    kept += fs::file_size(e.path());
    has_part |= e.path().extension() == ".part";
  }
  EXPECT_TRUE(has_part);
  EXPECT_EQ(kept, total / 2);

  FlakySource healed(inner, /*fail_after=*/total);
  auto second = fetcher.Fetch(healed, "Tiny", o);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->bytes_resumed, total / 2);
  EXPECT_EQ(second->bytes_copied, total - total / 2);
  EXPECT_EQ(second->files_hashed, second->files - 1);  // the resumed shard's prefix was hashed too
  // The interrupted file was read from where it stopped, not from 0.
  bool resumed_mid_file = false;
  for (const auto& r : healed.reads) resumed_mid_file |= !absl::EndsWith(r, "@0");
  EXPECT_TRUE(resumed_mid_file) << absl::StrJoin(healed.reads, ", ");
  for (int i = 1; i <= model_.shards; ++i) {
    EXPECT_EQ(testing::ReadFileOrEmpty(dst_root() + "/Tiny/" + Shard(i)),
              testing::ReadFileOrEmpty(src_root() + "/Tiny/" + Shard(i)));
  }
}

// Issue 19: "a manifest recorded when a directory first verified clean". A
// source without one: the copy hashes each shard as it arrives (a resumed
// one from its .part) and writes sha256sums once the directory verifies, so
// the next content check here, and every copy made from this node, compare
// against what arrived.
TEST_F(ModelFetchTest, ACopyFromASourceWithoutAManifestRecordsOne) {
  DirectoryModelSource inner(src_root(), /*chunk_bytes=*/4096);
  const int64_t total = SourceBytes();
  FlakySource flaky(inner, total / 2);
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  ASSERT_EQ(fetcher.Fetch(flaky, "Tiny", o).status().code(), absl::StatusCode::kUnavailable);
  FlakySource healed(inner, total);
  auto r = fetcher.Fetch(healed, "Tiny", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->manifest_recorded) << r->manifest_error;
  EXPECT_EQ(r->files_hashed, 0);  // nothing to check against: recorded, not checked
  const std::string text = testing::ReadFileOrEmpty(dst_root() + "/Tiny/sha256sums");
  for (int i = 1; i <= model_.shards; ++i) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat(
                          common::Sha256Hex(testing::ReadFileOrEmpty(src_root() + "/Tiny/" + Shard(i))), "  ",
                          Shard(i), "\n")))
        << text;
  }
  EXPECT_FALSE(fs::exists(src_root() + "/Tiny/sha256sums"));  // the source is only read

  // A copy made from the copy is now checked against it: a byte flipped in
  // the first copy is caught by the second.
  const std::string second_root = tmp_.Join("second");
  fs::create_directories(second_root);
  {
    std::fstream f(dst_root() + "/Tiny/" + Shard(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(dst_root() + "/Tiny/" + Shard(2)) - 1));
    f.put('\x5a');
  }
  DirectoryModelSource from_copy(dst_root(), 4096);
  ModelFetcher second(second_root);
  auto bad = second.Fetch(from_copy, "Tiny", o);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("the manifest says"));
}

TEST_F(ModelFetchTest, RecordingAManifestCanBeTurnedOff) {
  DirectoryModelSource source(src_root(), 4096);
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  o.record_manifest = false;
  auto r = fetcher.Fetch(source, "Tiny", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->manifest_recorded);
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny/sha256sums"));
}

TEST_F(ModelFetchTest, TruncatedShardAtTheSourceIsRefusedAndNothingIsLeft) {
  const std::string shard = src_root() + "/Tiny/" + Shard(2);
  fs::resize_file(shard, fs::file_size(shard) - 1000);
  DirectoryModelSource source(src_root());
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  auto r = fetcher.Fetch(source, "Tiny", o);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(Shard(2)));
  EXPECT_THAT(r.status().message(), HasSubstr("damaged"));
  EXPECT_THAT(r.status().message(), HasSubstr("partial copy was removed"));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
}

TEST_F(ModelFetchTest, FlippedByteCaughtByTheManifestSha256) {
  WriteManifest();
  // Same length, same header: only the content check can see it.
  const std::string shard = src_root() + "/Tiny/" + Shard(1);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(shard) - 10));
    f.put('\x7f');
  }
  DirectoryModelSource source(src_root());
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  auto r = fetcher.Fetch(source, "Tiny", o);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("file '", Shard(1), "'")));
  EXPECT_THAT(r.status().message(), HasSubstr("the manifest says"));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
}

TEST_F(ModelFetchTest, MissingShardFailsTheDirectoryVerification) {
  fs::remove(src_root() + "/Tiny/" + Shard(3));
  DirectoryModelSource source(src_root());
  ModelFetcher fetcher(dst_root());
  FetchOptions o;
  o.reserve_bytes = 0;
  auto r = fetcher.Fetch(source, "Tiny", o);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("fails verification"));
  EXPECT_THAT(r.status().message(), HasSubstr(Shard(3)));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
}

TEST_F(ModelFetchTest, NotEnoughSpaceIsRefusedBeforeAnyByteIsWritten) {
  DirectoryModelSource source(src_root());
  ModelFetcher fetcher(dst_root(), common::RealClock::Get(),
                       [](const std::string&) -> absl::StatusOr<int64_t> { return 10000; });
  auto r = fetcher.Fetch(source, "Tiny", FetchOptions{});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("not enough disk space for model 'Tiny'"));
  EXPECT_THAT(r.status().message(), HasSubstr("nothing was written"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
}

// Lists the real files with sizes of its own choosing (a mirror's
// Content-Length, a peer's listing).
class ClaimingSource : public ModelSource {
 public:
  ClaimingSource(ModelSource& inner, int64_t claimed) : inner_(inner), claimed_(claimed) {}
  std::string Describe() const override { return "claiming " + inner_.Describe(); }
  absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) override {
    auto files = inner_.List(model);
    if (files.ok()) {
      for (auto& f : *files) f.size = claimed_;
    }
    return files;
  }
  absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                    const std::function<absl::Status(absl::string_view)>& sink) override {
    return inner_.Read(model, name, offset, sink);
  }

 private:
  ModelSource& inner_;
  int64_t claimed_;
};

// Sizes a source claims that add up past any model: refused before the sum
// is taken (two files of 2^62 bytes overflowed int64_t, wrapped negative and
// passed the disk-space check), and nothing is written.
TEST_F(ModelFetchTest, ListedSizesBeyondAnyModelAreRefusedBeforeTheSum) {
  DirectoryModelSource inner(src_root());
  ClaimingSource source(inner, int64_t{1} << 62);
  ModelFetcher fetcher(dst_root(), common::RealClock::Get(),
                       [](const std::string&) -> absl::StatusOr<int64_t> { return int64_t{1} << 40; });
  auto r = fetcher.Fetch(source, "Tiny", FetchOptions{});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("the listed sizes add up to more than 1.00 PiB"));
  EXPECT_THAT(r.status().message(), HasSubstr("is listed at 4611686018427387904 bytes"));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
  EXPECT_FALSE(fs::exists(dst_root() + "/Tiny"));
}

TEST_F(ModelFetchTest, RealStatvfsReportsTheTemporaryFileSystem) {
  auto free_bytes = StatvfsFreeBytes(dst_root());
  ASSERT_TRUE(free_bytes.ok()) << free_bytes.status();
  EXPECT_GT(*free_bytes, 0);
  EXPECT_EQ(StatvfsFreeBytes(tmp_.Join("absent")).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ModelFetchTest, OneTransferOfAModelAtATime) {
  DirectoryModelSource inner(src_root(), /*chunk_bytes=*/1024);
  ModelFetcher fetcher(dst_root());
  absl::Status nested;
  bool asked = false;
  FetchOptions o;
  o.reserve_bytes = 0;
  o.progress_every = absl::ZeroDuration();
  // While the first transfer runs, a second one of the same model is refused.
  o.progress = [&](const FetchProgress&) {
    if (asked) return;
    asked = true;
    ModelFetcher other(dst_root());
    nested = other.Fetch(inner, "Tiny", FetchOptions{}).status();
  };
  auto r = fetcher.Fetch(inner, "Tiny", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(nested.code(), absl::StatusCode::kAborted) << nested;
  EXPECT_THAT(nested.message(), HasSubstr("already running on this node"));
}

TEST_F(ModelFetchTest, HostileNamesAreRefused) {
  DirectoryModelSource source(src_root());
  ModelFetcher fetcher(dst_root());
  for (const std::string bad : {"", ".", "..", "../etc", "a/b", ".partial"}) {
    EXPECT_EQ(fetcher.Fetch(source, bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const std::string bad : {"/etc/passwd", "../x", "a/../../b", "a//b", ".hidden", "sub/.git/x"}) {
    EXPECT_EQ(CheckRelativeFileName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(CheckRelativeFileName("original/params.json").ok());
  // A symlink planted in the source directory that points out of it is
  // neither listed nor served.
  fs::create_symlink("/etc/hostname", src_root() + "/Tiny/escape.json");
  auto listing = source.List("Tiny");
  ASSERT_TRUE(listing.ok());
  for (const auto& f : *listing) EXPECT_NE(f.name, "escape.json");
  auto read = source.Read("Tiny", "escape.json", 0, [](absl::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kPermissionDenied) << read;
  EXPECT_EQ(source.List("Absent").status().code(), absl::StatusCode::kNotFound);
}

// The check-then-open race (issue 19, "the Resolve TOCTOU"): a directory of
// the model swapped for a link to outside between Resolve and open. A
// thread exchanges `sub` (a real directory) and a link to a directory
// outside the model atomically (renameat2 RENAME_EXCHANGE), over and over,
// while reads of sub/x.json go on: no read ever returns the outside file.
TEST_F(ModelFetchTest, ADirectorySwappedForALinkMidReadIsNotFollowed) {
  const std::string model = src_root() + "/Tiny";
  fs::create_directories(model + "/sub");
  fs::create_directories(tmp_.Join("outside"));
  std::ofstream(model + "/sub/x.json") << "INSIDE";
  std::ofstream(tmp_.Join("outside/x.json")) << "SECRET";
  fs::create_symlink(tmp_.Join("outside"), model + "/.swap");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string a = model + "/sub", b = model + "/.swap";
    while (!stop) ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
  });
  DirectoryModelSource source(src_root());
  int inside = 0, refused = 0, secret = 0;
  const absl::Time until = absl::Now() + absl::Milliseconds(800);
  while (absl::Now() < until) {
    std::string got;
    absl::Status r = source.Read("Tiny", "sub/x.json", 0, [&](absl::string_view c) {
      got.append(c.data(), c.size());
      return absl::OkStatus();
    });
    if (!r.ok()) {
      ++refused;
    } else if (got == "INSIDE") {
      ++inside;
    } else {
      ++secret;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(secret, 0) << "read the file outside the model " << secret << " times (" << inside << " inside, "
                       << refused << " refused)";
  EXPECT_GT(inside, 0) << refused << " refused";
}

}  // namespace
}  // namespace dcu::agent
