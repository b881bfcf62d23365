// SPDX-License-Identifier: Apache-2.0
// The web console in a real browser: headless Chromium (Debian's) driven by
// playwright-core (tests/ui/*.mjs, run by node) against the real
// `tickwheel serve --ui` with a real webhook receiver: on the embedded
// store with admin and read tokens, and as a cluster node on a real
// PostgreSQL. Screenshots of every page go to build/ui-screenshots/.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "server_test_util.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

constexpr const char* kAdmin = "console-admin-0123456789abcdef";
constexpr const char* kRead = "console-read-0123456789abcdef";

// Runs `node tests/ui/<script>` with `env` added; its exit status (its
// output goes to the test's).
int RunBrowserScript(const std::string& script, const std::map<std::string, std::string>& env) {
  std::string cmd;
  for (const auto& [k, v] : env) cmd += k + "='" + v + "' ";
  cmd += "TW_NODE_MODULES='" TICKWHEEL_UI_NODE_MODULES "' TW_SCREENSHOTS='" TICKWHEEL_UI_SCREENSHOTS
         "' node '" TICKWHEEL_UI_TESTS "/" + script + "' 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ExpectTools() {
  ASSERT_EQ(std::system("command -v node >/dev/null && test -x /usr/bin/chromium"), 0)
      << "the console's browser tests need node and Debian's chromium: run scripts/install-deps.sh";
  ASSERT_EQ(std::system("test -d '" TICKWHEEL_UI_NODE_MODULES "/playwright-core'"), 0)
      << "playwright-core is not installed: the ui_npm_ci test installs it (npm ci)";
}

// A receiver at /ok answering 200, and at /flaky answering 500 to the first
// two deliveries of each timer, then 200 (dead letters that a retry heals).
class FlakyReceiver {
 public:
  FlakyReceiver() {
    receiver_.SetPolicy([this](const Delivery& d) {
      if (d.path != "/flaky") return 200;
      std::lock_guard lock(mutex_);
      return ++seen_[d.id] <= 2 ? 500 : 200;
    });
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(receiver_.port()); }
  // Every delivery that arrived: (path, timer id) -> how many times.
  std::map<std::pair<std::string, std::string>, int> Received() const {
    std::map<std::pair<std::string, std::string>, int> out;
    for (const Delivery& d : receiver_.deliveries()) ++out[{d.path, d.id}];
    return out;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> seen_;
  WebhookReceiver receiver_{2};  // last: stops before what its policy uses
};

TEST(ConsoleBrowserTest, OffUnlessAskedFor) {
  TempDir dir;
  ServerProcess server(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server.Start());
  server::BlockingHttpClient client(server.address());
  EXPECT_EQ(Call(client, "GET", "/ui/").status, 404);
  EXPECT_EQ(Call(client, "GET", "/ui/app.js").status, 404);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ConsoleBrowserTest, EmbeddedStoreWithTokens) {
  ExpectTools();
  TempDir dir;
  {
    std::ofstream tokens(dir.path() + "/tokens");
    tokens << "admin " << kAdmin << "\nread " << kRead << "\n";
  }
  FlakyReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--ui", "--auth-token-file", dir.path() + "/tokens", "--backoff", "50ms"});
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(RunBrowserScript("embedded.mjs", {{"TW_URL", server.url()},
                                              {"TW_ADMIN_TOKEN", kAdmin},
                                              {"TW_READ_TOKEN", kRead},
                                              {"TW_RECEIVER", receiver.base()}}),
            0)
      << server.log();
  // What embedded.mjs makes fire, each exactly so often (its ids end in
  // "-<run>"): at /ok, fire1-3 and the console's test timer "made", once
  // each, and any other timer to /ok once; at /flaky, dl1-dl4 twice (failing)
  // and once more after their bulk retry, "other" twice and never again.
  std::map<std::string, int> ok, flaky;
  for (const auto& [where, times] : receiver.Received()) {
    const std::string name = where.second.substr(0, where.second.rfind('-'));
    (where.first == "/ok" ? ok : flaky)[name] += times;
    EXPECT_TRUE(where.first == "/ok" || where.first == "/flaky") << where.first;
    if (where.first == "/ok") EXPECT_EQ(times, 1) << where.second << " at /ok";
  }
  for (const char* name : {"fire1", "fire2", "fire3", "made"}) EXPECT_EQ(ok[name], 1) << name;
  const std::map<std::string, int> expected_flaky = {
      {"dl1", 3}, {"dl2", 3}, {"dl3", 3}, {"dl4", 3}, {"other", 2}};
  EXPECT_EQ(flaky, expected_flaky);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

TEST(ConsoleBrowserTest, ClusterViewOnPostgres) {
  ExpectTools();
  TempDir dir;
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  WebhookReceiver receiver;
  ServerProcess node(Binary(), dir.path() + "/unused",
                     {"--ui", "--postgres", postgres.url(), "--shards", "16", "--node-id",
                      "console-node-a", "--lease", "2s"});
  ASSERT_TRUE(node.Start());
  EXPECT_EQ(RunBrowserScript("cluster.mjs", {{"TW_URL", node.url()},
                                             {"TW_NODE", "console-node-a"},
                                             {"TW_RECEIVER", receiver.url("/pg")}}),
            0)
      << node.log();
  // cluster.mjs's one timer due soon, delivered once.
  const std::vector<Delivery> got = receiver.deliveries();
  ASSERT_EQ(got.size(), 1u) << node.log();
  EXPECT_EQ(got[0].id, "pg-2");
  EXPECT_GE(got[0].received_ms, got[0].fire_at_ms);
  EXPECT_EQ(node.Terminate(), 0) << node.log();
}

}  // namespace
}  // namespace tickwheel::testing
