// common/path_confine: model directories stay inside the configured roots,
// whatever "..", symlinks or prefixes a request uses.
#include "common/path_confine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ConfinePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("models");
    fs::create_directories(root_ + "/qwen3-32b");
    fs::create_directories(dir_.Join("models2/evil"));
    fs::create_directories(dir_.Join("secret"));
    // Inside the root, pointing out of it.
    fs::create_directory_symlink(dir_.Join("secret"), root_ + "/escape");
    // Inside the root, pointing inside it.
    fs::create_directory_symlink(root_ + "/qwen3-32b", root_ + "/latest");
    // A root reached through a symlink still confines to its real place.
    fs::create_directory_symlink(root_, dir_.Join("models-link"));
  }
  testing::TempDir dir_;
  std::string root_;
};

TEST_F(ConfinePathTest, AllowsPathsInsideRootsAndReturnsRealPath) {
  auto r = ConfinePath(root_ + "/qwen3-32b", {root_});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, fs::canonical(root_ + "/qwen3-32b").string());
  auto link = ConfinePath(root_ + "/latest", {root_});
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(*link, fs::canonical(root_ + "/qwen3-32b").string());
  EXPECT_TRUE(ConfinePath(root_, {root_}).ok());
  EXPECT_TRUE(ConfinePath(root_ + "/./qwen3-32b/../qwen3-32b", {root_}).ok());
  EXPECT_TRUE(ConfinePath(dir_.Join("models-link/qwen3-32b"), {dir_.Join("models-link")}).ok());
  // Several roots: any of them.
  EXPECT_TRUE(ConfinePath(dir_.Join("secret"), {"/nonexistent-root", root_, dir_.Join("secret")}).ok());
}

TEST_F(ConfinePathTest, RefusesTraversal) {
  auto r = ConfinePath(root_ + "/../secret", {root_}, "spec.model_path");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("spec.model_path"));
  EXPECT_THAT(r.status().message(), HasSubstr("outside the model roots"));
  EXPECT_EQ(ConfinePath(root_ + "/qwen3-32b/../../../../../../etc", {root_}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ConfinePath("/etc/passwd", {root_}).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(ConfinePathTest, RefusesSymlinkEscape) {
  auto r = ConfinePath(root_ + "/escape", {root_});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("resolves to"));
  // Also when the symlink is only a middle component.
  fs::create_directories(dir_.Join("secret/deeper"));
  EXPECT_EQ(ConfinePath(root_ + "/escape/deeper", {root_}).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(ConfinePathTest, PrefixOfAnotherDirectoryIsNotInside) {
  EXPECT_EQ(ConfinePath(dir_.Join("models2/evil"), {root_}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(IsWithin("/models/a", "/models"));
  EXPECT_TRUE(IsWithin("/models", "/models"));
  EXPECT_FALSE(IsWithin("/models2", "/models"));
  EXPECT_TRUE(IsWithin("/anything", "/"));
}

TEST_F(ConfinePathTest, RefusesMalformedInput) {
  EXPECT_EQ(ConfinePath("", {root_}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfinePath("models/qwen3-32b", {root_}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfinePath(std::string("/tmp/a\0b", 8), {root_}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfinePath("/" + std::string(1 << 20, 'a'), {root_}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfinePath(root_ + "/absent", {root_}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ConfinePath(root_, {}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ConfinePath(root_, {"/nonexistent-root"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Relative roots are ignored rather than resolved against the cwd.
  EXPECT_EQ(ConfinePath(root_, {"models"}).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dcu::common
