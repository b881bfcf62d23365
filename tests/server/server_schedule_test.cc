// SPDX-License-Identifier: Apache-2.0
// Recurring schedules in the real `tickwheel serve`, on both stores (the
// embedded RocksDB and a one-node cluster on PostgreSQL): the API, the
// occurrences a receiver gets (each nominal time once, never early, keyed
// by the occurrence), a SIGKILL between planning and firing, and an outage
// of three periods under each catch-up policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "server_test_util.h"
#include "store/pg_connection.h"
#include "support/postgres_server.h"
#include "support/process_stats.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

enum class Backend { kEmbedded, kPostgres };

class ServerScheduleTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { postgres_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }

  // The server, with `extra` flags; a one-node cluster on a database of
  // its own for kPostgres (a lease of 2 s, so a restart takes its shards
  // back soon).
  std::unique_ptr<ServerProcess> MakeServer(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--backoff", "200ms", "--delivery-timeout", "2s"});
    if (GetParam() == Backend::kPostgres) {
      EXPECT_TRUE(postgres_->ok()) << postgres_->log();
      if (database_.empty()) {
        static int databases = 0;
        const std::string name = "sched_" + std::to_string(++databases);
        auto admin = server::PgConnection::Connect(postgres_->url());
        EXPECT_TRUE(admin.ok() && (*admin)->ExecScript("CREATE DATABASE " + name).ok());
        database_ = postgres_->url();
        database_ = database_.substr(0, database_.rfind('/') + 1) + name;
      }
      extra.insert(extra.end(), {"--postgres", database_, "--node-id", "n1", "--shards", "8",
                                 "--lease", "2s"});
    }
    return std::make_unique<ServerProcess>(Binary(), dir_.path() + "/data", extra);
  }

  // A schedule body: {"id", "every_ms", "target"} and more.
  std::string Every(const std::string& id, std::int64_t every_ms, const std::string& url,
                    const std::string& extra = "") {
    std::string body = "{\"id\":\"" + id + "\",\"every_ms\":" + std::to_string(every_ms) +
                       ",\"target\":{\"url\":\"" + url + "\"}";
    if (!extra.empty()) body += "," + extra;
    return body + "}";
  }

  static PostgresServer* postgres_;
  TempDir dir_;
  std::string database_;
};
PostgresServer* ServerScheduleTest::postgres_ = nullptr;

// The deliveries of schedule `id`, by nominal time: how many times each.
std::map<std::int64_t, int> NominalTimes(const WebhookReceiver& receiver, const std::string& id) {
  std::map<std::int64_t, int> times;
  for (const Delivery& d : receiver.deliveries()) {
    const boost::json::value body = boost::json::parse(d.body);
    if (body.at("schedule").as_string() != id) continue;
    ++times[body.at("nominal_ms").as_int64()];
  }
  return times;
}

// Sleeps until the wall clock reads `unix_ms`.
void SleepUntil(std::int64_t unix_ms) {
  const std::int64_t now = WallMs();
  if (unix_ms > now) std::this_thread::sleep_for(milliseconds(unix_ms - now));
}

TEST_P(ServerScheduleTest, TheApiCreatesReadsChangesAndDeletesSchedules) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  ASSERT_TRUE(server->Start());
  BlockingHttpClient client(server->address());
  const std::string body = Every("report", 3'600'000, receiver.url(), R"("payload":{"n":1})");
  JsonCall created = Call(client, "POST", "/v1/schedules", body);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(State(created), "active");
  const std::int64_t next = created.body.at("next_ms").as_int64();
  EXPECT_EQ(next % 3'600'000, 0);
  EXPECT_GT(next, WallMs());
  // The same body again (keys in another order): the same schedule. Another: 409.
  EXPECT_EQ(Call(client, "POST", "/v1/schedules",
                 R"({"payload":{"n":1},"target":{"url":")" + receiver.url() +
                     R"("},"every_ms":3600000,"id":"report"})")
                .status,
            200);
  JsonCall other = Call(client, "POST", "/v1/schedules", Every("report", 60'000, receiver.url()));
  EXPECT_EQ(other.status, 409);
  EXPECT_EQ(ErrorCode(other), "id_conflict");
  // GET: the next times in UTC and in the zone, the planned occurrence.
  JsonCall got = Call(client, "GET", "/v1/schedules/report?next=3");
  ASSERT_EQ(got.status, 200) << got.raw;
  const auto& upcoming = got.body.at("next").as_array();
  ASSERT_EQ(upcoming.size(), 3u);
  EXPECT_EQ(upcoming[0].at("at_ms").as_int64(), next);
  EXPECT_EQ(upcoming[1].at("at_ms").as_int64(), next + 3'600'000);
  EXPECT_EQ(upcoming[0].at("utc_offset_s").as_int64(), 0);
  EXPECT_EQ(upcoming[0].at("occurrence").as_string(), "report@" + std::to_string(next));
  const auto& last = got.body.at("last_occurrences").as_array();
  ASSERT_EQ(last.size(), 1u);  // the planned one, pending
  EXPECT_EQ(last[0].at("state").as_string(), "pending");
  // The occurrence is a timer: GET works, a client cannot make one.
  EXPECT_EQ(Call(client, "GET", "/v1/timers/report@" + std::to_string(next)).status, 200);
  // Ids in paths are percent-decoded (the '@' of an occurrence as %40 too);
  // a malformed escape or an encoded '/' is a 400 naming the id.
  EXPECT_EQ(Call(client, "GET", "/v1/timers/report%40" + std::to_string(next)).status, 200);
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/r%65port").status, 200);
  EXPECT_EQ(Call(client, "POST", "/v1/schedules/r%65port:trigger").status, 201);
  // (Each with a method its route takes: another is 405 before the id is
  // looked at.)
  for (const auto& [method, bad] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/schedules/report%zz"},
           {"GET", "/v1/timers/report%4"},
           {"GET", "/v1/timers/a%2Fb"},
           {"POST", "/v1/schedules/a%2Fb:pause"},
           {"POST", "/v1/schedules/a%zz:trigger"},
           {"POST", "/v1/timers/a%2Fb:retry"}}) {
    JsonCall refused = Call(client, method, bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_EQ(ErrorCode(refused), "invalid_id") << bad;
  }
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/report:pause").status, 405);
  // A schedule's flow (docs/flows.md): its target's by default, or the one
  // it names, carried to its occurrences; a PATCH of it too.
  EXPECT_EQ(got.body.at("flow").as_string(), "127.0.0.1:" + std::to_string(receiver.port()));
  EXPECT_EQ(Call(client, "GET", "/v1/timers/report@" + std::to_string(next))
                .body.at("flow")
                .as_string(),
            "127.0.0.1:" + std::to_string(receiver.port()));
  JsonCall flowed = Call(client, "POST", "/v1/schedules",
                         Every("flowed", 3'600'000, receiver.url(), R"("flow":"payments-api")"));
  ASSERT_EQ(flowed.status, 201) << flowed.raw;
  EXPECT_EQ(flowed.body.at("flow").as_string(), "payments-api");
  const std::string flowed_next =
      "/v1/timers/flowed@" + std::to_string(flowed.body.at("next_ms").as_int64());
  EXPECT_EQ(Call(client, "GET", flowed_next).body.at("flow").as_string(), "payments-api");
  ASSERT_EQ(Call(client, "PATCH", "/v1/schedules/flowed", R"({"flow":"billing"})").status, 200);
  EXPECT_EQ(Call(client, "GET", flowed_next).body.at("flow").as_string(), "billing");
  EXPECT_EQ(ErrorCode(Call(client, "POST", "/v1/schedules",
                           Every("badflow", 60'000, receiver.url(), R"("flow":"a b")"))),
            "invalid_flow");
  ASSERT_EQ(Call(client, "DELETE", "/v1/schedules/flowed").status, 200);
  JsonCall at_id = Call(client, "POST", "/v1/timers", TimerBody("x@1", 1000, receiver.url()));
  EXPECT_EQ(at_id.status, 400);
  EXPECT_EQ(ErrorCode(at_id), "invalid_id");
  EXPECT_EQ(Call(client, "PATCH", "/v1/timers/report@" + std::to_string(next),
                 R"({"delay_ms":5})")
                .status,
            409);
  // PATCH the recurrence: replanned from now.
  JsonCall patched = Call(client, "PATCH", "/v1/schedules/report", R"({"every_ms": 7200000})");
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_EQ(patched.body.at("next_ms").as_int64() % 7'200'000, 0);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/report@" + std::to_string(next)).status,
            next % 7'200'000 == 0 ? 200 : 404);
  // Pause, list by state, resume.
  EXPECT_EQ(State(Call(client, "POST", "/v1/schedules/report:pause")), "paused");
  ASSERT_EQ(Call(client, "POST", "/v1/schedules", Every("report-b", 60'000, receiver.url())).status,
            201);
  JsonCall paused = Call(client, "GET", "/v1/schedules?state=paused");
  ASSERT_EQ(paused.status, 200);
  ASSERT_EQ(paused.body.at("schedules").as_array().size(), 1u);
  EXPECT_EQ(paused.body.at("schedules").as_array()[0].at("id").as_string(), "report");
  JsonCall page = Call(client, "GET", "/v1/schedules?prefix=report&limit=1");
  ASSERT_EQ(page.body.at("schedules").as_array().size(), 1u);
  ASSERT_TRUE(page.body.as_object().contains("next_after"));
  JsonCall page2 = Call(client, "GET", "/v1/schedules?prefix=report&limit=1&after=" +
                                            std::string(page.body.at("next_after").as_string()));
  EXPECT_EQ(page2.body.at("schedules").as_array()[0].at("id").as_string(), "report-b");
  EXPECT_EQ(State(Call(client, "POST", "/v1/schedules/report:resume")), "active");
  // Bad requests name the field.
  JsonCall fast = Call(client, "POST", "/v1/schedules", Every("fast", 10, receiver.url()));
  EXPECT_EQ(fast.status, 400);
  EXPECT_EQ(ErrorField(fast), "every_ms");
  JsonCall both = Call(client, "POST", "/v1/schedules",
                       Every("both", 60'000, receiver.url(), R"("cron":"* * * * *")"));
  EXPECT_EQ(ErrorCode(both), "conflicting_fields");
  JsonCall typo = Call(client, "POST", "/v1/schedules",
                       Every("typo", 60'000, receiver.url(), R"("catchup":"all")"));
  EXPECT_EQ(ErrorCode(typo), "unknown_field");
  JsonCall policy = Call(client, "POST", "/v1/schedules",
                         Every("p", 60'000, receiver.url(), R"("overlap":"queue")"));
  EXPECT_EQ(ErrorField(policy), "overlap");
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/nope").status, 404);
  EXPECT_EQ(Call(client, "PUT", "/v1/schedules/report").status, 405);
  // Metrics by state.
  const std::string metrics = client.Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("tickwheel_schedules{state=\"active\"} 2"), std::string::npos);
  // DELETE: gone, its planned occurrence too.
  const std::int64_t planned = Call(client, "GET", "/v1/schedules/report").body.at("next_ms").as_int64();
  EXPECT_EQ(Call(client, "DELETE", "/v1/schedules/report").status, 200);
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/report").status, 404);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/report@" + std::to_string(planned)).status, 404);
  EXPECT_EQ(server->Terminate(), 0);
}

TEST_P(ServerScheduleTest, EachNominalTimeIsDeliveredOnceOnTimeKeyedByItsOccurrence) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  ASSERT_TRUE(server->Start());
  BlockingHttpClient client(server->address());
  ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                 Every("tick", 1000, receiver.url(), R"("payload":{"v":1})"))
                .status,
            201);
  const std::int64_t first = Call(client, "GET", "/v1/schedules/tick").body.at("next_ms").as_int64();
  ASSERT_TRUE(receiver.WaitFor(3, seconds(30)));
  // A PATCH of the payload applies from the next occurrence not yet fired.
  ASSERT_EQ(Call(client, "PATCH", "/v1/schedules/tick", R"({"payload":{"v":2}})").status, 200);
  const std::int64_t patched_at = WallMs();
  // A trigger: one more occurrence now.
  JsonCall trigger = Call(client, "POST", "/v1/schedules/tick:trigger");
  ASSERT_EQ(trigger.status, 201) << trigger.raw;
  const std::string triggered = std::string(trigger.body.at("id").as_string());
  ASSERT_TRUE(receiver.WaitFor(7, seconds(30)));
  ASSERT_EQ(Call(client, "DELETE", "/v1/schedules/tick").status, 200);
  std::map<std::int64_t, int> times;
  bool saw_trigger = false;
  for (const Delivery& d : receiver.deliveries()) {
    const boost::json::value body = boost::json::parse(d.body);
    const std::int64_t nominal = body.at("nominal_ms").as_int64();
    EXPECT_EQ(body.at("schedule").as_string(), "tick");
    EXPECT_EQ(d.id, "tick@" + std::to_string(nominal));
    // Unique to the occurrence: MessageIdOf, "<id>:<created_ms>".
    EXPECT_TRUE(IsMessageIdOf(d.idempotency_key, d.id)) << d.idempotency_key;
    EXPECT_GE(d.received_ms, nominal) << d.id << " early";
    if (d.id == triggered) {
      saw_trigger = true;
      continue;
    }
    EXPECT_EQ(nominal % 1000, 0);
    ++times[nominal];
    if (nominal > patched_at + 5) {
      EXPECT_EQ(d.payload, R"({"v":2})") << d.id;
    } else if (nominal < patched_at - 5) {
      EXPECT_EQ(d.payload, R"({"v":1})") << d.id;
    }
  }
  EXPECT_TRUE(saw_trigger);
  // Every time from the first to the last, once.
  ASSERT_FALSE(times.empty());
  EXPECT_EQ(times.begin()->first, first);
  for (std::int64_t t = first; t <= times.rbegin()->first; t += 1000) {
    EXPECT_EQ(times[t], 1) << "nominal time " << t;
  }
  EXPECT_EQ(server->Terminate(), 0);
}

// SIGKILL after an occurrence fired and planned the next, before that one
// fires; back up a little later (within the grace of a quick restart):
// the times that passed meanwhile fire, each once (unless the restart
// itself took longer than the grace allows, see below).
TEST_P(ServerScheduleTest, ASigkillBetweenPlanningAndFiringMissesNothingAndFiresNothingTwice) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  ASSERT_TRUE(server->Start());
  constexpr std::int64_t kGrace = 5000;  // kMissedGraceMs (docs/schedules.md)
  std::int64_t first = 0;
  {
    BlockingHttpClient client(server->address());
    ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                   Every("beat", 1000, receiver.url(), R"("catch_up":"none")"))
                  .status,
              201);
    first = Call(client, "GET", "/v1/schedules/beat").body.at("next_ms").as_int64();
  }
  // Per restart: the last time fired before the kill, when it was
  // restarted and when it was seen to own its shards (`back`). It began
  // firing them between `restarted` and `back`: the embedded store takes
  // them before it answers /healthz, a cluster node its leases after that,
  // all 8 in one round. A time while it was down is missed only if it is
  // more than kGrace before that moment: never if the restart is quick
  // (down 2.2 s, so a start of less than 3.5 s: the first time of the
  // outage is 1 s after `last`, the restart 2.5 s), but an ASan build on a
  // loaded machine can need more (2.6 s seen at load 13).
  struct Restart {
    std::int64_t last, restarted, back;
  };
  std::vector<Restart> restarts;
  for (int round = 0; round < 2; ++round) {
    // An occurrence that fired on time, after whatever the restart fired:
    // 300 ms after its time its outcome is written, the next one is planned
    // and not due, nothing is in flight.
    const std::int64_t since = WallMs() + 1000;
    std::int64_t last = 0;
    for (int i = 0; i < 300 && last < since; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      const auto times = NominalTimes(receiver, "beat");
      if (!times.empty()) last = times.rbegin()->first;
    }
    ASSERT_GE(last, since);
    SleepUntil(last + 300);
    server->Kill();
    std::this_thread::sleep_for(milliseconds(2200));  // two times pass while it is down
    const std::int64_t restarted = WallMs();
    ASSERT_TRUE(server->Start());
    {
      BlockingHttpClient client(server->address());
      for (int i = 0; i < 300 && GetParam() == Backend::kPostgres &&
                      Metric(client, "tickwheel_cluster_shards_owned") < 8;
           ++i) {
        std::this_thread::sleep_for(milliseconds(100));
      }
    }
    restarts.push_back({last, restarted, WallMs()});
  }
  ASSERT_TRUE(receiver.WaitFor(receiver.count() + 3, seconds(30)));
  BlockingHttpClient client(server->address());
  const boost::json::value skipped =
      Call(client, "GET", "/v1/schedules/beat").body.at("counts").at("skipped").at("catch_up");
  ASSERT_EQ(Call(client, "DELETE", "/v1/schedules/beat").status, 200);
  const std::map<std::int64_t, int> times = NominalTimes(receiver, "beat");
  ASSERT_FALSE(times.empty());
  // Each time fires once, except one that was missed (catch_up none skips
  // it): a time while the server was down, before `back` - kGrace; and
  // those of one outage that were missed are its first ones (missed means
  // before a moment). Each missed one was counted as skipped.
  std::int64_t missed = 0;
  for (std::int64_t t = first; t <= times.rbegin()->first; t += 1000) {
    const auto it = times.find(t);
    const int n = it == times.end() ? 0 : it->second;
    std::string when = "nominal time first + " + std::to_string(t - first) + " ms";
    const Restart* during = nullptr;
    for (const Restart& r : restarts) {
      when += "; killed after first + " + std::to_string(r.last - first) +
              ", restarted first + " + std::to_string(r.restarted - first) + ", back first + " +
              std::to_string(r.back - first);
      if (t > r.last && t < r.restarted) during = &r;
    }
    SCOPED_TRACE(when);
    EXPECT_LE(n, 1);
    if (n >= 1) continue;
    ++missed;
    ASSERT_NE(during, nullptr);
    EXPECT_LT(t, during->back - kGrace);
    const auto before = times.find(t - 1000);
    EXPECT_TRUE(t - 1000 == during->last || before == times.end())
        << "a later time of the outage was missed, an earlier one fired";
  }
  EXPECT_EQ(skipped.as_int64(), missed);
  RecordProperty("missed", static_cast<int>(missed));
  for (std::size_t i = 0; i < restarts.size(); ++i) {
    RecordProperty("start_ms_" + std::to_string(i),
                   static_cast<int>(restarts[i].back - restarts[i].restarted));
  }
  EXPECT_EQ(Metric(client, "tickwheel_duplicates_after_recovery_total"), 0);
  EXPECT_EQ(server->Terminate(), 0);
  if (HasFailure()) std::fprintf(stderr, "server log:\n%s\n", server->log().c_str());
}

// Down for three periods (and more than the 5 s a quick restart is
// forgiven): none fires none of the missed times, latest the last, all
// each one, in order; the times after the outage fire under every policy.
TEST_P(ServerScheduleTest, AnOutageOfThreePeriodsFollowsEachCatchUpPolicy) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  ASSERT_TRUE(server->Start());
  constexpr std::int64_t kPeriod = 2000;
  constexpr std::int64_t kGrace = 5000;  // kMissedGraceMs (docs/schedules.md)
  {
    BlockingHttpClient client(server->address());
    for (const char* policy : {"none", "latest", "all"}) {
      ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                     Every(policy, kPeriod, receiver.url(),
                           std::string(R"("catch_up":")") + policy + "\""))
                    .status,
                201);
    }
  }
  // "all" delivered once (three deliveries may all be of the others, when
  // "all" was created just after a period's time).
  std::map<std::int64_t, int> all_times;
  for (int i = 0; i < 300 && all_times.empty(); ++i) {
    receiver.WaitFor(receiver.count() + 1, milliseconds(100));
    all_times = NominalTimes(receiver, "all");
  }
  ASSERT_FALSE(all_times.empty());
  const std::int64_t k = all_times.rbegin()->first;
  SleepUntil(k + kPeriod / 4);
  server->Kill();
  // k+2, k+4 and k+6 s pass while it is down, more than 5 s before it
  // comes back at about k+12 s.
  SleepUntil(k + 3 * kPeriod + 1000 + kGrace);
  const std::int64_t restarted = WallMs();
  ASSERT_TRUE(server->Start());
  // A time was missed if it is more than kGrace before the server began
  // firing its shards, some moment between `restarted` and `back`, when it
  // was seen to own them all: the embedded store takes them before it
  // answers /healthz; a cluster node takes its leases after that, all 8 in
  // one round (so the three schedules share the moment). A slow start (an
  // ASan build on a loaded machine: 1 s and more) makes k+8 s, or later
  // times, missed too: the claims below hold wherever it falls.
  {
    BlockingHttpClient client(server->address());
    for (int i = 0; i < 300 && GetParam() == Backend::kPostgres &&
                    Metric(client, "tickwheel_cluster_shards_owned") < 8;
         ++i) {
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  const std::int64_t back = WallMs();
  SleepUntil(back + 3 * kPeriod + (GetParam() == Backend::kPostgres ? 3000 : 0));
  BlockingHttpClient client(server->address());
  for (const char* policy : {"none", "latest", "all"}) {
    ASSERT_EQ(Call(client, "POST", std::string("/v1/schedules/") + policy + ":pause").status, 200);
  }
  // The times from the one planned at the kill up to `after`, the first
  // after the server was back (due at least 4 s before the pause).
  std::vector<std::int64_t> times;
  for (std::int64_t t = k + kPeriod; times.empty() || times.back() <= back; t += kPeriod) {
    times.push_back(t);
  }
  const std::int64_t after = times.back();
  auto count_before = [&](std::int64_t limit) {
    return static_cast<std::size_t>(
        std::count_if(times.begin(), times.end(), [&](std::int64_t t) { return t < limit; }));
  };
  const std::size_t surely_missed = count_before(restarted - kGrace);
  const std::size_t at_most_missed = count_before(back - kGrace);
  ASSERT_GE(surely_missed, 3u);
  std::map<std::string, std::map<std::int64_t, int>> got;
  for (const char* policy : {"none", "latest", "all"}) got[policy] = NominalTimes(receiver, policy);
  auto fired = [&](const char* policy, std::int64_t t) {
    const auto it = got[policy].find(t);
    return it != got[policy].end() && it->second > 0;
  };
  // none fires exactly the times not missed: the first of them says how
  // many were (times[0..missed)), within what the start allows.
  std::size_t missed = 0;
  while (missed < times.size() && !fired("none", times[missed])) ++missed;
  EXPECT_GE(missed, surely_missed);
  ASSERT_LE(missed, at_most_missed);  // `after` was not missed
  RecordProperty("missed", static_cast<int>(missed));
  RecordProperty("start_ms", static_cast<int>(back - restarted));
  ASSERT_GE(missed, 1u);
  for (std::size_t i = 0; i < times.size(); ++i) {
    const std::int64_t t = times[i];
    SCOPED_TRACE("k + " + std::to_string(t - k) + " ms; missed: " + std::to_string(missed) +
                 " (restarted at k + " + std::to_string(restarted - k) + " ms, back at k + " +
                 std::to_string(back - k) + " ms)");
    EXPECT_EQ(fired("none", t), i >= missed);
    // latest: the last missed one and those not missed; no other missed.
    EXPECT_EQ(fired("latest", t), i + 1 >= missed);
    EXPECT_TRUE(fired("all", t));
  }
  // "all" made the missed ones due in order: oldest first (the one planned
  // before the outage, due at its time), each catch-up after the one
  // before. (Due together, they are then delivered concurrently as any
  // timers are: a receiver may see them in another order, which is why the
  // body says the nominal time.)
  std::map<std::int64_t, std::int64_t> due_of;  // nominal time -> due time
  for (const Delivery& d : receiver.deliveries()) {
    const boost::json::value body = boost::json::parse(d.body);
    const std::int64_t nominal = body.at("nominal_ms").as_int64();
    if (body.at("schedule").as_string() == "all" && nominal < times[missed]) {
      due_of[nominal] = body.at("fire_at_ms").as_int64();
    }
  }
  std::int64_t previous_due = 0;
  for (std::size_t i = 0; i < missed; ++i) {
    const std::int64_t t = times[i];
    ASSERT_EQ(due_of.count(t), 1u) << t;
    EXPECT_GE(due_of[t], previous_due) << t;
    previous_due = due_of[t] + 1;
  }
  // Nothing twice (up to the pause, after `after` too).
  for (const auto& [policy, delivered] : got) {
    for (const auto& [t, n] : delivered) EXPECT_EQ(n, 1) << policy << " " << t;
  }
  EXPECT_GT(after, back);
  JsonCall none = Call(client, "GET", "/v1/schedules/none");
  EXPECT_EQ(none.body.at("counts").at("skipped").at("catch_up").as_int64(),
            static_cast<std::int64_t>(missed));
  JsonCall latest = Call(client, "GET", "/v1/schedules/latest");
  EXPECT_EQ(latest.body.at("counts").at("skipped").at("catch_up").as_int64(),
            static_cast<std::int64_t>(missed) - 1);
  EXPECT_GE(Metric(client, "tickwheel_schedule_occurrences_fired_total"), 3);
  if (::testing::Test::HasFailure()) std::fprintf(stderr, "%s\n", server->log().c_str());
  EXPECT_EQ(server->Terminate(), 0);
}

// The deliveries of schedule `id`: nominal time -> the due times of its
// deliveries (a catch-up is due at its claim, not at its nominal time).
std::map<std::int64_t, std::vector<std::int64_t>> DueTimes(const WebhookReceiver& receiver,
                                                          const std::string& id) {
  std::map<std::int64_t, std::vector<std::int64_t>> due;
  for (const Delivery& d : receiver.deliveries()) {
    const boost::json::value body = boost::json::parse(d.body);
    if (body.at("schedule").as_string() != id) continue;
    due[body.at("nominal_ms").as_int64()].push_back(body.at("fire_at_ms").as_int64());
  }
  return due;
}

// Whether every catch-up that one claim decided for a schedule (period
// `period`, catch-up window `window`) has been delivered, up to `until`
// (exclusive). They are the times from the first within the window of the
// claim, each due at the claim plus its rank in ms, oldest first, and
// delivered side by side, so in any order. The oldest catch-up delivered so
// far is the first only if no time a period older lies within the window
// its due time implies: one still on its way is a period older but only
// 1 ms earlier.
bool CatchUpsDelivered(const std::map<std::int64_t, std::vector<std::int64_t>>& due,
                       std::int64_t period, std::int64_t window, std::int64_t until) {
  std::optional<std::pair<std::int64_t, std::int64_t>> oldest;  // nominal, due
  for (const auto& [t, dues] : due) {
    for (std::int64_t d : dues) {
      if (d != t && (!oldest || t < oldest->first)) oldest.emplace(t, d);
    }
  }
  if (!oldest) return false;
  const auto [first, claim] = *oldest;
  if (first - period >= claim - window) return false;
  for (std::int64_t t = first; t < until; t += period) {
    if (!due.count(t)) return false;
  }
  return true;
}

// Down for about 19 periods of a 1-second schedule: "all" with a cap of 3
// fires the 3 oldest missed times and no more (no flood); "all" with a
// window of 14 s fires exactly the missed times within 14 s of the claim
// that decided them, none older; and a backfill of the outage afterwards
// fires each time the cap left out, once, and nothing that already fired,
// however often it is asked.
TEST_P(ServerScheduleTest, AfterALongOutageCatchUpKeepsItsCapAndWindowAndABackfillFillsTheRestOnce) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  ASSERT_TRUE(server->Start());
  constexpr std::int64_t kPeriod = 1000, kWindow = 14'000;
  {
    BlockingHttpClient client(server->address());
    ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                   Every("capped", kPeriod, receiver.url(), R"("catch_up":"all","catch_up_max":3)"))
                  .status,
              201);
    ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                   Every("windowed", kPeriod, receiver.url(),
                         R"("catch_up":"all","catch_up_window_ms":)" + std::to_string(kWindow)))
                  .status,
              201);
  }
  // Both delivered once; then down from just after a period's time.
  std::int64_t k = 0;
  for (int i = 0; i < 300 && k == 0; ++i) {
    receiver.WaitFor(receiver.count() + 1, milliseconds(100));
    if (!NominalTimes(receiver, "capped").empty() && !NominalTimes(receiver, "windowed").empty()) {
      k = NominalTimes(receiver, "capped").rbegin()->first;
    }
  }
  ASSERT_NE(k, 0);
  SleepUntil(k + kPeriod / 4);
  server->Kill();
  // What each had fired before the outage (a late delivery may have moved
  // past k while the kill was being sent).
  std::map<std::string, std::int64_t> before;
  for (const char* id : {"capped", "windowed"}) before[id] = NominalTimes(receiver, id).rbegin()->first;
  SleepUntil(k + 20 * kPeriod);
  const std::int64_t restarted = WallMs();
  ASSERT_TRUE(server->Start());
  // Surely missed: due more than 5 s before the restart (the server began
  // firing after `restarted`).
  const std::int64_t missed_until = restarted - 5000;
  BlockingHttpClient client(server->address());
  // The cap's three, and the window's catch-ups, delivered (a time after
  // them may arrive first: deliveries run side by side).
  const std::int64_t c0 = before["capped"] + kPeriod;
  for (int i = 0; i < 600; ++i) {
    const auto capped = NominalTimes(receiver, "capped");
    if (capped.count(c0) && capped.count(c0 + kPeriod) && capped.count(c0 + 2 * kPeriod) &&
        CatchUpsDelivered(DueTimes(receiver, "windowed"), kPeriod, kWindow, missed_until)) {
      break;
    }
    receiver.WaitFor(receiver.count() + 1, milliseconds(100));
  }

  // capped: the three oldest missed times, once each; none of the rest.
  std::map<std::int64_t, int> capped = NominalTimes(receiver, "capped");
  std::int64_t n_missed = 0;
  for (std::int64_t t = c0; t < missed_until; t += kPeriod, ++n_missed) {
    EXPECT_EQ(capped.count(t) ? capped[t] : 0, t < c0 + 3 * kPeriod ? 1 : 0) << "capped " << t;
  }
  ASSERT_GE(n_missed, 10);
  JsonCall capped_schedule = Call(client, "GET", "/v1/schedules/capped");
  EXPECT_GE(capped_schedule.body.at("counts").at("skipped").at("catch_up").as_int64(), n_missed - 3);

  // windowed: the missed times the claim's decision saw within the window
  // fire (due at that claim, 1 ms apart, oldest first); older ones never.
  const std::int64_t w0 = before["windowed"] + kPeriod;
  std::map<std::int64_t, std::vector<std::int64_t>> windowed = DueTimes(receiver, "windowed");
  std::int64_t claimed = std::numeric_limits<std::int64_t>::max();
  for (const auto& [t, dues] : windowed) {
    for (std::int64_t due : dues) {
      if (due != t) claimed = std::min(claimed, due);  // a catch-up: due at the claim
    }
  }
  ASSERT_NE(claimed, std::numeric_limits<std::int64_t>::max()) << "no catch-up of windowed";
  ASSERT_GE(claimed, restarted);
  int in_window = 0;
  for (std::int64_t t = w0; t < missed_until; t += kPeriod) {
    const std::size_t times = windowed.count(t) ? windowed[t].size() : 0;
    if (t >= claimed - kWindow) {
      ++in_window;
      EXPECT_EQ(times, 1u) << "windowed " << t << " is within the window of the claim at "
                           << claimed;
    } else {
      EXPECT_EQ(times, 0u) << "windowed " << t << " is older than the window of the claim at "
                           << claimed;
    }
  }
  EXPECT_GE(in_window, 1);
  EXPECT_GE(claimed - kWindow - w0, 3 * kPeriod) << "the window covered the whole outage";
  std::int64_t previous_due = 0;
  for (std::int64_t t = std::max(w0, claimed - kWindow); t < missed_until; t += kPeriod) {
    if (!windowed.count(t)) continue;
    EXPECT_GE(windowed[t].front(), previous_due) << t << " due before an older catch-up";
    previous_due = windowed[t].front() + 1;
  }

  // A backfill of capped's outage: what the cap left out, once; twice
  // asked, nothing more.
  const std::string range = "{\"from_ms\":" + std::to_string(c0) +
                            ",\"to_ms\":" + std::to_string(missed_until) + "}";
  JsonCall filled = Call(client, "POST", "/v1/schedules/capped:backfill", range);
  ASSERT_EQ(filled.status, 200) << filled.raw;
  EXPECT_EQ(filled.body.at("created").as_int64(), n_missed - 3);
  EXPECT_EQ(filled.body.at("existing").as_int64(), 3);
  EXPECT_FALSE(filled.body.at("more").as_bool());
  JsonCall again = Call(client, "POST", "/v1/schedules/capped:backfill", range);
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body.at("created").as_int64(), 0);
  EXPECT_EQ(again.body.at("existing").as_int64(), n_missed);
  // Until the backfill is delivered and both fired a time well after the
  // restart.
  const std::int64_t after = restarted + 4000;
  const std::int64_t later = after - after % kPeriod + kPeriod;
  for (int i = 0; i < 600; ++i) {
    capped = NominalTimes(receiver, "capped");
    bool all = capped.count(later) && NominalTimes(receiver, "windowed").count(later);
    for (std::int64_t t = c0; t < missed_until && all; t += kPeriod) all = capped.count(t) > 0;
    if (all) break;
    receiver.WaitFor(receiver.count() + 1, milliseconds(100));
  }
  for (const char* id : {"capped", "windowed"}) {
    ASSERT_EQ(Call(client, "POST", std::string("/v1/schedules/") + id + ":pause").status, 200);
  }
  capped = NominalTimes(receiver, "capped");
  for (std::int64_t t = c0; t < missed_until; t += kPeriod) {
    EXPECT_EQ(capped.count(t) ? capped[t] : 0, 1) << "capped " << t << " after the backfill";
  }
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/capped").body.at("counts").at("backfilled").as_int64(),
            n_missed - 3);
  // Nothing twice, anywhere; what came due after the restart fired.
  for (const char* id : {"capped", "windowed"}) {
    const std::map<std::int64_t, int> times = NominalTimes(receiver, id);
    for (const auto& [t, n] : times) EXPECT_EQ(n, 1) << id << " " << t;
    EXPECT_EQ(times.count(later), 1u) << id;
  }
  EXPECT_EQ(server->Terminate(), 0);
}

// 1,000 schedules with 60 KB payloads (60 MB of records), listed with the
// largest limit, all of them and by state: a page holds records up to
// about 4 MiB (docs/schedules.md), says where to go on (next_after), and
// paging on lists every schedule once, in id order. The node's peak RSS
// grows by less than 32 MiB over each of the two first pages (before, a
// page held all the records, in PostgreSQL mode also as hex text twice
// their size, and the JSON of all of them: +333 to +415 MiB for 1,000;
// the 400 here would be well over a third of that).
TEST_P(ServerScheduleTest, ListingsOfLargeSchedulesAreBoundedInBytesAndPageThroughAll) {
  WebhookReceiver receiver;
  auto server = MakeServer();
  server->LimitAsanQuarantine();
  ASSERT_TRUE(server->Start());
  BlockingHttpClient client(server->address(), seconds(120));
  constexpr int kSchedules = 400;  // 24 MB of payloads: six pages of 4 MiB
  constexpr std::size_t kPayload = 60'000;
  const std::string payload = "\"" + std::string(kPayload - 2, 'p') + "\"";
  auto id_of = [](int i) {
    std::string n = std::to_string(i);
    return "big-" + std::string(4 - n.size(), '0') + n;
  };
  for (int i = 0; i < kSchedules; ++i) {
    const JsonCall c = Call(client, "POST", "/v1/schedules",
                            Every(id_of(i), 3'600'000, receiver.url(), "\"payload\":" + payload));
    ASSERT_EQ(c.status, 201) << c.raw.substr(0, 300);
  }
  constexpr std::size_t kPageBytes = 4 << 20;
  for (const std::string filter : {"", "state=active&"}) {
    // The first two pages, each under the byte bound, and what each costs.
    std::string next;
    for (int p = 0; p < 2; ++p) {
      JsonCall page;
      const std::int64_t grown_kb = PeakRssGrowthKb(server->pid(), [&] {
        page = Call(client, "GET", "/v1/schedules?" + filter + "limit=1000" + next);
      });
#if !defined(__SANITIZE_THREAD__)
      // Not under TSan, whose shadow memory grows with every byte the server
      // touches (+42 to +62 MiB seen there); Release and ASan hold the bound.
      EXPECT_LT(grown_kb, 32 * 1024) << filter << " page " << p << ": peak RSS +" << grown_kb << " kB";
#endif
      ASSERT_EQ(page.status, 200) << filter << page.raw.substr(0, 300);
      const std::size_t n = page.body.at("schedules").as_array().size();
      std::printf("GET /v1/schedules?%slimit=1000, page %d: %zu schedules, peak RSS +%lld kB\n",
                  filter.c_str(), p, n, static_cast<long long>(grown_kb));
      EXPECT_GE(n, 1u) << filter;
      // Records stop at 4 MiB: the one that crosses it is the last.
      EXPECT_LE(n * kPayload, kPageBytes + kPayload) << filter;
      ASSERT_TRUE(page.body.as_object().contains("next_after")) << filter << " page " << p;
      next = "&after=" + std::string(page.body.at("next_after").as_string());
    }
    // Paging on from the start lists each schedule once, in id order.
    std::vector<std::string> ids;
    std::string after;
    for (int p = 0; p < kSchedules + 1; ++p) {
      const JsonCall page = Call(client, "GET", "/v1/schedules?" + filter + "limit=1000" + after);
      ASSERT_EQ(page.status, 200) << filter << page.raw.substr(0, 300);
      for (const auto& s : page.body.at("schedules").as_array()) {
        ids.emplace_back(s.at("id").as_string());
        EXPECT_EQ(s.at("payload").as_string().size(), kPayload - 2) << ids.back();
      }
      if (!page.body.as_object().contains("next_after")) break;
      after = "&after=" + std::string(page.body.at("next_after").as_string());
    }
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(kSchedules)) << filter;
    for (int i = 0; i < kSchedules; ++i) EXPECT_EQ(ids[i], id_of(i)) << filter;
  }
  EXPECT_EQ(server->Terminate(), 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, ServerScheduleTest,
                         ::testing::Values(Backend::kEmbedded, Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return p.param == Backend::kEmbedded ? "Embedded" : "Postgres";
                         });

}  // namespace
}  // namespace tickwheel::testing
