// SPDX-License-Identifier: Apache-2.0
// The timer itself: its stored form, its targets, its state machine.
#include <gtest/gtest.h>

#include "store/record_codec.h"
#include "store_test_util.h"
#include "timer/http_url.h"
#include "timer/target.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {
namespace {

TimerRecord FullRecord() {
  TimerRecord r = Record("abc", 1234);
  r.state = TimerState::kFailed;
  r.attempts = 3;
  r.max_attempts = 5;
  r.backoff_ms = 250;
  r.created_ms = -7;
  r.updated_ms = 99;
  r.digest[0] = 0xde;
  r.digest[31] = 0xad;
  r.headers = {{"Authorization", "Bearer x"}, {"X-Empty", ""}};
  r.last_error = "HTTP 500";
  r.attempt_log = {{10, 20, 500, "HTTP 500"}, {30, 5, 0, "timed out"}};
  return r;
}

TEST(RecordCodecTest, EncodesAndDecodesEveryField) {
  const TimerRecord r = FullRecord();
  Result<TimerRecord> d = DecodeRecord("abc", EncodeRecord(r));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, r);
}

// A timer's trace context is format 4; one without is written as format 3,
// byte for byte what the version before wrote, so that it reads every
// untraced timer (docs/operations.md, Upgrades).
TEST(RecordCodecTest, ATracedRecordIsFormat4AndAnUntracedOneFormat3) {
  TimerRecord traced = FullRecord();
  traced.trace = {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1,congo=2"};
  const std::string with = EncodeRecord(traced);
  EXPECT_EQ(with[0], 4);
  Result<TimerRecord> d = DecodeRecord("abc", with);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, traced);
  const TimerRecord untraced = FullRecord();
  const std::string without = EncodeRecord(untraced);
  EXPECT_EQ(without[0], 3);
  // Format 3 is format 4 less the two trailing strings (each a 4-byte
  // length and its bytes).
  EXPECT_EQ(without.substr(1), with.substr(1, without.size() - 1));
  EXPECT_EQ(with.size(), without.size() + 8 + traced.trace.traceparent.size() +
                             traced.trace.tracestate.size());
  d = DecodeRecord("abc", without);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->trace.empty());
  EXPECT_EQ(*d, untraced);
  // Truncated anywhere, a format-4 record is refused.
  for (std::size_t n = 0; n < with.size(); ++n) {
    ASSERT_FALSE(DecodeRecord("x", with.substr(0, n)).ok()) << n;
  }
  // Format 4 with an empty trace context is never written: damage.
  std::string empty_trace = without;
  empty_trace[0] = 4;
  empty_trace.append(8, '\0');
  EXPECT_EQ(DecodeRecord("x", empty_trace).status().code(), StatusCode::kCorrupt);
}

TEST(RecordCodecTest, RejectsTruncatedAndForeignBytesAsCorrupt) {
  const std::string bytes = EncodeRecord(FullRecord());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    Result<TimerRecord> d = DecodeRecord("x", bytes.substr(0, n));
    ASSERT_FALSE(d.ok()) << n;
    EXPECT_EQ(d.status().code(), StatusCode::kCorrupt);
  }
  EXPECT_FALSE(DecodeRecord("x", bytes + "z").ok());
  std::string bad_state = bytes;
  bad_state[1] = 9;
  EXPECT_FALSE(DecodeRecord("x", bad_state).ok());
}

TEST(RecordCodecTest, ANewerFormatIsCorruptAndSaysToUpgrade) {
  std::string bytes = EncodeRecord(FullRecord());
  bytes[0] = 7;
  Result<TimerRecord> d = DecodeRecord("abc", bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(d.status().message().find("format 7"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("upgrade"), std::string::npos);
}

// Records written before format 2 are still read, with a legacy digest.
TEST(RecordCodecTest, ReadsFormatOneRecordsWithALegacyDigest) {
  auto put = [](std::string& out, auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto put_string = [&](std::string& out, std::string_view s) {
    put(out, static_cast<std::uint32_t>(s.size()));
    out.append(s);
  };
  std::string v1;
  put(v1, std::uint8_t{1});
  put(v1, std::uint8_t{0});  // pending
  put(v1, std::int64_t{1000});
  put(v1, std::int64_t{1500});
  put(v1, std::uint32_t{2});
  put(v1, std::uint32_t{5});
  put(v1, std::uint32_t{100});
  put(v1, std::int64_t{10});
  put(v1, std::int64_t{20});
  put(v1, std::uint64_t{0x1234});  // std::hash of the body
  put_string(v1, "http://h/x");
  put_string(v1, "{\"b\":1,\"a\":2}");
  put_string(v1, "HTTP 500");
  Result<TimerRecord> d = DecodeRecord("old", v1);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->digest_kind, DigestKind::kLegacy);
  EXPECT_EQ(d->due_ms, 1500);
  EXPECT_EQ(d->attempts, 2u);
  EXPECT_EQ(d->target, "http://h/x");
  EXPECT_EQ(d->payload, "{\"b\":1,\"a\":2}");
  EXPECT_EQ(d->last_error, "HTTP 500");
  // Written again, it is format 2 and keeps its legacy digest.
  Result<TimerRecord> again = DecodeRecord("old", EncodeRecord(*d));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *d);
}

TEST(HttpUrlTest, ParsesHostPortAndTarget) {
  Result<HttpUrl> u = ParseHttpUrl("http://example.com:8081/a/b?c=1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, "8081");
  EXPECT_EQ(u->target, "/a/b?c=1");
  EXPECT_FALSE(u->tls);
  Result<HttpUrl> d = ParseHttpUrl("http://h");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, "80");
  EXPECT_EQ(d->target, "/");
  Result<HttpUrl> s = ParseHttpUrl("https://h/x#frag");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->tls);
  EXPECT_EQ(s->port, "443");
  EXPECT_EQ(s->target, "/x");
  Result<HttpUrl> v6 = ParseHttpUrl("http://[::1]:9/");
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->HostHeader(), "[::1]:9");
}

// Schemes and host names are case-insensitive (RFC 3986).
TEST(HttpUrlTest, SchemeAndHostAreCaseInsensitive) {
  Result<HttpUrl> u = ParseHttpUrl("HTTP://Example.COM/Path");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->target, "/Path");
  EXPECT_TRUE(ParseHttpUrl("HtTpS://h/").ok());
}

TEST(HttpUrlTest, RefusesWhatIsNotAWebhookUrlSayingWhy) {
  Result<HttpUrl> ftp = ParseHttpUrl("ftp://h/x");
  ASSERT_FALSE(ftp.ok());
  EXPECT_EQ(ftp.status().reason(), "unsupported_target");
  for (const char* bad : {"http://h:99999/", "http://h:0/", "http://user@h/", "http://h/a b",
                          "h:80/x", "http:///x", "http://[::1/", "http://h:8x/", "http://h:/",
                          "http://../", "http://[:]/", "http://h/caf\xc3\xa9", "http://a..b/",
                          "http://-a.b/"}) {
    Result<HttpUrl> r = ParseHttpUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().reason(), "invalid_value") << bad;
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(TargetTest, NatsSubjectsAreSingleNonSystemSubjects) {
  EXPECT_TRUE(CheckNatsSubject("orders.reminders").ok());
  for (const char* bad : {"", ".a", "a.", "a..b", "a b", "a.*", "a.>", "$JS.API.STREAM.LIST",
                          "$SYS.x"}) {
    EXPECT_FALSE(CheckNatsSubject(bad).ok()) << bad;
  }
}

// Every transition of the state machine, and what each refuses.
TEST(TimerStateMachineTest, CreateClaimDeliver) {
  TimerSpec spec;
  spec.fire_at_ms = 1000;
  spec.target = "http://h/";
  spec.max_attempts = 3;
  spec.backoff_ms = 100;
  TimerRecord r = NewTimer(spec, "t", 500);
  EXPECT_EQ(r.state, TimerState::kPending);
  EXPECT_EQ(r.due_ms, 1000);
  TimerRecord next;
  EXPECT_EQ(Claim(r, 1000, 999, &next), ClaimResult::kNotYet);
  EXPECT_EQ(Claim(r, 999, 1000, &next), ClaimResult::kStale);  // fired for another time
  ASSERT_EQ(Claim(r, 1000, 1000, &next), ClaimResult::kClaimed);
  EXPECT_EQ(next.state, TimerState::kDelivering);
  EXPECT_EQ(next.attempts, 1u);
  EXPECT_TRUE(AwaitsOutcome(next, 1));
  EXPECT_FALSE(AwaitsOutcome(next, 2));
  AttemptOutcome ok;
  ok.delivered = true;
  ok.log = {1000, 3, 200, ""};
  TimerRecord done = Complete(next, ok, 1003, 0);
  EXPECT_EQ(done.state, TimerState::kDelivered);
  ASSERT_EQ(done.attempt_log.size(), 1u);
  EXPECT_EQ(done.attempt_log[0].status, 200);
  EXPECT_EQ(Claim(done, 1000, 2000, &next), ClaimResult::kStale);
}

TEST(TimerStateMachineTest, FailuresRetryWithBackoffThenDeadLetter) {
  TimerRecord r = Record("t", 1000);
  r.max_attempts = 2;
  r.backoff_ms = 100;
  TimerRecord claimed;
  ASSERT_EQ(Claim(r, 1000, 1000, &claimed), ClaimResult::kClaimed);
  AttemptOutcome failed;
  failed.log = {1000, 5, 500, "HTTP 500"};
  EXPECT_EQ(RetryDelayMs(claimed, 1.0), 100);
  TimerRecord retry = Complete(claimed, failed, 1005, RetryDelayMs(claimed, 1.0));
  EXPECT_EQ(retry.state, TimerState::kPending);
  EXPECT_EQ(retry.due_ms, 1105);
  EXPECT_EQ(retry.last_error, "HTTP 500");
  // Retry-After: never earlier than the receiver said.
  failed.not_before_ms = 5000;
  EXPECT_EQ(Complete(claimed, failed, 1005, 100).due_ms, 5000);
  ASSERT_EQ(Claim(retry, 1105, 1105, &claimed), ClaimResult::kClaimed);
  EXPECT_EQ(RetryDelayMs(claimed, 1.0), 200);  // doubles
  EXPECT_EQ(RetryDelayMs(claimed, 0.5), 100);
  TimerRecord dead = Complete(claimed, failed, 1200, 200);
  EXPECT_EQ(dead.state, TimerState::kFailed);
  EXPECT_EQ(dead.attempts, 2u);
  // A huge backoff is capped at a day.
  claimed.attempts = 100;
  EXPECT_EQ(RetryDelayMs(claimed, 1.0), 24LL * 3600 * 1000);
}

// The attempt log keeps the last kMaxAttemptLog attempts, oldest first.
TEST(TimerStateMachineTest, KeepsTheLastTenAttempts) {
  TimerRecord r = Record("t", 0);
  r.state = TimerState::kDelivering;
  r.max_attempts = 100;
  for (int i = 0; i < 15; ++i) {
    r.attempts = static_cast<std::uint32_t>(i + 1);
    AttemptOutcome o;
    o.log.started_ms = i;
    r = Complete(r, o, i, 0);
    r.state = TimerState::kDelivering;
  }
  ASSERT_EQ(r.attempt_log.size(), kMaxAttemptLog);
  EXPECT_EQ(r.attempt_log.front().started_ms, 5);
  EXPECT_EQ(r.attempt_log.back().started_ms, 14);
}

// A timer found `delivering` (its process died with the attempt in flight)
// makes that attempt again: its count never exceeds max_attempts.
TEST(TimerStateMachineTest, ARecoveredAttemptIsMadeAgainNotCountedTwice) {
  TimerRecord r = Record("t", 1000, TimerState::kDelivering);
  r.attempts = 3;
  r.max_attempts = 3;
  TimerRecord next;
  ASSERT_EQ(Claim(r, 1000, 5000, &next), ClaimResult::kRecovered);
  EXPECT_EQ(next.attempts, 3u);
  AttemptOutcome failed;
  EXPECT_EQ(Complete(next, failed, 5001, 10).state, TimerState::kFailed);
  EXPECT_EQ(Complete(next, failed, 5001, 10).attempts, 3u);
}

TEST(TimerStateMachineTest, ApiTransitionsRefuseTheWrongStates) {
  const TimerRecord pending = Record("t", 1000);
  Result<TimerRecord> moved = Reschedule(pending, 2000, 1);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->due_ms, 2000);
  EXPECT_EQ(moved->fire_at_ms, 2000);
  Result<std::optional<TimerRecord>> cancelled = Cancel(pending, 1);
  ASSERT_TRUE(cancelled.ok() && *cancelled);
  EXPECT_EQ((*cancelled)->state, TimerState::kCancelled);
  // Cancelling again changes nothing and is no error.
  Result<std::optional<TimerRecord>> again = Cancel(**cancelled, 2);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  for (TimerState s : {TimerState::kDelivering, TimerState::kDelivered, TimerState::kFailed}) {
    const TimerRecord r = Record("t", 1000, s);
    EXPECT_EQ(Reschedule(r, 5, 1).status().reason(), "not_pending");
    EXPECT_EQ(Cancel(r, 1).status().code(), StatusCode::kConflict);
  }
  EXPECT_EQ(Retry(pending, 1).status().reason(), "not_failed");
  TimerRecord dead = Record("t", 1000, TimerState::kFailed);
  dead.attempts = 10;
  Result<TimerRecord> retried = Retry(dead, 77);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->state, TimerState::kPending);
  EXPECT_EQ(retried->attempts, 0u);
  EXPECT_EQ(retried->due_ms, 77);
}

}  // namespace
}  // namespace tickwheel::server
