#include "dcuctl/object_ref.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Args = std::vector<std::string>;

TEST(SplitKindSlashName, KubectlsKindSlashNameBecomesKindThenName) {
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "describe", "deployment/qwen3-32b"}),
              ElementsAre("dcuctl", "describe", "deployment", "qwen3-32b"));
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "edit", "deploy/qwen3-32b"}),
              ElementsAre("dcuctl", "edit", "deploy", "qwen3-32b"));
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "get", "no/node-a", "-o", "wide"}),
              ElementsAre("dcuctl", "get", "no", "node-a", "-o", "wide"));
  // Options and their values before the verb and before the object.
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "--controller", "h:1", "-o", "json", "get", "--no-headers", "-o",
                                  "name", "deployments/x"}),
              ElementsAre("dcuctl", "--controller", "h:1", "-o", "json", "get", "--no-headers", "-o", "name",
                          "deployments", "x"));
  // kubectl's own example: the count before the object.
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "scale", "--replicas", "3", "deploy/x"}),
              ElementsAre("dcuctl", "scale", "--replicas", "3", "deploy", "x"));
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "scale", "--replicas=3", "deploy/x"}),
              ElementsAre("dcuctl", "scale", "--replicas=3", "deploy", "x"));
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "delete", "deployment/x", "--wait"}),
              ElementsAre("dcuctl", "delete", "deployment", "x", "--wait"));
  // Several of one kind: the later ones' names; another kind's is left
  // for the name check to refuse.
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "delete", "deployment/a", "--wait", "deploy/b", "node/c", "d"}),
              ElementsAre("dcuctl", "delete", "deployment", "a", "--wait", "b", "node/c", "d"));
}

TEST(SplitKindSlashName, AnythingElseIsLeftAsGiven) {
  for (const Args& args : std::vector<Args>{
           {"dcuctl", "describe", "deployment", "x"},        // already KIND NAME
           {"dcuctl", "describe", "pod/x"},                  // not a kind dcuctl has
           {"dcuctl", "describe", "/x"},                     // no kind
           {"dcuctl", "describe", "deployment/"},            // no name
           {"dcuctl", "logs", "deployment/x"},               // logs takes one word itself
           {"dcuctl", "wait", "--for=delete", "deployment/x"},
           {"dcuctl", "model", "audit", "/models/Qwen3-32B"},  // a path, not a reference
           {"dcuctl", "-o", "get", "deployment/x"},          // "get" is -o's value: no verb
           {"dcuctl", "get", "--", "deployment/x"},
           {"dcuctl"},
           {"dcuctl", "get"},
       }) {
    EXPECT_EQ(SplitKindSlashName(args), args);
  }
  // Only the object: a NAME containing '/' after it is the parser's to refuse.
  EXPECT_THAT(SplitKindSlashName({"dcuctl", "get", "deployments", "a/b"}),
              ElementsAre("dcuctl", "get", "deployments", "a/b"));
}

TEST(JoinKindAndName, KindThenNameBecomesOneReference) {
  EXPECT_EQ(*JoinKindAndName("deployment", "x"), "deployment/x");
  EXPECT_EQ(*JoinKindAndName("no", "n1"), "no/n1");
  EXPECT_EQ(*JoinKindAndName("deployment/x", ""), "deployment/x");
  EXPECT_EQ(*JoinKindAndName("x", ""), "x");
  auto bad = JoinKindAndName("deployment/x", "extra");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'deployment/x' followed by 'extra'"));
  EXPECT_FALSE(JoinKindAndName("pod", "x").ok());
}

TEST(DeploymentNameFromRef, ADeploymentInAnyFormOrANameAlone) {
  for (const char* ref : {"deployment/x", "deployments/x", "deploy/x", "x"}) {
    EXPECT_EQ(DeploymentNameFromRef(ref), "x") << ref;
  }
  for (const char* ref : {"node/x", "pod/x", "Deployment/x"}) EXPECT_EQ(DeploymentNameFromRef(ref), "") << ref;
}

TEST(CanonicalKind, EveryFormGetTakes) {
  for (const char* k : {"deployment", "deployments", "deploy"}) EXPECT_EQ(CanonicalKind(k), "deployment");
  for (const char* k : {"node", "nodes", "no"}) EXPECT_EQ(CanonicalKind(k), "node");
  for (const char* k : {"stack", "stacks"}) EXPECT_EQ(CanonicalKind(k), "stack");
  for (const char* k : {"pod", "", "Deployment", "deployment/x"}) EXPECT_EQ(CanonicalKind(k), "") << k;
}

}  // namespace
}  // namespace dcu::dcuctl
