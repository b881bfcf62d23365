// SPDX-License-Identifier: Apache-2.0
// Cluster mode: three real `tickwheel serve` nodes on one real PostgreSQL,
// with timers created through all of them, while nodes crash, pause past
// their leases, restart one by one, and PostgreSQL itself restarts.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "server_test_util.h"
#include "store/pg_connection.h"
#include "store/postgres_timer_store.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kLeaseMs = 2000;

// PostgreSQL and `n` nodes, each with a fixed id and port across restarts.
class Cluster {
 public:
  explicit Cluster(int n) {
    EXPECT_TRUE(postgres_.ok()) << postgres_.log();
    for (int i = 0; i < n; ++i) {
      ports_.push_back(FreePort());
      nodes_.push_back(std::make_unique<ServerProcess>(
          Binary(), dir_.path() + "/node" + std::to_string(i),
          std::vector<std::string>{"--postgres", postgres_.url(), "--node-id",
                                   "node" + std::to_string(i), "--shards", "32", "--lease",
                                   std::to_string(kLeaseMs) + "ms", "--backoff", "200ms",
                                   "--delivery-timeout", "2s", "--drain-timeout", "10s"}));
    }
  }
  bool StartAll() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!Start(static_cast<int>(i))) return false;
    }
    return true;
  }
  bool Start(int i) { return nodes_[i]->Start(ports_[i]); }
  ServerProcess& node(int i) { return *nodes_[i]; }
  std::string address(int i) const { return "127.0.0.1:" + std::to_string(ports_[i]); }
  int size() const { return static_cast<int>(nodes_.size()); }
  PostgresServer& postgres() { return postgres_; }

  // Sum of a metric over the running nodes.
  double Sum(const std::string& metric) {
    double total = 0;
    for (int i = 0; i < size(); ++i) {
      if (!nodes_[i]->running()) continue;
      BlockingHttpClient client(address(i), seconds(5));
      total += std::max(0.0, Metric(client, metric));
    }
    return total;
  }
  // Waits until the running nodes' shards add up to all of them.
  bool SharesSettled(int shards = 32) {
    for (int attempt = 0; attempt < 1500; ++attempt) {
      if (Sum("tickwheel_cluster_shards_owned") == shards) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

 private:
  TempDir dir_;
  PostgresServer postgres_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
};

// Acknowledged timers (id -> fire_at_ms), created through random nodes in
// singles and batches until stopped; a node that cannot answer (dead,
// paused, its database restarting) is skipped, and only 201s count. Each
// thread waits `pause` before each request: a test that bounds lateness
// paces its load, so that it does not grow with how fast the nodes create.
class Creators {
 public:
  Creators(Cluster& cluster, const std::string& url, int threads, int max_delay_ms,
           milliseconds pause = milliseconds(0)) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &cluster, url, t, max_delay_ms, pause] {
        std::mt19937 rng(static_cast<unsigned>(t + 1));
        std::uniform_int_distribution<int> delay(0, max_delay_ms);
        for (int n = 0; !stop_.load(); ++n) {
          const int target = static_cast<int>(rng() % static_cast<unsigned>(cluster.size()));
          BlockingHttpClient client(cluster.address(target), seconds(3));
          const bool batch = n % 3 == 0;
          std::string body;
          for (int k = 0; k < (batch ? 20 : 1); ++k) {
            const std::string id = "c" + std::to_string(t) + "-" + std::to_string(n) + "-" +
                                   std::to_string(k);
            body += (k ? "," : "") + TimerBody(id, delay(rng), url);
          }
          if (pause.count() > 0) std::this_thread::sleep_for(pause);
          server::HttpCallResult r =
              batch ? client.Call("POST", "/v1/timers:batch", "{\"timers\":[" + body + "]}")
                    : client.Call("POST", "/v1/timers", body);
          if (r.status != 201) {
            std::this_thread::sleep_for(milliseconds(20));
            continue;
          }
          boost::json::value v = boost::json::parse(r.body);
          std::lock_guard lock(mutex_);
          if (batch) {
            for (const auto& item : v.at("timers").as_array()) {
              acked_[std::string(item.at("id").as_string())] = item.at("fire_at_ms").as_int64();
            }
          } else {
            acked_[std::string(v.at("id").as_string())] = v.at("fire_at_ms").as_int64();
          }
        }
      });
    }
  }
  ~Creators() { Stop(); }
  void Stop() {
    stop_.store(true);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::map<std::string, std::int64_t> acked() {
    std::lock_guard lock(mutex_);
    return acked_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::map<std::string, std::int64_t> acked_;
  std::vector<std::thread> threads_;
};

struct Tally {
  std::size_t delivered = 0;  // distinct acknowledged ids received
  std::size_t duplicates = 0;
  std::size_t early = 0;
  std::int64_t max_late_ms = 0;
  std::int64_t p50_late_ms = 0;  // of each acknowledged id's first delivery
};

Tally Check(const WebhookReceiver& receiver, const std::map<std::string, std::int64_t>& acked) {
  Tally t;
  std::map<std::string, int> seen;
  std::vector<std::int64_t> first_late;
  for (const Delivery& d : receiver.deliveries()) {
    auto it = acked.find(d.id);
    const bool first = ++seen[d.id] == 1;
    if (!first) ++t.duplicates;
    if (it == acked.end()) continue;
    if (d.received_ms < it->second) ++t.early;
    t.max_late_ms = std::max(t.max_late_ms, d.received_ms - it->second);
    if (first) first_late.push_back(d.received_ms - it->second);
  }
  for (const auto& [id, at] : acked) t.delivered += seen.count(id);
  if (!first_late.empty()) {
    auto middle = first_late.begin() + static_cast<std::ptrdiff_t>(first_late.size() / 2);
    std::nth_element(first_late.begin(), middle, first_late.end());
    t.p50_late_ms = *middle;
  }
  return t;
}

// Shards whose lease row names `node` as its owner; -1 if PostgreSQL cannot
// be asked.
std::int64_t LeasesOwnedBy(const PostgresServer& postgres, const std::string& node) {
  server::Result<std::unique_ptr<server::PgConnection>> c =
      server::PgConnection::Connect(postgres.url());
  if (!c.ok()) return -1;
  server::Result<server::PgResult> r = (*c)->Exec(
      "SELECT count(*) FROM tickwheel_shard_leases WHERE owner = $1", {node});
  return r.ok() ? r->Int(0, 0) : -1;
}

bool AllDelivered(const WebhookReceiver& receiver, const std::map<std::string, std::int64_t>& acked,
                  seconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (Check(receiver, acked).delivered < acked.size()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

TEST(ServerClusterTest, ThreeNodesDeliverEveryTimerOnceOnTimeAndNeverEarly) {
  WebhookReceiver receiver(2);
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  // About 2,000 timers a second (3 threads, 4 ms apart, a third of the
  // requests batches of 20), due within 3 s.
  Creators creators(cluster, receiver.url(), 3, 3000, milliseconds(4));
  std::this_thread::sleep_for(seconds(4));
  creators.Stop();
  const auto acked = creators.acked();
#if defined(__SANITIZE_THREAD__)
  // The creators run in this process, under TSan too: 986 in 4 s seen.
  ASSERT_GT(acked.size(), 500u);
#else
  ASSERT_GT(acked.size(), 1000u);
#endif
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(60))) << Check(receiver, acked).delivered;
  const Tally t = Check(receiver, acked);
  std::printf("%zu timers on three nodes: lateness p50 %lld ms, max %lld ms\n", acked.size(),
              static_cast<long long>(t.p50_late_ms), static_cast<long long>(t.max_late_ms));
  EXPECT_EQ(t.early, 0u);
  EXPECT_EQ(t.duplicates, 0u);
#if !defined(__SANITIZE_THREAD__)
  // On time: armed from the window or announced, not rescued by the 10 s
  // overdue sweep. Generous: three nodes, PostgreSQL and the creators share
  // two busy cores, under ASan in `make server-asan` (1.03 s seen there).
  // Not under TSan, which slows every memory access of the three nodes and
  // the receiver several times (3.7 s seen): a bound there would measure
  // TSan; `make server-tsan` runs this test for its threads.
  EXPECT_LT(t.max_late_ms, 3000);
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // The median, bounded so that a tenfold regression breaks it: 18-44 ms
  // measured (eight runs, a load of 4-8 on the 2 cores), so 200 ms. Not
  // under a sanitizer, whose slowdown is not the server's.
  EXPECT_LT(t.p50_late_ms, 200);
#endif
  EXPECT_EQ(cluster.Sum("tickwheel_fenced_writes_total"), 0);
  // Each node fired its own share.
  for (int i = 0; i < 3; ++i) {
    BlockingHttpClient client(cluster.address(i));
    EXPECT_GT(Metric(client, "tickwheel_timers_fired_total"), 0) << i;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
}

// While timers are created and fired: one node is killed, one is paused
// for longer than its lease and resumed, and PostgreSQL restarts. Every
// acknowledged timer is delivered, none early; the paused node loses its
// leases; duplicates are only those counted.
TEST(ServerClusterTest, ACrashAPauseAndADatabaseRestartLoseNothing) {
  WebhookReceiver receiver(2);
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  Creators creators(cluster, receiver.url(), 3, 3000);
  std::this_thread::sleep_for(seconds(2));
  cluster.node(0).Kill();
  std::this_thread::sleep_for(seconds(1));
  cluster.node(1).Signal(SIGSTOP);
  std::this_thread::sleep_for(milliseconds(2 * kLeaseMs + 1000));
  cluster.node(1).Signal(SIGCONT);
  std::this_thread::sleep_for(seconds(2));
  ASSERT_TRUE(cluster.postgres().Stop());
  std::this_thread::sleep_for(seconds(1));
  ASSERT_TRUE(cluster.postgres().Start()) << cluster.postgres().log();
  std::this_thread::sleep_for(seconds(3));
  creators.Stop();
  const auto acked = creators.acked();
  ASSERT_GT(acked.size(), 1000u);
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(90)))
      << Check(receiver, acked).delivered << " of " << acked.size() << "\n"
      << cluster.node(1).log() << cluster.node(2).log();
  const Tally t = Check(receiver, acked);
  EXPECT_EQ(t.early, 0u);
  BlockingHttpClient paused(cluster.address(1));
  // Its leases were lost. Whether one of its writes then reached the
  // database under a lease it no longer held (refused: fenced) depends on
  // where the pause caught it: a transaction open at the pause is ended by
  // PostgreSQL (idle_in_transaction_session_timeout, 5 s), and a node that
  // sees its leases lost before writing again drops those writes itself.
  // PgConnectionTest.AFencedWriteCommitsOnlyUnderTheLeaseItNames checks
  // the fence without the timing; here what matters is below: nothing
  // lost, nothing early, no duplicate uncounted.
  EXPECT_GT(Metric(paused, "tickwheel_cluster_leases_lost_total"), 0);
  EXPECT_GE(Metric(paused, "tickwheel_fenced_writes_total"), 0);  // exported
  const double counted = cluster.Sum("tickwheel_duplicates_after_recovery_total") +
                         cluster.Sum("tickwheel_attempts_unanswered_total");
  EXPECT_LE(static_cast<double>(t.duplicates), counted) << t.duplicates << " duplicates";
  for (int i : {1, 2}) EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
}

// A rolling restart (SIGTERM, start again, one node at a time) hands the
// shards over: no lease expires or is taken (each is given back and taken
// from the free pool), no write is fenced, nothing is delivered twice or
// early, and nothing waits for the overdue sweep.
TEST(ServerClusterTest, ARollingRestartHandsShardsOverWithoutDuplicates) {
  WebhookReceiver receiver(2);
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  // Paced like the test above, so that lateness measures the hand-overs and
  // not a backlog of creates on nodes slowed down by ASan.
  Creators creators(cluster, receiver.url(), 2, 2000, milliseconds(4));
  // A node's counters start again at its restart: read each before its
  // SIGTERM, and all of them at the end.
  double lost = 0;
  double fenced = 0;
  double unanswered = 0;
  double recovered = 0;
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(seconds(2));
    BlockingHttpClient stopping(cluster.address(i), seconds(5));
    const double node_lost = Metric(stopping, "tickwheel_cluster_leases_lost_total");
    const double node_fenced = Metric(stopping, "tickwheel_fenced_writes_total");
    ASSERT_GE(node_lost, 0) << "no tickwheel_cluster_leases_lost_total on node " << i;
    ASSERT_GE(node_fenced, 0) << "no tickwheel_fenced_writes_total on node " << i;
    lost += node_lost;
    fenced += node_fenced;
    unanswered += std::max(0.0, Metric(stopping, "tickwheel_attempts_unanswered_total"));
    recovered += std::max(0.0, Metric(stopping, "tickwheel_duplicates_after_recovery_total"));
    EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
    // It gave every lease back on its way out (none left to expire).
    EXPECT_EQ(LeasesOwnedBy(cluster.postgres(), "node" + std::to_string(i)), 0)
        << cluster.node(i).log();
    ASSERT_TRUE(cluster.Start(i));
  }
  std::this_thread::sleep_for(seconds(2));
  creators.Stop();
  const auto acked = creators.acked();
  ASSERT_GT(acked.size(), 500u);
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(60)));
  const Tally t = Check(receiver, acked);
  EXPECT_EQ(t.early, 0u);
  lost += cluster.Sum("tickwheel_cluster_leases_lost_total");
  fenced += cluster.Sum("tickwheel_fenced_writes_total");
  unanswered += cluster.Sum("tickwheel_attempts_unanswered_total");
  recovered += cluster.Sum("tickwheel_duplicates_after_recovery_total");
  std::printf("%zu timers over a rolling restart: %zu duplicates; %.0f attempts unanswered, "
              "%.0f made again after a start; lateness max %lld ms\n",
              acked.size(), t.duplicates, unanswered, recovered,
              static_cast<long long>(t.max_late_ms));
  // No attempt in flight was given up at a hand-over and made again by the
  // next owner (docs/server.md, At least once: the only other duplicates
  // are of attempts whose answer never came).
  EXPECT_EQ(recovered, 0) << "an attempt was made again after a hand-over";
#if defined(__SANITIZE_THREAD__)
  // Under TSan the receiver in this process and the three nodes run
  // several times slower: an answer that comes after --delivery-timeout
  // (2 s) makes the attempt unanswered, and its retry a duplicate that the
  // server counts; the hand-over adds none.
  EXPECT_LE(static_cast<double>(t.duplicates), unanswered) << t.duplicates << " duplicates";
#else
  EXPECT_EQ(t.duplicates, 0u);
#endif
  EXPECT_EQ(lost, 0) << "a lease expired or was taken: the hand-over was not graceful";
  EXPECT_EQ(fenced, 0);
#if !defined(__SANITIZE_THREAD__)
  // Generous, as above: a hand-over costs the giver's next round (a third
  // of the lease) and the taker's load, on two busy cores under ASan
  // (2.3 s seen there with unpaced creates); the overdue sweep is 10 s.
  // Not under TSan, whose slowdown is not the hand-over's (3.65 s seen there).
  EXPECT_LT(t.max_late_ms, 3000) << "late beyond the hand-over";
#endif
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.node(i).Terminate(), 0);
}

// The most deliveries received in any window of `w_ms` (sliding over every
// delivery, duplicates included).
std::size_t MaxInWindow(std::vector<Delivery> ds, std::int64_t w_ms) {
  std::sort(ds.begin(), ds.end(),
            [](const Delivery& a, const Delivery& b) { return a.received_ms < b.received_ms; });
  std::size_t best = 0, lo = 0;
  for (std::size_t hi = 0; hi < ds.size(); ++hi) {
    while (ds[hi].received_ms - ds[lo].received_ms >= w_ms) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  return best;
}

// Creates `n` timers of `flow` due now, through the nodes in turn (each
// batch's timers spread over every node's shards); their ids.
std::map<std::string, std::int64_t> CreateFlowTimers(Cluster& cluster, const std::string& url,
                                                     const std::string& flow, int n) {
  std::map<std::string, std::int64_t> acked;
  for (int from = 0, node = 0; from < n; from += 100, node = (node + 1) % cluster.size()) {
    std::string body;
    for (int i = from; i < std::min(n, from + 100); ++i) {
      body += (i > from ? "," : "") +
              TimerBody(flow + "-" + std::to_string(i), 0, url, "\"flow\":\"" + flow + "\"");
    }
    BlockingHttpClient client(cluster.address(node), seconds(10));
    JsonCall c = Call(client, "POST", "/v1/timers:batch", "{\"timers\":[" + body + "]}");
    EXPECT_EQ(c.status, 201) << c.raw;
    for (const auto& t : c.body.at("timers").as_array()) {
      acked[std::string(t.at("id").as_string())] = t.at("fire_at_ms").as_int64();
    }
  }
  return acked;
}

// A flow's rate holds for the three nodes together, not per node, and still
// when one of them is killed while it holds part of the budget: its share
// comes back only once its lease expired. Nothing is lost.
TEST(ServerClusterTest, AFlowsRateHoldsAcrossTheClusterWhenANodeDiesMidThrottle) {
  WebhookReceiver receiver(2);
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  BlockingHttpClient admin(cluster.address(0));
  ASSERT_EQ(Call(admin, "PUT", "/v1/flows/throttled", R"({"rate_per_s": 40, "burst": 6})").status,
            200);
  // In force on every node (announced at once; read again every second).
  for (int i = 0; i < cluster.size(); ++i) {
    BlockingHttpClient node(cluster.address(i));
    for (int tries = 0; !Call(node, "GET", "/v1/flows/throttled").body.at("configured").as_bool();
         ++tries) {
      ASSERT_LT(tries, 50) << "node " << i << " did not apply the settings within a second";
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  const auto acked = CreateFlowTimers(cluster, receiver.url(), "throttled", 360);
  ASSERT_EQ(acked.size(), 360u);
  std::this_thread::sleep_for(seconds(3));  // mid-throttle: about 120 sent
  const std::size_t before_kill = receiver.count();
  EXPECT_GT(before_kill, 40u);
  EXPECT_LT(before_kill, 300u);
  const std::int64_t killed_ms = WallMs();
  cluster.node(1).Kill();
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(90)))
      << Check(receiver, acked).delivered << " of " << acked.size() << "\n"
      << cluster.node(0).log() << cluster.node(2).log();
  const Tally t = Check(receiver, acked);
  EXPECT_EQ(t.early, 0u);
  // The limits bound the gates' releases: burst + rate * T in any T
  // (docs/flows.md; through a node's death too, FlowBudgetTest.
  // ANodeDyingMidThrottleNeverTakesTheClusterAboveTheFlowsLimits on manual
  // time). What the receiver reads comes after each attempt's claim, its
  // send and the receiver's own read, whose spread bunches releases of
  // T + J seconds into T: tens of ms on an idle machine, 300 ms seen under
  // ASan at load 7-8 (58 in a second, 135 in 3 s; the bench's 1,000/s flow
  // had 1,360 in one). So here, over every delivery the receiver saw (a
  // timer the killed node had in flight may come twice; it counts):
  // burst + rate * (T + J), with J = 500 ms.
  constexpr double kRate = 40, kBurst = 6, kSpreadS = 0.5;
  auto bound = [&](double t_s) {
    return static_cast<std::size_t>(kBurst + kRate * (t_s + kSpreadS));
  };
  EXPECT_LE(MaxInWindow(receiver.deliveries(), 1000), bound(1)) << [&] {
    // Per 100 ms, from the first delivery (the kill at "K").
    std::vector<Delivery> d = receiver.deliveries();
    std::int64_t first = INT64_MAX;
    for (const Delivery& x : d) first = std::min(first, x.received_ms);
    std::map<std::int64_t, int> tenths;
    for (const Delivery& x : d) ++tenths[(x.received_ms - first) / 100];
    std::string out = "kill at " + std::to_string((killed_ms - first) / 100) + ":";
    for (const auto& [tenth, n] : tenths) out += " " + std::to_string(tenth) + "=" + std::to_string(n);
    return out;
  }();
  EXPECT_LE(MaxInWindow(receiver.deliveries(), 3000), bound(3));
  const double counted = cluster.Sum("tickwheel_duplicates_after_recovery_total") +
                         cluster.Sum("tickwheel_attempts_unanswered_total");
  EXPECT_LE(static_cast<double>(t.duplicates), counted) << t.duplicates << " duplicates";
  for (int i : {0, 2}) EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
}

// A flow's max_in_flight holds for the three nodes together, not per node:
// its timers are spread over every node's shards, and the receiver (with
// threads to spare) never has more of them in progress than the cap.
TEST(ServerClusterTest, AFlowsInFlightCapHoldsAcrossTheCluster) {
  WebhookReceiver receiver(16);
  receiver.SetResponder([](const Delivery&) {
    Reply r;
    r.delay = milliseconds(100);
    return r;
  });
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  BlockingHttpClient admin(cluster.address(0));
  ASSERT_EQ(Call(admin, "PUT", "/v1/flows/capped", R"({"max_in_flight": 4})").status, 200);
  for (int i = 0; i < cluster.size(); ++i) {
    BlockingHttpClient node(cluster.address(i));
    for (int tries = 0; !Call(node, "GET", "/v1/flows/capped").body.at("configured").as_bool();
         ++tries) {
      ASSERT_LT(tries, 50) << "node " << i << " did not apply the settings within a second";
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  const auto acked = CreateFlowTimers(cluster, receiver.url(), "capped", 120);
  ASSERT_EQ(acked.size(), 120u);
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(60)))
      << Check(receiver, acked).delivered << " of " << acked.size() << "\n"
      << cluster.node(0).log() << cluster.node(1).log() << cluster.node(2).log();
  const Tally t = Check(receiver, acked);
  EXPECT_EQ(t.early, 0u);
  EXPECT_EQ(t.duplicates, 0u);
  EXPECT_LE(receiver.max_in_progress(), 4u);
  std::printf("max in flight over three nodes: %zu (cap 4)\n", receiver.max_in_progress());
  for (int i = 0; i < cluster.size(); ++i) {
    EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
  }
}

// A flow paused through one node is paused on every node within a second,
// and resumed through another.
TEST(ServerClusterTest, AFlowPausedOnOneNodeIsPausedOnAll) {
  WebhookReceiver receiver(2);
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  BlockingHttpClient first(cluster.address(0));
  ASSERT_EQ(Call(first, "POST", "/v1/flows/held-everywhere:pause").status, 200);
  std::this_thread::sleep_for(milliseconds(1500));  // every node has read it
  const auto acked = CreateFlowTimers(cluster, receiver.url(), "held-everywhere", 300);
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(receiver.count(), 0u);
  BlockingHttpClient last(cluster.address(2));
  JsonCall flow = Call(last, "GET", "/v1/flows/held-everywhere");
  EXPECT_TRUE(flow.body.at("paused").as_bool()) << flow.raw;
  EXPECT_EQ(flow.body.at("due").as_int64(), 300) << flow.raw;
  ASSERT_EQ(Call(last, "POST", "/v1/flows/held-everywhere:resume").status, 200);
  ASSERT_TRUE(AllDelivered(receiver, acked, seconds(30)));
  EXPECT_EQ(Check(receiver, acked).duplicates, 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.node(i).Terminate(), 0) << cluster.node(i).log();
}

// PostgreSQL down: writes answer 503 store_unavailable (never a false 201),
// reads too; once it is back the node goes on by itself and loses nothing.
TEST(ServerClusterTest, WhileTheDatabaseIsDownWritesAre503AndNothingIsLost) {
  WebhookReceiver receiver;
  Cluster cluster(1);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  BlockingHttpClient client(cluster.address(0));
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("before", 3000, receiver.url())).status, 201);
  ASSERT_TRUE(cluster.postgres().Stop());
  JsonCall refused = Call(client, "POST", "/v1/timers", TimerBody("during", 0, receiver.url()));
  EXPECT_EQ(refused.status, 503) << refused.raw;
  EXPECT_EQ(ErrorCode(refused), "store_unavailable");
  EXPECT_EQ(Call(client, "GET", "/v1/timers/before").status, 503);
  ASSERT_TRUE(cluster.postgres().Start()) << cluster.postgres().log();
  int status = 0;
  for (int i = 0; i < 500 && status != 201; ++i) {
    status = Call(client, "POST", "/v1/timers", TimerBody("after", 0, receiver.url())).status;
    if (status != 201) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(status, 201);
  ASSERT_TRUE(receiver.WaitFor(2, seconds(30)));
  std::set<std::string> ids;
  for (const Delivery& d : receiver.deliveries()) ids.insert(d.id);
  EXPECT_EQ(ids, (std::set<std::string>{"before", "after"}));
  EXPECT_EQ(Call(client, "GET", "/v1/timers/during").status, 404);
  EXPECT_EQ(cluster.node(0).Terminate(), 0) << cluster.node(0).log();
}

// A schedule is planned by the owner of its shard only: kill that node in
// the middle of a 1-second schedule (between two occurrences), and the
// node that takes the shard over goes on with it. The receiver counts
// each nominal time once: none missed across the takeover, none twice.
TEST(ServerClusterTest, ATakeoverInTheMiddleOfAOneSecondScheduleFiresEachNominalTimeOnce) {
  Cluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  ASSERT_TRUE(cluster.SharesSettled());
  WebhookReceiver receiver;
  BlockingHttpClient first(cluster.address(0), seconds(5));
  ASSERT_EQ(Call(first, "POST", "/v1/schedules",
                 R"({"id":"takeover","every_ms":1000,"target":{"url":")" + receiver.url() + "\"}}")
                .status,
            201);
  // Its owner: the node holding the lease of its shard.
  const int shard = server::ShardOfId("takeover", 32);
  JsonCall leases = Call(first, "GET", "/v1/cluster");
  const std::string owner(leases.body.at("leases").as_array()[static_cast<std::size_t>(shard)]
                              .at("owner").as_string());
  ASSERT_EQ(owner.substr(0, 4), "node");
  const int victim = std::stoi(owner.substr(4));
  auto nominal_times = [&] {
    std::map<std::int64_t, int> times;
    for (const Delivery& d : receiver.deliveries()) {
      ++times[boost::json::parse(d.body).at("nominal_ms").as_int64()];
    }
    return times;
  };
  ASSERT_TRUE(receiver.WaitFor(4, seconds(30)));
  // 300 ms after an occurrence's time: delivered, the next one planned.
  const std::map<std::int64_t, int> before_kill = nominal_times();
  ASSERT_FALSE(before_kill.empty());
  const std::int64_t last = before_kill.rbegin()->first;
  const std::int64_t kill_at = last + 300;
  if (kill_at > WallMs()) std::this_thread::sleep_for(milliseconds(kill_at - WallMs()));
  cluster.node(victim).Kill();
  // Another node takes the shard once the lease expires (2 s), and fires
  // what came due meanwhile; then the schedule goes on.
  const std::size_t before = receiver.count();
  ASSERT_TRUE(receiver.WaitFor(before + 8, seconds(60)));
  const int survivor = (victim + 1) % 3;
  BlockingHttpClient other(cluster.address(survivor), seconds(5));
  ASSERT_EQ(Call(other, "DELETE", "/v1/schedules/takeover").status, 200);
  const std::map<std::int64_t, int> times = nominal_times();
  ASSERT_FALSE(times.empty());
  ASSERT_GT(times.rbegin()->first, kill_at + 5000);  // fired after the takeover
  for (std::int64_t t = times.begin()->first; t <= times.rbegin()->first; t += 1000) {
    const auto it = times.find(t);
    EXPECT_TRUE(it != times.end() && it->second == 1)
        << "nominal time " << t << " delivered " << (it == times.end() ? 0 : it->second)
        << " times (killed " << owner << " at " << kill_at << ")";
  }
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, boost::json::parse(d.body).at("nominal_ms").as_int64()) << d.id;
  }
  EXPECT_EQ(cluster.Sum("tickwheel_duplicates_after_recovery_total"), 0);
}

}  // namespace
}  // namespace tickwheel::testing
