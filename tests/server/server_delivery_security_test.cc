// SPDX-License-Identifier: Apache-2.0
// Delivery security of the real `tickwheel serve`: https:// receivers with
// valid, expired, wrong-host and unknown-CA certificates; signed deliveries
// verified as a receiver would; Retry-After honoured; the SSRF guard at
// create; the debug log of attempts.
#include <gtest/gtest.h>

#include "server_test_util.h"
#include "support/standard_webhooks.h"
#include "support/test_pki.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

// Polls GET until the timer is in `state` (bounded); returns the last answer.
JsonCall WaitForState(BlockingHttpClient& client, const std::string& id, const std::string& state) {
  JsonCall c;
  for (int i = 0; i < 3000; ++i) {
    c = Call(client, "GET", "/v1/timers/" + id);
    if (State(c) == state) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return c;
}

TEST(ServerHttpsTest, VerifiedReceiversGetDeliveriesAndCertificateErrorsAreDeadLettersSayingWhy) {
  TempDir dir;
  TestPki pki(dir.path());
  const std::vector<std::string> sans = {"IP:127.0.0.1", "DNS:localhost"};
  const CertFiles valid = pki.Issue("valid", sans), expired = pki.Issue("expired", sans, -1),
                  wrong_host = pki.Issue("wrong-host", {"DNS:other.example"}),
                  unknown = pki.Issue("unknown", sans, 2, true);
  auto receiver = [](const CertFiles& c) {
    return std::make_unique<WebhookReceiver>(ReceiverOptions{1, true, c.cert, c.key});
  };
  auto good = receiver(valid), old = receiver(expired), other = receiver(wrong_host),
       stranger = receiver(unknown);
  ServerProcess server(Binary(), dir.path() + "/data", {"--ca-file", pki.ca_file()});
  ASSERT_TRUE(server.Start());
  auto owner = std::make_unique<BlockingHttpClient>(server.address());
  BlockingHttpClient& client = *owner;
  const std::string retry = R"("retry":{"max_attempts":2,"backoff_ms":10})";
  struct Case {
    std::string id;
    WebhookReceiver* receiver;
    const char* says;
  };
  const std::vector<Case> failing = {{"expired", old.get(), "the certificate has expired"},
                                     {"wrong-host", other.get(), "(wrong host)"},
                                     {"unknown-ca", stranger.get(), "signed by an unknown CA"}};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Call(client, "POST", "/v1/timers",
                   TimerBody("good-" + std::to_string(i), 0, good->url(), retry))
                  .status,
              201);
  }
  for (const Case& c : failing) {
    ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody(c.id, 0, c.receiver->url(), retry)).status,
              201);
  }
  ASSERT_TRUE(good->WaitFor(5, std::chrono::seconds(30)));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(State(WaitForState(client, "good-" + std::to_string(i), "delivered")), "delivered");
  }
  for (const Case& c : failing) {
    JsonCall t = WaitForState(client, c.id, "failed");
    ASSERT_EQ(State(t), "failed") << t.raw;
    EXPECT_EQ(t.body.at("attempts").as_int64(), 2);  // retried like any failure
    const std::string last_error(t.body.at("last_error").as_string());
    EXPECT_NE(last_error.find(c.says), std::string::npos) << c.id << ": " << last_error;
    const auto& log = t.body.at("attempt_log").as_array();
    ASSERT_EQ(log.size(), 2u);
    EXPECT_NE(std::string(log[0].at("error").as_string()).find(c.says), std::string::npos);
    EXPECT_EQ(c.receiver->count(), 0u);  // nothing reached it
  }
  EXPECT_EQ(good->count(), 5u);
  EXPECT_GE(Metric(client, "tickwheel_webhook_tls_handshakes_total"), 1);
  // `tickwheel get` shows the attempts.
  auto [rc, out] = RunTickwheel("get expired --server " + server.address());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("last 2 attempts:"), std::string::npos) << out;
  EXPECT_NE(out.find("the certificate has expired"), std::string::npos) << out;
  auto [good_rc, good_out] = RunTickwheel("get good-0 --server " + server.address());
  EXPECT_NE(good_out.find("HTTP 200"), std::string::npos) << good_out;
  owner.reset();  // an idle keep-alive connection would delay the drain
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ServerSigningTest, DeliveriesVerifyWithEachSecretAndAttemptsAreLoggedAtDebug) {
  TempDir dir;
  const std::string old_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string new_secret = "whsec_dGhlIG5ldyBzZWNyZXQgb2YgdGhlIHJvdGF0aW9u";
  WriteFile(dir.path() + "/secrets", "# rotating\n" + old_secret + "\n" + new_secret + "\n");
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--webhook-secret-file", dir.path() + "/secrets", "--log-level", "debug"});
  ASSERT_TRUE(server.Start());
  auto owner = std::make_unique<BlockingHttpClient>(server.address());
  BlockingHttpClient& client = *owner;
  const std::int64_t before_s = WallMs() / 1000;
  for (int i = 0; i < 3; ++i) {
    const std::string body =
        R"({"id":"signed-)" + std::to_string(i) + R"(","delay_ms":0,"payload":{"n":)" +
        std::to_string(i) + R"(},"target":{"url":")" + receiver.url("/secret-path?key=hush") +
        R"(","headers":{"X-Api-Key":"header-secret"}}})";
    ASSERT_EQ(Call(client, "POST", "/v1/timers", body).status, 201);
  }
  ASSERT_TRUE(receiver.WaitFor(3, std::chrono::seconds(30)));
  const std::int64_t after_s = WallMs() / 1000 + 1;
  for (const Delivery& d : receiver.deliveries()) {
    std::string why;
    EXPECT_TRUE(VerifyStandardWebhook(old_secret, d.headers, d.body, &why)) << why;
    EXPECT_TRUE(VerifyStandardWebhook(new_secret, d.headers, d.body, &why)) << why;
    EXPECT_EQ(d.headers.at("webhook-id"), d.idempotency_key);
    EXPECT_TRUE(IsMessageIdOf(d.idempotency_key, d.id)) << d.idempotency_key;
    const std::int64_t ts = std::stoll(d.headers.at("webhook-timestamp"));
    EXPECT_GE(ts, before_s);
    EXPECT_LE(ts, after_s);
    Delivery tampered = d;
    tampered.body[tampered.body.size() - 2] ^= 1;
    EXPECT_FALSE(VerifyStandardWebhook(old_secret, tampered.headers, tampered.body, &why));
  }
  for (int i = 0; i < 3; ++i) WaitForState(client, "signed-" + std::to_string(i), "delivered");
  const std::string log = server.log();
  EXPECT_NE(log.find("attempt 1 of signed-0 to 127.0.0.1:" + std::to_string(receiver.port()) +
                     ": delivered HTTP 200"),
            std::string::npos)
      << log;
  for (const char* secret : {"secret-path", "hush", "header-secret", "MfKQ9r8", "dGhlIG5ld"}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << secret << " in the log:\n" << log;
  }
  owner.reset();  // an idle keep-alive connection would delay the drain
  EXPECT_EQ(server.Terminate(), 0);
}

// 503 with Retry-After: 2 → the retry comes no earlier than 2 s later,
// though the timer's backoff is 1 ms.
TEST(ServerRetryAfterTest, ARetryAfterAnswerIsHonouredNeverEarlier) {
  TempDir dir;
  WebhookReceiver receiver;
  receiver.SetResponder([](const Delivery& d) {
    return d.attempt == 1 ? Reply{503, Reply::Mode::kAnswer, std::chrono::milliseconds(0), "2"}
                          : Reply{200};
  });
  ServerProcess server(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server.Start());
  auto owner = std::make_unique<BlockingHttpClient>(server.address());
  BlockingHttpClient& client = *owner;
  ASSERT_EQ(Call(client, "POST", "/v1/timers",
                 TimerBody("later", 0, receiver.url(), R"("retry":{"max_attempts":3,"backoff_ms":1})"))
                .status,
            201);
  ASSERT_TRUE(receiver.WaitFor(2, std::chrono::seconds(30)));
  JsonCall t = WaitForState(client, "later", "delivered");
  EXPECT_EQ(State(t), "delivered");
  const std::vector<Delivery> d = receiver.deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_GE(d[1].received_ms - d[0].received_ms, 2000) << "retried before Retry-After";
  EXPECT_EQ(t.body.at("attempt_log").as_array()[0].at("status").as_int64(), 503);
  owner.reset();  // an idle keep-alive connection would delay the drain
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ServerSsrfTest, TargetsResolvingToDeniedAddressesAreRefusedAtCreate) {
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--target-deny", "127.0.0.0/8,::1", "--target-deny", "*.blocked.example"});
  ASSERT_TRUE(server.Start());
  auto owner = std::make_unique<BlockingHttpClient>(server.address());
  BlockingHttpClient& client = *owner;
  for (const std::string& url :
       {receiver.url_for("localhost"), receiver.url(), std::string("http://169.254.169.254/x"),
        std::string("http://hooks.blocked.example/x"), std::string("http://[::1]:9/x")}) {
    JsonCall c = Call(client, "POST", "/v1/timers", TimerBody("denied", 0, url));
    EXPECT_EQ(c.status, 400) << url << ": " << c.raw;
    EXPECT_EQ(ErrorCode(c), "target_denied") << url;
    EXPECT_EQ(ErrorField(c), "target.url") << url;
  }
  JsonCall b = Call(client, "POST", "/v1/timers:batch",
                    "{\"timers\":[" + TimerBody("fine", 60'000, "http://10.9.9.9:9/x") + "," +
                        TimerBody("bad", 60'000, receiver.url_for("localhost")) + "]}");
  EXPECT_EQ(b.status, 400) << b.raw;
  EXPECT_EQ(ErrorField(b), "timers[1].target.url");
  EXPECT_EQ(Call(client, "GET", "/v1/timers/denied").status, 404);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/fine").status, 404);  // all or nothing
  EXPECT_EQ(receiver.count(), 0u);
  owner.reset();  // an idle keep-alive connection would delay the drain
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace tickwheel::testing
