// SPDX-License-Identifier: Apache-2.0
// Crashes and restarts of the real `tickwheel serve`: SIGKILL while timers
// are firing and being created, a restart with a large backlog, and the
// SIGTERM drain.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <signal.h>
#include <thread>

#include "server_test_util.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

// The number of timers the store says were `delivering` at start (logged).
std::int64_t DeliveringAtStart(const std::string& log) {
  const std::size_t at = log.rfind(" pending, ");
  if (at == std::string::npos) return -1;
  return std::stoll(log.substr(at + 10));
}

TEST(ServerRecoveryTest, SigkillWhileFiringAndCreatingLosesNothingAcknowledged) {
  TempDir dir;
  WebhookReceiver receiver(2);
  auto server = std::make_unique<ServerProcess>(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server->Start());
  const std::string address = server->address();

  // Creators: single creates and batches, due over the next 0..3 s, until
  // the server dies. Only answered (201) timers count as acknowledged.
  std::mutex mutex;
  std::map<std::string, std::int64_t> acked;  // id -> fire_at_ms
  std::atomic<bool> stop{false};
  std::vector<std::thread> creators;
  for (int t = 0; t < 4; ++t) {
    creators.emplace_back([&, t] {
      BlockingHttpClient client(address, std::chrono::seconds(5));
      std::mt19937 rng(static_cast<unsigned>(t));
      std::uniform_int_distribution<int> delay(0, 3000);
      for (int n = 0; !stop.load(); ++n) {
        const bool batch = n % 4 == 0;
        std::string body;
        std::vector<std::string> ids;
        for (int k = 0; k < (batch ? 50 : 1); ++k) {
          ids.push_back("c" + std::to_string(t) + "-" + std::to_string(n) + "-" + std::to_string(k));
          body += (k ? "," : "") + TimerBody(ids.back(), delay(rng), receiver.url());
        }
        server::HttpCallResult r = batch ? client.Call("POST", "/v1/timers:batch", "{\"timers\":[" + body + "]}")
                                         : client.Call("POST", "/v1/timers", body);
        if (r.status != 201) continue;  // the server is gone (or going)
        boost::json::value v = boost::json::parse(r.body);
        std::lock_guard lock(mutex);
        if (batch) {
          for (const auto& item : v.at("timers").as_array()) {
            acked[std::string(item.at("id").as_string())] = item.at("fire_at_ms").as_int64();
          }
        } else {
          acked[std::string(v.at("id").as_string())] = v.at("fire_at_ms").as_int64();
        }
      }
    });
  }
  // Kill it once deliveries are flowing and many timers are pending.
  ASSERT_TRUE(receiver.WaitFor(2000, std::chrono::seconds(60)));
  server->Kill();
  stop.store(true);
  for (auto& t : creators) t.join();
  const std::size_t acknowledged = acked.size();
  ASSERT_GT(acknowledged, 2000u);  // typically 8,000-30,000

  // Restart on the same directory: everything acknowledged is delivered.
  ASSERT_TRUE(server->Start());
  const std::int64_t delivering_at_start = DeliveringAtStart(server->log());
  auto all_delivered = [&] {
    std::set<std::string> seen;
    for (const Delivery& d : receiver.deliveries()) seen.insert(d.id);
    for (const auto& [id, at] : acked) {
      if (!seen.count(id)) return false;
    }
    return true;
  };
  for (int i = 0; i < 600 && !all_delivered(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(all_delivered());

  std::map<std::string, int> times;
  for (const Delivery& d : receiver.deliveries()) {
    ++times[d.id];
    EXPECT_GE(d.received_ms, d.fire_at_ms) << d.id << " delivered early";
    EXPECT_TRUE(IsMessageIdOf(d.idempotency_key, d.id)) << d.idempotency_key;
    if (auto it = acked.find(d.id); it != acked.end()) {
      EXPECT_EQ(d.fire_at_ms, it->second);
    }
  }
  std::int64_t duplicates = 0;
  for (const auto& [id, n] : times) duplicates += n - 1;
  BlockingHttpClient client(server->address());
  // Give the last outcomes a moment to be written, then read the counter.
  const double counted = Metric(client, "tickwheel_duplicates_after_recovery_total");
  // Duplicates come only from what was in flight at the crash: each is an
  // attempt of a timer the store still had as `delivering`.
  EXPECT_LE(duplicates, delivering_at_start) << server->log();
  EXPECT_LE(duplicates, static_cast<std::int64_t>(counted));
  EXPECT_LE(counted, static_cast<double>(delivering_at_start));
  std::printf("acknowledged %zu, delivered %zu ids, duplicates %lld, delivering at restart %lld\n",
              acknowledged, times.size(), static_cast<long long>(duplicates),
              static_cast<long long>(delivering_at_start));
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerRecoveryTest, RestartWithALargeBacklogLoadsOnlyTheWindow) {
  constexpr int kFar = 200'000;  // bench-server does 1M and 10M
  constexpr int kNear = 100;
  TempDir dir;
  WebhookReceiver receiver(1);
  auto server = std::make_unique<ServerProcess>(
      Binary(), dir.path() + "/data",
      std::vector<std::string>{"--window", "10s", "--max-batch", "10000"});
  ASSERT_TRUE(server->Start());
  {
    BlockingHttpClient client(server->address());
    for (int b = 0; b < kFar / 10'000; ++b) {
      std::string body = "{\"timers\":[";
      for (int i = 0; i < 10'000; ++i) {
        body += (i ? "," : "") + TimerBody("far-" + std::to_string(b * 10'000 + i), 3'600'000, receiver.url());
      }
      ASSERT_EQ(client.Call("POST", "/v1/timers:batch", body + "]}").status, 201);
    }
    // Due while the server is down.
    std::string body = "{\"timers\":[";
    for (int i = 0; i < kNear; ++i) body += (i ? "," : "") + TimerBody("near-" + std::to_string(i), 500, receiver.url());
    ASSERT_EQ(client.Call("POST", "/v1/timers:batch", body + "]}").status, 201);
    EXPECT_LT(Metric(client, "tickwheel_timers_in_window"), kNear + 1);
  }
  server->Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // let the near ones fall due
  ASSERT_EQ(receiver.count(), 0u);

  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(server->Start());
  ASSERT_TRUE(receiver.WaitFor(1, std::chrono::seconds(30)));
  const auto first = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(receiver.WaitFor(kNear, std::chrono::seconds(30)));
  const auto all = std::chrono::steady_clock::now() - start;
  std::printf("overdue after the restart: first delivered %lld ms, all %d %lld ms after Start\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(first).count()),
              kNear,
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(all).count()));
#if !defined(__SANITIZE_THREAD__)
  // docs/testing.md: the overdue ones (all of them) within 5 s. Not under
  // TSan, whose slowdown of every memory access is not the server's (5.7 s
  // seen there); the ASan build holds it.
  EXPECT_LT(all, std::chrono::seconds(5));
#endif
  BlockingHttpClient client(server->address());
  EXPECT_EQ(Metric(client, "tickwheel_timers{state=\"pending\"}"), kFar);
  // Nothing of the far backlog is in memory: with the overdue ones
  // delivered (the last outcome is recorded just after the receiver
  // answered), the window (10 s; the far ones are due in an hour) is empty.
  EXPECT_EQ(MetricSettlesTo(client, "tickwheel_timers_in_window", 0, std::chrono::seconds(5)), 0);
  for (const Delivery& d : receiver.deliveries()) EXPECT_EQ(d.id.rfind("near-", 0), 0u) << d.id;
  client.Call("GET", "/healthz");
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerRecoveryTest, SigtermFinishesInFlightDeliveriesAndExitsZero) {
  TempDir dir;
  WebhookReceiver receiver(4);
  // Slow answers, so that attempts are in flight when SIGTERM arrives.
  receiver.SetPolicy([](const Delivery&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return 200;
  });
  auto server = std::make_unique<ServerProcess>(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server->Start());
  constexpr int kTimers = 20;
  {
    BlockingHttpClient client(server->address());
    for (int i = 0; i < kTimers; ++i) {
      ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("drain-" + std::to_string(i), 0, receiver.url())).status, 201);
    }
    ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("later", 3'600'000, receiver.url())).status, 201);
  }
  ASSERT_TRUE(receiver.WaitFor(1, std::chrono::seconds(30)));
  EXPECT_EQ(server->Terminate(), 0) << server->log();
  // Every attempt that had started was finished and written back.
  ASSERT_TRUE(server->Start());
  EXPECT_EQ(DeliveringAtStart(server->log()), 0) << server->log();
  ASSERT_TRUE(receiver.WaitFor(kTimers, std::chrono::seconds(30)));
  BlockingHttpClient client(server->address());
  EXPECT_EQ(Metric(client, "tickwheel_duplicates_after_recovery_total"), 0);
  EXPECT_EQ(State(Call(client, "GET", "/v1/timers/later")), "pending");
  std::set<std::string> ids;
  for (const Delivery& d : receiver.deliveries()) EXPECT_TRUE(ids.insert(d.id).second) << d.id;
  EXPECT_EQ(server->Terminate(), 0);
}

// Attempts still in flight when the drain times out are given up without an
// outcome: they stay `delivering` and are made again at the next start, even
// a timer's last attempt (which must not become a dead letter unsent).
TEST(ServerRecoveryTest, ADrainThatTimesOutLeavesAttemptsForTheNextStart) {
  TempDir dir;
  WebhookReceiver receiver(2);
  receiver.SetResponder([](const Delivery&) { return Reply{0, Reply::Mode::kNeverAnswer}; });
  auto server = std::make_unique<ServerProcess>(
      Binary(), dir.path() + "/data",
      std::vector<std::string>{"--drain-timeout", "500ms", "--max-connections-per-host", "1"});
  ASSERT_TRUE(server->Start());
  {
    BlockingHttpClient client(server->address());
    for (const char* id : {"last-try", "queued"}) {
      ASSERT_EQ(Call(client, "POST", "/v1/timers",
                     TimerBody(id, 0, receiver.url(), R"("retry":{"max_attempts":1})")).status, 201);
    }
  }
  ASSERT_TRUE(receiver.WaitFor(1, std::chrono::seconds(30)));
  EXPECT_EQ(server->Terminate(), 0) << server->log();
  EXPECT_NE(server->log().find("timed out"), std::string::npos) << server->log();
  receiver.SetResponder({});
  ASSERT_TRUE(server->Start());
  ASSERT_TRUE(receiver.WaitFor(3, std::chrono::seconds(30)));
  BlockingHttpClient client(server->address());
  for (const char* id : {"last-try", "queued"}) {
    std::string state;
    for (int i = 0; i < 1000 && state != "delivered"; ++i) {
      state = State(Call(client, "GET", std::string("/v1/timers/") + id));
      if (state != "delivered") std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(state, "delivered") << id;
  }
  EXPECT_EQ(Metric(client, "tickwheel_timers_failed_total"), 0);
  EXPECT_EQ(server->Terminate(), 0);
}

// A second SIGTERM during the drain ends it at once: the process exits
// without waiting for the drain timeout; what was in flight stays
// `delivering` and is delivered after the next start.
TEST(ServerRecoveryTest, ASecondSigtermEndsTheDrainAtOnce) {
  TempDir dir;
  WebhookReceiver receiver;
  receiver.SetResponder([](const Delivery&) { return Reply{0, Reply::Mode::kNeverAnswer}; });
  auto server = std::make_unique<ServerProcess>(
      Binary(), dir.path() + "/data", std::vector<std::string>{"--drain-timeout", "120s"});
  ASSERT_TRUE(server->Start());
  {
    BlockingHttpClient client(server->address());
    ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("held", 0, receiver.url())).status, 201);
  }
  ASSERT_TRUE(receiver.WaitFor(1, std::chrono::seconds(30)));
  server->Signal(SIGTERM);
  for (int i = 0; i < 1000 && server->log().find("draining") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto start = std::chrono::steady_clock::now();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->Wait(30), 0) << server->log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  receiver.SetResponder({});
  ASSERT_TRUE(server->Start());
  EXPECT_EQ(DeliveringAtStart(server->log()), 1) << server->log();
  ASSERT_TRUE(receiver.WaitFor(2, std::chrono::seconds(30)));
  BlockingHttpClient client(server->address());
  for (int i = 0; i < 1000 && Metric(client, "tickwheel_timers_delivered_total") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(State(Call(client, "GET", "/v1/timers/held")), "delivered");
  EXPECT_EQ(Metric(client, "tickwheel_duplicates_after_recovery_total"), 1);
  EXPECT_EQ(server->Terminate(), 0);
}

}  // namespace
}  // namespace tickwheel::testing
