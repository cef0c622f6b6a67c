#include "dcuctl/diagnose_commands.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "dcuctl/exit_codes.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string SourceDir() {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}
std::string Corpus(const std::string& name) {
  return SourceDir() + "/tests/data/launch-logs/" + name;
}
std::string Rules() { return SourceDir() + "/deploy/diagnosis/rules.txtpb"; }

std::string WriteTemp(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

TEST(DiagnoseLogTest, JsonHasTheDocumentedShape) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("vllm-27508_no_cache_blocks_enginecore.log");
  args.rules_path = Rules();
  args.output = "json";
  std::ostringstream out, err;
  ASSERT_EQ(RunDiagnoseLog(args, out, err), 8) << err.str();
  nlohmann::json j = nlohmann::json::parse(out.str());
  ASSERT_TRUE(j.contains("findings"));
  ASSERT_TRUE(j["findings"].is_array());
  ASSERT_GE(j["findings"].size(), 1u);
  const auto& f = j["findings"][0];
  EXPECT_EQ(f["class"], "no_cache_blocks");
  EXPECT_TRUE(f["confidence"].is_number());
  EXPECT_GT(f["confidence"].get<double>(), 0.5);
  ASSERT_TRUE(f["evidence"].is_array());
  EXPECT_THAT(f["evidence"][0].get<std::string>(),
              HasSubstr("No available memory for the cache blocks"));
  EXPECT_EQ(f["remediation"]["kind"], "auto");
  EXPECT_EQ(f["remediation"]["action"], "add_arg");
  EXPECT_EQ(f["remediation"]["params"]["flag"], "--kv-cache-memory-bytes");
  EXPECT_EQ(j["lines_examined"], 9);
  EXPECT_TRUE(err.str().empty());
}

TEST(DiagnoseLogTest, FactsFillPlaceholders) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("seed003_no_cache_blocks.log");
  args.rules_path = Rules();
  args.output = "json";
  args.facts = {"memory_plan.kv_cache_bytes=1073741824", "stack.accepts_kv_cache_memory_bytes=true"};
  std::ostringstream out, err;
  ASSERT_EQ(RunDiagnoseLog(args, out, err), 8) << err.str();
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["findings"][0]["remediation"]["params"]["value"], "1073741824");
  EXPECT_TRUE(j["findings"][0]["missing_facts"].empty());
}

TEST(DiagnoseLogTest, TableListsClassEvidenceAndWhatToDo) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("rocm-4386_invalid_device_function_7900xt.log");
  args.rules_path = Rules();
  std::ostringstream out, err;
  ASSERT_EQ(RunDiagnoseLog(args, out, err), 8) << err.str();
  std::string table = out.str();
  EXPECT_THAT(table, HasSubstr("RANK"));
  EXPECT_THAT(table, HasSubstr("hip_invalid_device_function"));
  EXPECT_THAT(table, HasSubstr("failover mark_broken=stack_arch"));
  EXPECT_THAT(table, HasSubstr("evidence L4: RuntimeError: HIP error: invalid device function"));
  EXPECT_THAT(table, HasSubstr("what to do:"));
  // The NCCL shutdown warning of the same log is not a finding.
  EXPECT_THAT(table, ::testing::Not(HasSubstr("nccl_rccl_init_failure")));
  // The excerpt ends inside the API server's own traceback, cut before its
  // error line: the table says so, and names the error before it.
  EXPECT_THAT(table, HasSubstr("died in: (the error line is missing) (innermost frame: run in "));
  EXPECT_THAT(table, HasSubstr("last error before it L4: RuntimeError: HIP error: invalid device "
                               "function"));
}

// A log cut inside a traceback: the finding says it rests on the frames, and
// JSON carries the basis, the explanation and the terminal error's frames.
TEST(DiagnoseLogTest, FramesOnlyFindingSaysSo) {
  // A vLLM worker's traceback cut inside communicator set-up (the frames-only
  // OOM rule this test once used was removed in the seventh rules round:
  // wrong on more unseen logs than it was right on).
  DiagnoseLogArgs args;
  args.log_path = SourceDir() +
                  "/tests/data/diagnosis-corpus/dev/nccl-1297_ray_job_pp_group_truncated.log";
  args.rules_path = Rules();
  {
    std::ostringstream out, err;
    ASSERT_EQ(RunDiagnoseLog(args, out, err), kExitFindings) << err.str();
    EXPECT_THAT(out.str(), HasSubstr("note: inferred from the traceback frames; the error line is "
                                     "missing"));
    EXPECT_THAT(out.str(), HasSubstr("died in: (the error line is missing) (innermost frame: "
                                     "initialize_model_parallel in "));
  }
  args.output = "json";
  std::ostringstream out, err;
  ASSERT_EQ(RunDiagnoseLog(args, out, err), kExitFindings) << err.str();
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["findings"][0]["class"], "nccl_rccl_init_failure");
  EXPECT_EQ(j["findings"][0]["basis"], "traceback_frames");
  EXPECT_EQ(j["terminal_error"]["error_line_missing"], true);
  EXPECT_EQ(j["terminal_error"]["frames"].back()["function"], "initialize_model_parallel");
}

TEST(DiagnoseLogTest, UnknownExitsZero) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("sglang-2468_warmup_502_unknown.log");
  args.rules_path = Rules();
  std::ostringstream out, err;
  EXPECT_EQ(RunDiagnoseLog(args, out, err), 0);
  EXPECT_THAT(out.str(), HasSubstr("unknown"));
}

TEST(DiagnoseLogTest, TailKeepsOnlyTheLastLines) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("rocm-5668_wrong_platform_cuda_wheel.log");
  args.rules_path = Rules();
  args.output = "json";
  args.tail_lines = 3;
  args.fallback_model_path = "none";  // the rules alone
  std::ostringstream out, err;
  // The last three lines are traceback frames without a signature.
  EXPECT_EQ(RunDiagnoseLog(args, out, err), 0) << out.str();
  EXPECT_EQ(nlohmann::json::parse(out.str())["lines_examined"], 3);
}

// With the learned fallback (the model built into the binary: no file is
// found from the test's directory unless the source tree is the cwd), the
// same three frames get a guess that says it is one and only asks a person.
TEST(DiagnoseLogTest, LearnedFallbackGuessSaysSoAndCanBeSwitchedOff) {
  DiagnoseLogArgs args;
  args.log_path = Corpus("rocm-5668_wrong_platform_cuda_wheel.log");
  args.rules_path = Rules();
  args.output = "json";
  args.tail_lines = 3;
  std::ostringstream out, err;
  RunDiagnoseLog(args, out, err);
  auto json = nlohmann::json::parse(out.str());
  const auto& top = json["findings"][0];
  if (top["class"] != "unknown") {
    EXPECT_EQ(top["basis"], "learned_fallback");
    EXPECT_EQ(top["remediation"]["kind"], "human");
    EXPECT_LE(top["confidence"].get<double>(), 0.3);
  }
  args.fallback_model_path = "/nonexistent/fallback_model.tsv";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunDiagnoseLog(args, out2, err2), 2);
  EXPECT_NE(err2.str().find("fallback model"), std::string::npos) << err2.str();
}

TEST(DiagnoseLogTest, OtherRulesFileIsUsed) {
  std::string rules = WriteTemp("diagnose_custom_rules.txtpb", R"pb(
    rule {
      id: "site.gateway_502"
      failure_class: "site_proxy_error"
      any: "Response \\[502\\]"
      confidence: 0.8
      remediation { kind: REMEDIATION_KIND_HUMAN action: "human" summary: "fix the proxy" }
    })pb");
  DiagnoseLogArgs args;
  args.log_path = Corpus("sglang-2468_warmup_502_unknown.log");
  args.rules_path = rules;
  args.output = "json";
  std::ostringstream out, err;
  ASSERT_EQ(RunDiagnoseLog(args, out, err), 8) << err.str();
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["findings"][0]["class"], "site_proxy_error");
  EXPECT_EQ(j["findings"][0]["remediation"]["kind"], "human");
  EXPECT_EQ(j["rules_source"], rules);
  std::remove(rules.c_str());
}

TEST(DiagnoseLogTest, BadInputsExitTwoWithAClearMessage) {
  {
    DiagnoseLogArgs args;
    std::ostringstream out, err;
    EXPECT_EQ(RunDiagnoseLog(args, out, err), 2);
    EXPECT_THAT(err.str(), HasSubstr("--log FILE is required"));
  }
  {
    DiagnoseLogArgs args;
    args.log_path = ::testing::TempDir() + "/no_such.log";
    args.rules_path = Rules();
    std::ostringstream out, err;
    EXPECT_EQ(RunDiagnoseLog(args, out, err), 2);
    EXPECT_THAT(err.str(), HasSubstr("no_such.log"));
  }
  {
    std::string bad = WriteTemp("diagnose_bad_rules.txtpb", "rule {\n  id: \"a\"\n  bogus: 1\n}\n");
    DiagnoseLogArgs args;
    args.log_path = Corpus("seed003_rsmi_init.log");
    args.rules_path = bad;
    std::ostringstream out, err;
    EXPECT_EQ(RunDiagnoseLog(args, out, err), 2);
    EXPECT_THAT(err.str(), HasSubstr(bad + ":3:"));
    std::remove(bad.c_str());
  }
  {
    DiagnoseLogArgs args;
    args.log_path = Corpus("seed003_rsmi_init.log");
    args.rules_path = Rules();
    args.output = "yaml";
    std::ostringstream out, err;
    EXPECT_EQ(RunDiagnoseLog(args, out, err), 2);
    EXPECT_THAT(err.str(), HasSubstr("unknown output format 'yaml'"));
  }
  {
    DiagnoseLogArgs args;
    args.log_path = Corpus("seed003_rsmi_init.log");
    args.rules_path = Rules();
    args.facts = {"no_equals_sign"};
    std::ostringstream out, err;
    EXPECT_EQ(RunDiagnoseLog(args, out, err), 2);
    EXPECT_THAT(err.str(), HasSubstr("is not KEY=VALUE"));
  }
}

TEST(RenderDiagnosisTest, RendersAResultFromTheController) {
  dcufleet::v1::DiagnosisResult result;
  auto* f = result.add_findings();
  f->set_failure_class("port_in_use");
  f->set_confidence(0.9);
  auto* e = f->add_evidence();
  e->set_line(12);
  e->set_text("OSError: [Errno 98] Address already in use");
  f->mutable_remediation()->set_kind(dcufleet::v1::REMEDIATION_KIND_AUTO);
  f->mutable_remediation()->set_action("change_port");
  result.set_lines_examined(40);
  std::ostringstream out, err;
  ASSERT_EQ(RenderDiagnosis(result, "json", out, err), 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["findings"][0]["class"], "port_in_use");
  EXPECT_EQ(j["findings"][0]["evidence"][0], "OSError: [Errno 98] Address already in use");
  EXPECT_EQ(j["findings"][0]["remediation"]["action"], "change_port");
  std::ostringstream table;
  ASSERT_EQ(RenderDiagnosis(result, "table", table, err), 0);
  EXPECT_THAT(table.str(), HasSubstr("evidence L12: OSError"));
  EXPECT_EQ(RenderDiagnosis(result, "xml", table, err), 2);
}

TEST(DiagnoseLogTest, SaysWhereTheLogSaysItRan) {
  DiagnoseLogArgs args;
  args.log_path = WriteTemp("context.log",
                            "INFO 05-09 08:19:28 [__init__.py:239] Automatically detected platform rocm.\n"
                            "INFO 05-09 08:19:31 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
                            "error: unsupported target: 'gfx928'\n");
  args.rules_path = Rules();
  std::ostringstream out, err;
  RunDiagnoseLog(args, out, err);
  EXPECT_THAT(out.str(), HasSubstr("ran on: vllm 0.8.5.post1 (L2), rocm (L1), gfx928 (L3)\n")) << out.str();
  args.output = "json";
  std::ostringstream json;
  RunDiagnoseLog(args, json, err);
  nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["context"]["engine_version"]["value"], "0.8.5.post1") << j.dump();
  EXPECT_EQ(j["context"]["platform"]["line"], 1) << j.dump();
  EXPECT_EQ(j["context"]["arch"]["value"], "gfx928") << j.dump();
  // A log that says nothing of it has no context at all.
  args.log_path = Corpus("vllm-27508_no_cache_blocks_enginecore.log");
  std::ostringstream none;
  RunDiagnoseLog(args, none, err);
  EXPECT_FALSE(nlohmann::json::parse(none.str()).contains("context")) << none.str();
}

// Seed 000's log is one line; the facts a person gives (as the controller
// does) say where it ran, and the hidden cause says it rests on them.
TEST(DiagnoseLogTest, GivenFactsAreWhatAHiddenCauseRestsOn) {
  DiagnoseLogArgs args;
  args.log_path = SourceDir() + "/tests/data/launch-logs/seed000_head_size_80.log";
  args.rules_path = Rules();
  std::ostringstream plain, err;
  RunDiagnoseLog(args, plain, err);
  EXPECT_THAT(plain.str(), Not(HasSubstr("triton_unsupported_gpu_target"))) << plain.str();
  args.facts = {"arch=gfx928", "stack.triton_version=3.1.0"};
  std::ostringstream out;
  RunDiagnoseLog(args, out, err);
  EXPECT_THAT(out.str(), HasSubstr("triton_unsupported_gpu_target")) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("      rests on: arch gfx928 (given), triton 3.1.0 (given)\n"))
      << out.str();
  args.output = "json";
  std::ostringstream json;
  RunDiagnoseLog(args, json, err);
  nlohmann::json j = nlohmann::json::parse(json.str());
  ASSERT_EQ(j["findings"].size(), 2u) << j.dump();
  EXPECT_EQ(j["findings"][1]["basis"], "expected_next") << j.dump();
  EXPECT_EQ(j["findings"][1]["conditions"],
            nlohmann::json({"arch gfx928 (given)", "triton 3.1.0 (given)"}));
  EXPECT_EQ(j["findings"][0]["conditions"], nlohmann::json::array());
}

}  // namespace
}  // namespace dcu::dcuctl
