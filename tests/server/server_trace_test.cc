// SPDX-License-Identifier: Apache-2.0
// W3C Trace Context through the real `tickwheel serve` on both stores: the
// traceparent and tracestate a create was sent with come back on every
// delivery attempt (the same trace-id, a new span id per attempt, the
// tracestate as sent), through retries, a dead letter's :retry, batches
// and schedules; a malformed one is a 400 naming it with nothing stored;
// and the Standard Webhooks signature still verifies (docs/operations.md,
// "A timer's delivery in a trace").
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "server_test_util.h"
#include "support/postgres_server.h"
#include "support/standard_webhooks.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using Headers = std::vector<std::pair<std::string, std::string>>;

enum class Backend { kEmbedded, kCluster };

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kParentSpan[] = "00f067aa0ba902b7";
const std::string kParent = std::string("00-") + kTraceId + "-" + kParentSpan + "-01";
const std::string kState = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
const Headers kTrace = {{"traceparent", kParent}, {"tracestate", kState}};

// A traceparent's fields: version, trace-id, parent-id, flags.
std::vector<std::string> Fields(const std::string& traceparent) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (std::size_t dash; (dash = traceparent.find('-', from)) != std::string::npos; from = dash + 1) {
    out.push_back(traceparent.substr(from, dash - from));
  }
  out.push_back(traceparent.substr(from));
  return out;
}

class ServerTraceTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    WriteFile(dir_->path() + "/secrets", std::string(kSecret) + "\n");
    const std::vector<std::string> args = {"--webhook-secret-file", dir_->path() + "/secrets"};
    embedded_ = new ServerProcess(Binary(), dir_->path() + "/data", args);
    ASSERT_TRUE(embedded_->Start());
    postgres_ = new PostgresServer();
    ASSERT_TRUE(postgres_->ok()) << postgres_->log();
    std::vector<std::string> cluster_args = args;
    cluster_args.insert(cluster_args.end(), {"--postgres", postgres_->url(), "--shards", "8"});
    node_ = new ServerProcess(Binary(), dir_->path() + "/unused", cluster_args);
    ASSERT_TRUE(node_->Start());
  }
  static void TearDownTestSuite() {
    for (ServerProcess* server : {embedded_, node_}) {
      if (server != nullptr && server->running()) {
        EXPECT_EQ(server->Terminate(), 0) << server->log();
      }
      delete server;
    }
    delete postgres_;
    delete dir_;
    embedded_ = node_ = nullptr;
    postgres_ = nullptr;
    dir_ = nullptr;
  }

  static ServerProcess& server() { return GetParam() == Backend::kEmbedded ? *embedded_ : *node_; }
  static std::string Prefix() { return GetParam() == Backend::kEmbedded ? "e-" : "c-"; }

  // The deliveries of timer `id`, in order, once `n` of them arrived.
  std::vector<Delivery> DeliveriesOf(const std::string& id, std::size_t n) {
    std::vector<Delivery> out;
    for (int i = 0; i < 6000; ++i) {
      out.clear();
      for (const Delivery& d : receiver_.deliveries()) {
        if (d.id == id) out.push_back(d);
      }
      if (out.size() >= n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return out;
  }

  // Each delivery is a span of kTraceId, a child of none of the others
  // (each span id distinct, none the stored parent's), with the
  // tracestate as sent, and signed by kSecret.
  void ExpectSpansOfTheTrace(const std::vector<Delivery>& deliveries) {
    std::set<std::string> spans;
    for (const Delivery& d : deliveries) {
      ASSERT_TRUE(d.headers.contains("traceparent")) << d.body;
      const std::vector<std::string> f = Fields(d.headers.at("traceparent"));
      ASSERT_EQ(f.size(), 4u) << d.headers.at("traceparent");
      EXPECT_EQ(f[0], "00");
      EXPECT_EQ(f[1], kTraceId);
      EXPECT_EQ(f[2].size(), 16u);
      EXPECT_NE(f[2], kParentSpan);
      EXPECT_NE(f[2], "0000000000000000");
      EXPECT_EQ(f[3], "01");
      spans.insert(f[2]);
      ASSERT_TRUE(d.headers.contains("tracestate")) << d.body;
      EXPECT_EQ(d.headers.at("tracestate"), kState);
      std::string why;
      EXPECT_TRUE(VerifyStandardWebhook(kSecret, d.headers, d.body, &why)) << why;
    }
    EXPECT_EQ(spans.size(), deliveries.size()) << "an attempt's span id was used twice";
  }

  BlockingHttpClient client_{server().address()};
  WebhookReceiver receiver_;

  static TempDir* dir_;
  static ServerProcess* embedded_;
  static PostgresServer* postgres_;
  static ServerProcess* node_;
};
TempDir* ServerTraceTest::dir_;
ServerProcess* ServerTraceTest::embedded_;
PostgresServer* ServerTraceTest::postgres_;
ServerProcess* ServerTraceTest::node_;

TEST_P(ServerTraceTest, EveryAttemptIsANewSpanOfTheCreatesTraceAndStillVerifies) {
  const std::string id = Prefix() + "retried";
  receiver_.SetPolicy([](const Delivery& d) { return d.attempt < 3 ? 500 : 200; });
  JsonCall c = Call(client_, "POST", "/v1/timers",
                    TimerBody(id, 0, receiver_.url(), R"("retry":{"max_attempts":3,"backoff_ms":10})"),
                    kTrace);
  ASSERT_EQ(c.status, 201) << c.raw;
  EXPECT_EQ(c.body.at("traceparent").as_string(), kParent);
  EXPECT_EQ(c.body.at("tracestate").as_string(), kState);
  const std::vector<Delivery> got = DeliveriesOf(id, 3);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)].attempt, i + 1);
  ExpectSpansOfTheTrace(got);
  // The third answer's outcome is written after the receiver saw it.
  JsonCall g = Call(client_, "GET", "/v1/timers/" + id);
  for (int i = 0; i < 3000 && State(g) != "delivered"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    g = Call(client_, "GET", "/v1/timers/" + id);
  }
  EXPECT_EQ(State(g), "delivered") << g.raw;
  EXPECT_EQ(g.body.at("traceparent").as_string(), kParent);
  EXPECT_EQ(g.body.at("tracestate").as_string(), kState);
}

TEST_P(ServerTraceTest, ADeadLetterRetriedKeepsItsTrace) {
  const std::string id = Prefix() + "dead";
  std::atomic<bool> heal{false};
  receiver_.SetPolicy([&](const Delivery&) { return heal.load() ? 200 : 500; });
  ASSERT_EQ(Call(client_, "POST", "/v1/timers",
                 TimerBody(id, 0, receiver_.url(), R"("retry":{"max_attempts":1,"backoff_ms":10})"),
                 kTrace)
                .status,
            201);
  ASSERT_EQ(DeliveriesOf(id, 1).size(), 1u);
  for (int i = 0; i < 3000 && State(Call(client_, "GET", "/v1/timers/" + id)) != "failed"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(State(Call(client_, "GET", "/v1/timers/" + id)), "failed");
  heal = true;
  ASSERT_EQ(Call(client_, "POST", "/v1/timers/" + id + ":retry").status, 200);
  const std::vector<Delivery> got = DeliveriesOf(id, 2);
  ASSERT_EQ(got.size(), 2u);
  ExpectSpansOfTheTrace(got);
}

TEST_P(ServerTraceTest, ABatchGivesEveryTimerTheRequestsTrace) {
  const std::string p = Prefix() + "batch-";
  const std::string batch = "{\"timers\":[" + TimerBody(p + "1", 0, receiver_.url()) + "," +
                            TimerBody(p + "2", 0, receiver_.url()) + "]}";
  ASSERT_EQ(Call(client_, "POST", "/v1/timers:batch", batch, kTrace).status, 201);
  std::vector<Delivery> got = DeliveriesOf(p + "1", 1);
  const std::vector<Delivery> second = DeliveriesOf(p + "2", 1);
  got.insert(got.end(), second.begin(), second.end());
  ASSERT_EQ(got.size(), 2u);
  ExpectSpansOfTheTrace(got);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/" + p + "2").body.at("traceparent").as_string(), kParent);
}

TEST_P(ServerTraceTest, EachOccurrenceOfAScheduleIsInItsTrace) {
  const std::string id = Prefix() + "every";
  JsonCall s = Call(client_, "POST", "/v1/schedules",
                    "{\"id\":\"" + id + "\",\"every_ms\":1000,\"target\":{\"url\":\"" +
                        receiver_.url() + "\"}}",
                    kTrace);
  ASSERT_EQ(s.status, 201) << s.raw;
  EXPECT_EQ(s.body.at("traceparent").as_string(), kParent);
  std::vector<Delivery> got;
  for (int i = 0; i < 3000 && got.size() < 2; ++i) {
    got.clear();
    for (const Delivery& d : receiver_.deliveries()) {
      if (d.id.rfind(id + "@", 0) == 0) got.push_back(d);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Call(client_, "DELETE", "/v1/schedules/" + id).status, 200);
  ASSERT_GE(got.size(), 2u);
  ExpectSpansOfTheTrace(got);
}

// A malformed traceparent is the caller's mistake, said at once (a 400
// naming the header), rather than deliveries that arrive untraced days
// later: nothing is stored.
TEST_P(ServerTraceTest, AMalformedTraceContextIsRefusedNamingTheHeader) {
  const std::string id = Prefix() + "malformed";
  const std::vector<Headers> bad = {
      {{"traceparent", "00-" + std::string(kTraceId) + "-" + kParentSpan}},
      {{"traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}},
      {{"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}},
      {{"traceparent", kParent}, {"traceparent", kParent}},
      {{"tracestate", kState}},
      {{"traceparent", kParent}, {"tracestate", "no-equals-sign"}},
  };
  for (const Headers& headers : bad) {
    const std::string field = headers.size() == 1 ? headers[0].first
                              : headers[1].first == "traceparent" ? "traceparent"
                                                                  : "tracestate";
    JsonCall c = Call(client_, "POST", "/v1/timers", TimerBody(id, 60'000, receiver_.url()), headers);
    EXPECT_EQ(c.status, 400) << c.raw;
    EXPECT_EQ(ErrorCode(c), "invalid_trace_context") << c.raw;
    EXPECT_EQ(ErrorField(c), field) << c.raw;
    JsonCall b = Call(client_, "POST", "/v1/timers:batch",
                      "{\"timers\":[" + TimerBody(id, 60'000, receiver_.url()) + "]}", headers);
    EXPECT_EQ(ErrorCode(b), "invalid_trace_context") << b.raw;
    JsonCall s = Call(client_, "POST", "/v1/schedules",
                      "{\"id\":\"" + id + "\",\"every_ms\":60000,\"target\":{\"url\":\"" +
                          receiver_.url() + "\"}}",
                      headers);
    EXPECT_EQ(ErrorCode(s), "invalid_trace_context") << s.raw;
  }
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/" + id).status, 404);
  EXPECT_EQ(Call(client_, "GET", "/v1/schedules/" + id).status, 404);
}

// The trace context is not the create's body: the same create again under
// another span is the same create (200), and the timer keeps its first
// trace; a timer created without one has none and is sent none.
TEST_P(ServerTraceTest, ARepeatedCreateKeepsTheFirstTraceAndAnUntracedTimerSendsNone) {
  const std::string id = Prefix() + "repeat";
  const std::string body = TimerBody(id, 60'000, receiver_.url());
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", body, kTrace).status, 201);
  JsonCall again = Call(client_, "POST", "/v1/timers", body,
                        {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}});
  EXPECT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body.at("traceparent").as_string(), kParent);
  ASSERT_EQ(Call(client_, "DELETE", "/v1/timers/" + id).status, 200);

  const std::string plain = Prefix() + "untraced";
  JsonCall c = Call(client_, "POST", "/v1/timers", TimerBody(plain, 0, receiver_.url()));
  ASSERT_EQ(c.status, 201) << c.raw;
  EXPECT_FALSE(c.body.as_object().contains("traceparent")) << c.raw;
  const std::vector<Delivery> got = DeliveriesOf(plain, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].headers.contains("traceparent"));
  EXPECT_FALSE(got[0].headers.contains("tracestate"));
}

INSTANTIATE_TEST_SUITE_P(Stores, ServerTraceTest,
                         ::testing::Values(Backend::kEmbedded, Backend::kCluster),
                         [](const ::testing::TestParamInfo<Backend>& param_info) {
                           return param_info.param == Backend::kEmbedded ? "Embedded" : "Cluster";
                         });

}  // namespace
}  // namespace tickwheel::testing
