// SPDX-License-Identifier: Apache-2.0
// /metrics of the real `tickwheel serve`, embedded and as a cluster node:
// Prometheus' own linter (promtool check metrics) finds nothing to say about
// it, every family it exports is in docs/server.md's Metrics table and every
// name in that table is exported, and requests are counted by route template
// (never by raw path) and status code.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "server_test_util.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

class ServerMetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    receiver_ = new WebhookReceiver();
    embedded_ = new ServerProcess(Binary(), dir_->path() + "/data", {});
    ASSERT_TRUE(embedded_->Start());
    postgres_ = new PostgresServer();
    ASSERT_TRUE(postgres_->ok()) << postgres_->log();
    node_ = new ServerProcess(Binary(), dir_->path() + "/unused",
                              {"--postgres", postgres_->url(), "--shards", "4"});
    ASSERT_TRUE(node_->Start());
    // Something in every histogram and several routes and codes.
    for (ServerProcess* s : {embedded_, node_}) {
      BlockingHttpClient client(s->address());
      ASSERT_EQ(client.Call("POST", "/v1/timers", TimerBody("m-now", 0, receiver_->url())).status,
                201);
      ASSERT_EQ(client.Call("POST", "/v1/timers", TimerBody("m-later", 60000, receiver_->url()))
                    .status,
                201);
      ASSERT_EQ(client.Call("DELETE", "/v1/timers/m-later").status, 200);
      ASSERT_EQ(client.Call("GET", "/v1/timers/no-such-timer").status, 404);
    }
    ASSERT_TRUE(receiver_->WaitFor(2, std::chrono::seconds(30)));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(embedded_->Terminate(), 0) << embedded_->log();
    EXPECT_EQ(node_->Terminate(), 0) << node_->log();
    delete embedded_;
    delete node_;
    delete postgres_;
    delete receiver_;
    delete dir_;
  }

  static std::string MetricsOf(ServerProcess& s) {
    BlockingHttpClient client(s.address());
    server::HttpCallResult r = client.Call("GET", "/metrics");
    EXPECT_EQ(r.status, 200);
    return r.body;
  }

  // The families /metrics declares (its # TYPE lines).
  static std::set<std::string> Families(const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7, line.find(' ', 7) - 7));
    }
    return out;
  }

  // promtool's verdict on `text`: its exit status and everything it printed.
  static std::pair<int, std::string> Promtool(const std::string& text) {
    const std::string file = dir_->path() + "/metrics.txt";
    WriteFile(file, text);
    FILE* p = popen(("promtool check metrics < " + file + " 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    return {WEXITSTATUS(pclose(p)), out};
  }

  static TempDir* dir_;
  static WebhookReceiver* receiver_;
  static ServerProcess* embedded_;
  static PostgresServer* postgres_;
  static ServerProcess* node_;
};
TempDir* ServerMetricsTest::dir_;
WebhookReceiver* ServerMetricsTest::receiver_;
ServerProcess* ServerMetricsTest::embedded_;
PostgresServer* ServerMetricsTest::postgres_;
ServerProcess* ServerMetricsTest::node_;

TEST_F(ServerMetricsTest, PromtoolFindsNothingToSayAboutEitherStore) {
  for (ServerProcess* s : {embedded_, node_}) {
    const std::string text = MetricsOf(*s);
    auto [status, said] = Promtool(text);
    EXPECT_EQ(status, 0) << said;
    EXPECT_EQ(said, "") << "promtool check metrics warns:\n" << said;
  }
  // The linter is live: a gauge-looking counter is flagged.
  auto [status, said] = Promtool("# HELP x_syncs Syncs.\n# TYPE x_syncs counter\nx_syncs 1\n");
  EXPECT_NE(status, 0);
  EXPECT_NE(said.find("_total"), std::string::npos) << said;
}

// The names in the first column of docs/server.md's "## Metrics" table.
std::set<std::string> DocumentedMetrics() {
  std::ifstream in(std::string(TICKWHEEL_SOURCE_DIR) + "/docs/server.md");
  std::string line;
  bool in_section = false;
  std::set<std::string> out;
  const std::regex name("`([a-z_]+)(\\{[^`]*\\})?`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Metrics";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(0, line.find(" | ", 2));
    for (std::sregex_iterator it(first.begin(), first.end(), name), end; it != end; ++it) {
      out.insert((*it)[1]);
    }
  }
  return out;
}

TEST_F(ServerMetricsTest, EveryExportedFamilyIsDocumentedAndEveryDocumentedOneExported) {
  std::set<std::string> exported = Families(MetricsOf(*embedded_));
  for (const std::string& f : Families(MetricsOf(*node_))) exported.insert(f);
  const std::set<std::string> documented = DocumentedMetrics();
  ASSERT_GT(documented.size(), 20u) << "docs/server.md's Metrics table was not found";
  for (const std::string& f : exported) {
    EXPECT_TRUE(documented.count(f)) << f << " is exported but not in docs/server.md's table";
  }
  for (const std::string& f : documented) {
    EXPECT_TRUE(exported.count(f)) << f << " is in docs/server.md's table but not exported";
  }
}

TEST_F(ServerMetricsTest, RequestsAreCountedByRouteTemplateAndCodeNeverByPath) {
  BlockingHttpClient client(embedded_->address());
  const std::string series = "tickwheel_http_requests_total{route=\"/v1/timers/{id}\",code=\"404\"}";
  const double before = Metric(client, series);
  ASSERT_GE(before, 1);  // the setup's GET of no-such-timer
  EXPECT_EQ(client.Call("GET", "/v1/timers/another-missing-one").status, 404);
  EXPECT_EQ(Metric(client, series), before + 1);
  EXPECT_EQ(client.Call("GET", "/nowhere/at/all").status, 404);
  EXPECT_GE(Metric(client, "tickwheel_http_requests_total{route=\"other\",code=\"404\"}"), 1);
  const std::string text = MetricsOf(*embedded_);
  EXPECT_EQ(text.find("another-missing-one"), std::string::npos);
  EXPECT_EQ(text.find("/nowhere"), std::string::npos);
  EXPECT_GE(Metric(client, "tickwheel_http_requests_total{route=\"/v1/timers\",code=\"201\"}"), 2);
}

TEST_F(ServerMetricsTest, TimersByStateBuildInfoAndProcessMetricsAreThere) {
  BlockingHttpClient client(embedded_->address());
  EXPECT_EQ(Metric(client, "tickwheel_timers{state=\"cancelled\"}"), 1);
  for (int i = 0; i < 1000 && Metric(client, "tickwheel_timers{state=\"delivered\"}") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Metric(client, "tickwheel_timers{state=\"delivered\"}"), 1);
  EXPECT_EQ(Metric(client, "tickwheel_timers{state=\"failed\"}"), 0);
  EXPECT_EQ(Metric(client, "tickwheel_build_info{version=\"" TICKWHEEL_PROJECT_VERSION "\"}"), 1);
  EXPECT_GT(Metric(client, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(Metric(client, "process_open_fds"), 3);
  EXPECT_GE(Metric(client, "process_cpu_seconds_total"), 0);
  const double start = Metric(client, "process_start_time_seconds");
  EXPECT_LE(start, static_cast<double>(WallMs()) / 1000 + 1);
  EXPECT_GT(start, static_cast<double>(WallMs()) / 1000 - 600);
  const double window_end = Metric(client, "tickwheel_window_end_timestamp_seconds");
  EXPECT_GT(window_end, static_cast<double>(WallMs()) / 1000 - 600);
}

}  // namespace
}  // namespace tickwheel::testing
