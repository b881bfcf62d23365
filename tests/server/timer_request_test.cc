// SPDX-License-Identifier: Apache-2.0
// Request decoding: bodies, ids, query strings, digests.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/json_body.h"
#include "api/list_query.h"
#include "api/timer_json.h"
#include "api/timer_request.h"
#include "common/sha256.h"
#include "timer/flow_key.h"

namespace tickwheel::server {
namespace {

namespace json = boost::json;

Result<TimerSpec> Spec(const char* text, std::int64_t now = 0, ApiLimits limits = {}) {
  return ParseTimerSpec(json::parse(text), limits, now);
}

TEST(TimerRequestTest, FireTimeInThePastMeansNow) {
  Result<TimerSpec> spec = Spec(R"({"fire_at_ms": 5, "target": {"url": "http://h/"}})", 1'000'000);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->fire_at_ms, 1'000'000);
}

TEST(TimerRequestTest, ATypoOfAFieldGetsTheDocumentedSuggestion) {
  // docs/server.md's example: `dealy_ms` -> did you mean `delay_ms`? (the
  // old check compared the first three letters and never suggested it).
  Result<TimerSpec> spec = Spec(R"({"dealy_ms": 5, "target": {"url": "http://h/"}})");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().reason(), "unknown_field");
  EXPECT_NE(spec.status().message().find("did you mean \"delay_ms\"?"), std::string::npos)
      << spec.status().message();
  spec = Spec(R"({"delay_ms": 5, "traget": {"url": "http://h/"}})");
  EXPECT_NE(spec.status().message().find("did you mean \"target\"?"), std::string::npos);
  spec = Spec(R"({"delay_ms": 5, "target": {"url": "http://h/"}, "retry": {"max_attempt": 3}})");
  EXPECT_NE(spec.status().message().find("did you mean \"max_attempts\"?"), std::string::npos)
      << spec.status().message();
  // Nothing near: no suggestion (not "id" for anything short).
  spec = Spec(R"({"delay_ms": 5, "target": {"url": "http://h/"}, "colour": 1})");
  EXPECT_EQ(spec.status().message().find("did you mean"), std::string::npos)
      << spec.status().message();
  EXPECT_EQ(SuggestField("xy", {"id"}), "");
  EXPECT_EQ(SuggestField("stat", {"state", "limit"}), " (did you mean \"state\"?)");
}

TEST(TimerRequestTest, TheHorizonIsGivenInTheUnitsOfTheFlag) {
  ApiLimits limits;
  limits.horizon_ms = 3650LL * 86'400'000;
  Result<TimerSpec> spec =
      Spec(R"({"delay_ms": 315360000001, "target": {"url": "http://h/"}})", 0, limits);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().reason(), "beyond_horizon");
  EXPECT_NE(spec.status().message().find("horizon of 3650 days"), std::string::npos)
      << spec.status().message();
  limits.horizon_ms = 36LL * 3'600'000;
  spec = Spec(R"({"fire_at_ms": 999999999999999, "target": {"url": "http://h/"}})", 0, limits);
  EXPECT_NE(spec.status().message().find("horizon of 36 hours"), std::string::npos)
      << spec.status().message();
}

TEST(TimerRequestTest, DefaultsAndExplicitRetry) {
  ApiLimits limits;
  limits.default_max_attempts = 4;
  limits.default_backoff_ms = 300;
  Result<TimerSpec> a = Spec(R"({"delay_ms": 10, "target": {"url": "http://h/"}})", 100, limits);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->fire_at_ms, 110);
  EXPECT_EQ(a->max_attempts, 4u);
  EXPECT_EQ(a->backoff_ms, 300u);
  EXPECT_EQ(a->payload, "null");
  Result<TimerSpec> b = Spec(R"({"delay_ms": 10, "target": {"url": "http://h/"},
                                 "retry": {"max_attempts": 2, "backoff_ms": 5}})", 100, limits);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->max_attempts, 2u);
  EXPECT_EQ(b->backoff_ms, 5u);
}

// The digest is SHA-256 of the canonical body: spacing and key order do not
// change it, any value does.
TEST(TimerRequestTest, SameBodySameDigestWhateverTheKeyOrder) {
  auto digest = [](const char* text) { return Spec(text)->digest; };
  const Digest a = digest(R"({"id":"a","delay_ms":1,"target":{"url":"http://h/"},"payload":{"x":1,"y":[1,2]}})");
  EXPECT_EQ(a, digest(R"({ "payload" : {"y":[1,2], "x":1}, "target" : {"url":"http://h/"}, "delay_ms" : 1, "id":"a" })"));
  EXPECT_NE(a, digest(R"({"id":"a","delay_ms":2,"target":{"url":"http://h/"},"payload":{"x":1,"y":[1,2]}})"));
  EXPECT_NE(a, digest(R"({"id":"a","delay_ms":1,"target":{"url":"http://h/"},"payload":{"x":1,"y":[2,1]}})"));
  // Known value: the digest must not change between builds or libraries.
  const Digest empty = digest(R"({"delay_ms":0,"target":{"url":"http://h/"}})");
  EXPECT_EQ(CanonicalJson(json::parse(R"({"target":{"url":"http://h/"},"delay_ms":0})")),
            R"({"delay_ms":0,"target":{"url":"http://h/"}})");
  std::string hex;
  for (std::uint8_t b : empty) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  // sha256sum of the canonical body above, computed independently.
  EXPECT_EQ(hex, "5d991c0bfe7fe64c2052c5f57257151ea6f097d107a95d118c24d5e8ac2b2c28");
}

TEST(TimerRequestTest, CanonicalScalarsAreWhatBoostJsonSerializes) {
  // Stored digests were made with boost::json::serialize for every scalar
  // and key; the allocation-free path must write the same bytes.
  const std::vector<std::string> strings = {
      "", "plain", "quote\"d", "back\\slash", "tab\there", "nl\n", std::string("nul\0x", 5),
      "\x1f unit", "\x7f del", "slash/ok", "caf\xc3\xa9", "\xff not utf-8", "<>&'"};
  for (const std::string& s : strings) {
    const json::value v = json::string(s);
    EXPECT_EQ(CanonicalJson(v), json::serialize(v)) << s;
    std::string quoted;
    AppendJsonString(quoted, s);
    EXPECT_EQ(quoted, json::serialize(v)) << s;
    json::object o;
    o[s] = 1;
    EXPECT_EQ(CanonicalJson(o), json::serialize(o)) << s;
  }
  for (const json::value& v :
       {json::value(0), json::value(-1), json::value(INT64_MIN), json::value(INT64_MAX),
        json::value(UINT64_MAX), json::value(1.5), json::value(-0.0), json::value(1e300),
        json::value(true), json::value(false), json::value(nullptr)}) {
    EXPECT_EQ(CanonicalJson(v), json::serialize(v));
  }
  EXPECT_EQ(CanonicalJson(json::parse(R"({"b":[1,"x\"",{"d":null,"c":2.5}],"a":true})")),
            R"({"a":true,"b":[1,"x\"",{"c":2.5E0,"d":null}]})");  // doubles as boost writes them
}

TEST(TimerRequestTest, ARepeatedCreateMatchesALegacyRecordByItsContent) {
  Result<TimerSpec> spec = Spec(R"({"id":"a","delay_ms":5,"target":{"url":"http://h/"},
                                    "payload":{"b":1,"a":2},"retry":{"max_attempts":3,"backoff_ms":7}})");
  ASSERT_TRUE(spec.ok());
  TimerRecord legacy;
  legacy.id = "a";
  legacy.digest_kind = DigestKind::kLegacy;
  legacy.target = "http://h/";
  legacy.payload = R"({"a":2,"b":1})";
  legacy.max_attempts = 3;
  legacy.backoff_ms = 7;
  legacy.flow = DefaultFlowKey(legacy.target);  // as DecodeRecord gives it one
  EXPECT_TRUE(SameCreate(legacy, *spec));
  // Naming another flow is another request.
  Result<TimerSpec> flowed = Spec(R"({"id":"a","delay_ms":5,"target":{"url":"http://h/"},"flow":"x",
                                      "payload":{"b":1,"a":2},"retry":{"max_attempts":3,"backoff_ms":7}})");
  ASSERT_TRUE(flowed.ok());
  EXPECT_FALSE(SameCreate(legacy, *flowed));
  legacy.payload = R"({"a":2,"b":2})";
  EXPECT_FALSE(SameCreate(legacy, *spec));
}

// A number beyond what a double holds would be stored as "Infinity".
TEST(TimerRequestTest, APayloadNumberBeyondJsonsRangeIsRefused) {
  Result<TimerSpec> r = Spec(R"({"delay_ms":1,"payload":{"amount":1e400},"target":{"url":"http://h/"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "payload");
  EXPECT_TRUE(Spec(R"({"delay_ms":1,"payload":{"amount":1e300},"target":{"url":"http://h/"}})").ok());
}

// Error messages quote what the client sent; the body stays valid JSON.
TEST(TimerRequestTest, ErrorBodiesAreJsonWhateverBytesTheyQuote) {
  for (const std::string& query : {std::string("state=\xff"), std::string("state=%FF"),
                                  "state=" + std::string(63, 'a') + "\xc3\xa9"}) {
    Result<ListQuery> q = ParseListQuery(query);
    ASSERT_FALSE(q.ok());
    boost::system::error_code ec;
    json::parse(ErrorJson(q.status()), ec);
    EXPECT_FALSE(ec) << ErrorJson(q.status());
  }
}

TEST(TimerRequestTest, BatchNamesTheIndexOfTheBadTimerAndDuplicateIds) {
  Result<std::vector<TimerSpec>> r = ParseBatch(
      json::parse(R"({"timers":[{"delay_ms":1,"target":{"url":"http://h/"}},
                                {"delay_ms":true,"target":{"url":"http://h/"}}]})"), {}, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "timers[1].delay_ms");
  Result<std::vector<TimerSpec>> d = ParseBatch(
      json::parse(R"({"timers":[{"id":"x","delay_ms":1,"target":{"url":"http://h/"}},
                                {"id":"x","delay_ms":2,"target":{"url":"http://h/"}}]})"), {}, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().reason(), "duplicate_id");
}

TEST(TimerRequestTest, TargetHeadersAreBoundedAndNeverHopByHop) {
  Result<TimerSpec> ok = Spec(R"({"delay_ms":1,"target":{"url":"http://h/",
                                  "headers":{"Authorization":"Bearer t","X-Trace":"1"}}})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->headers.size(), 2u);
  EXPECT_EQ(ok->headers[0].first, "Authorization");
  for (const char* name : {"Connection", "transfer-encoding", "Host", "Content-Length",
                           "Idempotency-Key", "webhook-signature", "Upgrade"}) {
    const std::string body = std::string(R"({"delay_ms":1,"target":{"url":"http://h/","headers":{")") +
                             name + R"(":"x"}}})";
    Result<TimerSpec> r = ParseTimerSpec(json::parse(body), {}, 0);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().reason(), "reserved_header");
    EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(Spec(R"({"delay_ms":1,"target":{"url":"http://h/","headers":{"X":"a\r\nB: c"}}})").ok());
  EXPECT_FALSE(Spec(R"({"delay_ms":1,"target":{"url":"http://h/","headers":{"Bad Name":"x"}}})").ok());
  EXPECT_FALSE(Spec(R"({"delay_ms":1,"target":{"url":"http://h/","headers":{"X":5}}})").ok());
  std::string many = R"({"delay_ms":1,"target":{"url":"http://h/","headers":{)";
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string("\"X-") + std::to_string(i) + "\":\"v\"";
  EXPECT_EQ(ParseTimerSpec(json::parse(many + "}}}"), {}, 0).status().reason(), "out_of_range");
}

TEST(TimerRequestTest, HttpsIsRefusedUnlessTheClientCanDoTls) {
  EXPECT_EQ(Spec(R"({"delay_ms":1,"target":{"url":"https://h/"}})").status().reason(),
            "unsupported_target");
  ApiLimits tls;
  tls.https_enabled = true;
  EXPECT_TRUE(Spec(R"({"delay_ms":1,"target":{"url":"https://h/"}})", 0, tls).ok());
}

// A body of tiny values would build a tree many times its size: refused
// before it is built, with a clear error.
TEST(JsonBodyTest, ABodyOfTinyValuesIsRefusedBeforeItsTreeIsBuilt) {
  std::string body = R"({"timers":1,"x":[)";
  for (int i = 0; i < 200'000; ++i) body += i ? ",0" : "0";
  body += "]}";
  Result<json::value> v = ParseJsonBody(body);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(v.status().reason(), "body_too_complex");
  // An ordinary batch of the same size parses.
  std::string batch = R"({"timers":[)";
  while (batch.size() < body.size()) {
    batch += R"({"id":"order-12345-reminder","delay_ms":30000,"target":{"url":"http://127.0.0.1:9000/hook"},"payload":{"order":12345,"kind":"reminder"}},)";
  }
  batch.back() = ']';
  batch += '}';
  EXPECT_TRUE(ParseJsonBody(batch).ok());
}

TEST(JsonBodyTest, ABadBodySaysWhere) {
  Result<json::value> v = ParseJsonBody(R"({"a": 1,, })");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().reason(), "invalid_json");
  EXPECT_NE(v.status().message().find("at byte 8"), std::string::npos) << v.status().message();
}

TEST(ListQueryTest, ParsesStateLimitAndACursor) {
  Result<ListQuery> q = ParseListQuery("state=failed&limit=7&after=" +
                                       EncodeCursor({1795430977674, "order-42"}));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->state, TimerState::kFailed);
  EXPECT_EQ(q->limit, 7u);
  ASSERT_TRUE(q->after);
  EXPECT_EQ(q->after->time_ms, 1795430977674);
  EXPECT_EQ(q->after->id, "order-42");
  // Percent-encoded as a client library would send it.
  Result<ListQuery> encoded = ParseListQuery("st%61te=pending&after=5%3Aa.b");
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_EQ(encoded->after->id, "a.b");
}

TEST(ListQueryTest, NamesWhatIsWrong) {
  EXPECT_EQ(ParseListQuery("limit=5").status().field(), "state");
  EXPECT_EQ(ParseListQuery("state=nope").status().field(), "state");
  EXPECT_EQ(ParseListQuery("state=failed&limit=0").status().field(), "limit");
  EXPECT_EQ(ParseListQuery("state=failed&limit=5x").status().field(), "limit");
  EXPECT_EQ(ParseListQuery("state=failed&after=order-42").status().field(), "after");
  EXPECT_EQ(ParseListQuery("state=failed&after=5:bad%20id").status().field(), "after");
  EXPECT_EQ(ParseListQuery("state=failed&sort=x").status().reason(), "unknown_field");
  EXPECT_NE(ParseListQuery("state=failed&limt=5").status().message().find("did you mean \"limit\"?"),
            std::string::npos);
  // Why a state is needed, not only that it is.
  EXPECT_NE(ParseListQuery("limit=5").status().message().find("one state at a time"),
            std::string::npos);
  EXPECT_FALSE(ParseListQuery("state=fail%2").ok());
}

// A timer that names no flow gets its target's: the host (lower case) and
// port of a webhook, parsed with the URL, or a NATS subject's first token;
// the same key as DefaultFlowKey of the stored target gives.
TEST(TimerRequestTest, ATimersFlowIsTheOneItNamesOrItsTargetsHostAndPort) {
  ApiLimits limits;
  limits.nats_enabled = true;
  limits.https_enabled = true;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"delay_ms":5,"target":{"url":"http://Example.COM/a"}})", "example.com:80"},
      {R"({"delay_ms":5,"target":{"url":"https://h:8443/a?b"}})", "h:8443"},
      {R"({"delay_ms":5,"target":{"url":"http://[::1]:9000/"}})", "[::1]:9000"},
      {R"({"delay_ms":5,"target":{"nats":"orders.eu.created"}})", "orders"},
      {R"({"delay_ms":5,"target":{"url":"http://h/"},"flow":"mine"})", "mine"},
  };
  for (const auto& [body, flow] : cases) {
    Result<TimerSpec> spec = Spec(body, 0, limits);
    ASSERT_TRUE(spec.ok()) << body << ": " << spec.status().message();
    EXPECT_EQ(spec->flow, flow) << body;
    if (std::string_view(flow) != "mine") {
      EXPECT_EQ(DefaultFlowKey(spec->target), flow) << body;
    }
  }
}

// The digest that tells a repeated create from a different one is SHA-256
// (FIPS 180-2's examples), whichever way OpenSSL is asked for it.
TEST(TimerRequestTest, BodyDigestsAreSha256) {
  auto hex = [](const std::array<std::uint8_t, 32>& d) {
    std::string out;
    for (std::uint8_t b : d) {
      out += "0123456789abcdef"[b >> 4];
      out += "0123456789abcdef"[b & 15];
    }
    return out;
  };
  EXPECT_EQ(hex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace tickwheel::server
