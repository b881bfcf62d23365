// SPDX-License-Identifier: Apache-2.0
// The HTTP API of the real `tickwheel serve` on loopback: every route, the
// idempotency rules, and bad input answered 4xx with nothing stored.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "server_test_util.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

// The same suite runs against the embedded store and against a cluster node
// on PostgreSQL: same answers, same guarantees.
enum class Backend { kEmbedded, kCluster };

class ServerApiTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    receiver_ = new WebhookReceiver();
    const std::vector<std::string> args = {"--horizon", "1d", "--payload-limit", "1024",
                                           "--max-batch", "10", "--body-limit", "65536"};
    embedded_ = new ServerProcess(Binary(), dir_->path() + "/data", args);
    spawned_ms_ = WallMs();
    ASSERT_TRUE(embedded_->Start());
    postgres_ = new PostgresServer();
    ASSERT_TRUE(postgres_->ok()) << postgres_->log();
    std::vector<std::string> cluster_args = args;
    cluster_args.insert(cluster_args.end(), {"--postgres", postgres_->url(), "--shards", "8"});
    node_ = new ServerProcess(Binary(), dir_->path() + "/unused", cluster_args);
    ASSERT_TRUE(node_->Start());
  }
  // Also after a SetUpTestSuite that stopped half way (its tests then fail:
  // tests/support/test_main.cc).
  static void TearDownTestSuite() {
    for (ServerProcess* server : {embedded_, node_}) {
      if (server != nullptr && server->running()) {
        EXPECT_EQ(server->Terminate(), 0) << server->log();
      }
      delete server;
    }
    delete postgres_;
    delete receiver_;
    delete dir_;
    embedded_ = node_ = nullptr;
    postgres_ = nullptr;
    receiver_ = nullptr;
    dir_ = nullptr;
  }

  static ServerProcess& server() { return GetParam() == Backend::kEmbedded ? *embedded_ : *node_; }

  BlockingHttpClient client_{server().address()};
  std::string url_ = receiver_->url();

  static TempDir* dir_;
  static std::int64_t spawned_ms_;  // wall clock before either server started
  static WebhookReceiver* receiver_;
  static ServerProcess* embedded_;
  static PostgresServer* postgres_;
  static ServerProcess* node_;
};
TempDir* ServerApiTest::dir_;
std::int64_t ServerApiTest::spawned_ms_;
WebhookReceiver* ServerApiTest::receiver_;
ServerProcess* ServerApiTest::embedded_;
PostgresServer* ServerApiTest::postgres_;
ServerProcess* ServerApiTest::node_;

TEST_P(ServerApiTest, CreateAnswers201AndGetShowsThePendingTimer) {
  const std::int64_t before = WallMs();
  JsonCall c = Call(client_, "POST", "/v1/timers",
                    TimerBody("create-1", 60'000, url_, R"("payload":{"order":7})"));
  ASSERT_EQ(c.status, 201) << c.raw;
  JsonCall g = Call(client_, "GET", "/v1/timers/create-1");
  ASSERT_EQ(g.status, 200) << g.raw;
  EXPECT_EQ(State(g), "pending");
  const std::int64_t fire_at = g.body.at("fire_at_ms").as_int64();
  EXPECT_GE(fire_at, before + 60'000);
  EXPECT_LE(fire_at, WallMs() + 60'000);
  EXPECT_EQ(g.body.at("payload").at("order").as_int64(), 7);
  EXPECT_EQ(g.body.at("target").at("url").as_string(), url_);
}

TEST_P(ServerApiTest, CreateWithoutIdGeneratesOne) {
  JsonCall c = Call(client_, "POST", "/v1/timers", TimerBody("", 60'000, url_));
  ASSERT_EQ(c.status, 201) << c.raw;
  const std::string id(c.body.at("id").as_string());
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/" + id).status, 200);
}

TEST_P(ServerApiTest, CreateIsIdempotentBySameIdAndBody) {
  const std::string body = TimerBody("idem-1", 60'000, url_, R"("payload":[1,2])");
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", body).status, 201);
  JsonCall again = Call(client_, "POST", "/v1/timers", body);
  EXPECT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body.at("id").as_string(), "idem-1");
  JsonCall other = Call(client_, "POST", "/v1/timers",
                        TimerBody("idem-1", 60'000, url_, R"("payload":[1,3])"));
  EXPECT_EQ(other.status, 409) << other.raw;
  EXPECT_EQ(ErrorCode(other), "id_conflict");
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/idem-1").body.at("payload").as_array().at(1).as_int64(), 2);
}

// The same create with its keys in another order, or other spacing, is the
// same request.
TEST_P(ServerApiTest, ARepeatedCreateMatchesWhateverItsKeyOrder) {
  const std::string body = R"({"id":"order-1","delay_ms":60000,"target":{"url":")" + url_ +
                           R"("},"payload":{"a":1,"b":[1,2]}})";
  const std::string reordered = R"({ "payload": {"b": [1, 2], "a": 1}, "target": {"url": ")" +
                                url_ + R"("}, "delay_ms": 60000, "id": "order-1" })";
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", body).status, 201);
  JsonCall again = Call(client_, "POST", "/v1/timers", reordered);
  EXPECT_EQ(again.status, 200) << again.raw;
}

// Generated ids are 128 random bits; a generated create never replaces a
// timer (it checks, as every create does).
TEST_P(ServerApiTest, GeneratedIdsAreDistinct128BitHex) {
  std::set<std::string> ids;
  std::string batch = "{\"timers\":[";
  for (int i = 0; i < 10; ++i) batch += (i ? "," : "") + TimerBody("", 60'000, url_);
  JsonCall b = Call(client_, "POST", "/v1/timers:batch", batch + "]}");
  ASSERT_EQ(b.status, 201) << b.raw;
  for (const auto& t : b.body.at("timers").as_array()) {
    const std::string id(t.at("id").as_string());
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_TRUE(ids.insert(id).second);
  }
}

TEST_P(ServerApiTest, TheUrlSchemeIsCaseInsensitive) {
  std::string upper = url_;
  upper.replace(0, 4, "HTTP");
  JsonCall c = Call(client_, "POST", "/v1/timers", TimerBody("scheme-1", 60'000, upper));
  EXPECT_EQ(c.status, 201) << c.raw;
}

TEST_P(ServerApiTest, RescheduleMovesAPendingTimerOnly) {
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody("resched-1", 60'000, url_)).status, 201);
  const std::int64_t before = WallMs();
  JsonCall r = Call(client_, "PATCH", "/v1/timers/resched-1", R"({"delay_ms": 120000})");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_GE(r.body.at("fire_at_ms").as_int64(), before + 120'000);
  JsonCall at = Call(client_, "PATCH", "/v1/timers/resched-1",
                     "{\"fire_at_ms\": " + std::to_string(before + 90'000) + "}");
  ASSERT_EQ(at.status, 200) << at.raw;
  EXPECT_EQ(at.body.at("fire_at_ms").as_int64(), before + 90'000);
  ASSERT_EQ(Call(client_, "DELETE", "/v1/timers/resched-1").status, 200);
  JsonCall late = Call(client_, "PATCH", "/v1/timers/resched-1", R"({"delay_ms": 1})");
  EXPECT_EQ(late.status, 409) << late.raw;
  EXPECT_EQ(ErrorCode(late), "not_pending");
  EXPECT_EQ(Call(client_, "PATCH", "/v1/timers/no-such-timer", R"({"delay_ms": 1})").status, 404);
  JsonCall bad = Call(client_, "PATCH", "/v1/timers/resched-1", R"({"delay": 1})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(ErrorField(bad), "delay");
}

TEST_P(ServerApiTest, CancelIsIdempotentAndRefusedOnceDelivered) {
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody("cancel-1", 60'000, url_)).status, 201);
  JsonCall c = Call(client_, "DELETE", "/v1/timers/cancel-1");
  ASSERT_EQ(c.status, 200) << c.raw;
  EXPECT_EQ(State(c), "cancelled");
  EXPECT_EQ(Call(client_, "DELETE", "/v1/timers/cancel-1").status, 200);
  EXPECT_EQ(State(Call(client_, "GET", "/v1/timers/cancel-1")), "cancelled");
  EXPECT_EQ(Call(client_, "DELETE", "/v1/timers/no-such-timer").status, 404);

  const std::size_t seen = receiver_->count();
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody("cancel-2", 0, url_)).status, 201);
  ASSERT_TRUE(receiver_->WaitFor(seen + 1, std::chrono::seconds(30)));
  for (int i = 0; i < 3000 && State(Call(client_, "GET", "/v1/timers/cancel-2")) != "delivered"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  JsonCall late = Call(client_, "DELETE", "/v1/timers/cancel-2");
  EXPECT_EQ(late.status, 409) << late.raw;
}

TEST_P(ServerApiTest, BatchCreatesAllOrNothing) {
  JsonCall ok = Call(client_, "POST", "/v1/timers:batch",
                     "{\"timers\":[" + TimerBody("batch-1", 60'000, url_) + "," +
                         TimerBody("batch-2", 60'000, url_) + "," +
                         TimerBody("", 60'000, url_) + "]}");
  ASSERT_EQ(ok.status, 201) << ok.raw;
  ASSERT_EQ(ok.body.at("timers").as_array().size(), 3u);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/batch-2").status, 200);

  // One bad timer: 400 naming it, and the good ones are not stored.
  JsonCall bad = Call(client_, "POST", "/v1/timers:batch",
                      "{\"timers\":[" + TimerBody("batch-3", 1000, url_) + "," +
                          TimerBody("batch-4", -5, url_) + "]}");
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_EQ(ErrorField(bad), "timers[1].delay_ms");
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/batch-3").status, 404);

  // A conflicting id: 409, nothing stored.
  JsonCall conflict = Call(client_, "POST", "/v1/timers:batch",
                           "{\"timers\":[" + TimerBody("batch-5", 1000, url_) + "," +
                               TimerBody("batch-1", 5, url_) + "]}");
  EXPECT_EQ(conflict.status, 409) << conflict.raw;
  EXPECT_EQ(ErrorField(conflict), "timers[1].id");
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/batch-5").status, 404);

  // Repeating the first batch: 200, nothing created.
  JsonCall repeat = Call(client_, "POST", "/v1/timers:batch",
                         "{\"timers\":[" + TimerBody("batch-1", 60'000, url_) + "]}");
  EXPECT_EQ(repeat.status, 200) << repeat.raw;
  EXPECT_FALSE(repeat.body.at("timers").as_array().at(0).at("created").as_bool());
}

TEST_P(ServerApiTest, ListsTimersByStateWithPaging) {
  for (int i = 0; i < 5; ++i) {
    const std::string id = "list-" + std::to_string(i);
    ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(id, 60'000, url_)).status, 201);
    ASSERT_EQ(Call(client_, "DELETE", "/v1/timers/" + id).status, 200);
  }
  std::vector<std::string> seen;
  std::string after;
  for (int page = 0; page < 100; ++page) {
    JsonCall l = Call(client_, "GET",
                      "/v1/timers?state=cancelled&limit=2" + (after.empty() ? "" : "&after=" + after));
    ASSERT_EQ(l.status, 200) << l.raw;
    for (const auto& t : l.body.at("timers").as_array()) {
      EXPECT_EQ(t.at("state").as_string(), "cancelled");
      seen.emplace_back(t.at("id").as_string());
    }
    if (!l.body.as_object().contains("next_after")) break;
    after = std::string(l.body.at("next_after").as_string());
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(std::find(seen.begin(), seen.end(), "list-" + std::to_string(i)), seen.end());
  }
  EXPECT_EQ(Call(client_, "GET", "/v1/timers?state=sleeping").status, 400);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers?state=failed&limit=0").status, 400);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers").status, 400);
}

TEST_P(ServerApiTest, StatsCountStatesAndWhatIsDueSoon) {
  const std::string p = "stats-" + std::to_string(WallMs()) + "-";
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "1", 30'000, url_)).status, 201);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "2", 1'800'000, url_)).status, 201);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "3", 7'200'000, url_)).status, 201);
  const std::int64_t asked_ms = WallMs();
  JsonCall s = Call(client_, "GET", "/v1/stats");
  const std::int64_t answered_ms = WallMs();
  ASSERT_EQ(s.status, 200) << s.raw;
  EXPECT_GE(s.body.at("counts").at("pending").as_int64(), 3);
  EXPECT_TRUE(s.body.at("counts").as_object().contains("failed"));
  const auto& due = s.body.at("due");
  EXPECT_GE(due.at("minute").as_int64(), 1);
  EXPECT_GE(due.at("hour").as_int64(), due.at("minute").as_int64() + 1);
  EXPECT_GE(due.at("day").as_int64(), due.at("hour").as_int64() + 1);
  EXPECT_EQ(due.at("cap").as_int64(), 100'000);
  EXPECT_GT(s.body.at("store").at("bytes").as_int64(), 0);
  EXPECT_EQ(s.body.at("store").at("kind").as_string(),
            GetParam() == Backend::kEmbedded ? "rocksdb" : "postgresql");
  EXPECT_EQ(s.body.at("mode").as_string(), GetParam() == Backend::kEmbedded ? "node" : "cluster");
  // Started after the process was spawned, and up since (wall clock, ms).
  const std::int64_t started = s.body.at("started_ms").as_int64();
  const std::int64_t now = s.body.at("now_ms").as_int64();
  EXPECT_GE(started, spawned_ms_);
  EXPECT_GE(now, asked_ms);
  EXPECT_LE(now, answered_ms);
  EXPECT_EQ(s.body.at("uptime_ms").as_int64(), now - started);
  EXPECT_GT(now - started, 0);
  EXPECT_FALSE(s.body.at("version").as_string().empty());
  JsonCall series = Call(client_, "GET", "/v1/stats/series");
  ASSERT_EQ(series.status, 200) << series.raw;
  EXPECT_EQ(series.body.at("bucket_ms").as_int64(), 10'000);
  EXPECT_TRUE(series.body.at("points").is_array());
  EXPECT_EQ(Call(client_, "POST", "/v1/stats").status, 405);
}

TEST_P(ServerApiTest, ClusterAnswersTheLeasesInClusterModeOnly) {
  JsonCall c = Call(client_, "GET", "/v1/cluster");
  ASSERT_EQ(c.status, 200) << c.raw;
  if (GetParam() == Backend::kEmbedded) {
    EXPECT_EQ(c.body.at("mode").as_string(), "node");
    return;
  }
  // The node answers before its lease thread's first heartbeat lists it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.status == 200 && c.body.at("nodes").as_array().empty() &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c = Call(client_, "GET", "/v1/cluster");
  }
  ASSERT_EQ(c.status, 200) << c.raw;
  EXPECT_EQ(c.body.at("mode").as_string(), "cluster");
  EXPECT_EQ(c.body.at("shards").as_int64(), 8);
  ASSERT_EQ(c.body.at("leases").as_array().size(), 8u);
  const std::string node(c.body.at("node").as_string());
  bool self = false;
  for (const auto& n : c.body.at("nodes").as_array()) {
    if (n.at("self").as_bool()) {
      self = true;
      EXPECT_EQ(n.at("node_id").as_string(), node);
      EXPECT_TRUE(n.at("alive").as_bool());
    }
  }
  EXPECT_TRUE(self) << c.raw;
  EXPECT_EQ(c.body.at("fenced_writes").as_int64(), 0);
}

TEST_P(ServerApiTest, ListsFilterByIdPrefixAndTargetHost) {
  const std::string p = "filter-" + std::to_string(WallMs()) + "-";
  std::string other = url_;
  other.replace(other.find("127.0.0.1"), 9, "localhost");
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "a-1", 60'000, url_)).status, 201);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "a-2", 61'000, url_)).status, 201);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "b-1", 62'000, other)).status, 201);
  auto ids = [&](const std::string& query) {
    std::vector<std::string> out;
    JsonCall l = Call(client_, "GET", "/v1/timers?state=pending&limit=1000&" + query);
    EXPECT_EQ(l.status, 200) << l.raw;
    for (const auto& t : l.body.at("timers").as_array()) out.emplace_back(t.at("id").as_string());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids("prefix=" + p + "a-"), (V{p + "a-1", p + "a-2"}));
  EXPECT_EQ(ids("prefix=" + p + "&host=LOCALHOST"), (V{p + "b-1"}));
  EXPECT_EQ(ids("prefix=" + p + "&host=127.0.0.1"), (V{p + "a-1", p + "a-2"}));
  EXPECT_TRUE(ids("prefix=" + p + "&host=elsewhere.example").empty());
  JsonCall bad = Call(client_, "GET", "/v1/timers?state=pending&prefix=a%20b");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(ErrorField(bad), "prefix");
  EXPECT_EQ(ErrorField(Call(client_, "GET", "/v1/timers?state=pending&host=http://x/")), "host");
}

// Dead letters retried or deleted by filter: counted first (dry run),
// then changed, only those that match and failed before the call.
TEST_P(ServerApiTest, DeadLettersAreRetriedAndDeletedInBulkByFilter) {
  std::atomic<bool> heal{false};  // before the receiver, whose policy reads it
  WebhookReceiver failing;
  failing.SetPolicy([&](const Delivery&) { return heal.load() ? 200 : 500; });
  const std::string p = "bulk-" + std::to_string(WallMs()) + "-";
  const std::string retry_ms = R"("retry":{"max_attempts":1,"backoff_ms":10})";
  for (const std::string name : {"retry-1", "retry-2", "delete-1", "delete-2", "keep-1"}) {
    ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + name, 0, failing.url(), retry_ms)).status,
              201);
  }
  for (const std::string name : {"retry-1", "retry-2", "delete-1", "delete-2", "keep-1"}) {
    for (int i = 0; i < 3000 && State(Call(client_, "GET", "/v1/timers/" + p + name)) != "failed"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(State(Call(client_, "GET", "/v1/timers/" + p + name)), "failed");
  }
  JsonCall dry = Call(client_, "POST", "/v1/timers:delete-failed",
                      R"({"prefix":")" + p + R"(delete-","dry_run":true})");
  ASSERT_EQ(dry.status, 200) << dry.raw;
  EXPECT_EQ(dry.body.at("matched").as_int64(), 2);
  EXPECT_EQ(dry.body.at("done").as_int64(), 0);
  EXPECT_FALSE(dry.body.at("more").as_bool());
  EXPECT_EQ(State(Call(client_, "GET", "/v1/timers/" + p + "delete-1")), "failed");
  // Only what failed before failed_before_ms.
  JsonCall early = Call(client_, "POST", "/v1/timers:delete-failed",
                        R"({"prefix":")" + p + R"(","failed_before_ms":1})");
  ASSERT_EQ(early.status, 200) << early.raw;
  EXPECT_EQ(early.body.at("matched").as_int64(), 0);

  JsonCall deleted = Call(client_, "POST", "/v1/timers:delete-failed",
                          R"({"prefix":")" + p + R"(delete-","host":"127.0.0.1"})");
  ASSERT_EQ(deleted.status, 200) << deleted.raw;
  EXPECT_EQ(deleted.body.at("done").as_int64(), 2);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/" + p + "delete-1").status, 404);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/" + p + "delete-2").status, 404);

  heal = true;
  JsonCall retried = Call(client_, "POST", "/v1/timers:retry-failed",
                          R"({"prefix":")" + p + R"(retry-"})");
  ASSERT_EQ(retried.status, 200) << retried.raw;
  EXPECT_EQ(retried.body.at("matched").as_int64(), 2);
  EXPECT_EQ(retried.body.at("done").as_int64(), 2);
  for (const std::string name : {"retry-1", "retry-2"}) {
    for (int i = 0; i < 3000 && State(Call(client_, "GET", "/v1/timers/" + p + name)) != "delivered"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(State(Call(client_, "GET", "/v1/timers/" + p + name)), "delivered");
  }
  EXPECT_EQ(State(Call(client_, "GET", "/v1/timers/" + p + "keep-1")), "failed");

  // Deleting needs a filter or "all": true (an empty body once deleted every
  // dead letter); retrying takes either too.
  JsonCall unfiltered = Call(client_, "POST", "/v1/timers:delete-failed", "{}");
  EXPECT_EQ(unfiltered.status, 400) << unfiltered.raw;
  EXPECT_EQ(ErrorField(unfiltered), "all");
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:delete-failed", "").status, 400);
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:delete-failed", R"({"all":false})").status, 400);
  EXPECT_EQ(State(Call(client_, "GET", "/v1/timers/" + p + "keep-1")), "failed");
  JsonCall all = Call(client_, "POST", "/v1/timers:delete-failed", R"({"all":true,"dry_run":true})");
  ASSERT_EQ(all.status, 200) << all.raw;
  EXPECT_GE(all.body.at("matched").as_int64(), 1);
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:retry-failed", R"({"all":true,"dry_run":true})").status,
            200);
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:retry-failed", R"({"all":"yes"})").status, 400);
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:retry-failed", R"({"prefix":"a b"})").status, 400);
  JsonCall unknown = Call(client_, "POST", "/v1/timers:retry-failed", R"({"dryrun":true})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(ErrorCode(unknown), "unknown_field");
  EXPECT_EQ(Call(client_, "GET", "/v1/timers:retry-failed").status, 405);
}

struct BadInput {
  const char* name;
  std::string body;
  int status;
  const char* code;
  const char* field;
};

TEST_P(ServerApiTest, BadInputIsRejectedWithTheFieldNamedAndNothingStored) {
  const std::string u = url_;
  const std::string t = ",\"target\":{\"url\":\"" + u + "\"}";
  const std::string big(2000, 'x');
  const std::vector<BadInput> cases = {
      {"malformed JSON", R"({"id":"bad-1","delay_ms":)", 400, "invalid_json", ""},
      {"not an object", R"([1,2])", 400, "invalid_type", ""},
      {"delay as string", R"({"id":"bad-2","delay_ms":"5s")" + t + "}", 400, "invalid_type", "delay_ms"},
      {"fractional delay", R"({"id":"bad-3","delay_ms":1.5)" + t + "}", 400, "invalid_type", "delay_ms"},
      {"typo in a field", R"({"id":"bad-4","dealy_ms":5)" + t + "}", 400, "unknown_field", "dealy_ms"},
      {"negative delay", R"({"id":"bad-5","delay_ms":-1)" + t + "}", 400, "negative_delay", "delay_ms"},
      {"absurd delay", R"({"id":"bad-6","delay_ms":9000000000000)" + t + "}", 400, "beyond_horizon", "delay_ms"},
      {"beyond horizon", R"({"id":"bad-7","delay_ms":172800000)" + t + "}", 400, "beyond_horizon", "delay_ms"},
      {"fire_at in seconds by mistake far ahead", "{\"id\":\"bad-8\",\"fire_at_ms\":" + std::to_string(WallMs() * 1000) + t + "}", 400, "beyond_horizon", "fire_at_ms"},
      {"both delay and fire_at", R"({"id":"bad-9","delay_ms":1,"fire_at_ms":1)" + t + "}", 400, "conflicting_fields", "delay_ms"},
      {"no time", R"({"id":"bad-10")" + t + "}", 400, "missing_field", "delay_ms"},
      {"no target", R"({"id":"bad-11","delay_ms":1})", 400, "missing_field", "target"},
      {"ftp target", R"({"id":"bad-12","delay_ms":1,"target":{"url":"ftp://example.com/x"}})", 400, "unsupported_target", "target.url"},
      {"nats target", R"({"id":"bad-13","delay_ms":1,"target":{"nats":"orders"}})", 400, "unsupported_target", "target.nats"},
      {"url without host", R"({"id":"bad-14","delay_ms":1,"target":{"url":"http:///x"}})", 400, "invalid_value", "target.url"},
      {"unknown target field", R"({"id":"bad-15","delay_ms":1,"target":{"uri":"http://a/"}})", 400, "unknown_field", "target.uri"},
      {"payload over the limit", R"({"id":"bad-16","delay_ms":1,"payload":")" + big + "\"" + t + "}", 413, "payload_too_large", "payload"},
      {"id too long", "{\"id\":\"" + std::string(129, 'a') + "\",\"delay_ms\":1" + t + "}", 400, "invalid_id", "id"},
      {"id with a slash", R"({"id":"a/b","delay_ms":1)" + t + "}", 400, "invalid_id", "id"},
      {"id as a number", R"({"id":17,"delay_ms":1)" + t + "}", 400, "invalid_type", "id"},
      {"retry attempts zero", R"({"id":"bad-17","delay_ms":1,"retry":{"max_attempts":0})" + t + "}", 400, "out_of_range", "retry.max_attempts"},
      {"retry typo", R"({"id":"bad-18","delay_ms":1,"retry":{"attempts":3})" + t + "}", 400, "unknown_field", "retry.attempts"},
      {"hop-by-hop header", R"({"id":"bad-19","delay_ms":1,"target":{"url":")" + u + R"(","headers":{"Connection":"close"}}})", 400, "reserved_header", "target.headers.Connection"},
      {"framing header", R"({"id":"bad-20","delay_ms":1,"target":{"url":")" + u + R"(","headers":{"Transfer-Encoding":"chunked"}}})", 400, "reserved_header", "target.headers.Transfer-Encoding"},
      {"the metadata address", R"({"id":"bad-21","delay_ms":1,"target":{"url":"http://169.254.169.254/latest/meta-data"}})", 400, "target_denied", "target.url"},
      {"a mapped metadata address", R"({"id":"bad-22","delay_ms":1,"target":{"url":"http://[::ffff:169.254.169.254]/"}})", 400, "target_denied", "target.url"},
  };
  for (const BadInput& c : cases) {
    JsonCall r = Call(client_, "POST", "/v1/timers", c.body);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.raw;
    EXPECT_EQ(ErrorCode(r), c.code) << c.name << ": " << r.raw;
    EXPECT_EQ(ErrorField(r), c.field) << c.name << ": " << r.raw;
    EXPECT_FALSE(r.body.at("error").at("message").as_string().empty()) << c.name;
  }
  for (int i = 1; i <= 22; ++i) {
    EXPECT_EQ(Call(client_, "GET", "/v1/timers/bad-" + std::to_string(i)).status, 404) << i;
  }
  JsonCall list = Call(client_, "GET", "/v1/timers?state=pending&limit=1000");
  EXPECT_EQ(list.raw.find("bad-"), std::string::npos);
}

TEST_P(ServerApiTest, OversizedBatchesAndBodiesAreRejected) {
  std::string timers;
  for (int i = 0; i < 11; ++i) timers += (i ? "," : "") + TimerBody("over-" + std::to_string(i), 1000, url_);
  JsonCall r = Call(client_, "POST", "/v1/timers:batch", "{\"timers\":[" + timers + "]}");
  EXPECT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(ErrorCode(r), "batch_too_large");
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/over-0").status, 404);
  JsonCall huge = Call(client_, "POST", "/v1/timers", std::string(100'000, ' '));
  EXPECT_EQ(huge.status, 413) << huge.raw;
  EXPECT_EQ(ErrorCode(huge), "body_too_large");
  EXPECT_EQ(Call(client_, "POST", "/v1/timers:batch", R"({"timers":[]})").status, 400);
}

TEST_P(ServerApiTest, UnknownRoutesAre404AndWrongMethods405) {
  EXPECT_EQ(Call(client_, "GET", "/v2/timers").status, 404);
  EXPECT_EQ(Call(client_, "GET", "/").status, 404);
  JsonCall m = Call(client_, "PUT", "/v1/timers");
  EXPECT_EQ(m.status, 405);
  EXPECT_EQ(ErrorCode(m), "method_not_allowed");
  EXPECT_EQ(Call(client_, "DELETE", "/v1/timers:batch").status, 405);
  EXPECT_EQ(Call(client_, "GET", "/v1/timers/some-id:retry").status, 405);
  EXPECT_EQ(Call(client_, "POST", "/healthz").status, 405);
  EXPECT_EQ(ErrorField(Call(client_, "GET", "/v1/timers/bad%20id")), "id");
}

TEST_P(ServerApiTest, ACreatedTimerIsNamedByTheLocationHeader) {
  const std::string id = "located-" + std::to_string(WallMs());
  server::HttpCallResult created = client_.Call("POST", "/v1/timers", TimerBody(id, 60000, url_));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.headers["location"], "/v1/timers/" + id);
  EXPECT_EQ(client_.Call("GET", created.headers["location"]).status, 200);
  // The same create again is a 200 of the existing timer: nothing created.
  server::HttpCallResult again = client_.Call("POST", "/v1/timers", TimerBody(id, 60000, url_));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.headers.count("location"), 0u);
}

TEST_P(ServerApiTest, TheConsolesPathWithoutUiSaysToStartWithUi) {
  for (const char* path : {"/ui/", "/ui", "/ui/app.js"}) {
    JsonCall c = Call(client_, "GET", path);
    EXPECT_EQ(c.status, 404) << path;
    EXPECT_NE(c.raw.find("start the server with --ui"), std::string::npos) << path << ": " << c.raw;
  }
}

TEST_P(ServerApiTest, HealthzAndMetricsAnswer) {
  JsonCall h = Call(client_, "GET", "/healthz");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body.at("status").as_string(), "ok");
  server::HttpCallResult m = client_.Call("GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  for (const char* name :
       {"tickwheel_timers{state=\"pending\"} ", "tickwheel_timers_in_window ", "tickwheel_timers_created_total ",
        "tickwheel_timers_fired_total ", "tickwheel_timers_delivered_total ",
        "tickwheel_timers_retried_total ", "tickwheel_timers_failed_total ",
        "tickwheel_timers_cancelled_total ", "tickwheel_duplicates_after_recovery_total ",
        "tickwheel_delivery_latency_seconds_bucket{le=", "tickwheel_lateness_seconds_count ",
        "tickwheel_store_write_seconds_sum "}) {
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
  }
  // Counts what was created, once: not a repeated create, nor what is
  // refused; a batch by its new timers.
  const std::string p = "created-" + std::to_string(WallMs()) + "-";
  const double before = Metric(client_, "tickwheel_timers_created_total");
  ASSERT_GE(before, 0);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "1", 60'000, url_)).status, 201);
  EXPECT_EQ(Metric(client_, "tickwheel_timers_created_total"), before + 1);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "1", 60'000, url_)).status, 200);
  ASSERT_EQ(Call(client_, "POST", "/v1/timers", TimerBody(p + "2", -1, url_)).status, 400);
  EXPECT_EQ(Metric(client_, "tickwheel_timers_created_total"), before + 1);
  const std::string batch = "{\"timers\":[" + TimerBody(p + "1", 60'000, url_) + "," +
                            TimerBody(p + "3", 60'000, url_) + "," +
                            TimerBody(p + "4", 60'000, url_) + "]}";
  ASSERT_EQ(Call(client_, "POST", "/v1/timers:batch", batch).status, 201);
  EXPECT_EQ(Metric(client_, "tickwheel_timers_created_total"), before + 3);
}

INSTANTIATE_TEST_SUITE_P(Stores, ServerApiTest,
                         ::testing::Values(Backend::kEmbedded, Backend::kCluster),
                         [](const ::testing::TestParamInfo<Backend>& param_info) {
                           return param_info.param == Backend::kEmbedded ? "Embedded" : "Cluster";
                         });

}  // namespace
}  // namespace tickwheel::testing

namespace tickwheel::testing {
namespace {

// Bad command lines stop `tickwheel serve` at once with a message.
TEST(ServeCommandLineTest, RefusesWhatItCannotDoWithAMessage) {
  TempDir dir;
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string(Binary()) + " serve --data-dir " + dir.path() +
                            "/data " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int status = pclose(p);
    return std::make_pair(WEXITSTATUS(status), out);
  };
  auto [pg_rc, pg_out] = run("--postgres postgresql://tickwheel:secret@127.0.0.1:" +
                             std::to_string(FreePort()) + "/timers");
  EXPECT_NE(pg_rc, 0);
  EXPECT_NE(pg_out.find("cannot connect to PostgreSQL"), std::string::npos) << pg_out;
  EXPECT_EQ(pg_out.find("secret"), std::string::npos) << "a password in the log: " << pg_out;
  auto [listen_rc, listen_out] = run("--listen nonsense");
  EXPECT_NE(listen_rc, 0);
  EXPECT_NE(listen_out.find("--listen"), std::string::npos) << listen_out;
  auto [window_rc, window_out] = run("--window soon");
  EXPECT_NE(window_rc, 0);
  EXPECT_NE(window_out.find("not a duration"), std::string::npos) << window_out;
  auto [backoff_rc, backoff_out] = run("--backoff 50d");
  EXPECT_NE(backoff_rc, 0);
  EXPECT_NE(backoff_out.find("--backoff"), std::string::npos) << backoff_out;
  auto [nats_rc, nats_out] = run("--listen 127.0.0.1:" + std::to_string(FreePort()) +
                                 " --nats nats://127.0.0.1:" + std::to_string(FreePort()));
  EXPECT_NE(nats_rc, 0);
  EXPECT_NE(nats_out.find("cannot connect"), std::string::npos) << nats_out;
}

}  // namespace
}  // namespace tickwheel::testing
