// The gateway's data: the replicas file, model lookup, errors, API keys.
#include "gateway/api_keys.h"
#include "gateway/engine_load_scraper.h"
#include "gateway/file_replica_source.h"
#include "gateway/openai_errors.h"
#include "gateway/serving_table.h"

#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dcu::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ReplicasJsonTest, ParsesModelsAndReplicas) {
  auto set = ParseReplicasJson(R"({"models": [
      {"deployment": "qwen3-32b", "served_model_name": "Qwen/Qwen3-32B",
       "replicas": [{"host": "127.0.0.1", "port": 8001, "node": "n1"},
                    {"host": "10.0.0.2", "port": 8002, "ready": false}]},
      {"deployment": "glm"}]})");
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->models.size(), 2u);
  const ServedModel& m = set->models[0];
  EXPECT_EQ(m.EngineModelName(), "Qwen/Qwen3-32B");
  ASSERT_EQ(m.replicas.size(), 2u);
  EXPECT_EQ(m.replicas[0].Key(), "127.0.0.1:8001");
  EXPECT_TRUE(m.replicas[0].ready);
  EXPECT_EQ(m.replicas[0].node, "n1");
  EXPECT_FALSE(m.replicas[1].ready);
  EXPECT_EQ(m.replicas[1].index, 1);
  EXPECT_EQ(set->models[1].EngineModelName(), "glm");
  EXPECT_FALSE(set->models[1].AnyReady());
}

TEST(ReplicasJsonTest, BadInputNamesWhatIsWrong) {
  EXPECT_THAT(ParseReplicasJson("{").status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseReplicasJson(R"({"models": {}})").status().message(), HasSubstr("\"models\""));
  EXPECT_THAT(ParseReplicasJson(R"({"models": [{"replicas": []}]})").status().message(),
              HasSubstr("models[0]"));
  EXPECT_THAT(ParseReplicasJson(
                  R"({"models": [{"deployment": "a", "replicas": [{"host": "h", "port": 70000}]}]})")
                  .status()
                  .message(),
              HasSubstr("models[0].replicas[0].port"));
  EXPECT_THAT(
      ParseReplicasJson(R"({"models": [{"deployment": "a", "replicas": [{"port": 1}]}]})")
          .status()
          .message(),
      HasSubstr("\"host\""));
}

TEST(ServingTableTest, FindsByDeploymentThenServedNameAndListsNames) {
  auto set = ParseReplicasJson(R"({"models": [
      {"deployment": "a", "served_model_name": "org/A"},
      {"deployment": "org/A"},
      {"deployment": "b"}]})");
  ASSERT_TRUE(set.ok());
  // A deployment name wins over another deployment's served name.
  EXPECT_EQ(ServingTable::Find(*set, "org/A")->deployment, "org/A");
  EXPECT_EQ(ServingTable::Find(*set, "a")->deployment, "a");
  EXPECT_EQ(ServingTable::Find(*set, "c"), nullptr);
  EXPECT_EQ(ServingTable::Find(*set, ""), nullptr);
  EXPECT_THAT(ServingTable::Names(*set), ElementsAre("a", "b", "org/A"));
}

// A deployment scaled to zero does not hide another that serves the same
// model: the name goes to the one that serves, and to the one at zero (its
// 503 says how to scale it up) only when nothing else answers to it.
TEST(ServingTableTest, ADeploymentAtZeroYieldsItsNameToOneThatServes) {
  ServingSet set;
  set.models.push_back({.deployment = "qwen3-32b", .served_model_name = "qwen3-32b", .scaled_to_zero = true});
  set.models.push_back({.deployment = "second", .served_model_name = "qwen3-32b"});
  EXPECT_EQ(ServingTable::Find(set, "qwen3-32b")->deployment, "second");
  EXPECT_EQ(ServingTable::Find(set, "second")->deployment, "second");
  set.models.pop_back();
  const ServedModel* alone = ServingTable::Find(set, "qwen3-32b");
  ASSERT_NE(alone, nullptr);
  EXPECT_TRUE(alone->scaled_to_zero);
}

TEST(OpenAiErrorsTest, UnknownModelIsOpenAiShapedAndListsServedModels) {
  auto j = nlohmann::json::parse(UnknownModelBody("gpt-5", {"a", "b"}));
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("'gpt-5'"));
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("a, b"));
  // Bytes that are not UTF-8 still make valid JSON.
  EXPECT_NO_THROW(nlohmann::json::parse(UnknownModelBody("\xff\xfe", {})));
}

TEST(ApiKeysTest, HashedKeysWithScopes) {
  std::string text = "# name hash scope\n"
                     "admin " + common::Sha256Hex("sk-admin") + " *\n"
                     "team " + common::Sha256Hex("sk-team") + " qwen3-32b,glm\n";
  auto store = ApiKeyStore::Parse(text);
  ASSERT_TRUE(store.ok()) << store.status();
  std::string who;
  using V = ApiKeyStore::Verdict;
  EXPECT_EQ(store->Check("Bearer sk-admin", {"anything"}, &who), V::kAllowed);
  EXPECT_EQ(who, "admin");
  EXPECT_EQ(store->Check("Bearer sk-team", {"glm", ""}, &who), V::kAllowed);
  EXPECT_EQ(store->Check("bearer sk-team", {"other"}, &who), V::kOutOfScope);
  EXPECT_EQ(store->Check("Bearer sk-wrong", {"glm"}, &who), V::kUnknown);
  EXPECT_EQ(store->Check("", {"glm"}, &who), V::kMissing);
  EXPECT_EQ(store->Check("Basic abc", {"glm"}, &who), V::kMissing);
}

TEST(ApiKeysTest, MalformedLinesAreRefusedWithTheirNumber) {
  EXPECT_THAT(ApiKeyStore::Parse("a b\n").status().message(), HasSubstr("line 1"));
  EXPECT_THAT(ApiKeyStore::Parse("\nk notahash *\n").status().message(),
              HasSubstr("line 2: key 'k'"));
  EXPECT_THAT(ApiKeyStore::Parse("k " + common::Sha256Hex("x") + " ,\n").status().message(),
              HasSubstr("empty scope"));
}

TEST(VllmLoadTest, ReadsV1GaugesSummedOverEnginesAndTheOlderCacheName) {
  auto load = ParseVllmLoad(
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7.0\n"
      "vllm:num_requests_waiting_by_reason{reason=\"x\"} 100\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.42\n"
      "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.61\n");
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->running, 5);
  EXPECT_EQ(load->waiting, 7);
  EXPECT_DOUBLE_EQ(load->kv_cache_usage, 0.61);

  auto old = ParseVllmLoad("vllm:num_requests_running{model_name=\"m\"} 1.0\n"
                           "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n");
  ASSERT_TRUE(old.has_value());
  EXPECT_DOUBLE_EQ(old->kv_cache_usage, 0.9);
  EXPECT_FALSE(ParseVllmLoad("process_cpu_seconds_total 12\n").has_value());
}

}  // namespace
}  // namespace dcu::gateway
