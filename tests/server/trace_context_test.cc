// SPDX-License-Identifier: Apache-2.0
// W3C Trace Context as a timer carries it (server/timer/trace_context.h):
// the headers of a create parsed or refused naming the header, and the
// traceparent of each attempt made from the stored one.
#include "timer/trace_context.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace tickwheel::server {
namespace {

using Values = std::vector<std::string_view>;

// The spec's example (https://www.w3.org/TR/trace-context/#examples-of-http-traceparent-headers).
constexpr std::string_view kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

Status Refusal(const Values& parents, const Values& states = {}) {
  Result<TraceContext> r = ParseTraceHeaders(parents, states);
  return r.ok() ? Status::Ok() : r.status();
}

TEST(TraceContextTest, NoHeadersIsNoTrace) {
  Result<TraceContext> r = ParseTraceHeaders({}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_TRUE(r->tracestate.empty());
}

TEST(TraceContextTest, AVersion00TraceparentIsKeptAsSentWithItsTracestate) {
  Result<TraceContext> r = ParseTraceHeaders({kParent}, {"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->traceparent, kParent);
  EXPECT_EQ(r->tracestate, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
}

TEST(TraceContextTest, SeveralTracestateLinesAreJoinedInOrder) {
  Result<TraceContext> r = ParseTraceHeaders({kParent}, {"rojo=1", " congo=2 "});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tracestate, "rojo=1,congo=2");
}

TEST(TraceContextTest, OnlyTheSampledFlagIsKept) {
  Result<TraceContext> r =
      ParseTraceHeaders({"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff"}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  r = ParseTraceHeaders({"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe"}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

// A later version is read as version 00 (its first 55 characters, then a
// dash) and kept as version 00, the one this server speaks.
TEST(TraceContextTest, ALaterVersionIsReadAsVersion00) {
  Result<TraceContext> r =
      ParseTraceHeaders({"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future"}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->traceparent, kParent);
  r = ParseTraceHeaders({"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->traceparent, kParent);
  EXPECT_FALSE(ParseTraceHeaders({"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"}, {}).ok());
}

TEST(TraceContextTest, MalformedTraceparentsAreRefusedNamingTheHeader) {
  const std::vector<std::string_view> bad = {
      "",
      "garbage",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",   // version 00 is 55 long
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",     // short flags
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // all-zero trace-id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // all-zero parent-id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",    // not dashes
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
      "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  };
  for (std::string_view value : bad) {
    Status s = Refusal({value});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << value;
    EXPECT_EQ(s.reason(), "invalid_trace_context") << value;
    EXPECT_EQ(s.field(), "traceparent") << value;
    EXPECT_NE(s.message().find("traceparent"), std::string::npos) << s.message();
  }
  Status twice = Refusal({kParent, kParent});
  EXPECT_EQ(twice.field(), "traceparent");
  EXPECT_NE(twice.message().find("2 times"), std::string::npos) << twice.message();
}

TEST(TraceContextTest, BadTracestatesAreRefusedNamingTheHeader) {
  const std::string too_long = "k=" + std::string(kMaxTracestateBytes, 'v');
  std::string too_many;
  for (std::size_t i = 0; i <= kMaxTracestateMembers; ++i) too_many.append("k").append(std::to_string(i)).append("=v,");
  for (const std::string& value : {std::string("novalue"), std::string("=v"), std::string("k="),
                                   std::string("k=v\x01"), too_long, too_many}) {
    Status s = Refusal({kParent}, {value});
    EXPECT_EQ(s.reason(), "invalid_trace_context") << value;
    EXPECT_EQ(s.field(), "tracestate") << value;
  }
  Status alone = Refusal({}, {"rojo=1"});
  EXPECT_EQ(alone.field(), "tracestate");
  EXPECT_NE(alone.message().find("without a traceparent"), std::string::npos) << alone.message();
  // Empty list members are allowed (the spec's grammar), and kept as sent.
  Result<TraceContext> r = ParseTraceHeaders({kParent}, {"rojo=1,,congo=2"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tracestate, "rojo=1,,congo=2");
}

TEST(TraceContextTest, AnImportLinesFieldsArePrefixed) {
  Result<TraceContext> r = ParseTraceHeaders({"nonsense"}, {}, "timers[2].");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "timers[2].traceparent");
}

TEST(TraceContextTest, AnAttemptIsAChildSpanOfTheStoredOne) {
  EXPECT_EQ(ChildTraceparent(kParent, 0x0123456789abcdefULL),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0123456789abcdef-01");
  EXPECT_EQ(ChildTraceparent(kParent, 1), "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01");
  EXPECT_EQ(TraceIdOf(kParent), "4bf92f3577b34da6a3ce929d0e0e4736");
  const TraceContext trace{std::string(kParent), "rojo=1"};
  using Headers = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(AttemptTraceHeaders(trace, 0xabc),
            (Headers{{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000abc-01"},
                     {"tracestate", "rojo=1"}}));
  EXPECT_EQ(AttemptTraceHeaders({std::string(kParent), ""}, 0xabc),
            (Headers{{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000abc-01"}}));
  EXPECT_TRUE(AttemptTraceHeaders({}, 0xabc).empty());
  // What an attempt sends parses back, in the same trace.
  Result<TraceContext> back = ParseTraceHeaders({AttemptTraceHeaders(trace, 7)[0].second}, {"rojo=1"});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(TraceIdOf(back->traceparent), TraceIdOf(kParent));
}

TEST(TraceContextTest, SpanIdsAreNonZeroAndDistinct) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 10'000; ++i) {
    const std::uint64_t id = NewSpanId();
    ASSERT_NE(id, 0u);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 10'000u);  // 64 random bits: a collision here is a broken generator
}

}  // namespace
}  // namespace tickwheel::server
