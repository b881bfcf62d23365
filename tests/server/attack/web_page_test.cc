// SPDX-License-Identifier: Apache-2.0
// A web page the developer visits must not be able to drive a local
// tickwheel (docs/server.md's "Threat model"): cross-origin requests, DNS
// rebinding, text/plain and form bodies. Each test failed on the build
// before its fix.
#include <gtest/gtest.h>
#include <cstdio>
#include <tuple>

#include "attack/attack_util.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;

// A request as a browser sends it: `headers` each end in \r\n.
std::string BrowserRequest(const std::string& method, const std::string& target,
                           const std::string& host, const std::string& headers,
                           const std::string& body = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// ---------------------------------------------------------------------------
// A web page must not be able to drive a local tickwheel (`make run`:
// loopback, no tokens).

class WebPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(Binary(), dir_.path() + "/data",
                                              std::vector<std::string>{"--ui"});
    ASSERT_TRUE(server_->Start());
    host_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { EXPECT_EQ(server_->Terminate(), 0) << server_->log(); }

  double Created() {
    BlockingHttpClient client(server_->address());
    return Metric(client, "tickwheel_timers_created_total");
  }

  TempDir dir_;
  WebhookReceiver receiver_;
  std::unique_ptr<ServerProcess> server_;
  std::string host_;
};

TEST_F(WebPageTest, BodiesThatAreNotJsonAre415AndNothingIsStored) {
  const std::string body = TimerBody("page-1", 60'000, receiver_.url());
  // What a page can send to any origin without asking (a "simple"
  // request), and what curl -d sends.
  for (const std::string type :
       {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", ""}) {
    const std::string headers = type.empty() ? "" : "Content-Type: " + type + "\r\n";
    const std::string answer = Send(server_->port(), BrowserRequest("POST", "/v1/timers", host_, headers, body));
    EXPECT_EQ(RawConnection::StatusOf(answer), 415) << type << ": " << answer;
    EXPECT_NE(answer.find("unsupported_media_type"), std::string::npos) << answer;
  }
  // A schedule's create too (every route with a body is checked alike).
  const std::string schedule = R"({"id":"page-s","every_ms":60000,"target":{"url":")" +
                               receiver_.url() + R"("}})";
  const std::string refused = Send(server_->port(),
                                   BrowserRequest("POST", "/v1/schedules", host_,
                                                  "Content-Type: text/plain\r\n", schedule));
  EXPECT_EQ(RawConnection::StatusOf(refused), 415) << refused;
  // The same with the JSON type is created, with parameters too.
  const std::string ok = Send(server_->port(),
                              BrowserRequest("POST", "/v1/timers", host_,
                                             "Content-Type: Application/JSON; charset=utf-8\r\n", body));
  EXPECT_EQ(RawConnection::StatusOf(ok), 201) << ok;
  EXPECT_EQ(Created(), 1);
}

TEST_F(WebPageTest, CrossOriginAndNoCorsRequestsAreRefusedBeforeTheyAct) {
  // A dead letter a page would like to delete.
  BlockingHttpClient client(server_->address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers",
                 TimerBody("dead", 0, "http://127.0.0.1:1/x", R"("retry":{"max_attempts":1})"))
                .status,
            201);
  bool failed = false;
  for (int i = 0; i < 500 && !failed; ++i) {
    failed = State(Call(client, "GET", "/v1/timers/dead")) == "failed";
    if (!failed) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(failed);
  const std::string page = "Origin: https://evil.example\r\nSec-Fetch-Site: cross-site\r\n";
  // fetch(url, {method: 'POST', mode: 'no-cors', body: '...'}): text/plain.
  std::string answer = Send(server_->port(),
                            BrowserRequest("POST", "/v1/timers:delete-failed", host_,
                                           page + "Sec-Fetch-Mode: no-cors\r\nContent-Type: text/plain;charset=UTF-8\r\n",
                                           "{}"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  EXPECT_NE(answer.find("origin_not_allowed"), std::string::npos) << answer;
  // Without a body (nothing for the Content-Type check to see).
  answer = Send(server_->port(), BrowserRequest("POST", "/v1/timers:delete-failed", host_,
                                                page + "Sec-Fetch-Mode: no-cors\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  // A form post, and a JSON one as a CORS request would be.
  answer = Send(server_->port(),
                BrowserRequest("POST", "/v1/timers", host_,
                               page + "Content-Type: application/x-www-form-urlencoded\r\n",
                               TimerBody("evil", 0, "http://127.0.0.1:22/")));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  answer = Send(server_->port(),
                BrowserRequest("POST", "/v1/timers", host_, page + "Content-Type: application/json\r\n",
                               TimerBody("evil", 0, "http://127.0.0.1:22/")));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  // A page's <img src> GET: no Origin, but the browser says cross-site.
  answer = Send(server_->port(), BrowserRequest("GET", "/v1/timers?state=failed", host_,
                                                "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  // "Origin: null" (a sandboxed frame, a file:// page) is no origin of the server.
  answer = Send(server_->port(), BrowserRequest("GET", "/v1/timers?state=failed", host_, "Origin: null\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  // Nothing happened.
  EXPECT_EQ(State(Call(client, "GET", "/v1/timers/dead")), "failed");
  EXPECT_EQ(Call(client, "GET", "/v1/timers/evil").status, 404);
  EXPECT_EQ(Created(), 1);
}

TEST_F(WebPageTest, AHostThatDoesNotNameTheServerIs421DnsRebinding) {
  BlockingHttpClient client(server_->address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers",
                 TimerBody("secret", 60'000, "http://127.0.0.1:9/k?key=s3cret"))
                .status,
            201);
  // The page's own name, rebound to 127.0.0.1: its fetches are same-origin
  // to the browser (no Origin on a GET), but Host is the page's name.
  const std::string rebound = "rebind.evil.example:" + std::to_string(server_->port());
  for (const std::string target : {"/v1/timers?state=pending", "/v1/timers/secret", "/metrics", "/ui/"}) {
    const std::string answer = Send(server_->port(), BrowserRequest("GET", target, rebound, ""));
    EXPECT_EQ(RawConnection::StatusOf(answer), 421) << target << ": " << answer;
    EXPECT_NE(answer.find("misdirected_request"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("s3cret"), std::string::npos) << answer;
  }
  const std::string post = Send(server_->port(),
                                BrowserRequest("POST", "/v1/timers", rebound,
                                               "Origin: http://" + rebound + "\r\nContent-Type: application/json\r\n",
                                               TimerBody("rebound", 0, "http://127.0.0.1:22/")));
  EXPECT_EQ(RawConnection::StatusOf(post), 421) << post;
  EXPECT_EQ(Call(client, "GET", "/v1/timers/rebound").status, 404);
  // /healthz answers whatever the Host (load balancers' probes).
  EXPECT_EQ(RawConnection::StatusOf(Send(server_->port(), BrowserRequest("GET", "/healthz", rebound, ""))), 200);
}

// /v1/openapi.json needs no token, but a page may not read it through a
// rebound name or from another origin: the guard checks it like any route.
// Its ETag revalidates (304, no body).
TEST_F(WebPageTest, TheApiDescriptionIsGuardedLikeEveryRouteAndRevalidates) {
  const std::string first = Send(server_->port(), BrowserRequest("GET", "/v1/openapi.json", host_, ""));
  ASSERT_EQ(RawConnection::StatusOf(first), 200) << first.substr(0, 400);
  EXPECT_NE(first.find("\"openapi\": \"3.1.0\""), std::string::npos);
  const std::size_t at = first.find("ETag: ");
  ASSERT_NE(at, std::string::npos) << first.substr(0, 400);
  const std::string etag = first.substr(at + 6, first.find("\r\n", at) - at - 6);
  const std::string again = Send(server_->port(), BrowserRequest("GET", "/v1/openapi.json", host_,
                                                                 "If-None-Match: " + etag + "\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(again), 304) << again;
  EXPECT_EQ(again.find("openapi"), std::string::npos) << again;
  const std::string rebound = "rebind.evil.example:" + std::to_string(server_->port());
  const std::string misdirected = Send(server_->port(), BrowserRequest("GET", "/v1/openapi.json", rebound, ""));
  EXPECT_EQ(RawConnection::StatusOf(misdirected), 421) << misdirected;
  const std::string cross = Send(server_->port(), BrowserRequest("GET", "/v1/openapi.json", host_,
                                                                 "Origin: https://evil.example\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(cross), 403) << cross;
  EXPECT_NE(cross.find("origin_not_allowed"), std::string::npos) << cross;
}

TEST_F(WebPageTest, TheConsoleTheCliAndLocalhostStillWork) {
  // The console: its page, then its fetches (same origin, JSON bodies).
  const std::string same = "Origin: http://" + host_ + "\r\nSec-Fetch-Site: same-origin\r\n";
  EXPECT_EQ(RawConnection::StatusOf(Send(server_->port(), BrowserRequest("GET", "/ui/", host_, "Sec-Fetch-Site: none\r\n"))), 200);
  std::string answer = Send(server_->port(),
                            BrowserRequest("POST", "/v1/timers", host_, same + "Content-Type: application/json\r\n",
                                           TimerBody("console-1", 60'000, receiver_.url())));
  EXPECT_EQ(RawConnection::StatusOf(answer), 201) << answer;
  answer = Send(server_->port(), BrowserRequest("DELETE", "/v1/timers/console-1", host_, same));
  EXPECT_EQ(RawConnection::StatusOf(answer), 200) << answer;
  answer = Send(server_->port(), BrowserRequest("GET", "/v1/timers?state=cancelled", host_, same));
  EXPECT_EQ(RawConnection::StatusOf(answer), 200) << answer;
  // http://localhost:PORT in the address bar.
  const std::string local = "localhost:" + std::to_string(server_->port());
  answer = Send(server_->port(),
                BrowserRequest("POST", "/v1/timers", local,
                               "Origin: http://" + local + "\r\nContent-Type: application/json\r\n",
                               TimerBody("console-2", 60'000, receiver_.url())));
  EXPECT_EQ(RawConnection::StatusOf(answer), 201) << answer;
  // The CLI.
  auto [status, out] = RunTickwheel("add --server " + server_->address() + " --id cli-1 --in 60s --url " +
                                    receiver_.url() + " --payload '{\"a\":1}'");
  EXPECT_EQ(status, 0) << out;
  std::tie(status, out) = RunTickwheel("ls --server " + server_->address() + " --state pending");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("cli-1"), std::string::npos) << out;
  std::tie(status, out) = RunTickwheel("cancel --server " + server_->address() + " cli-1");
  EXPECT_EQ(status, 0) << out;
}

// The same refusals with curl sending what a browser would: its status
// code and body for `args` (shell words) against this server.
std::pair<int, std::string> Curl(const std::string& args) {
  const std::string cmd = "curl -s -S --max-time 10 -w '\\n%{http_code}' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {0, "popen failed"};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  const std::size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return {0, out};
  return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
}

TEST_F(WebPageTest, CurlSentAsABrowserWouldIsRefusedAndTheConsoleAndCliStillWork) {
  const std::string base = "http://" + host_;
  const std::string port = std::to_string(server_->port());
  const std::string body = "'" + TimerBody("curl-evil", 0, "http://127.0.0.1:22/") + "' ";
  const std::string cross = "-H 'Origin: https://evil.example' -H 'Sec-Fetch-Site: cross-site' ";
  struct Case {
    std::string what, args, code;
    int status;
  };
  for (const Case& c : std::vector<Case>{
           {"foreign Host (DNS rebinding)", "-H 'Host: rebind.evil.example:" + port + "' " + base + "/v1/timers?state=pending",
            "misdirected_request", 421},
           {"foreign Host, POST", "-H 'Host: rebind.evil.example:" + port + "' -H 'Content-Type: application/json' -d " +
                                      body + base + "/v1/timers",
            "misdirected_request", 421},
           {"foreign Origin, JSON", cross + "-H 'Content-Type: application/json' -d " + body + base + "/v1/timers",
            "origin_not_allowed", 403},
           {"text/plain", "-H 'Content-Type: text/plain;charset=UTF-8' -d " + body + base + "/v1/timers",
            "unsupported_media_type", 415},
           {"form body (curl -d)", "-d " + body + base + "/v1/timers", "unsupported_media_type", 415},
           {"multipart form (curl -F)", "-F 'id=curl-evil' " + base + "/v1/timers", "unsupported_media_type", 415},
           {"no-cors POST", cross + "-H 'Sec-Fetch-Mode: no-cors' -H 'Content-Type: text/plain;charset=UTF-8' -d " +
                                body + base + "/v1/timers",
            "origin_not_allowed", 403},
           {"no-cors POST without a body", cross + "-H 'Sec-Fetch-Mode: no-cors' -X POST " + base + "/v1/timers:delete-failed",
            "origin_not_allowed", 403},
       }) {
    const auto [status, out] = Curl(c.args);
    EXPECT_EQ(status, c.status) << c.what << ": " << out;
    EXPECT_NE(out.find(c.code), std::string::npos) << c.what << ": " << out;
  }
  BlockingHttpClient client(server_->address());
  EXPECT_EQ(Call(client, "GET", "/v1/timers/curl-evil").status, 404);
  EXPECT_EQ(Created(), 0);
  // The console's page and its same-origin fetch, at 127.0.0.1 and localhost.
  auto [status, out] = Curl("-H 'Sec-Fetch-Site: none' " + base + "/ui/");
  EXPECT_EQ(status, 200) << out;
  std::tie(status, out) = Curl("-H 'Origin: " + base + "' -H 'Sec-Fetch-Site: same-origin' -H 'Content-Type: application/json' -d '" +
                               TimerBody("curl-console", 60'000, receiver_.url()) + "' " + base + "/v1/timers");
  EXPECT_EQ(status, 201) << out;
  const std::string local = "http://localhost:" + port;
  std::tie(status, out) = Curl("-H 'Origin: " + local + "' -H 'Content-Type: application/json' -d '" +
                               TimerBody("curl-local", 60'000, receiver_.url()) + "' " + local + "/v1/timers");
  EXPECT_EQ(status, 201) << out;
  // And the CLI.
  std::tie(status, out) = RunTickwheel("ls --server " + server_->address() + " --state pending");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("curl-console"), std::string::npos) << out;
  EXPECT_NE(out.find("curl-local"), std::string::npos) << out;
  EXPECT_EQ(Created(), 2);
}

TEST(WebPageFlagsTest, PublicHostAndAllowOriginLetTheNamedOnesIn) {
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--public-host", "timers.test,*.apps.test", "--allow-origin",
                        "https://ops.example.com"});
  ASSERT_TRUE(server.Start());
  const std::string port = std::to_string(server.port());
  EXPECT_EQ(RawConnection::StatusOf(Send(server.port(), BrowserRequest("GET", "/v1/stats", "timers.test:" + port, ""))), 200);
  EXPECT_EQ(RawConnection::StatusOf(Send(server.port(), BrowserRequest("GET", "/v1/stats", "a.apps.test", ""))), 200);
  EXPECT_EQ(RawConnection::StatusOf(Send(server.port(), BrowserRequest("GET", "/v1/stats", "apps.test", ""))), 421);
  // The allowed origin: a CORS preflight, then the request, readable.
  std::string answer = Send(server.port(),
                            BrowserRequest("OPTIONS", "/v1/timers", "timers.test:" + port,
                                           "Origin: https://ops.example.com\r\n"
                                           "Access-Control-Request-Method: POST\r\n"
                                           "Access-Control-Request-Headers: content-type, traceparent, tracestate\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 204) << answer;
  EXPECT_NE(answer.find("Access-Control-Allow-Origin: https://ops.example.com"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Access-Control-Allow-Methods: GET, POST\r\n"), std::string::npos) << answer;
  // A page may create timers in its trace (docs/operations.md).
  EXPECT_NE(answer.find("Access-Control-Allow-Headers: Authorization, Content-Type, traceparent, tracestate"),
            std::string::npos)
      << answer;
  // A preflight lists its route's methods: a flow's PUT too (the
  // TypeScript client's setFlow from a page was refused when every
  // preflight listed GET, POST, PATCH, DELETE).
  answer = Send(server.port(), BrowserRequest("OPTIONS", "/v1/flows/ops-flow", "timers.test:" + port,
                                              "Origin: https://ops.example.com\r\n"
                                              "Access-Control-Request-Method: PUT\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 204) << answer;
  EXPECT_NE(answer.find("Access-Control-Allow-Methods: GET, PUT, DELETE\r\n"), std::string::npos) << answer;
  answer = Send(server.port(), BrowserRequest("PUT", "/v1/flows/ops-flow", "timers.test:" + port,
                                              "Origin: https://ops.example.com\r\nContent-Type: application/json\r\n",
                                              R"({"rate_per_s":5})"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 200) << answer;
  EXPECT_NE(answer.find("Access-Control-Allow-Origin: https://ops.example.com"), std::string::npos) << answer;
  answer = Send(server.port(), BrowserRequest("POST", "/v1/timers", "timers.test:" + port,
                                              "Origin: https://ops.example.com\r\nContent-Type: application/json\r\n",
                                              TimerBody("ops-1", 60'000, receiver.url())));
  EXPECT_EQ(RawConnection::StatusOf(answer), 201) << answer;
  EXPECT_NE(answer.find("Access-Control-Allow-Origin: https://ops.example.com"), std::string::npos) << answer;
  // Another origin, even on an allowed Host, is not.
  answer = Send(server.port(), BrowserRequest("OPTIONS", "/v1/timers", "timers.test:" + port,
                                              "Origin: https://evil.example\r\n"));
  EXPECT_EQ(RawConnection::StatusOf(answer), 403) << answer;
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  // A bad flag stops the server at start, naming it.
  auto [status, out] = RunTickwheel("serve --listen 127.0.0.1:" + std::to_string(FreePort()) +
                                    " --data-dir " + dir.path() + "/d2 --allow-origin ops.example.com");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--allow-origin"), std::string::npos) << out;
}

}  // namespace
}  // namespace tickwheel::testing
