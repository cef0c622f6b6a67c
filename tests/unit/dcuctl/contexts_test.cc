#include "dcuctl/contexts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

EnvLookup Env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

constexpr const char* kConfig = R"(# two fleets
current-context = prod

[context prod]
controller = ctl.example.internal:7070
ca = /etc/dcufleet/ca.crt
token-file = "/home/a/my token"

[context "lab"]
; the lab has no TLS
controller = 127.0.0.1:7171
)";

TEST(ClientConfig, ParsesContextsAndTheCurrentOne) {
  auto c = ParseConfig(kConfig, "/f");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->current_context, "prod");
  ASSERT_EQ(c->contexts.size(), 2u);
  EXPECT_EQ(c->Find("prod")->ca, "/etc/dcufleet/ca.crt");
  EXPECT_EQ(c->Find("prod")->token_file, "/home/a/my token");
  EXPECT_EQ(c->Find("lab")->controller, "127.0.0.1:7171");
  EXPECT_EQ(c->Find("nope"), nullptr);
  // What it writes reads back the same.
  auto again = ParseConfig(SerializeConfig(*c), "/g");
  ASSERT_TRUE(again.ok()) << again.status() << SerializeConfig(*c);
  EXPECT_EQ(SerializeConfig(*again), SerializeConfig(*c));
}

TEST(ClientConfig, MalformedFilesNameFileAndLine) {
  struct Case {
    std::string text, error;
  } cases[] = {
      {"[context a]\ncontoller = x:1\n", "/cfg:2: unknown key 'contoller' in context 'a'"},
      {"controller = x:1\n", "/cfg:1: unknown key 'controller' before any [context NAME]"},
      {"[context a]\n[context a]\n", "/cfg:2: context 'a' is defined twice"},
      {"[cluster a]\n", "/cfg:1: the only section is [context NAME]"},
      {"[context a\n", "/cfg:1: a section header must end with ']'"},
      {"\n\njust words\n", "/cfg:3: expected 'key = value'"},
      {"[context a]\nca = x\nca = y\n", "/cfg:3: 'ca' is set twice"},
      {"[context a b]\n", "/cfg:1: context name 'a b'"},
      {"[context a]\nca = \"open\n", "/cfg:2: a quoted value is not closed"},
      {std::string("[context a]\nca = x\0y\n", 21), "/cfg:2: a control character"},
      {"current-context = a\ncurrent-context = b\n", "/cfg:2: current-context is set twice"},
  };
  for (const Case& c : cases) {
    auto r = ParseConfig(c.text, "/cfg");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.error));
  }
  EXPECT_THAT(ParseConfig(std::string(kMaxConfigBytes + 1, '#'), "/big").status().message(),
              HasSubstr("at most"));
}

TEST(ClientConfig, SavedAtomicallyWithMode0600AndMissingIsEmpty) {
  std::string dir = ::testing::TempDir() + "/contexts_test_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::string path = dir + "/sub/config";
  auto empty = LoadConfig(path);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->contexts.empty());
  auto c = ParseConfig(kConfig, "/f");
  ASSERT_TRUE(SaveConfig(path, *c).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  auto back = LoadConfig(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Find("lab")->controller, "127.0.0.1:7171");
  // No temporary file is left beside it.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/sub")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  std::filesystem::remove_all(dir);
}

TEST(ClientConfig, LocatedByFlagThenEnvThenXdgThenHome) {
  EXPECT_EQ(LocateConfig("/x", Env({{"DCUCONFIG", "/y"}}))->path, "/x");
  EXPECT_EQ(LocateConfig("", Env({{"DCUCONFIG", "/y"}, {"XDG_CONFIG_HOME", "/z"}}))->path, "/y");
  EXPECT_EQ(LocateConfig("", Env({{"XDG_CONFIG_HOME", "/z"}, {"HOME", "/h"}}))->path,
            "/z/dcufleet/config");
  EXPECT_EQ(LocateConfig("", Env({{"HOME", "/h"}}))->path, "/h/.config/dcufleet/config");
  EXPECT_THAT(LocateConfig("", Env({{"DCUCONFIG", ""}})).status().message(),
              HasSubstr("$DCUCONFIG is set but empty"));
  EXPECT_FALSE(LocateConfig("", Env({})).ok());
}

TEST(ResolveConnection, FlagsThenEnvThenContextThenDefault) {
  auto config = ParseConfig(kConfig, "/f");
  ASSERT_TRUE(config.ok());
  ConnectionFlags none;
  // The current context.
  auto r = ResolveConnection(none, Env({}), &*config, "/f");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->controller, "ctl.example.internal:7070");
  EXPECT_EQ(r->controller_source, "context 'prod'");
  EXPECT_EQ(r->context, "prod");
  EXPECT_EQ(r->context_source, "current-context in /f");
  EXPECT_EQ(r->tls_ca, "/etc/dcufleet/ca.crt");
  // The environment beats the context, a flag beats both; per setting.
  r = ResolveConnection(none, Env({{"DCUFLEET_CONTROLLER", "10.0.0.1:1"}, {"DCUFLEET_TLS_CA", "/env-ca"}}),
                        &*config, "/f");
  EXPECT_EQ(r->controller, "10.0.0.1:1");
  EXPECT_EQ(r->controller_source, "$DCUFLEET_CONTROLLER");
  EXPECT_EQ(r->tls_ca, "/env-ca");
  EXPECT_EQ(r->token_file, "/home/a/my token");
  ConnectionFlags flags;
  flags.controller = "127.0.0.1:9";
  flags.tls_ca = "/flag-ca";
  r = ResolveConnection(flags, Env({{"DCUFLEET_CONTROLLER", "10.0.0.1:1"}}), &*config, "/f");
  EXPECT_EQ(r->controller, "127.0.0.1:9");
  EXPECT_EQ(r->controller_source, "--controller");
  EXPECT_EQ(r->tls_ca, "/flag-ca");
  // --context and $DCUFLEET_CONTEXT pick another context.
  flags = {};
  flags.context = "lab";
  r = ResolveConnection(flags, Env({{"DCUFLEET_CONTEXT", "prod"}}), &*config, "/f");
  EXPECT_EQ(r->controller, "127.0.0.1:7171");
  EXPECT_EQ(r->tls_ca, "");
  r = ResolveConnection(none, Env({{"DCUFLEET_CONTEXT", "lab"}}), &*config, "/f");
  EXPECT_EQ(r->context_source, "$DCUFLEET_CONTEXT");
  // No context at all: the default.
  r = ResolveConnection(none, Env({}), nullptr, "/f");
  EXPECT_EQ(r->controller, "127.0.0.1:7070");
  EXPECT_EQ(r->controller_source, "the default");
  EXPECT_EQ(r->context, "");
}

TEST(ResolveConnection, AnEmptyControllerVariableOrAMissingContextIsAnError) {
  auto config = ParseConfig(kConfig, "/f");
  ConnectionFlags none;
  auto r = ResolveConnection(none, Env({{"DCUFLEET_CONTROLLER", ""}}), &*config, "/f");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("$DCUFLEET_CONTROLLER is set but empty"));
  // A flag makes the empty variable irrelevant.
  ConnectionFlags flags;
  flags.controller = "127.0.0.1:9";
  EXPECT_TRUE(ResolveConnection(flags, Env({{"DCUFLEET_CONTROLLER", ""}}), &*config, "/f").ok());
  flags = {};
  flags.context = "staging";
  r = ResolveConnection(flags, Env({}), &*config, "/f");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("context 'staging' (from --context) is not in /f"));
}

}  // namespace
}  // namespace dcu::dcuctl
