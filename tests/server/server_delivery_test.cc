// SPDX-License-Identifier: Apache-2.0
// Delivery by the real `tickwheel serve` to a real HTTP receiver: on time
// and never early, exactly once without crashes, retries with backoff,
// dead letters and their retry, a stable Idempotency-Key.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "server_test_util.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

class ServerDeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(Binary(), dir_.path() + "/data");
    ASSERT_TRUE(server_->Start());
    client_ = std::make_unique<BlockingHttpClient>(server_->address());
  }
  void TearDown() override {
    client_.reset();  // an idle keep-alive connection would delay the drain
    if (server_->running()) {
      EXPECT_EQ(server_->Terminate(), 0) << server_->log();
    }
  }

  // Polls GET until the timer is in `state` (bounded); returns the last body.
  JsonCall WaitForState(const std::string& id, const std::string& state) {
    JsonCall c;
    for (int i = 0; i < 3000; ++i) {
      c = Call(*client_, "GET", "/v1/timers/" + id);
      if (State(c) == state) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return c;
  }

  TempDir dir_;
  WebhookReceiver receiver_{2};
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<BlockingHttpClient> client_;
};

TEST_F(ServerDeliveryTest, DeliversEveryTimerOnceOnTimeAndNeverEarly) {
  constexpr int kTimers = 500;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> delay(0, 2000);
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < kTimers; ++i) {
    const std::string id = "t" + std::to_string(i);
    JsonCall c = Call(*client_, "POST", "/v1/timers",
                      TimerBody(id, delay(rng), receiver_.url("/on-time"),
                                "\"payload\":{\"n\":" + std::to_string(i) + "}"));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver_.WaitFor(kTimers, std::chrono::seconds(60)));
  std::vector<std::int64_t> lateness;
  std::set<std::string> seen;
  for (const Delivery& d : receiver_.deliveries()) {
    ASSERT_TRUE(fire_at.count(d.id)) << d.id;
    EXPECT_TRUE(seen.insert(d.id).second) << d.id << " delivered twice";
    EXPECT_TRUE(IsMessageIdOf(d.idempotency_key, d.id)) << d.idempotency_key;
    EXPECT_EQ(d.attempt, 1);
    EXPECT_EQ(d.fire_at_ms, fire_at[d.id]);
    EXPECT_EQ(d.path, "/on-time");
    EXPECT_EQ(d.payload, "{\"n\":" + d.id.substr(1) + "}");
    EXPECT_GE(d.received_ms, d.fire_at_ms) << d.id << " delivered early";
    lateness.push_back(d.received_ms - d.fire_at_ms);
  }
  std::sort(lateness.begin(), lateness.end());
  const std::int64_t p50 = lateness[lateness.size() / 2];
  const std::int64_t p99 = lateness[lateness.size() * 99 / 100];
  std::printf("lateness at the receiver: p50 %lld ms, p99 %lld ms, max %lld ms\n",
              static_cast<long long>(p50), static_cast<long long>(p99),
              static_cast<long long>(lateness.back()));
  // The median holds on a loaded machine (docs/performance.md measures
  // 1 ms at 2,000/s; this run sees 1 ms with a load of 4-5 on 2 cores):
  // ten times that fails. The tail is the machine's: the benchmark measures
  // the real p99.
  EXPECT_LT(p50, 10);
  EXPECT_LT(p99, 1000);
  // The receiver answered; the server writes the outcome right after.
  for (int i = 0; i < 3000 && Metric(*client_, "tickwheel_timers_delivered_total") < kTimers; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Metric(*client_, "tickwheel_timers_delivered_total"), kTimers);
  EXPECT_EQ(Metric(*client_, "tickwheel_duplicates_after_recovery_total"), 0);
  EXPECT_EQ(State(WaitForState("t0", "delivered")), "delivered");
}

TEST_F(ServerDeliveryTest, PastFireTimeFiresNow) {
  const std::int64_t now = WallMs();
  JsonCall c = Call(*client_, "POST", "/v1/timers",
                    "{\"id\":\"past\",\"fire_at_ms\":" + std::to_string(now - 60'000) +
                        ",\"target\":{\"url\":\"" + receiver_.url() + "\"}}");
  ASSERT_EQ(c.status, 201) << c.raw;
  EXPECT_GE(c.body.at("fire_at_ms").as_int64(), now);
  ASSERT_TRUE(receiver_.WaitFor(1, std::chrono::seconds(30)));
  EXPECT_EQ(receiver_.deliveries()[0].id, "past");
}

TEST_F(ServerDeliveryTest, RetriesWithExponentialBackoffThenDelivers) {
  receiver_.SetPolicy([](const Delivery& d) { return d.attempt < 3 ? 503 : 200; });
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers",
                 TimerBody("flaky", 0, receiver_.url(),
                           R"("retry":{"max_attempts":5,"backoff_ms":200})"))
                .status,
            201);
  ASSERT_TRUE(receiver_.WaitFor(3, std::chrono::seconds(60)));
  JsonCall done = WaitForState("flaky", "delivered");
  EXPECT_EQ(State(done), "delivered");
  EXPECT_EQ(done.body.at("attempts").as_int64(), 3);
  std::vector<Delivery> d = receiver_.deliveries();
  ASSERT_EQ(d.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d[i].attempt, i + 1);
    EXPECT_EQ(d[i].idempotency_key, d[0].idempotency_key);  // the same for every attempt
    EXPECT_TRUE(IsMessageIdOf(d[i].idempotency_key, "flaky")) << d[i].idempotency_key;
  }
  // Backoff 200 ms then 400 ms, each with jitter in [0.5, 1.5).
  EXPECT_GE(d[1].received_ms - d[0].received_ms, 100);
  EXPECT_GE(d[2].received_ms - d[1].received_ms, 200);
  EXPECT_EQ(Metric(*client_, "tickwheel_timers_retried_total"), 2);
}

// A timer removed (here by a bulk delete of dead letters; retention does
// the same) and created again with its id is a new message: a receiver
// that remembers Idempotency-Keys must not drop it.
TEST_F(ServerDeliveryTest, ATimerCreatedAgainWithAnOldIdIsANewMessage) {
  receiver_.SetPolicy([](const Delivery& d) { return d.payload == "1" ? 500 : 200; });
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers",
                 TimerBody("again", 0, receiver_.url(), R"("payload":1,"retry":{"max_attempts":1})"))
                .status,
            201);
  ASSERT_EQ(State(WaitForState("again", "failed")), "failed");
  JsonCall deleted = Call(*client_, "POST", "/v1/timers:delete-failed", R"({"prefix":"again"})");
  ASSERT_EQ(deleted.status, 200) << deleted.raw;
  ASSERT_EQ(deleted.body.at("done").as_int64(), 1);
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers", TimerBody("again", 0, receiver_.url(), R"("payload":2)")).status,
            201);
  ASSERT_EQ(State(WaitForState("again", "delivered")), "delivered");
  const std::vector<Delivery> d = receiver_.deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(IsMessageIdOf(d[0].idempotency_key, "again")) << d[0].idempotency_key;
  EXPECT_TRUE(IsMessageIdOf(d[1].idempotency_key, "again")) << d[1].idempotency_key;
  EXPECT_NE(d[0].idempotency_key, d[1].idempotency_key);
}

TEST_F(ServerDeliveryTest, DeadLetterIsListedAndRetryRearmsIt) {
  receiver_.SetPolicy([](const Delivery&) { return 500; });
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers",
                 TimerBody("doomed", 0, receiver_.url(),
                           R"("retry":{"max_attempts":3,"backoff_ms":20})"))
                .status,
            201);
  JsonCall failed = WaitForState("doomed", "failed");
  ASSERT_EQ(State(failed), "failed") << failed.raw;
  EXPECT_EQ(failed.body.at("attempts").as_int64(), 3);
  EXPECT_EQ(failed.body.at("last_error").as_string(), "HTTP 500");
  EXPECT_EQ(receiver_.count(), 3u);
  JsonCall list = Call(*client_, "GET", "/v1/timers?state=failed");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body.at("timers").as_array().size(), 1u);
  EXPECT_EQ(list.body.at("timers").as_array()[0].at("id").as_string(), "doomed");
  EXPECT_EQ(Metric(*client_, "tickwheel_timers_failed_total"), 1);

  EXPECT_EQ(Call(*client_, "POST", "/v1/timers/flaky-none:retry").status, 404);
  receiver_.SetPolicy([](const Delivery&) { return 200; });
  JsonCall retry = Call(*client_, "POST", "/v1/timers/doomed:retry");
  ASSERT_EQ(retry.status, 200) << retry.raw;
  EXPECT_EQ(State(WaitForState("doomed", "delivered")), "delivered");
  std::vector<Delivery> d = receiver_.deliveries();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[3].attempt, 1);
  EXPECT_EQ(d[3].idempotency_key, d[0].idempotency_key);  // the same timer
  EXPECT_EQ(Call(*client_, "POST", "/v1/timers/doomed:retry").status, 409);
}

TEST_F(ServerDeliveryTest, CancelledNeverFiresAndRescheduledFiresOnlyAtTheNewTime) {
  const std::string url = receiver_.url();
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers", TimerBody("cancel-me", 300, url)).status, 201);
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers", TimerBody("move-me", 300, url)).status, 201);
  ASSERT_EQ(Call(*client_, "DELETE", "/v1/timers/cancel-me").status, 200);
  JsonCall moved = Call(*client_, "PATCH", "/v1/timers/move-me", R"({"delay_ms": 1000})");
  ASSERT_EQ(moved.status, 200);
  const std::int64_t new_time = moved.body.at("fire_at_ms").as_int64();
  // A sentinel after both original times and before the new one.
  ASSERT_EQ(Call(*client_, "POST", "/v1/timers", TimerBody("sentinel", 600, url)).status, 201);
  ASSERT_TRUE(receiver_.WaitFor(2, std::chrono::seconds(30)));
  std::vector<Delivery> d = receiver_.deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, "sentinel");
  EXPECT_EQ(d[1].id, "move-me");
  EXPECT_GE(d[1].received_ms, new_time);
  EXPECT_EQ(State(Call(*client_, "GET", "/v1/timers/cancel-me")), "cancelled");
}

TEST_F(ServerDeliveryTest, ClientCommandsTalkToTheServer) {
  auto run = [&](const std::string& args) {
    std::string cmd = std::string(Binary()) + " " + args + " --server " + server_->address() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int status = pclose(p);
    return std::make_pair(WEXITSTATUS(status), out);
  };
  auto [add_rc, add_out] = run("add --id cli-1 --in 1h --url " + receiver_.url() + " --payload '{\"k\":1}'");
  EXPECT_EQ(add_rc, 0) << add_out;
  EXPECT_NE(add_out.find("id:         cli-1"), std::string::npos) << add_out;
  EXPECT_NE(add_out.find("(in 60m)"), std::string::npos) << add_out;
  auto [get_rc, get_out] = run("get cli-1");
  EXPECT_EQ(get_rc, 0);
  EXPECT_NE(get_out.find("state:      pending"), std::string::npos) << get_out;
  auto [json_rc, json_out] = run("get cli-1 --json");
  EXPECT_EQ(json_rc, 0);
  EXPECT_EQ(boost::json::parse(json_out).at("payload").at("k").as_int64(), 1) << json_out;
  auto [ls_rc, ls_out] = run("ls --state pending");
  EXPECT_EQ(ls_rc, 0);
  EXPECT_NE(ls_out.find("cli-1"), std::string::npos) << ls_out;
  EXPECT_NE(ls_out.find("ATTEMPTS"), std::string::npos) << ls_out;
  auto [cancel_rc, cancel_out] = run("cancel cli-1");
  EXPECT_EQ(cancel_rc, 0);
  EXPECT_NE(cancel_out.find("state:      cancelled"), std::string::npos) << cancel_out;
  auto [missing_rc, missing_out] = run("get nope");
  EXPECT_EQ(missing_rc, 1);
  EXPECT_NE(missing_out.find("not_found"), std::string::npos) << missing_out;
  auto [bad_rc, bad_out] = run("add --in 1s --url ftp://x/");
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad_out.find("unsupported_target"), std::string::npos) << bad_out;
}

}  // namespace
}  // namespace tickwheel::testing

namespace tickwheel::testing {
namespace {

// --retention: delivered timers disappear some time after delivery;
// dead letters stay.
TEST(ServerRetentionTest, DeliveredTimersAreDeletedAfterTheRetention) {
  TempDir dir;
  WebhookReceiver receiver(1);
  receiver.SetPolicy([](const Delivery& d) { return d.id == "dead" ? 500 : 200; });
  ServerProcess server(Binary(), dir.path() + "/data", {"--retention", "300ms"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("done", 0, receiver.url())).status, 201);
  ASSERT_EQ(Call(client, "POST", "/v1/timers",
                 TimerBody("dead", 0, receiver.url(), R"("retry":{"max_attempts":1})"))
                .status,
            201);
  ASSERT_TRUE(receiver.WaitFor(2, std::chrono::seconds(30)));
  int status = 0;
  for (int i = 0; i < 3000 && (status = Call(client, "GET", "/v1/timers/done").status) != 404; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 404);
  EXPECT_EQ(State(Call(client, "GET", "/v1/timers/dead")), "failed");
  EXPECT_EQ(Metric(client, "tickwheel_timers{state=\"delivered\"}"), 0);
  EXPECT_EQ(server.Terminate(), 0);
}


// The issue's case: --retention deletes a delivered timer, and a timer
// created again with its id is a new message: a new Idempotency-Key and
// webhook-id (a deduplicating receiver must not drop it), each stable
// across the attempts of its own incarnation (the first attempt of each
// is answered 500, the second 200).
TEST(ServerRetentionTest, ATimerCreatedAgainAfterRetentionDeletedItIsANewMessage) {
  TempDir dir;
  WebhookReceiver receiver(1);
  receiver.SetPolicy([](const Delivery& d) { return d.attempt == 1 ? 500 : 200; });
  WriteFile(dir.path() + "/secrets", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--retention", "300ms", "--webhook-secret-file", dir.path() + "/secrets"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  const std::string body =
      TimerBody("again", 0, receiver.url(), R"("payload":1,"retry":{"max_attempts":2,"backoff_ms":20})");
  ASSERT_EQ(Call(client, "POST", "/v1/timers", body).status, 201);
  ASSERT_TRUE(receiver.WaitFor(2, std::chrono::seconds(30)));
  // Retention deletes it (delivered, then 300 ms).
  int status = 0;
  for (int i = 0; i < 3000 && (status = Call(client, "GET", "/v1/timers/again").status) != 404; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(status, 404) << "retention never deleted the delivered timer";
  // The same create again: a new timer (idempotent create lasts as long as
  // retention keeps the first), delivered as a new message.
  const JsonCall again = Call(client, "POST", "/v1/timers", body);
  ASSERT_EQ(again.status, 201) << again.raw;
  ASSERT_TRUE(receiver.WaitFor(4, std::chrono::seconds(30)));
  const std::vector<Delivery> d = receiver.deliveries();
  ASSERT_EQ(d.size(), 4u);
  for (const Delivery& x : d) {
    EXPECT_TRUE(IsMessageIdOf(x.idempotency_key, "again")) << x.idempotency_key;
    EXPECT_EQ(x.headers.count("webhook-id"), 1u);
    if (x.headers.count("webhook-id")) {
      EXPECT_EQ(x.headers.at("webhook-id"), x.idempotency_key);
    }
  }
  EXPECT_EQ(d[0].attempt, 1);
  EXPECT_EQ(d[1].attempt, 2);
  EXPECT_EQ(d[2].attempt, 1);
  EXPECT_EQ(d[3].attempt, 2);
  EXPECT_EQ(d[0].idempotency_key, d[1].idempotency_key) << "one incarnation, two keys";
  EXPECT_EQ(d[2].idempotency_key, d[3].idempotency_key) << "one incarnation, two keys";
  EXPECT_NE(d[0].idempotency_key, d[2].idempotency_key) << "the new timer reused the old message id";
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
