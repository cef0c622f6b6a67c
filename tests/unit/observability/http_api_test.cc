// controller/service/http_api: the edge of the JSON API and the dashboard
// on a real listener — auth with the controller's token table, hostile
// paths and queries, the embedded files. (The answers' content is the
// FleetService messages; tests/integration/observability_test reads them
// from a running controller.)
#include "controller/service/http_api.h"

#include "common/hash.h"
#include "common/http_client.h"
#include "controller/store/store_set.h"
#include "nlohmann/json.hpp"
#include "tests/testing/store_backends.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;

class HttpApiTest : public ::testing::Test {
 protected:
  void Start(std::shared_ptr<const TokenTable> tokens, EventLog* events = nullptr) {
    server_ = std::make_unique<common::HttpServer>(common::HttpServerOptions{});
    HttpApiDeps deps;
    deps.tokens = std::move(tokens);
    deps.reads.events = events;
    InstallHttpApi(server_.get(), std::move(deps));
    ASSERT_TRUE(server_->Start().ok());
  }
  common::HttpResponse Get(const std::string& path, const std::string& auth = "") {
    common::HttpRequest r;
    r.method = "GET";
    r.host = "127.0.0.1";
    r.port = server_->port();
    r.path = path;
    if (!auth.empty()) r.headers.push_back({"Authorization", auth});
    auto resp = client_.Send(r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : common::HttpResponse{};
  }
  common::SocketHttpClient client_;
  std::unique_ptr<common::HttpServer> server_;
};

std::shared_ptr<const TokenTable> Tokens() {
  auto t = TokenTable::Parse(absl::StrCat(common::Sha256Hex("reader-secret"), " read-only ann\n",
                                          common::Sha256Hex("admin-secret"), " admin bob\n"),
                             "test");
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const TokenTable>(*t);
}

TEST_F(HttpApiTest, WithoutATokensFileNothingIsAsked) {
  Start(nullptr);
  common::HttpResponse r = Get("/api/v1/deployments");
  // Past auth, into the read: this test controller has no deployments.
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.body, HasSubstr("deployments are not enabled"));
}

TEST_F(HttpApiTest, WithTokensTheReadsNeedAReadOnlyOrAdminToken) {
  Start(Tokens());
  common::HttpResponse none = Get("/api/v1/deployments");
  EXPECT_EQ(none.status, 401);
  EXPECT_THAT(none.body, HasSubstr("bearer token"));
  EXPECT_EQ(Get("/api/v1/deployments", "Bearer wrong").status, 401);
  EXPECT_EQ(Get("/api/v1/deployments", "Basic cmVhZGVyLXNlY3JldA==").status, 401);
  EXPECT_EQ(Get("/api/v1/deployments", "Bearer reader-secret").status, 503);
  EXPECT_EQ(Get("/api/v1/deployments", "Bearer admin-secret").status, 503);
  EXPECT_EQ(Get("/api/v1/nosuch", "Bearer reader-secret").status, 404);
  EXPECT_EQ(Get("/api/v1/nosuch").status, 401);  // no route is told to a stranger
  // The dashboard's files hold no data: served to anyone (the page asks for the token).
  EXPECT_EQ(Get("/ui/").status, 200);
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(HttpApiTest, HostilePathsAndQueriesAre400s) {
  Start(nullptr);
  EXPECT_EQ(Get("/api/v1/deployments/..%2Fetc").status, 400);
  EXPECT_EQ(Get("/api/v1/deployments/%zz").status, 400);
  EXPECT_EQ(Get("/api/v1/deployments/" + std::string(300, 'a')).status, 400);
  EXPECT_EQ(Get("/api/v1/events?limit=abc").status, 400);
  EXPECT_EQ(Get("/api/v1/events?kind=%").status, 400);
  EXPECT_EQ(Get("/api/v1/events?after_id=1e3").status, 400);
  EXPECT_EQ(Get("/api/v1/stacks?arch=%ZZ").status, 400);
}

// after_id pages forward from an event (what dcuctl get events --watch asks
// the controller each second), on a real store; a negative id is refused
// with what it may be.
TEST_F(HttpApiTest, EventsAfterAnIdAreOnlyTheNewerOnes) {
  auto stores = testing::TestStores::Open(testing::TestBackend::kSqliteMemory);
  ASSERT_TRUE(stores.ok()) << stores.status();
  EventLog* events = (*stores)->set().events;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(events->AppendEvent({0, 1000 + i, "node", "node-a", "Normal", "R", absl::StrCat("m", i)}).ok());
  }
  Start(nullptr, events);
  common::HttpResponse all = Get("/api/v1/events");
  ASSERT_EQ(all.status, 200) << all.body;
  auto listed = nlohmann::json::parse(all.body);
  ASSERT_EQ(listed["events"].size(), 4u) << all.body;
  const std::string second = listed["events"][1]["id"].get<std::string>();

  common::HttpResponse newer = Get("/api/v1/events?limit=1&after_id=" + second);
  ASSERT_EQ(newer.status, 200) << newer.body;
  auto page = nlohmann::json::parse(newer.body);
  ASSERT_EQ(page["events"].size(), 1u) << newer.body;
  EXPECT_EQ(page["events"][0]["message"], "m2");  // the oldest above it, not the newest

  common::HttpResponse negative = Get("/api/v1/events?after_id=-5");
  EXPECT_EQ(negative.status, 400);
  EXPECT_THAT(negative.body, HasSubstr("after_id must be 0"));
}

TEST_F(HttpApiTest, ServesTheEmbeddedDashboard) {
  Start(nullptr);
  common::HttpResponse index = Get("/ui/");
  EXPECT_EQ(index.status, 200);
  EXPECT_THAT(index.body, HasSubstr("<script src=\"app.js\">"));
  common::HttpResponse js = Get("/ui/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_THAT(js.body, HasSubstr("/api/v1/"));
  EXPECT_EQ(Get("/ui/style.css").status, 200);
  EXPECT_EQ(Get("/ui/nope.js").status, 404);
  EXPECT_EQ(Get("/ui/../etc/passwd").status, 404);
  EXPECT_EQ(Get("/").status, 302);
}

TEST(QueryParam, DecodesAndRefusesBadEscapes) {
  auto v = QueryParam("a=1&kind=deploy%6dent&x=a+b", "kind");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(**v, "deployment");
  EXPECT_EQ(**QueryParam("a=1&x=a+b", "x"), "a b");
  EXPECT_FALSE(QueryParam("a=1", "b")->has_value());
  EXPECT_FALSE(QueryParam("b=%4", "b").ok());
}

}  // namespace
}  // namespace dcu::controller
