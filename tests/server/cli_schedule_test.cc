// SPDX-License-Identifier: Apache-2.0
// `tickwheel schedule add|ls|get|pause|resume|trigger|backfill|rm` (the
// real build/tickwheel) against a real server: what each sends and prints,
// the refusals before anything is sent (exit 2, nothing created), the
// server's refusals (exit 1, its message), and what the actions do to the
// schedule and its occurrences.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <ctime>
#include <map>

#include "server_test_util.h"

namespace tickwheel::testing {
namespace {

namespace json = boost::json;
using server::BlockingHttpClient;

class CliScheduleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    receiver_ = new WebhookReceiver();
    server_ = new ServerProcess(Binary(), dir_->path() + "/data");
    ASSERT_TRUE(server_->Start());
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Terminate(), 0) << server_->log();
    delete server_;
    delete receiver_;
    delete dir_;
  }

  // `[ENV] tickwheel ARGS --server ADDRESS`: exit code and output (stderr
  // too).
  static std::pair<int, std::string> Run(const std::string& args, const std::string& env = "") {
    return RunTickwheel(args + " --server " + server_->address(), env);
  }
  static json::value Json(const std::string& args) {
    auto [rc, out] = Run(args + " --json");
    EXPECT_EQ(rc, 0) << args << ": " << out;
    boost::system::error_code ec;
    json::value v = json::parse(out, ec);
    EXPECT_FALSE(ec) << out;
    return v;
  }
  // The server's answer to GET `path`.
  static JsonCall Get(const std::string& path) {
    BlockingHttpClient client(server_->address());
    return Call(client, "GET", path);
  }
  static std::string Unique(const std::string& name) {
    return name + "-" + std::to_string(WallMs());
  }
  static std::string Url() { return " --url " + receiver_->url(); }

  static TempDir* dir_;
  static WebhookReceiver* receiver_;
  static ServerProcess* server_;
};
TempDir* CliScheduleTest::dir_;
WebhookReceiver* CliScheduleTest::receiver_;
ServerProcess* CliScheduleTest::server_;

// "2026-11-26T03:44:41.630Z" for Unix ms (as the CLI's --from wants it).
std::string Rfc3339(std::int64_t ms) {
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms % 1000));
  return std::string(buf) + frac;
}

TEST_F(CliScheduleTest, AddSendsEveryFlagAndGetShowsTheNextTimesHereAndInTheSchedulesZone) {
  const std::string id = Unique("weekdays");
  // From 2030-01-01 (a Tuesday): the first times are fixed.
  json::value s = Json("schedule add --id " + id +
                       " --cron '0 9 * * MON-FRI' --tz Europe/Berlin --dst-gap skip "
                       "--dst-overlap both" +
                       Url() +
                       " --payload '{\"k\":1}' --max-attempts 3 --backoff 30s --start "
                       "2030-01-01T00:00:00Z --end 2031-01-01T00:00:00+01:00 --max-occurrences 10 "
                       "--overlap skip --catch-up all --catch-up-window 2h --catch-up-max 5");
  EXPECT_EQ(s.at("id").as_string(), id);
  EXPECT_EQ(s.at("cron").as_string(), "0 9 * * MON-FRI");
  EXPECT_EQ(s.at("time_zone").as_string(), "Europe/Berlin");
  EXPECT_EQ(s.at("dst_gap").as_string(), "skip");
  EXPECT_EQ(s.at("dst_overlap").as_string(), "both");
  EXPECT_EQ(s.at("target").at("url").as_string(), receiver_->url());
  EXPECT_EQ(json::serialize(s.at("payload")), R"({"k":1})");
  EXPECT_EQ(s.at("retry").at("max_attempts").as_int64(), 3);
  EXPECT_EQ(s.at("retry").at("backoff_ms").as_int64(), 30'000);
  EXPECT_EQ(s.at("start_ms").as_int64(), 1'893'456'000'000);
  EXPECT_EQ(s.at("end_ms").as_int64(), 1'924'988'400'000);
  EXPECT_EQ(s.at("max_occurrences").as_int64(), 10);
  EXPECT_EQ(s.at("overlap").as_string(), "skip");
  EXPECT_EQ(s.at("catch_up").as_string(), "all");
  EXPECT_EQ(s.at("catch_up_window_ms").as_int64(), 7'200'000);
  EXPECT_EQ(s.at("catch_up_max").as_int64(), 5);
  // 2030-01-01T09:00 in Berlin is 08:00Z.
  EXPECT_EQ(s.at("next_ms").as_int64(), 1'893'484'800'000);

  // For people, from a machine in Tokyo: here, in Berlin, in UTC.
  auto [rc, out] = Run("schedule get " + id + " --next 2", "TZ=Asia/Tokyo");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("when:        cron \"0 9 * * MON-FRI\" in Europe/Berlin (dst_gap skip, "
                     "dst_overlap both)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("policies:    overlap skip; catch-up all within 2h (at most 5)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("occurrences: 0 of at most 10"), std::string::npos) << out;
  EXPECT_NE(out.find("in Europe/Berlin"), std::string::npos) << out;
  EXPECT_NE(out.find("2030-01-01T17:00:00+09:00 JST"), std::string::npos) << out;
  EXPECT_NE(out.find("2030-01-01T09:00:00+01:00 CET"), std::string::npos) << out;
  EXPECT_NE(out.find("2030-01-01T08:00:00.000Z"), std::string::npos) << out;
  EXPECT_NE(out.find("2030-01-02T17:00:00+09:00 JST"), std::string::npos) << out;
  EXPECT_EQ(out.find("2030-01-03T"), std::string::npos) << "--next 2 printed more:\n" << out;
  // Its planned occurrence, pending.
  EXPECT_NE(out.find(id + "@1893484800000"), std::string::npos) << out;
  // --json: the server's answer, with ?next.
  json::value got = Json("schedule get " + id + " --next 3");
  ASSERT_EQ(got.at("next").as_array().size(), 3u);
  EXPECT_EQ(got.at("next").as_array()[2].at("at_ms").as_int64(), 1'893'657'600'000);  // Thu

  // An interval with its jitter, for people.
  const std::string every = Unique("hourly");
  auto [e_rc, e_out] = Run("schedule add --id " + every + " --every 1h --jitter 1m" + Url());
  EXPECT_EQ(e_rc, 0) << e_out;
  EXPECT_NE(e_out.find("when:        every 1h\n"), std::string::npos) << e_out;
  EXPECT_NE(e_out.find("; jitter 1m"), std::string::npos) << e_out;
  EXPECT_EQ(Get("/v1/schedules/" + every).body.at("every_ms").as_int64(), 3'600'000);
  // The same add again is the same schedule; another body is the server's 409.
  EXPECT_EQ(Run("schedule add --id " + every + " --every 1h --jitter 1m" + Url()).first, 0);
  auto [c_rc, c_out] = Run("schedule add --id " + every + " --every 2h" + Url());
  EXPECT_EQ(c_rc, 1);
  EXPECT_NE(c_out.find("HTTP 409 id_conflict"), std::string::npos) << c_out;
}

TEST_F(CliScheduleTest, AddRefusesFlagsThatDoNotFitBeforeAnythingIsSent) {
  const std::string id = Unique("refused");
  const std::string when = " --every 1m";
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--id " + id + Url(), "say when: --every"},
      {"--id " + id + when + " --cron '* * * * *'" + Url(), "say when: --every"},
      {"--id " + id + when, "say where to: --url"},
      {"--id " + id + when + Url() + " --nats subj", "say where to: --url"},
      {"--id " + id + when + Url() + " --payload '{bad'", "--payload is not valid JSON"},
      {"--id " + id + "@1700000000000" + when + Url(), "is an occurrence (a timer), not a schedule"},
      {"--id 'a b'" + when + Url(), "may only contain letters, digits"},
      {"--id " + id + when + Url() + " --start 1700000000000", "--start"},
      {"--id " + id + when + Url() + " --end tomorrow", "--end"},
      {"--id " + id + " --every 5x" + Url(), "--every"},
      {"--id " + id + when + Url() + " --overlap queue", "--overlap"},
      {"--id " + id + when + Url() + " --catch-up some", "--catch-up"},
      {"--id " + id + when + Url() + " --catch-up-max 0", "--catch-up-max"},
      {"--id " + id + when + Url() + " --dst-gap later", "--dst-gap"},
      {"--id " + id + when + Url() + " --max-attempts 0", "--max-attempts"},
      {when + Url(), "--id"},
  };
  for (const Case& c : cases) {
    auto [rc, out] = Run("schedule add " + c.args);
    EXPECT_EQ(rc, 2) << c.args << ":\n" << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << c.args << ":\n" << out;
  }
  EXPECT_EQ(Get("/v1/schedules/" + id).status, 404) << "a refused add was sent";
  // What only the server can judge: exit 1 with its message, naming the field.
  const std::vector<Case> server_cases = {
      {"--id " + id + " --cron '0 9 * * *' --tz Europe/Berln" + Url(), "time_zone"},
      {"--id " + id + " --cron '61 * * * *'" + Url(), "minute"},
      {"--id " + id + " --every 1h --tz Europe/Berlin" + Url(), "time_zone is only for cron"},
      {"--id " + id + " --every 10ms" + Url(), "every_ms"},
      {"--id " + id + " --every 1m --jitter 1m" + Url(), "jitter_ms"},
      {"--id " + id + " --every 1m --start 2030-01-02T00:00:00Z --end 2030-01-01T00:00:00Z" +
           Url(),
       "end_ms"},
  };
  for (const Case& c : server_cases) {
    auto [rc, out] = Run("schedule add " + c.args);
    EXPECT_EQ(rc, 1) << c.args << ":\n" << out;
    EXPECT_NE(out.find("HTTP 400"), std::string::npos) << c.args << ":\n" << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << c.args << ":\n" << out;
  }
  EXPECT_EQ(Get("/v1/schedules/" + id).status, 404);
}

TEST_F(CliScheduleTest, LsFiltersByStateAndPrefixAndFollowsPages) {
  const std::string p = Unique("ls") + "-";
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(Run("schedule add --id " + p + name + " --every 1h" + Url()).first, 0);
  }
  ASSERT_EQ(Run("schedule pause " + p + "b").first, 0);
  auto [rc, out] = Run("schedule ls --prefix " + p);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ID "), std::string::npos) << out;  // the header
  for (const char* name : {"a", "b", "c"}) EXPECT_NE(out.find(p + name), std::string::npos) << out;
  EXPECT_NE(out.find("every 1h"), std::string::npos) << out;
  // By state.
  auto [paused_rc, paused] = Run("schedule ls --prefix " + p + " --state paused");
  EXPECT_EQ(paused_rc, 0);
  EXPECT_NE(paused.find(p + "b"), std::string::npos) << paused;
  EXPECT_EQ(paused.find(p + "a"), std::string::npos) << paused;
  json::value active = Json("schedule ls --prefix " + p + " --state active");
  ASSERT_EQ(active.at("schedules").as_array().size(), 2u);
  EXPECT_EQ(active.at("schedules").as_array()[0].at("id").as_string(), p + "a");
  EXPECT_EQ(active.at("schedules").as_array()[1].at("id").as_string(), p + "c");
  // Pages: the cursor printed continues the listing.
  auto [one_rc, one] = Run("schedule ls --prefix " + p + " --limit 1");
  EXPECT_EQ(one_rc, 0);
  EXPECT_NE(one.find(p + "a"), std::string::npos) << one;
  EXPECT_EQ(one.find(p + "b"), std::string::npos) << one;
  const std::size_t more = one.find("(more: --after ");
  ASSERT_NE(more, std::string::npos) << one;
  std::string cursor = one.substr(more + 15);
  cursor = cursor.substr(0, cursor.find(')'));
  auto [next_rc, next] = Run("schedule ls --prefix " + p + " --limit 1 --after '" + cursor + "'");
  EXPECT_EQ(next_rc, 0);
  EXPECT_NE(next.find(p + "b"), std::string::npos) << next;
  EXPECT_EQ(next.find(p + "a"), std::string::npos) << next;
  // Refused before sending.
  EXPECT_EQ(Run("schedule ls --state running").first, 2);
  EXPECT_EQ(Run("schedule ls --limit 0").first, 2);
  EXPECT_EQ(Run("schedule ls --limit 1001").first, 2);
}

TEST_F(CliScheduleTest, PauseResumeTriggerBackfillAndRmActOnTheScheduleAndItsOccurrences) {
  const std::string id = Unique("beat");
  ASSERT_EQ(Run("schedule add --id " + id + " --every 1h" + Url()).first, 0);

  auto [pause_rc, paused] = Run("schedule pause " + id);
  EXPECT_EQ(pause_rc, 0) << paused;
  EXPECT_NE(paused.find("state:       paused"), std::string::npos) << paused;
  EXPECT_EQ(State(Get("/v1/schedules/" + id)), "paused");
  auto [resume_rc, resumed] = Run("schedule resume " + id);
  EXPECT_EQ(resume_rc, 0) << resumed;
  EXPECT_NE(resumed.find("state:       active"), std::string::npos) << resumed;
  EXPECT_EQ(State(Get("/v1/schedules/" + id)), "active");

  // Trigger: one occurrence now, a timer the timer commands take.
  json::value t = Json("schedule trigger " + id);
  const std::string occurrence(t.at("id").as_string());
  ASSERT_EQ(occurrence.rfind(id + "@", 0), 0u) << occurrence;
  bool delivered = false;
  for (int i = 0; i < 3000 && !delivered; ++i) {
    delivered = State(Get("/v1/timers/" + occurrence)) == "delivered";
    if (!delivered) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(delivered);
  auto [tget_rc, tget] = Run("get " + occurrence);
  EXPECT_EQ(tget_rc, 0) << tget;
  EXPECT_NE(tget.find("state:      delivered"), std::string::npos) << tget;

  // Backfill three past hours: created once, then existing.
  const std::int64_t hour = 3'600'000;
  const std::int64_t from = (WallMs() / hour - 4) * hour;
  const std::string range = " --from " + Rfc3339(from) + " --to " + Rfc3339(from + 3 * hour);
  auto [b_rc, b_out] = Run("schedule backfill " + id + range);
  EXPECT_EQ(b_rc, 0) << b_out;
  EXPECT_NE(b_out.find("created 3, existing 0"), std::string::npos) << b_out;
  auto [again_rc, again] = Run("schedule backfill " + id + range);
  EXPECT_EQ(again_rc, 0) << again;
  EXPECT_NE(again.find("created 0, existing 3"), std::string::npos) << again;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(Get("/v1/timers/" + id + "@" + std::to_string(from + k * hour)).status, 200) << k;
  }
  EXPECT_EQ(Get("/v1/timers/" + id + "@" + std::to_string(from + 3 * hour)).status, 404);
  ASSERT_TRUE(receiver_->WaitFor(4, std::chrono::seconds(30)));
  // Each backfilled hour delivered, once.
  std::map<std::int64_t, int> nominal;
  for (int i = 0; i < 3000; ++i) {
    nominal.clear();
    for (const Delivery& d : receiver_->deliveries()) {
      const json::value body = json::parse(d.body);
      if (body.at("schedule").as_string() == id) ++nominal[body.at("nominal_ms").as_int64()];
    }
    if (nominal.count(from + 2 * hour)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int k = 0; k < 3; ++k) EXPECT_EQ(nominal[from + k * hour], 1) << k;
  auto [g_rc, g_out] = Run("schedule get " + id);
  EXPECT_EQ(g_rc, 0);
  EXPECT_NE(g_out.find("triggered 1, backfilled 3"), std::string::npos) << g_out;
  EXPECT_NE(g_out.find("last occurrences:"), std::string::npos) << g_out;
  // A backfill's range is checked first; --from is required.
  EXPECT_EQ(Run("schedule backfill " + id + " --from yesterday").first, 2);
  EXPECT_EQ(Run("schedule backfill " + id + " --from 1700000000000").first, 2);
  EXPECT_EQ(Run("schedule backfill " + id).first, 2);
  auto [future_rc, future] =
      Run("schedule backfill " + id + " --from " + Rfc3339(from) + " --to 2099-01-01T00:00:00Z");
  EXPECT_EQ(future_rc, 1) << future;
  EXPECT_NE(future.find("HTTP 400"), std::string::npos) << future;

  // rm: gone, with its planned occurrence; a second rm is the server's 404.
  const std::int64_t planned = Get("/v1/schedules/" + id).body.at("next_ms").as_int64();
  auto [rm_rc, rm] = Run("schedule rm " + id);
  EXPECT_EQ(rm_rc, 0) << rm;
  EXPECT_EQ(Get("/v1/schedules/" + id).status, 404);
  EXPECT_EQ(Get("/v1/timers/" + id + "@" + std::to_string(planned)).status, 404);
  auto [rm2_rc, rm2] = Run("schedule rm " + id);
  EXPECT_EQ(rm2_rc, 1);
  EXPECT_NE(rm2.find("not_found"), std::string::npos) << rm2;
}

TEST_F(CliScheduleTest, EveryCommandOnOneScheduleChecksItsIdAndSaysWhenItIsMissing) {
  for (const char* cmd : {"get", "pause", "resume", "trigger", "rm"}) {
    const std::string c = std::string("schedule ") + cmd + " ";
    auto [missing_rc, missing] = Run(c + "no-such-schedule");
    EXPECT_EQ(missing_rc, 1) << c;
    EXPECT_NE(missing.find("not_found"), std::string::npos) << c << missing;
    // An occurrence is a timer, not a schedule; a bad id is not sent.
    auto [at_rc, at] = Run(c + "x@1700000000000");
    EXPECT_EQ(at_rc, 2) << c << at;
    EXPECT_NE(at.find("is an occurrence"), std::string::npos) << c << at;
    auto [bad_rc, bad] = Run(c + "'a/b'");
    EXPECT_EQ(bad_rc, 2) << c << bad;
    EXPECT_NE(bad.find("may only contain letters, digits"), std::string::npos) << c << bad;
    auto [none_rc, none] = Run(c);
    EXPECT_EQ(none_rc, 2) << c << none;
  }
  auto [bf_rc, bf] = Run("schedule backfill no-such-schedule --from 2026-01-01T00:00:00Z "
                         "--to 2026-01-02T00:00:00Z");
  EXPECT_EQ(bf_rc, 1) << bf;
  EXPECT_NE(bf.find("not_found"), std::string::npos) << bf;
  // Pausing an ended schedule is the server's 409.
  const std::string ended = Unique("ended");
  ASSERT_EQ(Run("schedule add --id " + ended + " --cron '0 0 30 2 *'" + Url()).first, 0);
  EXPECT_EQ(State(Get("/v1/schedules/" + ended)), "ended");
  auto [e_rc, e_out] = Run("schedule pause " + ended);
  EXPECT_EQ(e_rc, 1) << e_out;
  EXPECT_NE(e_out.find("schedule_ended"), std::string::npos) << e_out;
  // The group wants a command; an unknown one is refused.
  EXPECT_EQ(RunTickwheel("schedule").first, 2);
  EXPECT_EQ(RunTickwheel("schedule frobnicate").first, 2);
  auto [help_rc, help] = RunTickwheel("schedule add --help");
  EXPECT_EQ(help_rc, 0);
  EXPECT_NE(help.find("--cron"), std::string::npos) << help;
  // Nothing listening: unreachable (3).
  EXPECT_EQ(RunTickwheel("schedule ls --server 127.0.0.1:" + std::to_string(FreePort())).first, 3);
}

}  // namespace
}  // namespace tickwheel::testing
