// SPDX-License-Identifier: Apache-2.0
// Flow keys, flow settings (the API's body and the stored form) and the
// limits they come to with the server's defaults.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "flow/flow_settings.h"
#include "flow/minute_counter.h"
#include "timer/flow_key.h"

namespace tickwheel::server {
namespace {

Result<FlowSettings> Parse(const std::string& text) {
  return ParseFlowSettings(boost::json::parse(text));
}

TEST(FlowKeyTest, DefaultIsTheTargetsHostAndPortOrTheSubjectsFirstToken) {
  EXPECT_EQ(DefaultFlowKey("http://Hooks.Example.com/a?b=c"), "hooks.example.com:80");
  EXPECT_EQ(DefaultFlowKey("https://hooks.example.com/a"), "hooks.example.com:443");
  EXPECT_EQ(DefaultFlowKey("http://127.0.0.1:9000/hook"), "127.0.0.1:9000");
  EXPECT_EQ(DefaultFlowKey("http://[::1]:9000/hook"), "[::1]:9000");
  EXPECT_EQ(DefaultFlowKey("nats:orders.eu.created"), "orders");
  EXPECT_EQ(DefaultFlowKey("nats:single"), "single");
  EXPECT_EQ(DefaultFlowKey("nats:odd%token/x.y"), "odd_token_x");
  EXPECT_EQ(DefaultFlowKey("nats:x:pause.y"), "x:paus_");
  EXPECT_EQ(DefaultFlowKey("ftp://nope"), "invalid");
  for (const char* t : {"http://a:1/", "nats:orders.x", "nats:x:pause.y"}) {
    EXPECT_TRUE(CheckFlowKey(DefaultFlowKey(t), "flow").ok()) << t;
  }
}

TEST(FlowKeyTest, KeysArePrintableAndNotAnAction) {
  EXPECT_TRUE(CheckFlowKey("payments-api", "flow").ok());
  EXPECT_TRUE(CheckFlowKey("hooks.example.com:443", "flow").ok());
  EXPECT_TRUE(CheckFlowKey("[::1]:9000", "flow").ok());
  EXPECT_TRUE(CheckFlowKey(std::string(260, 'a'), "flow").ok());
  for (const std::string& bad :
       {std::string(), std::string(261, 'a'), std::string("a b"), std::string("a/b"),
        std::string("a%20"), std::string("x:pause"), std::string("x:resume"),
        std::string("caf\xc3\xa9")}) {
    Status s = CheckFlowKey(bad, "flow");
    EXPECT_EQ(s.reason(), "invalid_flow") << bad;
    EXPECT_EQ(s.field(), "flow");
  }
}

TEST(FlowSettingsTest, ParsesEachLimitAbsentGivenOrNone) {
  Result<FlowSettings> s =
      Parse(R"({"rate_per_s": 200, "burst": 50, "max_in_flight": 8, "paused": true})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->rate_per_s, 200);
  EXPECT_EQ(s->burst, 50);
  EXPECT_EQ(s->max_in_flight, 8);
  EXPECT_TRUE(s->paused);
  s = Parse(R"({"rate_per_s": null, "max_in_flight": null})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rate_per_s, kNoRateLimit);
  EXPECT_EQ(s->max_in_flight, kNoCap);
  EXPECT_FALSE(s->burst);
  s = Parse("{}");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, FlowSettings{});
  s = Parse(R"({"rate_per_s": 0.5})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rate_per_s, 0.5);
}

TEST(FlowSettingsTest, BadSettingsNameTheirField) {
  struct Case {
    const char* body;
    const char* reason;
    const char* field;
  };
  for (Case c : {Case{R"({"rate_per_s": 0})", "out_of_range", "rate_per_s"},
                 Case{R"({"rate_per_s": -1})", "out_of_range", "rate_per_s"},
                 Case{R"({"rate_per_s": 1e7})", "out_of_range", "rate_per_s"},
                 Case{R"({"rate_per_s": "fast"})", "invalid_type", "rate_per_s"},
                 Case{R"({"burst": 0})", "out_of_range", "burst"},
                 Case{R"({"burst": 1.5})", "invalid_type", "burst"},
                 Case{R"({"burst": null})", "invalid_type", "burst"},
                 Case{R"({"max_in_flight": 0})", "out_of_range", "max_in_flight"},
                 Case{R"({"max_in_flight": 18446744073709551615})", "out_of_range", "max_in_flight"},
                 Case{R"({"paused": "yes"})", "invalid_type", "paused"},
                 Case{R"({"rate": 5})", "unknown_field", "rate"},
                 Case{R"([1])", "invalid_type", ""}}) {
    Result<FlowSettings> s = Parse(c.body);
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_EQ(s.status().reason(), c.reason) << c.body;
    EXPECT_EQ(s.status().field(), c.field) << c.body;
  }
}

TEST(FlowSettingsTest, LimitsComeFromSettingsElseTheDefaults) {
  const FlowDefaults none;
  EXPECT_FALSE(ResolveLimits(nullptr, none).limited());
  const FlowDefaults defaults{.rate_per_s = 100, .max_in_flight = 16};
  FlowLimits l = ResolveLimits(nullptr, defaults);
  EXPECT_EQ(l.rate_per_s, 100);
  EXPECT_EQ(l.burst, 10);  // a tenth of a second's worth
  EXPECT_EQ(l.max_in_flight, 16);
  FlowSettings s;
  s.rate_per_s = kNoRateLimit;  // no limit, whatever the default
  s.burst = 7;                  // moot without a rate
  l = ResolveLimits(&s, defaults);
  EXPECT_FALSE(l.rate_limited());
  EXPECT_EQ(l.max_in_flight, 16);
  s = FlowSettings{};
  s.burst = 3;
  s.paused = true;
  l = ResolveLimits(&s, defaults);
  EXPECT_EQ(l.rate_per_s, 100);
  EXPECT_EQ(l.burst, 3);
  EXPECT_TRUE(l.paused);
  s = FlowSettings{};
  s.rate_per_s = 0.5;
  EXPECT_EQ(ResolveLimits(&s, none).burst, 1);
}

TEST(FlowSettingsTest, StoredFormRoundTrips) {
  FlowSettings s;
  s.rate_per_s = 250.5;
  s.max_in_flight = kNoCap;
  s.paused = true;
  s.updated_ms = 1'800'000'000'123;
  Result<FlowSettings> back = DecodeFlowSettings("f", EncodeFlowSettings(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, s);
  s.rate_per_s = 200;
  EXPECT_NE(EncodeFlowSettings(s).find("\"rate_per_s\":200,"), std::string::npos);
  Result<FlowSettings> bad = DecodeFlowSettings("f", "{\"rate_per_s\":-3}");
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(DecodeFlowSettings("f", "not json").status().code(), StatusCode::kCorrupt);
}

TEST(MinuteCounterTest, SumsTheLastSixtySeconds) {
  MinuteCounter c;
  const std::int64_t t0 = 1'800'000'000'000;
  c.Add(t0, 5);
  c.Add(t0 + 30'000, 2);
  EXPECT_EQ(c.Sum(t0 + 30'000), 7);
  EXPECT_EQ(c.Sum(t0 + 59'999), 7);
  EXPECT_EQ(c.Sum(t0 + 60'000), 2);  // the first second has left the minute
  c.Add(t0 + 200'000, 1);            // long after: nothing older is left
  EXPECT_EQ(c.Sum(t0 + 200'000), 1);
  EXPECT_FALSE(c.Idle(t0 + 259'999));
  EXPECT_TRUE(c.Idle(t0 + 260'000));
}

}  // namespace
}  // namespace tickwheel::server
