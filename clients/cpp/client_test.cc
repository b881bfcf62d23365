// SPDX-License-Identifier: Apache-2.0
// The C++ client (tickwheel/client.h, tickwheel/webhook.h) against real
// `tickwheel serve` processes that clients/testdata/run_with_server.py
// starts (ctest -R cpp_client_test): tokens on, deliveries signed with two
// secrets, one server over HTTPS with a test CA and --max-connections 1.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "support/webhook_receiver.h"
#include "tickwheel/client.h"
#include "tickwheel/webhook.h"

namespace tickwheel::client {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    ADD_FAILURE() << name << " is not set: run through clients/testdata/run_with_server.py "
                             "(ctest -R cpp_client_test)";
    return "";
  }
  return v;
}

std::vector<std::string> Secrets() {
  std::istringstream in(Env("TICKWHEEL_TEST_WEBHOOK_SECRETS"));
  std::vector<std::string> out;
  for (std::string s; in >> s;) out.push_back(s);
  return out;
}

// Polls `predicate` until it holds; false after 30 s.
bool WaitUntil(const std::function<bool()>& predicate) {
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

ClientOptions Admin(std::string server = Env("TICKWHEEL_TEST_SERVER")) {
  ClientOptions o;
  o.server = std::move(server);
  o.token = Env("TICKWHEEL_TEST_ADMIN_TOKEN");
  return o;
}

json::object Url(const std::string& url) { return json::object{{"url", url}}; }

class CppClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    receiver_ = new testing::WebhookReceiver();
    receiver_->SetPolicy(
        [](const testing::Delivery& d) { return d.path.rfind("/fail", 0) == 0 ? 500 : 200; });
  }
  static void TearDownTestSuite() {
    delete receiver_;
    receiver_ = nullptr;
  }
  std::string url(const std::string& path = "/hook") { return receiver_->url(path); }

  static testing::WebhookReceiver* receiver_;
  Client client_{Admin()};
};
testing::WebhookReceiver* CppClientTest::receiver_ = nullptr;

TEST_F(CppClientTest, CreatesGetsReschedulesAndCancels) {
  json::object t = client_.Create({.target = Url(url()), .delay_ms = 600000, .id = "cpp-1",
                                   .payload = json::value{{"order", 42}}});
  EXPECT_EQ(t.at("id"), "cpp-1");
  EXPECT_EQ(t.at("state"), "pending");
  json::object got = client_.Get("cpp-1");
  EXPECT_EQ(got.at("payload"), (json::value{{"order", 42}}));
  const std::int64_t fire_at = got.at("fire_at_ms").to_number<std::int64_t>();
  json::object later = client_.Reschedule("cpp-1", std::nullopt, fire_at + 1000);
  EXPECT_EQ(later.at("fire_at_ms").to_number<std::int64_t>(), fire_at + 1000);
  EXPECT_EQ(client_.Cancel("cpp-1").at("state"), "cancelled");
  EXPECT_EQ(client_.Get("cpp-1").at("state"), "cancelled");
}

TEST_F(CppClientTest, ACreateWithoutIdGetsOneAndRepeatsSafely) {
  json::object t = client_.Create({.target = Url(url()), .delay_ms = 600000});
  const std::string id(t.at("id").as_string());
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  json::object again = client_.Create({.target = Url(url()), .delay_ms = 600000, .id = id});
  EXPECT_EQ(again.at("created_ms"), t.at("created_ms"));  // 200: the same timer
}

TEST_F(CppClientTest, ErrorsAreTypedAndCarryTheServersCode) {
  try {
    client_.Create({.target = Url(url()), .delay_ms = -5});
    ADD_FAILURE() << "a negative delay was accepted";
  } catch (const BadRequestError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "negative_delay");
    EXPECT_EQ(e.field(), "delay_ms");
  }
  try {
    client_.Get("cpp-no-such-timer");
    ADD_FAILURE() << "found a timer that does not exist";
  } catch (const NotFoundError& e) {
    EXPECT_EQ(e.code(), "not_found");
  }
  client_.Create({.target = Url(url()), .delay_ms = 600000, .id = "cpp-conflict"});
  try {
    client_.Create(
        {.target = Url(url()), .delay_ms = 600000, .id = "cpp-conflict", .payload = json::value(1)});
    ADD_FAILURE() << "another body under the same id was accepted";
  } catch (const ConflictError& e) {
    EXPECT_EQ(e.code(), "id_conflict");
  }
  client_.Cancel("cpp-conflict");
  try {
    client_.Reschedule("cpp-conflict", 1);
    ADD_FAILURE() << "a cancelled timer was rescheduled";
  } catch (const Error& e) {  // the base class catches every kind
    EXPECT_NE(dynamic_cast<const ConflictError*>(&e), nullptr);
    EXPECT_EQ(e.code(), "not_pending");
  }
  try {
    client_.Get("a b/c");  // sent percent-encoded: the server's check answers
    ADD_FAILURE() << "an id with a space and a slash was accepted";
  } catch (const BadRequestError& e) {
    EXPECT_EQ(e.code(), "invalid_id");
  }
}

TEST_F(CppClientTest, ABatchIsAllOrNothing) {
  json::array created = client_.CreateBatch({
      {.target = Url(url()), .delay_ms = 600000, .id = "cpp-b1"},
      {.target = Url(url()), .delay_ms = 600000},
  });
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].at("id"), "cpp-b1");
  EXPECT_EQ(created[0].at("created"), true);
  EXPECT_EQ(created[1].at("created"), true);
  EXPECT_THROW(client_.CreateBatch({{.target = Url(url()), .delay_ms = 1, .id = "cpp-b2"},
                                    {.target = Url(url()), .delay_ms = 1, .id = "cpp-b1"}}),
               ConflictError);
  EXPECT_THROW(client_.Get("cpp-b2"), NotFoundError);
}

TEST_F(CppClientTest, ListAllFollowsEveryPage) {
  std::set<std::string> ids;
  for (int i = 0; i < 7; ++i) {
    ids.insert("cpp-list-" + std::to_string(i));
    client_.Create({.target = Url(url()), .delay_ms = 600000, .id = "cpp-list-" + std::to_string(i)});
  }
  std::set<std::string> listed;
  for (const json::object& t : client_.ListAll("pending", {.limit = 2, .prefix = "cpp-list-"})) {
    EXPECT_TRUE(listed.insert(std::string(t.at("id").as_string())).second) << "listed twice";
  }
  EXPECT_EQ(listed, ids);
  json::object page = client_.ListPage("pending", {.limit = 2, .prefix = "cpp-list-"});
  EXPECT_EQ(page.at("timers").as_array().size(), 2u);
  EXPECT_TRUE(page.contains("next_after"));
}

TEST_F(CppClientTest, DeadLettersAreRetriedAndDeletedInBulk) {
  for (int i = 0; i < 3; ++i) {
    client_.Create({.target = Url(url("/fail-" + std::to_string(i))), .delay_ms = 0,
                    .id = "cpp-dead-" + std::to_string(i),
                    .retry = json::object{{"max_attempts", 1}, {"backoff_ms", 1}}});
  }
  auto failed = [&](const std::string& id) {
    return [this, id] { return client_.Get(id).at("state") == "failed"; };
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(WaitUntil(failed("cpp-dead-" + std::to_string(i))));
  EXPECT_EQ(client_.Retry("cpp-dead-0").at("state"), "pending");
  ASSERT_TRUE(WaitUntil(failed("cpp-dead-0")));
  json::object dry = client_.DeleteFailed({.prefix = "cpp-dead-", .dry_run = true});
  EXPECT_EQ(dry.at("matched"), 3);
  EXPECT_EQ(dry.at("done"), 0);
  EXPECT_EQ(client_.RetryAllFailed({.prefix = "cpp-dead-2"}), 1);
  ASSERT_TRUE(WaitUntil(failed("cpp-dead-2")));
  EXPECT_EQ(client_.DeleteAllFailed({.prefix = "cpp-dead-"}), 3);
  EXPECT_THROW(client_.Get("cpp-dead-1"), NotFoundError);
  try {
    client_.DeleteFailed({});
    ADD_FAILURE() << "a bulk delete without a filter was accepted";
  } catch (const BadRequestError& e) {
    EXPECT_EQ(e.field(), "all");
  }
}

TEST_F(CppClientTest, TheServersCountsAndIdentity) {
  EXPECT_EQ(client_.Stats().at("store").at("kind"), "rocksdb");
  EXPECT_EQ(client_.Whoami(), (json::object{{"role", "admin"}}));
  EXPECT_EQ(client_.Health().at("status"), "ok");
  // Any other route through CallJson.
  EXPECT_EQ(client_.CallJson("GET", "/v1/openapi.json").at("openapi"), "3.1.0");
}

TEST_F(CppClientTest, TheTokenComesFromTheEnvironment) {
  ClientOptions from_env;
  from_env.server = Env("TICKWHEEL_TEST_SERVER");
  ASSERT_EQ(setenv("TICKWHEEL_TOKEN", Env("TICKWHEEL_TEST_READ_TOKEN").c_str(), 1), 0);
  Client reader(from_env);
  unsetenv("TICKWHEEL_TOKEN");
  EXPECT_EQ(reader.Whoami(), (json::object{{"role", "read"}}));
  try {
    reader.Create({.target = Url(url()), .delay_ms = 1});
    ADD_FAILURE() << "a read token created a timer";
  } catch (const ForbiddenError& e) {
    EXPECT_EQ(e.code(), "forbidden");
  }
  Client nobody(from_env);  // no TICKWHEEL_TOKEN now
  try {
    nobody.Whoami();
    ADD_FAILURE() << "no token was let in";
  } catch (const UnauthorizedError& e) {
    EXPECT_EQ(e.code(), "unauthenticated");
  }
}

TEST_F(CppClientTest, TheAwaitableClientMakesTheSameCalls) {
  asio::io_context io;
  std::string state_after_cancel, error_code;
  json::value payload;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        AsyncClient c(co_await asio::this_coro::executor, Admin());
        // Arguments made before each co_await (GCC 12: client.h).
        CreateTimer create{.target = Url(url()), .delay_ms = 600000,
                           .payload = json::value("async")};
        json::object t = co_await c.Create(std::move(create));
        const std::string id(t.at("id").as_string());
        json::object got = co_await c.Get(id);
        payload = got.at("payload");
        json::object cancelled = co_await c.Cancel(id);
        state_after_cancel = std::string(cancelled.at("state").as_string());
        try {
          co_await c.Get("cpp-async-missing");
        } catch (const NotFoundError& e) {
          error_code = e.code();
        }
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  EXPECT_EQ(payload, "async");
  EXPECT_EQ(state_after_cancel, "cancelled");
  EXPECT_EQ(error_code, "not_found");
}

TEST_F(CppClientTest, ADeliveryVerifiesWithTheServersSecrets) {
  client_.Create({.target = Url(url("/signed")), .delay_ms = 0, .id = "cpp-signed",
                  .payload = json::value{{"n", 1}}});
  ASSERT_TRUE(WaitUntil([] {
    for (const testing::Delivery& d : receiver_->deliveries()) {
      if (d.path == "/signed") return true;
    }
    return false;
  }));
  testing::Delivery signed_one;
  for (const testing::Delivery& d : receiver_->deliveries()) {
    if (d.path == "/signed") signed_one = d;
  }
  const std::vector<std::string> secrets = Secrets();
  ASSERT_EQ(secrets.size(), 2u);
  json::value delivery = VerifyWebhook(secrets, signed_one.headers, signed_one.body);
  EXPECT_EQ(delivery.at("id"), "cpp-signed");
  EXPECT_EQ(delivery.at("payload"), (json::value{{"n", 1}}));
  EXPECT_EQ(delivery.at("attempt"), 1);
  // Either secret alone (a rotation).
  EXPECT_EQ(VerifyWebhook({secrets[1]}, signed_one.headers, signed_one.body).at("id"), "cpp-signed");
  std::string forged = signed_one.body;
  const std::size_t n = forged.find("\"n\":1");
  ASSERT_NE(n, std::string::npos) << forged;
  forged.replace(n, 5, "\"n\":2");
  try {
    VerifyWebhook({secrets[0]}, signed_one.headers, forged);
    ADD_FAILURE() << "a changed body verified";
  } catch (const WebhookVerificationError& e) {
    EXPECT_EQ(e.reason(), WebhookVerificationError::Reason::kSignature);
  }
  try {
    VerifyWebhook(secrets, signed_one.headers, signed_one.body, kDefaultWebhookTolerance,
                  std::chrono::system_clock::now() + 600s);
    ADD_FAILURE() << "a delivery 10 minutes old verified";
  } catch (const WebhookVerificationError& e) {
    EXPECT_EQ(e.reason(), WebhookVerificationError::Reason::kTimestamp);
  }
}

TEST(CppWebhookVectorsTest, TheStandardWebhooksCasesVerifyAsPublished) {
  std::ifstream in(Env("TICKWHEEL_TEST_VECTORS"));
  ASSERT_TRUE(in) << "cannot read the vectors";
  std::stringstream text;
  text << in.rdbuf();
  json::value vectors = json::parse(text.str());
  const auto tolerance = std::chrono::seconds(vectors.at("tolerance_seconds").to_number<int>());
  const json::array& cases = vectors.at("cases").as_array();
  ASSERT_GE(cases.size(), 5u);
  for (const json::value& c : cases) {
    SCOPED_TRACE(std::string(c.at("name").as_string()));
    std::vector<std::string> secrets;
    for (const json::value& s : c.at("secrets").as_array()) secrets.emplace_back(s.as_string());
    std::map<std::string, std::string> headers;
    for (const auto& [k, v] : c.at("headers").as_object()) headers[k] = std::string(v.as_string());
    const std::string body(c.at("body").as_string());
    const auto now = std::chrono::system_clock::time_point(
        std::chrono::seconds(c.at("now").to_number<std::int64_t>()));
    if (c.at("valid").as_bool()) {
      EXPECT_NO_THROW(VerifyWebhook(secrets, headers, body, tolerance, now));
      continue;
    }
    const std::string reason(c.at("reason").as_string());
    try {
      VerifyWebhook(secrets, headers, body, tolerance, now);
      ADD_FAILURE() << "verified; expected " << reason;
    } catch (const WebhookVerificationError& e) {
      const char* got = e.reason() == WebhookVerificationError::Reason::kMissing     ? "missing"
                        : e.reason() == WebhookVerificationError::Reason::kTimestamp ? "timestamp"
                                                                                      : "signature";
      EXPECT_EQ(got, reason) << e.what();
    }
  }
}

// What the client sends against docs/openapi.json: a request with every
// field of CreateTimer and DeadLetterFilter set, sent to a receiver that
// records it, has exactly the keys of the description's schema of that
// body (a field the description has and the client lacks fails).
TEST(CppClientShapesTest, RequestBodiesHaveEveryFieldOfTheDescription) {
  std::ifstream in(Env("TICKWHEEL_TEST_OPENAPI"));
  ASSERT_TRUE(in) << "cannot read docs/openapi.json";
  std::stringstream text;
  text << in.rdbuf();
  const json::value schemas = json::parse(text.str()).at("components").at("schemas");
  auto keys_of_schema = [&](const char* name) {
    std::set<std::string> keys;
    for (const auto& [k, v] : schemas.at(name).at("properties").as_object()) keys.emplace(k);
    return keys;
  };
  testing::WebhookReceiver recorder;  // answers 200 with no body: not a timer
  ClientOptions o;
  o.server = "http://127.0.0.1:" + std::to_string(recorder.port());
  o.token = "";
  o.retries = 0;
  Client c(o);
  EXPECT_THROW(c.Create({.target = Url("http://127.0.0.1:9/x"), .delay_ms = 1, .fire_at_ms = 2,
                         .id = "shape", .payload = json::value(1),
                         .retry = json::object{{"max_attempts", 1}}, .flow = "f",
                         .traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
               ServerError);
  EXPECT_THROW(c.RetryFailed({.prefix = "p", .host = "h", .all = true, .dry_run = true,
                              .failed_before_ms = 5}),
               ServerError);
  EXPECT_THROW(c.CreateBatch({{.target = Url("http://127.0.0.1:9/x"), .delay_ms = 1}}), ServerError);
  ASSERT_TRUE(recorder.WaitFor(3, 30s));
  std::map<std::string, testing::Delivery> by_path;
  for (const testing::Delivery& d : recorder.deliveries()) by_path[d.path] = d;
  auto keys_sent = [&](const std::string& path) {
    std::set<std::string> keys;
    const json::value body = json::parse(by_path.at(path).body);
    for (const auto& [k, v] : body.as_object()) keys.emplace(k);
    return keys;
  };
  EXPECT_EQ(keys_sent("/v1/timers"), keys_of_schema("CreateTimer"));
  EXPECT_EQ(by_path.at("/v1/timers").headers.at("traceparent"),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  EXPECT_EQ(keys_sent("/v1/timers:retry-failed"), keys_of_schema("DeadLetterFilter"));
  EXPECT_EQ(keys_sent("/v1/timers:batch"), keys_of_schema("CreateTimers"));
}

// The HTTPS server: --max-connections 1, a test CA.
class CppTlsClientTest : public ::testing::Test {
 protected:
  ClientOptions Tls() {
    ClientOptions o = Admin(Env("TICKWHEEL_TEST_TLS_SERVER"));
    o.ca_file = Env("TICKWHEEL_TEST_CA_FILE");
    return o;
  }
};

TEST_F(CppTlsClientTest, HttpsWithAPrivateCa) {
  {
    Client c(Tls());
    EXPECT_EQ(c.Whoami(), (json::object{{"role", "admin"}}));
    json::object t =
        c.Create({.target = Url("http://127.0.0.1:9/never"), .delay_ms = 600000, .id = "cpp-tls"});
    EXPECT_EQ(c.Get("cpp-tls").at("id"), t.at("id"));
  }
  ClientOptions untrusted = Tls();
  untrusted.ca_file.clear();
  untrusted.retries = 3;
  int retried = 0;
  untrusted.on_retry = [&](int, const Error&) { ++retried; };
  try {
    Client(untrusted).Whoami();
    ADD_FAILURE() << "a certificate of an unknown CA was trusted";
  } catch (const UnavailableError& e) {
    EXPECT_EQ(e.status(), 0);
    EXPECT_EQ(e.code(), "connection");
    EXPECT_NE(e.message().find("TLS handshake"), std::string::npos) << e.message();
  }
  EXPECT_EQ(retried, 0);  // an untrusted certificate is not tried again
}

TEST_F(CppTlsClientTest, A503IsRetriedWithTheSameId) {
  std::int64_t before = 0;
  {
    Client c(Tls());
    before = c.Stats().at("counts").at("pending").to_number<std::int64_t>();
  }  // its connection closed: the server's one connection is free
  // Hold the only connection, until the server answers another 503.
  const std::string url = Env("TICKWHEEL_TEST_TLS_SERVER");
  const std::string host_port = url.substr(url.find("://") + 3);
  const std::size_t colon = host_port.rfind(':');
  asio::io_context io;
  asio::ip::tcp::socket held(io);
  held.connect({asio::ip::make_address(host_port.substr(0, colon)),
                static_cast<unsigned short>(std::stoi(host_port.substr(colon + 1)))});
  ClientOptions probe_options = Tls();
  probe_options.retries = 0;
  ASSERT_TRUE(WaitUntil([&] {
    try {
      Client(probe_options).Whoami();
    } catch (const UnavailableError& e) {
      return e.status() == 503;
    } catch (const Error&) {
    }
    return false;
  })) << "the server did not count the held connection";

  std::vector<std::pair<int, std::string>> refusals;
  ClientOptions o = Tls();
  o.retries = 3;
  o.on_retry = [&](int attempt, const Error& e) {
    refusals.emplace_back(attempt, std::to_string(e.status()) + " " + e.code());
    boost::system::error_code ec;
    held.close(ec);  // the next attempt finds the server free
  };
  Client c(o);
  json::object t = c.Create(
      {.target = Url("http://127.0.0.1:9/never"), .delay_ms = 600000, .payload = json::value("x")});
  ASSERT_FALSE(refusals.empty());
  EXPECT_EQ(refusals[0], (std::pair<int, std::string>(1, "503 overloaded")));
  EXPECT_EQ(c.Get(std::string(t.at("id").as_string())).at("payload"), "x");
  EXPECT_EQ(c.Stats().at("counts").at("pending").to_number<std::int64_t>(), before + 1);
}

}  // namespace
}  // namespace tickwheel::client
