// SPDX-License-Identifier: Apache-2.0
// A database that stops answering, holds large rows, or is down
// (docs/server.md's "Threat model"): the HTTP threads never wait on it,
// reads stay bounded, and errors name no host, user or password. Each
// test failed on the build before its fix.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "attack/attack_util.h"
#include "support/postgres_server.h"
#include "support/process_stats.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using server::BlockingHttpClientOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// The HTTP threads never wait on the database.

// Stops (SIGSTOP) or resumes (SIGCONT) PostgreSQL's postmaster and every
// process it started (backends, background workers).
void SignalPostgres(const std::string& data_dir, int sig) {
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  pid_t postmaster = 0;
  pid_file >> postmaster;
  ASSERT_GT(postmaster, 0);
  std::vector<pid_t> pids{postmaster};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == postmaster) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  for (pid_t pid : pids) kill(pid, sig);
}

// PostgreSQL stops answering (its processes SIGSTOPped: connections stay
// open, nothing is read) while clients keep asking for timers, stats, the
// cluster and flows: /healthz still answers within 100 ms and says the store is
// unavailable, a request without a token still gets its 401 at once, and
// the GETs get 503 at --store-timeout. Then PostgreSQL resumes and all is
// well again.
TEST(HungDatabaseTest, HealthzAnswersAtOnceWhileGetsWaitForAHungPostgres) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/tokens", std::string("admin ") + kAdmin + "\n");
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8", "--auth-token-file",
                        dir.path() + "/tokens", "--store-timeout", "2s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClientOptions admin_options;
  admin_options.bearer_token = kAdmin;
  BlockingHttpClient admin(server.address(), admin_options);
  ASSERT_EQ(Call(admin, "POST", "/v1/timers", TimerBody("hung-1", 600'000, receiver.url())).status, 201);
  ASSERT_EQ(Call(admin, "GET", "/v1/timers/hung-1").status, 200);

  struct Resume {
    std::string dir;
    ~Resume() { SignalPostgres(dir, SIGCONT); }
  } resume{postgres.data_dir()};
  SignalPostgres(postgres.data_dir(), SIGSTOP);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, unavailable{0};
  std::atomic<double> slowest_get_ms{0};
  std::vector<std::thread> getters;
  // Every route that reads the store, the flows' and schedules' too.
  const std::vector<std::string> targets = {"/v1/timers/hung-1", "/v1/stats", "/v1/cluster",
                                            "/v1/timers?state=pending", "/v1/flows",
                                            "/v1/flows/hooks.example.com", "/v1/schedules",
                                            "/v1/schedules/hung-s"};
  for (std::size_t t = 0; t < targets.size(); ++t) {
    getters.emplace_back([&, t] {
      while (!stop.load()) {
        BlockingHttpClient client(server.address(), admin_options);
        const auto start = SteadyClock::now();
        const JsonCall c = Call(client, "GET", targets[t]);
        const double ms = MsSince(start);
        if (ms > slowest_get_ms.load()) slowest_get_ms.store(ms);
        ++answered;
        if (c.status == 503) ++unavailable;
      }
    });
  }
  double worst_health_ms = 0, worst_401_ms = 0;
  bool said_unavailable = false;
  for (const auto end = SteadyClock::now() + seconds(6); SteadyClock::now() < end;) {
    BlockingHttpClient health(server.address(), seconds(5));
    auto start = SteadyClock::now();
    const JsonCall h = Call(health, "GET", "/healthz");
    worst_health_ms = std::max(worst_health_ms, MsSince(start));
    EXPECT_EQ(h.status, 200) << h.raw;
    said_unavailable = said_unavailable || h.raw.find(R"("store":"unavailable")") != std::string::npos;
    BlockingHttpClient anonymous(server.address(), seconds(5));
    start = SteadyClock::now();
    EXPECT_EQ(anonymous.Call("GET", "/v1/timers/hung-1").status, 401);
    worst_401_ms = std::max(worst_401_ms, MsSince(start));
    std::this_thread::sleep_for(milliseconds(50));
  }
  stop.store(true);
  // The getters are answered (503) at the deadline, not left hanging.
  for (auto& t : getters) t.join();
  EXPECT_LT(worst_health_ms, 100);
  EXPECT_LT(worst_401_ms, 100);
  EXPECT_TRUE(said_unavailable);
  EXPECT_GT(unavailable.load(), 0);
  EXPECT_LT(slowest_get_ms.load(), 2000 + 1500) << "a GET waited past --store-timeout";

  SignalPostgres(postgres.data_dir(), SIGCONT);
  bool recovered = false;
  for (int i = 0; i < 300 && !recovered; ++i) {
    BlockingHttpClient health(server.address(), seconds(5));
    recovered = Call(admin, "GET", "/v1/timers/hung-1").status == 200 &&
                health.Call("GET", "/healthz").body.find(R"("store":"ok")") != std::string::npos;
    if (!recovered) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(recovered);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// --max-writes counts every API write, flows' and schedules' as timers':
// with PostgreSQL stopped and --max-writes 2, a timer create and a flow PUT
// wait for it; the flow PUT is answered 503 at --store-timeout as a write
// is (its outcome unknown), and both stay counted while the store has not
// answered. Every other flow write (PUT, DELETE, :pause, :resume) and
// schedule write (create, PATCH, :pause, :resume, :trigger, DELETE) is
// then answered 503 "overloaded" at once, and none of them happened;
// /metrics answers at once. Once PostgreSQL resumes, flow and schedule
// writes succeed again.
TEST(HungDatabaseTest, MaxWritesAndTheStoreTimeoutHoldForFlowAndScheduleWrites) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8", "--max-writes", "2",
                        "--store-timeout", "2s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(30));
  const std::string flow = "/v1/flows/hooks.example.com";
  ASSERT_EQ(Call(client, "PUT", flow, R"({"rate_per_s": 100})").status, 200);
  const std::string schedule =
      R"({"id":"kept","every_ms":3600000,"target":{"url":")" + receiver.url() + R"("}})";
  ASSERT_EQ(Call(client, "POST", "/v1/schedules", schedule).status, 201);

  struct Resume {
    std::string dir;
    ~Resume() { SignalPostgres(dir, SIGCONT); }
  } resume{postgres.data_dir()};
  SignalPostgres(postgres.data_dir(), SIGSTOP);
  // A timer create waits for the store (counted: 1 of 2) ...
  std::thread timer_write([&] {
    BlockingHttpClient c(server.address(), seconds(30));
    (void)Call(c, "POST", "/v1/timers", TimerBody("waits", 600'000, receiver.url()));
  });
  // ... and a flow PUT (2 of 2), answered at the deadline as a write.
  auto start = SteadyClock::now();
  const JsonCall late = Call(client, "PUT", flow, R"({"rate_per_s": 5})");
  const double late_ms = MsSince(start);
  EXPECT_EQ(late.status, 503) << late.raw;
  EXPECT_EQ(ErrorCode(late), "store_unavailable") << late.raw;
  EXPECT_NE(late.raw.find("the write may still happen"), std::string::npos) << late.raw;
  EXPECT_GE(late_ms, 2000 - 50);
  EXPECT_LT(late_ms, 2000 + 1500) << "a flow write waited past --store-timeout";
  timer_write.join();
  // Both still wait for PostgreSQL: every write route is refused at once.
  const std::vector<std::tuple<std::string, std::string, std::string>> writes = {
      {"POST", "/v1/timers", TimerBody("refused", 600'000, receiver.url())},
      {"PUT", flow, R"({"rate_per_s": 7})"},
      {"DELETE", flow, ""},
      {"POST", flow + ":pause", ""},
      {"POST", flow + ":resume", ""},
      {"POST", "/v1/schedules",
       R"({"id":"refused","every_ms":60000,"target":{"url":")" + receiver.url() + R"("}})"},
      {"PATCH", "/v1/schedules/kept", R"({"every_ms":7200000})"},
      {"POST", "/v1/schedules/kept:pause", ""},
      {"POST", "/v1/schedules/kept:resume", ""},
      {"POST", "/v1/schedules/kept:trigger", ""},
      {"DELETE", "/v1/schedules/kept", ""}};
  for (const auto& [method, target, body] : writes) {
    start = SteadyClock::now();
    const JsonCall c = Call(client, method, target, body);
    const double ms = MsSince(start);
    EXPECT_EQ(c.status, 503) << method << " " << target << ": " << c.raw;
    EXPECT_EQ(ErrorCode(c), "overloaded") << method << " " << target << ": " << c.raw;
    EXPECT_LT(ms, 500) << method << " " << target << " waited for the store";
  }
  // /metrics never waits on the store (a wait would last the 2 s deadline).
  start = SteadyClock::now();
  EXPECT_EQ(Call(client, "GET", "/metrics").status, 200);
  EXPECT_LT(MsSince(start), 500) << "/metrics waited for the store";

  SignalPostgres(postgres.data_dir(), SIGCONT);
  bool recovered = false;
  for (int i = 0; i < 300 && !recovered; ++i) {
    recovered = Call(client, "GET", "/v1/schedules/kept").status == 200;
    if (!recovered) std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(recovered);
  // None of the refused writes happened.
  const JsonCall kept = Call(client, "GET", "/v1/schedules/kept");
  EXPECT_EQ(State(kept), "active") << kept.raw;
  EXPECT_EQ(kept.body.at("every_ms").as_int64(), 3'600'000) << kept.raw;
  EXPECT_EQ(kept.body.at("counts").at("triggered").as_int64(), 0) << kept.raw;
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/refused").status, 404);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/refused").status, 404);
  const JsonCall f = Call(client, "GET", flow);
  EXPECT_TRUE(f.body.at("configured").as_bool()) << f.raw;
  EXPECT_FALSE(f.body.at("paused").as_bool()) << f.raw;
  EXPECT_NE(f.body.at("rate_per_s"), boost::json::value(7)) << f.raw;
  // Writes work again.
  bool written = false;
  for (int i = 0; i < 300 && !written; ++i) {
    written = Call(client, "PUT", flow, R"({"rate_per_s": 9})").status == 200 &&
              Call(client, "POST", "/v1/schedules/kept:pause").status == 200;
    if (!written) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(written);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}


// ---------------------------------------------------------------------------
// Bounded reads in PostgreSQL mode.

// 10,000 pending timers with 30 KB payloads (300 MB of records), listed
// with a host filter, an id prefix and both that match nothing: each
// listing looks at the whole scan budget (10,000 rows, so it answers with
// "next_after" and no timer); and 2,000 dead letters with 60 KB payloads
// (120 MB), walked by bulk dry runs that match nothing and one that
// matches them all. The node's peak RSS grows by less than 32 MiB over
// the listings, and again over the dry runs: records are fetched only for
// rows that go on a page, in bounded chunks (before, a filtered listing
// held every scanned record as hex text in one result: 600 MB for these
// listings, 240 MB for a dry run).
TEST(BoundedReadsTest, FilteredListingsAndDryRunsOfLargeTimersStayBounded) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8"});
  server.LimitAsanQuarantine();
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(120));
  auto create = [&](const std::string& prefix, int count, std::size_t payload_bytes, std::int64_t delay_ms,
                    const std::string& url, const std::string& extra) {
    const std::string payload(payload_bytes, 'p');
    constexpr int kBatch = 100;
    for (int batch = 0; batch < count / kBatch; ++batch) {
      std::string body = "{\"timers\":[";
      for (int i = 0; i < kBatch; ++i) {
        body += std::string(i ? "," : "") + "{\"id\":\"" + prefix + std::to_string(batch * kBatch + i) +
                "\",\"delay_ms\":" + std::to_string(delay_ms) + ",\"target\":{\"url\":\"" + url +
                "\"}" + extra + ",\"payload\":\"" + payload + "\"}";
      }
      body += "]}";
      const JsonCall c = Call(client, "POST", "/v1/timers:batch", body);
      ASSERT_EQ(c.status, 201) << c.raw.substr(0, 300);
    }
  };
  create("big-", 10'000, 30'000, 3'600'000, receiver.url(), "");
  // Dead letters: one attempt each, to a port nothing listens on.
  constexpr int kDead = 2'000;
  create("dead-", kDead, 60'000, 0, "http://127.0.0.1:" + std::to_string(FreePort()) + "/gone",
         R"(,"retry":{"max_attempts":1})");
  for (int i = 0; i < 1200 && Metric(client, "tickwheel_timers_failed_total") < kDead; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(Metric(client, "tickwheel_timers_failed_total"), kDead);
  const std::int64_t listings_kb = PeakRssGrowthKb(server.pid(), [&] {
    for (const std::string query : {"host=nothing.example", "prefix=nothing-", "host=nothing.example&prefix=big-"}) {
      const JsonCall c = Call(client, "GET", "/v1/timers?state=pending&limit=1000&" + query);
      ASSERT_EQ(c.status, 200) << c.raw.substr(0, 300);
      EXPECT_TRUE(c.body.at("timers").as_array().empty()) << query;
      EXPECT_TRUE(c.body.as_object().contains("next_after")) << query;  // the scan budget
    }
  });
  EXPECT_LT(listings_kb, 32 * 1024) << "listings: peak RSS +" << listings_kb << " kB";
  // The bulk dry run walks the dead letters with the same reads.
  const std::int64_t dry_runs_kb = PeakRssGrowthKb(server.pid(), [&] {
    for (const auto& [filter, matched] :
         std::vector<std::pair<std::string, std::int64_t>>{{R"("host":"nothing.example")", 0},
                                                           {R"("prefix":"nothing-")", 0},
                                                           {R"("prefix":"dead-")", kDead}}) {
      const JsonCall c = Call(client, "POST", "/v1/timers:retry-failed", "{" + filter + R"(,"dry_run":true})");
      ASSERT_EQ(c.status, 200) << c.raw;
      EXPECT_EQ(c.body.at("matched").as_int64(), matched) << filter;
      EXPECT_EQ(c.body.at("done").as_int64(), 0) << filter;
    }
  });
  EXPECT_LT(dry_runs_kb, 32 * 1024) << "dry runs: peak RSS +" << dry_runs_kb << " kB";
  std::printf("peak RSS: listings +%lld kB, dry runs +%lld kB\n", static_cast<long long>(listings_kb),
              static_cast<long long>(dry_runs_kb));
  // What matches is still listed, page by page.
  const JsonCall page = Call(client, "GET", "/v1/timers?state=pending&limit=10&prefix=big-1&host=127.0.0.1");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body.at("timers").as_array().size(), 10u);
  const JsonCall dead = Call(client, "GET", "/v1/timers?state=failed&limit=10&prefix=dead-");
  ASSERT_EQ(dead.status, 200);
  EXPECT_EQ(dead.body.at("timers").as_array().size(), 10u);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}


// ---------------------------------------------------------------------------
// What a database outage tells clients: that the store is unavailable, not
// where it is or who connects to it; the log names no password either.
TEST(StoreErrorsTest, A503NamesNoDatabaseHostUserOrPassword) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  // Trust authentication: the password is never checked, only carried.
  const std::string url = "postgresql://postgres:pw?se#cret@127.0.0.1:" +
                          std::to_string(postgres.port()) + "/postgres";
  ServerProcess server(Binary(), dir.path() + "/node", {"--postgres", url, "--shards", "4"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("t1", 600'000, receiver.url())).status, 201);
  ASSERT_TRUE(postgres.Stop());
  for (const auto& [method, target, body] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", "/v1/timers/t1", ""},
           {"GET", "/v1/timers?state=pending", ""},
           {"POST", "/v1/timers", TimerBody("t2", 600'000, receiver.url())},
           {"GET", "/v1/schedules/s1", ""},
           {"GET", "/v1/schedules", ""},
           {"POST", "/v1/schedules",
            R"({"id":"s1","every_ms":3600000,"target":{"url":")" + receiver.url() + R"("}})"}}) {
    const JsonCall c = Call(client, method, target, body);
    EXPECT_EQ(c.status, 503) << c.raw;
    for (const std::string& secret : std::vector<std::string>{
             "127.0.0.1", std::to_string(postgres.port()), "postgres", "se#cret"}) {
      EXPECT_EQ(c.raw.find(secret), std::string::npos) << secret << " in " << c.raw;
    }
  }
  EXPECT_TRUE(postgres.Start());
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  EXPECT_EQ(server.log().find("se#cret"), std::string::npos) << server.log();
  EXPECT_EQ(server.log().find("cret@"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
