#include "modelkit/catalog_loader.h"

#include <filesystem>
#include <fstream>

#include "modelkit/argv_template.h"
#include "modelkit/names.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::modelkit {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr char kGoodStack[] = R"pb(
stack {
  id: "test-stack"
  engine: "vllm"
  engine_version: "0.9.2"
  runtime_kind: RUNTIME_BARE
  runtime_location: "/opt/conda/envs/x"
  arches: "gfx928"
  argv_template: ["{python}", "-m", "vllm.entrypoints.openai.api_server", "--model", "{model_path}"]
}
)pb";

TEST(CatalogLoaderTest, LoadsTheShippedCatalog) {
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  std::vector<std::string> ids;
  for (const auto& s : catalog->stack()) ids.push_back(s.id());
  EXPECT_THAT(ids, UnorderedElementsAre("vllm-0.11.0-bare-dtk2604", "vllm-0.9.2-bare-dtk2504",
                                        "vllm-0.9.2-image-dtk2504", "vllm-0.6.2-image-dtk2404",
                                        "vllm-0.18-image-dtk2604"));
  std::vector<std::string> models;
  for (const auto& m : catalog->model()) models.push_back(m.name());
  EXPECT_THAT(models, UnorderedElementsAre(
                          "qwen3-0.6b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
                          "deepseek-r1-distill-qwen-32b", "qwen2.5-7b-instruct",
                          "qwen2.5-32b-instruct", "qwen2.5-72b-instruct", "llama-3.1-8b",
                          "llama-3.1-70b", "qwen3.5-27b"));
  EXPECT_GE(catalog->evidence_size(), 15);
  for (const auto& s : catalog->stack()) {
    EXPECT_THAT(s.origin(), HasSubstr("catalog:")) << s.id();
    EXPECT_FALSE(s.source().empty()) << s.id() << " must cite its seed";
  }
  for (const auto& e : catalog->evidence()) EXPECT_FALSE(e.source().empty()) << e.evidence_id();
}

TEST(CatalogLoaderTest, SeedRecipeOfTheGfx906ImageIsComplete) {
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const dcufleet::v1::Stack* s = nullptr;
  for (const auto& st : catalog->stack()) {
    if (st.id() == "vllm-0.18-image-dtk2604") s = &st;
  }
  ASSERT_NE(s, nullptr);
  EXPECT_THAT(s->env().ld_library_path_prefix(),
              ::testing::ElementsAre("/opt/dtk/.hyhal/rocm_smi/lib", "/opt/dtk/lib",
                                     "/opt/dtk/lib64", "/opt/hyhal/lib", "/opt/hyhal/lib64"));
  ASSERT_EQ(s->arch_recipes_size(), 1);
  const auto& r = s->arch_recipes(0);
  EXPECT_EQ(r.arch(), "gfx906");
  std::map<std::string, std::string> vars;
  for (const auto& v : r.env().variables()) vars[v.name()] = v.value();
  EXPECT_EQ(vars["VLLM_ROCM_USE_SKINNY_GEMM"], "0");
  EXPECT_EQ(vars["TRITON_HIP_LLD_PATH"], "/opt/dtk/llvm/bin/ld.lld");
  EXPECT_THAT(r.extra_args(), ::testing::Contains("--enforce-eager"));
  EXPECT_THAT(r.extra_args(), ::testing::Contains("--kv-cache-memory-bytes"));
  EXPECT_TRUE(s->capabilities().accepts_kv_cache_memory_bytes());
}

TEST(CatalogLoaderTest, TextRoundTripIsLossless) {
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(*catalog, &text));
  auto again = ParseCatalogText("printed.txtpb", text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*catalog, *again));
}

TEST(CatalogLoaderTest, SyntaxErrorNamesFileLineAndColumn) {
  std::string text = std::string(kGoodStack) + "stack {\n  id: \"x\"\n  enigne: \"vllm\"\n}\n";
  auto r = ParseCatalogText("bad.txtpb", text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // kGoodStack takes lines 1-10 (it starts with a newline); the misspelt field is line 13.
  EXPECT_THAT(r.status().message(), HasSubstr("bad.txtpb:13:"));
  EXPECT_THAT(r.status().message(), HasSubstr("enigne"));
}

TEST(CatalogLoaderTest, BadArchIsReportedAtItsLine) {
  std::string text = R"pb(stack {
  id: "s1"
  engine: "vllm"
  engine_version: "0.11.0"
  runtime_kind: RUNTIME_BARE
  runtime_location: "/opt/env"
  arches: "gfx928"
  arches: "gfx18446744073709551615"
  argv_template: ["python", "-m", "vllm", "--model", "{model_path}"]
}
)pb";
  auto r = ParseCatalogText("arch.txtpb", text);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("arch.txtpb:8:3:"));
  EXPECT_THAT(r.status().message(), HasSubstr("gfx18446744073709551615"));
}

TEST(CatalogLoaderTest, RejectsUnknownPlaceholderShellAndLdLibraryPathVariable) {
  std::string text = R"pb(stack {
  id: "s2"
  engine: "vllm"
  engine_version: "0.11.0"
  runtime_kind: RUNTIME_CONTAINER
  runtime_location: "img:1"
  env { variables { name: "LD_LIBRARY_PATH" value: "/a:/b" } variables { name: "1BAD" value: "x" } }
  argv_template: ["bash", "-c", "vllm serve {model_path} --port {prot}"]
}
)pb";
  auto r = ParseCatalogText("s2.txtpb", text);
  ASSERT_FALSE(r.ok());
  std::string msg(r.status().message());
  EXPECT_THAT(msg, HasSubstr("unknown placeholder '{prot}'"));
  EXPECT_THAT(msg, HasSubstr("not through a shell"));
  EXPECT_THAT(msg, HasSubstr("LD_LIBRARY_PATH is built from the ordered prefixes"));
  EXPECT_THAT(msg, HasSubstr("invalid environment variable name '1BAD'"));
  EXPECT_THAT(msg, HasSubstr("s2.txtpb:7:"));
  EXPECT_THAT(msg, HasSubstr("s2.txtpb:8:"));
}

TEST(CatalogLoaderTest, DuplicateIdsAcrossFilesAndUnknownStackAreRejectedWhole) {
  std::string evidence = R"pb(evidence {
  evidence_id: "e1"
  stack_id: "no-such-stack"
  arch: "gfx928"
  outcome: LAUNCH_READY
  at_ms: 1
}
)pb";
  auto r = ParseCatalogTexts({{"a.txtpb", kGoodStack}, {"b.txtpb", kGoodStack}, {"c.txtpb", evidence}});
  ASSERT_FALSE(r.ok());
  std::string msg(r.status().message());
  EXPECT_THAT(msg, HasSubstr("b.txtpb:2:1: duplicate stack id 'test-stack' (first at a.txtpb:2:1)"));
  EXPECT_THAT(msg, HasSubstr("c.txtpb:1:1: evidence 'e1' refers to unknown stack 'no-such-stack'"));
  // Known from the store: accepted.
  CatalogLoadOptions opts;
  opts.known_stack_ids = {"no-such-stack"};
  EXPECT_TRUE(ParseCatalogText("c.txtpb", evidence, opts).ok());
}

TEST(CatalogLoaderTest, FailedEvidenceNeedsAClass) {
  std::string text = std::string(kGoodStack) + R"pb(evidence {
  evidence_id: "e2"
  stack_id: "test-stack"
  arch: "gfx928"
  outcome: LAUNCH_FAILED
  at_ms: 5
}
)pb";
  auto r = ParseCatalogText("e.txtpb", text);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a failure needs its failure_class"));
}

TEST(CatalogLoaderTest, LoadDirOnMissingDirectoryIsNotFound) {
  auto r = LoadCatalogDir("/nonexistent/catalog");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(CatalogLoaderTest, OneBadFileInADirectoryRejectsTheWholeDirectory) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("catalog_loader_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "stacks");
  std::ofstream(dir / "stacks/good.txtpb") << kGoodStack;
  std::ofstream(dir / "stacks/zbad.txtpb") << "stack { id: \"y\" \n";
  auto r = LoadCatalogDir(dir.string());
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("zbad.txtpb:2:"));
  fs::remove_all(dir);
}

TEST(NamesTest, ArchNames) {
  for (const char* ok : {"gfx906", "gfx928", "gfx90a", "gfx942", "gfx1100", "gfx936", "sm_90", "sm_100a"}) {
    EXPECT_TRUE(IsValidArchName(ok)) << ok;
  }
  for (const char* bad : {"gfx18446744073709551615", "gfx", "gfx9", "GFX906", "gfx90A", "sm_9", "", "k100"}) {
    EXPECT_FALSE(IsValidArchName(bad)) << bad;
  }
}

TEST(ArgvTemplateTest, RendersAndRejectsMissingValues) {
  auto argv = RenderArgv({"{python}", "--model", "{model_path}", "--port={port}"},
                         {{"python", "/env/bin/python"}, {"model_path", "/m"}, {"port", "8001"}});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ::testing::ElementsAre("/env/bin/python", "--model", "/m", "--port=8001"));
  auto missing = RenderArgv({"--tp", "{tp}"}, {});
  EXPECT_THAT(missing.status().message(), HasSubstr("argv[1]: no value for placeholder '{tp}'"));
  EXPECT_FALSE(ArgvPlaceholders("{model_path").ok());
  EXPECT_FALSE(ArgvPlaceholders("a}b").ok());
}

}  // namespace
}  // namespace dcu::modelkit
