// SPDX-License-Identifier: Apache-2.0
// API access of the real `tickwheel serve`: bearer tokens on every /v1
// route (none, wrong, read, admin; the schedules' too), /healthz and
// /metrics, the API over TLS, target header values and URL queries
// redacted unless an admin token asks (timers and schedules), the
// client commands with a token, and the refusal to listen outside loopback
// without tokens.
#include <gtest/gtest.h>

#include <sstream>

#include "server_test_util.h"
#include "support/postgres_server.h"
#include "support/standard_webhooks.h"
#include "support/test_pki.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using server::BlockingHttpClientOptions;

constexpr const char* kAdmin = "admin-token-0123456789abcdef";
constexpr const char* kRead = "read-token-0123456789abcdef";

// One server for the suite: tokens, and the API over HTTPS.
class ServerAccessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    pki_ = new TestPki(dir_->path());
    const CertFiles api = pki_->Issue("api", {"IP:127.0.0.1", "DNS:localhost"});
    WriteFile(dir_->path() + "/tokens",
              std::string("# tokens of the test\nadmin ") + kAdmin + "\nread " + kRead + "\n");
    receiver_ = new WebhookReceiver();
    server_ = new ServerProcess(Binary(), dir_->path() + "/data",
                                {"--auth-token-file", dir_->path() + "/tokens", "--tls-cert",
                                 api.cert, "--tls-key", api.key});
    server_->set_ca_file(pki_->ca_file());
    ASSERT_TRUE(server_->Start());
  }
  // Also after a SetUpTestSuite that stopped half way (its tests then fail:
  // tests/support/test_main.cc).
  static void TearDownTestSuite() {
    if (server_ != nullptr && server_->running()) {
      EXPECT_EQ(server_->Terminate(), 0) << server_->log();
    }
    delete server_;
    server_ = nullptr;
    delete receiver_;
    delete pki_;
    delete dir_;
  }

  static std::unique_ptr<BlockingHttpClient> ClientWith(const std::string& token) {
    BlockingHttpClientOptions options;
    options.bearer_token = token;
    options.ca_file = pki_->ca_file();
    return std::make_unique<BlockingHttpClient>(server_->url(), options);
  }

  static TempDir* dir_;
  static TestPki* pki_;
  static WebhookReceiver* receiver_;
  static ServerProcess* server_;
};
TempDir* ServerAccessTest::dir_;
TestPki* ServerAccessTest::pki_;
WebhookReceiver* ServerAccessTest::receiver_;
ServerProcess* ServerAccessTest::server_;

TEST_F(ServerAccessTest, EveryV1RouteAnswers401WithoutAValidToken403ToAReaderThatWrites) {
  auto admin = ClientWith(kAdmin);
  const std::string url = receiver_->url();
  ASSERT_EQ(Call(*admin, "POST", "/v1/timers", TimerBody("acc-1", 3'600'000, url)).status, 201);
  ASSERT_EQ(Call(*admin, "POST", "/v1/timers", TimerBody("acc-2", 3'600'000, url)).status, 201);
  const std::int64_t fire_at_1 =
      Call(*admin, "GET", "/v1/timers/acc-1").body.at("fire_at_ms").as_int64();
  // Schedules (hourly) deliver to a receiver of this test's own, so their
  // occurrences do not reach the other tests' receiver.
  WebhookReceiver schedule_receiver;
  auto schedule = [&](const std::string& id) {
    return R"({"id":")" + id + R"(","every_ms":3600000,"payload":{"n":1},"target":{"url":")" +
           schedule_receiver.url() + "\"}}";
  };
  ASSERT_EQ(Call(*admin, "POST", "/v1/schedules", schedule("acc-s")).status, 201);
  ASSERT_EQ(Call(*admin, "POST", "/v1/schedules", schedule("acc-s2")).status, 201);
  // Two hourly times, in the past.
  const std::int64_t hour = 3'600'000;
  const std::int64_t backfill_to = WallMs() / hour * hour - hour + 1;
  const std::string backfill = R"({"from_ms":)" + std::to_string(backfill_to - 2 * hour) +
                               R"(,"to_ms":)" + std::to_string(backfill_to) + "}";
  struct Route {
    const char* method;
    std::string path, body;
    bool write;
    int admin_status;  // what an admin token gets
  };
  int n = 0;
  auto fresh = [&] { return TimerBody("acc-new-" + std::to_string(++n), 3'600'000, url); };
  const std::vector<Route> routes = {
      {"GET", "/v1/timers?state=pending", "", false, 200},
      {"POST", "/v1/timers", "", true, 201},
      {"POST", "/v1/timers:batch", "", true, 201},
      {"GET", "/v1/timers/acc-1", "", false, 200},
      {"PATCH", "/v1/timers/acc-1", R"({"delay_ms": 7200000})", true, 200},
      {"DELETE", "/v1/timers/acc-2", "", true, 200},
      {"POST", "/v1/timers/acc-1:retry", "", true, 409},  // not failed
      {"GET", "/v1/schedules", "", false, 200},
      {"POST", "/v1/schedules", "", true, 201},
      {"GET", "/v1/schedules/acc-s", "", false, 200},
      {"PATCH", "/v1/schedules/acc-s", R"({"payload":{"n":2}})", true, 200},
      {"POST", "/v1/schedules/acc-s:pause", "", true, 200},
      {"POST", "/v1/schedules/acc-s:resume", "", true, 200},
      {"POST", "/v1/schedules/acc-s:trigger", "", true, 201},
      {"POST", "/v1/schedules/acc-s:backfill", backfill, true, 200},
      {"DELETE", "/v1/schedules/acc-s2", "", true, 200},
      {"GET", "/v1/whoami", "", false, 200},
      {"GET", "/v1/no-such-route", "", false, 404},
  };
  int schedules = 0;
  auto body_of = [&](const Route& r) {
    if (r.path == "/v1/timers" && r.method == std::string("POST")) return fresh();
    if (r.path == "/v1/timers:batch") return "{\"timers\":[" + fresh() + "]}";
    if (r.path == "/v1/schedules" && r.method == std::string("POST")) {
      return schedule("acc-snew-" + std::to_string(++schedules));
    }
    return r.body;
  };
  auto none = ClientWith("");
  auto wrong = ClientWith(std::string(kAdmin) + "x");
  auto reader = ClientWith(kRead);
  for (const Route& r : routes) {
    const std::string what = std::string(r.method) + " " + r.path;
    server::HttpCallResult c = none->Call(r.method, r.path, body_of(r));
    EXPECT_EQ(c.status, 401) << what << ": " << c.body;
    EXPECT_EQ(c.headers["www-authenticate"], R"(Bearer realm="tickwheel")") << what;
    c = wrong->Call(r.method, r.path, body_of(r));
    EXPECT_EQ(c.status, 401) << what;
    EXPECT_NE(c.headers["www-authenticate"].find(R"(error="invalid_token")"), std::string::npos) << what;
    JsonCall rc = Call(*reader, r.method, r.path, body_of(r));
    if (r.write) {
      EXPECT_EQ(rc.status, 403) << what << ": " << rc.raw;
      EXPECT_EQ(ErrorCode(rc), "forbidden") << what;
    } else {
      EXPECT_EQ(rc.status, r.admin_status) << what << ": " << rc.raw;
    }
  }
  // Nothing the refused requests asked for happened: no timer of the six
  // refused creates (single and batch, without a token, with a wrong one
  // and with the read token), acc-1 not moved, acc-2 not cancelled.
  const JsonCall acc1 = Call(*admin, "GET", "/v1/timers/acc-1");
  EXPECT_EQ(acc1.body.at("fire_at_ms").as_int64(), fire_at_1) << acc1.raw;
  EXPECT_EQ(State(Call(*admin, "GET", "/v1/timers/acc-2")), "pending");
  for (int i = 1; i <= n; ++i) {
    EXPECT_EQ(Call(*admin, "GET", "/v1/timers/acc-new-" + std::to_string(i)).status, 404) << i;
  }
  EXPECT_EQ(n, 6);
  // ... no schedule created, acc-s not changed, paused or triggered (nor
  // backfilled), acc-s2 not deleted.
  for (int i = 1; i <= schedules; ++i) {
    EXPECT_EQ(Call(*admin, "GET", "/v1/schedules/acc-snew-" + std::to_string(i)).status, 404) << i;
  }
  EXPECT_EQ(schedules, 3);
  const JsonCall acc_s = Call(*admin, "GET", "/v1/schedules/acc-s");
  EXPECT_EQ(State(acc_s), "active") << acc_s.raw;
  EXPECT_EQ(acc_s.body.at("payload").at("n").as_int64(), 1) << acc_s.raw;
  EXPECT_EQ(acc_s.body.at("last_occurrences").as_array().size(), 1u) << acc_s.raw;  // the planned one
  EXPECT_EQ(Call(*admin, "GET", "/v1/schedules/acc-s2").status, 200);
  for (const Route& r : routes) {
    JsonCall c = Call(*admin, r.method, r.path, body_of(r));
    EXPECT_EQ(c.status, r.admin_status) << r.method << " " << r.path << ": " << c.raw;
  }
  // The same requests from an admin did take effect.
  EXPECT_EQ(State(Call(*admin, "GET", "/v1/timers/acc-2")), "cancelled");
  EXPECT_GT(Call(*admin, "GET", "/v1/timers/acc-1").body.at("fire_at_ms").as_int64(), fire_at_1);
  EXPECT_EQ(Call(*admin, "GET", "/v1/timers/acc-new-7").status, 200);
  EXPECT_EQ(Call(*admin, "GET", "/v1/timers/acc-new-8").status, 200);
  EXPECT_EQ(Call(*admin, "GET", "/v1/schedules/acc-snew-4").status, 200);
  EXPECT_EQ(Call(*admin, "GET", "/v1/schedules/acc-s2").status, 404);
  EXPECT_EQ(Call(*admin, "GET", "/v1/schedules/acc-s").body.at("payload").at("n").as_int64(), 2);
  // The trigger and the two backfilled times are delivered.
  EXPECT_TRUE(schedule_receiver.WaitFor(3, std::chrono::seconds(30)));
  // Tokens never reach the log.
  const std::string log = server_->log();
  EXPECT_EQ(log.find(kAdmin), std::string::npos);
  EXPECT_EQ(log.find(kRead), std::string::npos);
}

TEST_F(ServerAccessTest, WhoamiSaysTheRoleAndHealthzAndMetricsStayOpen) {
  EXPECT_EQ(Call(*ClientWith(kAdmin), "GET", "/v1/whoami").body.at("role").as_string(), "admin");
  EXPECT_EQ(Call(*ClientWith(kRead), "GET", "/v1/whoami").body.at("role").as_string(), "read");
  auto none = ClientWith("");
  EXPECT_EQ(none->Call("GET", "/v1/whoami").status, 401);
  EXPECT_EQ(Call(*none, "GET", "/healthz").status, 200);
  EXPECT_EQ(none->Call("GET", "/metrics").status, 200);  // no --metrics-auth
  EXPECT_GT(Metric(*none, "tickwheel_http_requests_total{route=\"/v1/whoami\",code=\"401\"}"), 0);
}

TEST_F(ServerAccessTest, TargetHeadersAreSentAndShownOnlyToAnAdminWhoAsks) {
  auto admin = ClientWith(kAdmin);
  auto reader = ClientWith(kRead);
  const std::size_t seen = receiver_->count();
  const std::string body =
      R"({"id":"hdr-1","delay_ms":0,"target":{"url":")" + receiver_->url("/with-headers?key=query-secret") +
      R"(","headers":{"Authorization":"Bearer downstream-secret","X-Trace":"abc"}}})";
  ASSERT_EQ(Call(*admin, "POST", "/v1/timers", body).status, 201);
  ASSERT_TRUE(receiver_->WaitFor(seen + 1, std::chrono::seconds(30)));
  const Delivery d = receiver_->deliveries().back();
  EXPECT_EQ(d.id, "hdr-1");
  EXPECT_EQ(d.headers.at("authorization"), "Bearer downstream-secret");
  EXPECT_EQ(d.headers.at("x-trace"), "abc");
  EXPECT_TRUE(IsMessageIdOf(d.idempotency_key, "hdr-1")) << d.idempotency_key;

  auto header = [](const JsonCall& c) {
    return std::string(c.body.at("target").at("headers").at("Authorization").as_string());
  };
  EXPECT_EQ(header(Call(*admin, "GET", "/v1/timers/hdr-1")), "***");
  EXPECT_EQ(header(Call(*admin, "GET", "/v1/timers/hdr-1?show_headers=true")),
            "Bearer downstream-secret");
  EXPECT_EQ(header(Call(*reader, "GET", "/v1/timers/hdr-1?show_headers=true")), "***");
  // The target URL's query too (it may carry the receiver's key).
  auto url = [](const JsonCall& c) { return std::string(c.body.at("target").at("url").as_string()); };
  EXPECT_EQ(url(Call(*reader, "GET", "/v1/timers/hdr-1?show_headers=true")),
            receiver_->url("/with-headers?***"));
  EXPECT_EQ(url(Call(*admin, "GET", "/v1/timers/hdr-1")), receiver_->url("/with-headers?***"));
  EXPECT_EQ(url(Call(*admin, "GET", "/v1/timers/hdr-1?show_headers=true")),
            receiver_->url("/with-headers?key=query-secret"));
  EXPECT_EQ(Call(*admin, "GET", "/v1/timers/hdr-1?show_headers=maybe").status, 400);
  EXPECT_EQ(Call(*admin, "GET", "/v1/timers/hdr-1?shw_headers=true").status, 400);
  for (int i = 0; i < 3000 && State(Call(*admin, "GET", "/v1/timers/hdr-1")) != "delivered"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string list = "/v1/timers?state=delivered&show_headers=true";
  EXPECT_NE(Call(*admin, "GET", list).raw.find("downstream-secret"), std::string::npos);
  EXPECT_EQ(Call(*reader, "GET", list).raw.find("downstream-secret"), std::string::npos);
  EXPECT_EQ(Call(*reader, "GET", list).raw.find("query-secret"), std::string::npos);
  EXPECT_EQ(Call(*admin, "GET", "/v1/timers?state=delivered").raw.find("downstream-secret"),
            std::string::npos);
  EXPECT_EQ(server_->log().find("downstream-secret"), std::string::npos);
  EXPECT_EQ(server_->log().find("query-secret"), std::string::npos);
}

TEST_F(ServerAccessTest, ScheduleTargetsShowHeadersAndTheUrlQueryOnlyToAnAdminWhoAsks) {
  auto admin = ClientWith(kAdmin);
  auto reader = ClientWith(kRead);
  WebhookReceiver receiver;  // its own: an hourly time may come during the test
  const std::string secret_url = receiver.url("/sched?key=sched-query-secret");
  const std::string body =
      R"({"id":"sec-s","every_ms":3600000,"target":{"url":")" + secret_url +
      R"(","headers":{"Authorization":"Bearer sched-header-secret"}}})";
  const JsonCall created = Call(*admin, "POST", "/v1/schedules", body);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.raw.find("sched-query-secret"), std::string::npos) << created.raw;
  EXPECT_EQ(created.raw.find("sched-header-secret"), std::string::npos) << created.raw;
  auto url = [](const JsonCall& c) { return std::string(c.body.at("target").at("url").as_string()); };
  auto header = [](const JsonCall& c) {
    return std::string(c.body.at("target").at("headers").at("Authorization").as_string());
  };
  const std::string hidden = receiver.url("/sched?***");
  for (const char* path : {"/v1/schedules/sec-s", "/v1/schedules/sec-s?show_headers=true"}) {
    const JsonCall r = Call(*reader, "GET", path);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(url(r), hidden) << path;
    EXPECT_EQ(header(r), "***") << path;
  }
  EXPECT_EQ(url(Call(*admin, "GET", "/v1/schedules/sec-s")), hidden);
  const JsonCall shown = Call(*admin, "GET", "/v1/schedules/sec-s?show_headers=true");
  EXPECT_EQ(url(shown), secret_url);
  EXPECT_EQ(header(shown), "Bearer sched-header-secret");
  // Listings, and the occurrence (a timer) the schedule planned.
  const std::string list = "/v1/schedules?show_headers=true";
  EXPECT_NE(Call(*admin, "GET", list).raw.find("sched-query-secret"), std::string::npos);
  const std::string read_list = Call(*reader, "GET", list).raw;
  EXPECT_EQ(read_list.find("sched-query-secret"), std::string::npos) << read_list;
  EXPECT_EQ(read_list.find("sched-header-secret"), std::string::npos) << read_list;
  const std::string occurrence =
      "/v1/timers/sec-s@" + std::to_string(created.body.at("next_ms").as_int64());
  const JsonCall planned = Call(*reader, "GET", occurrence + "?show_headers=true");
  ASSERT_EQ(planned.status, 200) << planned.raw;
  EXPECT_EQ(url(planned), hidden);
  EXPECT_EQ(Call(*admin, "DELETE", "/v1/schedules/sec-s").status, 200);
  EXPECT_EQ(server_->log().find("sched-query-secret"), std::string::npos);
  EXPECT_EQ(server_->log().find("sched-header-secret"), std::string::npos);
}

TEST_F(ServerAccessTest, ClientCommandsSendTheTokenOverHttps) {
  const std::string token_file = dir_->path() + "/admin-token";
  WriteFile(token_file, std::string(kAdmin) + "\n");
  const std::string server = " --server " + server_->url() + " --ca-file " + pki_->ca_file();
  auto [add_rc, add_out] = RunTickwheel("add --id cli-acc --in 1h --url " + receiver_->url() +
                                        server + " --token-file " + token_file);
  EXPECT_EQ(add_rc, 0) << add_out;
  auto [none_rc, none_out] = RunTickwheel("get cli-acc" + server);
  EXPECT_EQ(none_rc, 4);  // the token was refused (docs/cli.md's exit codes)
  EXPECT_NE(none_out.find("HTTP 401 unauthenticated"), std::string::npos) << none_out;
  // What to do about it, in the CLI's own terms.
  EXPECT_NE(none_out.find("TICKWHEEL_TOKEN"), std::string::npos) << none_out;
  EXPECT_NE(none_out.find("--token-file"), std::string::npos) << none_out;
  auto [read_rc, read_out] =
      RunTickwheel("get cli-acc" + server, std::string("TICKWHEEL_TOKEN=") + kRead);
  EXPECT_EQ(read_rc, 0) << read_out;
  EXPECT_NE(read_out.find("state:      pending"), std::string::npos) << read_out;
  auto [cancel_rc, cancel_out] =
      RunTickwheel("cancel cli-acc" + server, std::string("TICKWHEEL_TOKEN=") + kRead);
  EXPECT_EQ(cancel_rc, 4);
  EXPECT_NE(cancel_out.find("HTTP 403 forbidden"), std::string::npos) << cancel_out;
  EXPECT_NE(cancel_out.find("admin token"), std::string::npos) << cancel_out;
  // Without the CA the server's certificate is not trusted.
  auto [ca_rc, ca_out] = RunTickwheel("get cli-acc --server " + server_->url(),
                                      std::string("TICKWHEEL_TOKEN=") + kRead);
  EXPECT_EQ(ca_rc, 3);  // unreachable
  EXPECT_NE(ca_out.find("TLS handshake"), std::string::npos) << ca_out;
  // Plain HTTP to the HTTPS port gets nothing useful.
  BlockingHttpClient plain(server_->address(), std::chrono::seconds(5));
  EXPECT_NE(plain.Call("GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace tickwheel::testing

namespace tickwheel::testing {
namespace {

TEST(ServeAccessFlagsTest, MetricsAuthProtectsMetricsButNotHealthz) {
  TempDir dir;
  WriteFile(dir.path() + "/tokens", std::string("read ") + kRead + "\n");
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--auth-token-file", dir.path() + "/tokens", "--metrics-auth"});
  ASSERT_TRUE(server.Start());
  {
    BlockingHttpClient none(server.address());
    EXPECT_EQ(none.Call("GET", "/metrics").status, 401);
    EXPECT_EQ(none.Call("GET", "/healthz").status, 200);
    BlockingHttpClient reader(server.address(),
                              BlockingHttpClientOptions{std::chrono::seconds(30), kRead});
    EXPECT_EQ(reader.Call("GET", "/metrics").status, 200);
  }
  EXPECT_EQ(server.Terminate(), 0);
}

// Exactly one line of output, and a non-zero exit.
void ExpectOneLineRefusal(const std::pair<int, std::string>& run, const std::string& says) {
  EXPECT_NE(run.first, 0) << run.second;
  EXPECT_NE(run.second.find(says), std::string::npos) << run.second;
  std::string out = run.second;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_EQ(out.find('\n'), std::string::npos) << "more than one line:\n" << run.second;
}

TEST(ServeAccessFlagsTest, RefusesToListenOutsideLoopbackWithoutTokensOrWithBadFiles) {
  TempDir dir;
  const std::string base = "serve --data-dir " + dir.path() + "/data --listen ";
  const std::string any = "0.0.0.0:" + std::to_string(FreePort());
  ExpectOneLineRefusal(RunTickwheel(base + any), "without --auth-token-file");
  WriteFile(dir.path() + "/bad-tokens", "admin short\n");
  ExpectOneLineRefusal(RunTickwheel(base + any + " --auth-token-file " + dir.path() + "/bad-tokens"),
                       "line 1");
  WriteFile(dir.path() + "/bad-secrets", "whsec_notbase64!!\n");
  ExpectOneLineRefusal(RunTickwheel(base + "127.0.0.1:" + std::to_string(FreePort()) +
                                    " --webhook-secret-file " + dir.path() + "/bad-secrets"),
                       "--webhook-secret-file");
  ExpectOneLineRefusal(RunTickwheel(base + "127.0.0.1:" + std::to_string(FreePort()) +
                                    " --target-deny 10.0.0.0/40"),
                       "--target-deny");
  ExpectOneLineRefusal(RunTickwheel(base + "127.0.0.1:" + std::to_string(FreePort()) +
                                    " --metrics-auth"),
                       "--metrics-auth needs --auth-token-file");
  // With --allow-unauthenticated it listens on every address.
  ServerProcess open(Binary(), dir.path() + "/open", {"--allow-unauthenticated"});
  open.set_listen_host("0.0.0.0");
  ASSERT_TRUE(open.Start());
  {
    BlockingHttpClient client(open.address());
    EXPECT_EQ(Call(client, "GET", "/v1/whoami").body.at("role").as_string(), "anonymous");
  }
  EXPECT_NE(open.log().find("no --auth-token-file"), std::string::npos) << open.log();
  EXPECT_EQ(open.Terminate(), 0);
}

}  // namespace
}  // namespace tickwheel::testing

namespace tickwheel::testing {
namespace {

// The same access rules, signatures and SSRF guard on a cluster node (the
// store is PostgreSQL; none of this depends on it), and the password of
// --postgres kept out of the log.
TEST(ClusterAccessTest, TokensSignaturesAndTheSsrfGuardHoldOnAClusterNode) {
  TempDir dir;
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  WriteFile(dir.path() + "/tokens", std::string("admin ") + kAdmin + "\nread " + kRead + "\n");
  WriteFile(dir.path() + "/secrets", secret + "\n");
  // Trust authentication: the password is not checked, only carried.
  std::string url = postgres.url();
  url.replace(url.find("postgres@"), 9, "postgres:hunter2-not-logged@");
  WebhookReceiver receiver;
  ServerProcess node(Binary(), dir.path() + "/node",
                     {"--postgres", url, "--node-id", "n1", "--shards", "8", "--lease", "2s",
                      "--auth-token-file", dir.path() + "/tokens", "--webhook-secret-file",
                      dir.path() + "/secrets", "--target-deny", "10.0.0.0/8"});
  ASSERT_TRUE(node.Start());
  {
    BlockingHttpClient admin(node.address(), BlockingHttpClientOptions{std::chrono::seconds(30), kAdmin});
    BlockingHttpClient reader(node.address(), BlockingHttpClientOptions{std::chrono::seconds(30), kRead});
    BlockingHttpClient none(node.address());
    EXPECT_EQ(none.Call("GET", "/v1/timers/x").status, 401);
    EXPECT_EQ(reader.Call("POST", "/v1/timers", TimerBody("c-1", 0, receiver.url())).status, 403);
    EXPECT_EQ(ErrorCode(Call(admin, "POST", "/v1/timers", TimerBody("c-2", 0, "http://10.1.1.1/x"))),
              "target_denied");
    JsonCall created = Call(admin, "POST", "/v1/timers", TimerBody("c-1", 0, receiver.url()));
    ASSERT_EQ(created.status, 201) << created.raw;
    ASSERT_TRUE(receiver.WaitFor(1, std::chrono::seconds(30)));
    const Delivery d = receiver.deliveries().front();
    EXPECT_EQ(d.id, "c-1");
    std::string why;
    EXPECT_TRUE(VerifyStandardWebhook(secret, d.headers, d.body, &why)) << why;
    EXPECT_EQ(Call(reader, "GET", "/v1/whoami").body.at("role").as_string(), "read");
  }
  EXPECT_EQ(node.log().find("hunter2-not-logged"), std::string::npos) << node.log();
  EXPECT_EQ(node.Terminate(), 0) << node.log();
}

}  // namespace
}  // namespace tickwheel::testing
