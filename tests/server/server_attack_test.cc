// SPDX-License-Identifier: Apache-2.0
// The real `tickwheel serve` attacked as docs/server.md's "Threat model"
// says it may be: by a web page the developer visits (cross-origin
// requests, DNS rebinding, text/plain and form bodies), by clients that
// send headers and then nothing, or hold thousands of connections, and by
// a database that stops answering. Each test says what it shows; each
// failed on the build before its fix.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "server_test_util.h"
#include "delivery/webhook_client.h"
#include "support/postgres_server.h"
#include "support/process_stats.h"
#include "support/raw_connection.h"
#include "timer/http_url.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using server::BlockingHttpClientOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kAdmin = "admin-token-0123456789abcdef";

// This process may hold many connections: its open-files limit to the hard
// limit.
void RaiseOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

double MsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

// A request as a browser sends it: `headers` each end in \r\n.
std::string BrowserRequest(const std::string& method, const std::string& target,
                           const std::string& host, const std::string& headers,
                           const std::string& body = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Sends `request` on a new connection; the answer.
std::string Send(int port, const std::string& request) {
  RawConnection c(port);
  c.Send(request);
  return c.ReadResponse(seconds(10));
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

// ---------------------------------------------------------------------------
// Nothing before authentication may cost the server more than a header's
// worth.

// Five (here forty) connections announce 8 MiB bodies without a token and
// send nothing more; another address holds 2,000 idle connections and one
// more drips its headers a byte at a time. Meanwhile an admin creates
// timers at its normal rate on new connections: every create succeeds,
// /healthz answers within 100 ms, no request memory is reserved for the
// unauthenticated, the idle address holds no more than its share, and the
// dripping one is cut off at --header-timeout.
TEST(PreAuthTest, UnauthenticatedBodiesIdleFloodsAndSlowHeadersCostNothing) {
  RaiseOpenFiles();
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/tokens", std::string("admin ") + kAdmin + "\n");
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--auth-token-file", dir.path() + "/tokens", "--max-connections", "1500",
                        "--max-connections-per-client", "1000", "--header-timeout", "1s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClientOptions admin_options;
  admin_options.bearer_token = kAdmin;
  // The body attack: 8 MiB announced, never sent (no token; a wrong one).
  std::vector<std::unique_ptr<RawConnection>> holders;
  for (int i = 0; i < 40; ++i) {
    holders.push_back(std::make_unique<RawConnection>(server.port(), "127.0.0.3"));
    holders.back()->Send(std::string("POST /v1/timers HTTP/1.1\r\nHost: 127.0.0.1\r\n") +
                         (i % 2 ? "Authorization: Bearer wrong-token-0123456789\r\n" : "") +
                         "Content-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{");
  }
  // The idle flood, from another address.
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 2000; ++i) {
    try {
      idle.push_back(std::make_unique<RawConnection>(server.port(), "127.0.0.2"));
    } catch (const std::exception&) {
      break;  // refused at accept: fine
    }
  }
  // The dripper: a byte every 100 ms, its headers never ending; when the
  // server closes the connection is seen within 100 ms.
  std::atomic<double> drip_cut_after_ms{-1};
  std::thread dripper([&server, &drip_cut_after_ms] {
    RawConnection drip(server.port(), "127.0.0.4");
    const std::string head = "GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ";
    const auto started = SteadyClock::now();
    for (std::size_t sent = 0; SteadyClock::now() - started < seconds(15); ++sent) {
      if (!drip.Send(sent < head.size() ? head.substr(sent, 1) : "a") ||
          drip.ClosedWithin(milliseconds(100))) {
        drip_cut_after_ms.store(MsSince(started));
        return;
      }
    }
  });
  // The admin's normal rate: a create every 20 ms, each on a new
  // connection, for 3 s; /healthz between them.
  int created = 0, tried = 0;
  double worst_health_ms = 0;
  for (const auto end = SteadyClock::now() + seconds(3); SteadyClock::now() < end;) {
    BlockingHttpClient admin(server.address(), admin_options);
    ++tried;
    const JsonCall c = Call(admin, "POST", "/v1/timers",
                            TimerBody("adm-" + std::to_string(tried), 600'000, receiver.url()));
    created += c.status == 201 ? 1 : 0;
    EXPECT_EQ(c.status, 201) << c.raw;
    BlockingHttpClient health(server.address(), seconds(5));
    const auto start = SteadyClock::now();
    EXPECT_EQ(health.Call("GET", "/healthz").status, 200);
    worst_health_ms = std::max(worst_health_ms, MsSince(start));
    std::this_thread::sleep_for(milliseconds(20));
  }
  dripper.join();
  EXPECT_EQ(created, tried);
  EXPECT_GT(tried, 50);
  EXPECT_LT(worst_health_ms, 100);
  BlockingHttpClient admin(server.address(), admin_options);
  // Every unauthenticated 8 MiB request was answered 401 from its headers,
  // without a byte of request memory.
  EXPECT_EQ(Metric(admin, "tickwheel_http_request_memory_bytes"), 0);
  for (auto& h : holders) {
    const std::string answer = h->ReadResponse(seconds(5));
    EXPECT_EQ(RawConnection::StatusOf(answer), 401) << answer;
  }
  // The idle address holds its share and no more.
  EXPECT_LE(Metric(admin, "tickwheel_http_connections"), 1000 + 100);
  EXPECT_GE(Metric(admin, "tickwheel_http_refused_per_client_total"), 900);
  // The drip was cut off at its header timeout (1 s), with a margin.
  EXPECT_GE(drip_cut_after_ms.load(), 900) << "cut off (or never let in) before its header timeout";
  EXPECT_LT(drip_cut_after_ms.load(), 3000) << "not cut off at its header timeout (-1: never)";
  idle.clear();
  holders.clear();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// An admitted request (the admin's token, JSON) whose body trickles in, a
// byte every 100 ms, is cut off at --body-timeout (1 s) after its headers:
// the connection is closed without an answer, nothing is created, and the
// request memory its Content-Length reserved is free again (a create that
// needs it succeeds right after; it did not fit while the trickle held
// it). Meanwhile a client on another connection is answered as usual.
TEST(PreAuthTest, AnAdmittedBodyThatTricklesIsCutOffAtTheBodyTimeout) {
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/tokens", std::string("admin ") + kAdmin + "\n");
  constexpr std::size_t kBudget = 1 << 20;
  constexpr std::size_t kDeclared = 80'000;  // reserves 7 x 80,000 of the 1 MiB
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--auth-token-file", dir.path() + "/tokens", "--max-request-memory",
                        std::to_string(kBudget), "--body-timeout", "1s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClientOptions admin_options;
  admin_options.bearer_token = kAdmin;
  BlockingHttpClient admin(server.address(), admin_options);
  // A create whose body is as long as the trickle's (JSON padded with
  // spaces): it fits in the budget only when the trickle's reservation is free.
  std::string big = TimerBody("big", 600'000, receiver.url());
  big += std::string(kDeclared - big.size(), ' ');

  RawConnection trickle(server.port(), "127.0.0.5");
  ASSERT_TRUE(trickle.Send("POST /v1/timers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                           std::string(kAdmin) + "\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(kDeclared) + "\r\n\r\n"));
  const auto headers_sent = SteadyClock::now();
  const std::string body = TimerBody("trickled", 0, receiver.url());
  // The reservation is made once the headers are in.
  bool reserved = false;
  for (int i = 0; i < 100 && !reserved; ++i) {
    reserved = Metric(admin, "tickwheel_http_request_memory_bytes") == 7.0 * kDeclared;
    if (!reserved) std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(reserved) << "the trickle's body memory was never reserved";
  double cut_after_ms = -1;
  int normal_calls = 0;
  double worst_normal_ms = 0;
  int big_while_held = 0;
  for (std::size_t sent = 0; MsSince(headers_sent) < 15'000; ++sent) {
    if (!trickle.Send(body.substr(sent % body.size(), 1)) || trickle.ClosedWithin(milliseconds(100))) {
      cut_after_ms = MsSince(headers_sent);
      break;
    }
    // Another client, on connections of its own, meanwhile: answered.
    BlockingHttpClient normal(server.address(), admin_options);
    const auto start = SteadyClock::now();
    const JsonCall c = Call(normal, "POST", "/v1/timers",
                            TimerBody("n-" + std::to_string(sent), 600'000, receiver.url()));
    EXPECT_EQ(c.status, 201) << c.raw;
    EXPECT_EQ(Call(normal, "GET", "/v1/timers/n-" + std::to_string(sent)).status, 200);
    worst_normal_ms = std::max(worst_normal_ms, MsSince(start));
    ++normal_calls;
    if (big_while_held == 0) big_while_held = Call(normal, "POST", "/v1/timers", big).status;
  }
  EXPECT_GE(cut_after_ms, 900) << "cut off before its body timeout";
  EXPECT_LT(cut_after_ms, 3000) << "not cut off at its body timeout (-1: never)";
  EXPECT_EQ(trickle.received(), "") << "the trickle got an answer";
  EXPECT_GT(normal_calls, 3);
  EXPECT_LT(worst_normal_ms, 500);
  // The sign that the budget is tight: the long create did not fit beside it.
  EXPECT_EQ(big_while_held, 503);
  // Nothing of the trickled request was created; its memory is free. The
  // server lets go of the reservation once it is done with the connection,
  // which may be a moment after the client saw it closed.
  EXPECT_EQ(Call(admin, "GET", "/v1/timers/trickled").status, 404);
  bool released = false;
  for (int i = 0; i < 300 && !released; ++i) {
    released = Metric(admin, "tickwheel_http_request_memory_bytes") == 0;
    if (!released) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(released) << "the trickle's body memory is still reserved 3 s after its cut-off";
  const JsonCall after = Call(admin, "POST", "/v1/timers", big);
  EXPECT_EQ(after.status, 201) << after.raw;
  EXPECT_EQ(Metric(admin, "tickwheel_timers_created_total"), normal_calls + 1);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// ---------------------------------------------------------------------------
// The HTTP threads never wait on the database.

// Stops (SIGSTOP) or resumes (SIGCONT) PostgreSQL's postmaster and every
// process it started (backends, background workers).
void SignalPostgres(const std::string& data_dir, int sig) {
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  pid_t postmaster = 0;
  pid_file >> postmaster;
  ASSERT_GT(postmaster, 0);
  std::vector<pid_t> pids{postmaster};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == postmaster) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  for (pid_t pid : pids) kill(pid, sig);
}

// PostgreSQL stops answering (its processes SIGSTOPped: connections stay
// open, nothing is read) while clients keep asking for timers, stats, the
// cluster and flows: /healthz still answers within 100 ms and says the store is
// unavailable, a request without a token still gets its 401 at once, and
// the GETs get 503 at --store-timeout. Then PostgreSQL resumes and all is
// well again.
TEST(HungDatabaseTest, HealthzAnswersAtOnceWhileGetsWaitForAHungPostgres) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/tokens", std::string("admin ") + kAdmin + "\n");
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8", "--auth-token-file",
                        dir.path() + "/tokens", "--store-timeout", "2s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClientOptions admin_options;
  admin_options.bearer_token = kAdmin;
  BlockingHttpClient admin(server.address(), admin_options);
  ASSERT_EQ(Call(admin, "POST", "/v1/timers", TimerBody("hung-1", 600'000, receiver.url())).status, 201);
  ASSERT_EQ(Call(admin, "GET", "/v1/timers/hung-1").status, 200);

  struct Resume {
    std::string dir;
    ~Resume() { SignalPostgres(dir, SIGCONT); }
  } resume{postgres.data_dir()};
  SignalPostgres(postgres.data_dir(), SIGSTOP);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, unavailable{0};
  std::atomic<double> slowest_get_ms{0};
  std::vector<std::thread> getters;
  // Every route that reads the store, the flows' and schedules' too.
  const std::vector<std::string> targets = {"/v1/timers/hung-1", "/v1/stats", "/v1/cluster",
                                            "/v1/timers?state=pending", "/v1/flows",
                                            "/v1/flows/hooks.example.com", "/v1/schedules",
                                            "/v1/schedules/hung-s"};
  for (std::size_t t = 0; t < targets.size(); ++t) {
    getters.emplace_back([&, t] {
      while (!stop.load()) {
        BlockingHttpClient client(server.address(), admin_options);
        const auto start = SteadyClock::now();
        const JsonCall c = Call(client, "GET", targets[t]);
        const double ms = MsSince(start);
        if (ms > slowest_get_ms.load()) slowest_get_ms.store(ms);
        ++answered;
        if (c.status == 503) ++unavailable;
      }
    });
  }
  double worst_health_ms = 0, worst_401_ms = 0;
  bool said_unavailable = false;
  for (const auto end = SteadyClock::now() + seconds(6); SteadyClock::now() < end;) {
    BlockingHttpClient health(server.address(), seconds(5));
    auto start = SteadyClock::now();
    const JsonCall h = Call(health, "GET", "/healthz");
    worst_health_ms = std::max(worst_health_ms, MsSince(start));
    EXPECT_EQ(h.status, 200) << h.raw;
    said_unavailable = said_unavailable || h.raw.find(R"("store":"unavailable")") != std::string::npos;
    BlockingHttpClient anonymous(server.address(), seconds(5));
    start = SteadyClock::now();
    EXPECT_EQ(anonymous.Call("GET", "/v1/timers/hung-1").status, 401);
    worst_401_ms = std::max(worst_401_ms, MsSince(start));
    std::this_thread::sleep_for(milliseconds(50));
  }
  stop.store(true);
  // The getters are answered (503) at the deadline, not left hanging.
  for (auto& t : getters) t.join();
  EXPECT_LT(worst_health_ms, 100);
  EXPECT_LT(worst_401_ms, 100);
  EXPECT_TRUE(said_unavailable);
  EXPECT_GT(unavailable.load(), 0);
  EXPECT_LT(slowest_get_ms.load(), 2000 + 1500) << "a GET waited past --store-timeout";

  SignalPostgres(postgres.data_dir(), SIGCONT);
  bool recovered = false;
  for (int i = 0; i < 300 && !recovered; ++i) {
    BlockingHttpClient health(server.address(), seconds(5));
    recovered = Call(admin, "GET", "/v1/timers/hung-1").status == 200 &&
                health.Call("GET", "/healthz").body.find(R"("store":"ok")") != std::string::npos;
    if (!recovered) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(recovered);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// --max-writes counts every API write, flows' and schedules' as timers':
// with PostgreSQL stopped and --max-writes 2, a timer create and a flow PUT
// wait for it; the flow PUT is answered 503 at --store-timeout as a write
// is (its outcome unknown), and both stay counted while the store has not
// answered. Every other flow write (PUT, DELETE, :pause, :resume) and
// schedule write (create, PATCH, :pause, :resume, :trigger, DELETE) is
// then answered 503 "overloaded" at once, and none of them happened;
// /metrics answers at once. Once PostgreSQL resumes, flow and schedule
// writes succeed again.
TEST(HungDatabaseTest, MaxWritesAndTheStoreTimeoutHoldForFlowAndScheduleWrites) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8", "--max-writes", "2",
                        "--store-timeout", "2s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(30));
  const std::string flow = "/v1/flows/hooks.example.com";
  ASSERT_EQ(Call(client, "PUT", flow, R"({"rate_per_s": 100})").status, 200);
  const std::string schedule =
      R"({"id":"kept","every_ms":3600000,"target":{"url":")" + receiver.url() + R"("}})";
  ASSERT_EQ(Call(client, "POST", "/v1/schedules", schedule).status, 201);

  struct Resume {
    std::string dir;
    ~Resume() { SignalPostgres(dir, SIGCONT); }
  } resume{postgres.data_dir()};
  SignalPostgres(postgres.data_dir(), SIGSTOP);
  // A timer create waits for the store (counted: 1 of 2) ...
  std::thread timer_write([&] {
    BlockingHttpClient c(server.address(), seconds(30));
    (void)Call(c, "POST", "/v1/timers", TimerBody("waits", 600'000, receiver.url()));
  });
  // ... and a flow PUT (2 of 2), answered at the deadline as a write.
  auto start = SteadyClock::now();
  const JsonCall late = Call(client, "PUT", flow, R"({"rate_per_s": 5})");
  const double late_ms = MsSince(start);
  EXPECT_EQ(late.status, 503) << late.raw;
  EXPECT_EQ(ErrorCode(late), "store_unavailable") << late.raw;
  EXPECT_NE(late.raw.find("the write may still happen"), std::string::npos) << late.raw;
  EXPECT_GE(late_ms, 2000 - 50);
  EXPECT_LT(late_ms, 2000 + 1500) << "a flow write waited past --store-timeout";
  timer_write.join();
  // Both still wait for PostgreSQL: every write route is refused at once.
  const std::vector<std::tuple<std::string, std::string, std::string>> writes = {
      {"POST", "/v1/timers", TimerBody("refused", 600'000, receiver.url())},
      {"PUT", flow, R"({"rate_per_s": 7})"},
      {"DELETE", flow, ""},
      {"POST", flow + ":pause", ""},
      {"POST", flow + ":resume", ""},
      {"POST", "/v1/schedules",
       R"({"id":"refused","every_ms":60000,"target":{"url":")" + receiver.url() + R"("}})"},
      {"PATCH", "/v1/schedules/kept", R"({"every_ms":7200000})"},
      {"POST", "/v1/schedules/kept:pause", ""},
      {"POST", "/v1/schedules/kept:resume", ""},
      {"POST", "/v1/schedules/kept:trigger", ""},
      {"DELETE", "/v1/schedules/kept", ""}};
  for (const auto& [method, target, body] : writes) {
    start = SteadyClock::now();
    const JsonCall c = Call(client, method, target, body);
    const double ms = MsSince(start);
    EXPECT_EQ(c.status, 503) << method << " " << target << ": " << c.raw;
    EXPECT_EQ(ErrorCode(c), "overloaded") << method << " " << target << ": " << c.raw;
    EXPECT_LT(ms, 500) << method << " " << target << " waited for the store";
  }
  // /metrics never waits on the store (a wait would last the 2 s deadline).
  start = SteadyClock::now();
  EXPECT_EQ(Call(client, "GET", "/metrics").status, 200);
  EXPECT_LT(MsSince(start), 500) << "/metrics waited for the store";

  SignalPostgres(postgres.data_dir(), SIGCONT);
  bool recovered = false;
  for (int i = 0; i < 300 && !recovered; ++i) {
    recovered = Call(client, "GET", "/v1/schedules/kept").status == 200;
    if (!recovered) std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(recovered);
  // None of the refused writes happened.
  const JsonCall kept = Call(client, "GET", "/v1/schedules/kept");
  EXPECT_EQ(State(kept), "active") << kept.raw;
  EXPECT_EQ(kept.body.at("every_ms").as_int64(), 3'600'000) << kept.raw;
  EXPECT_EQ(kept.body.at("counts").at("triggered").as_int64(), 0) << kept.raw;
  EXPECT_EQ(Call(client, "GET", "/v1/schedules/refused").status, 404);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/refused").status, 404);
  const JsonCall f = Call(client, "GET", flow);
  EXPECT_TRUE(f.body.at("configured").as_bool()) << f.raw;
  EXPECT_FALSE(f.body.at("paused").as_bool()) << f.raw;
  EXPECT_NE(f.body.at("rate_per_s"), boost::json::value(7)) << f.raw;
  // Writes work again.
  bool written = false;
  for (int i = 0; i < 300 && !written; ++i) {
    written = Call(client, "PUT", flow, R"({"rate_per_s": 9})").status == 200 &&
              Call(client, "POST", "/v1/schedules/kept:pause").status == 200;
    if (!written) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(written);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// ---------------------------------------------------------------------------
// /healthz during the drain: the listener stays open, probes get 503
// "draining" (not "connection refused") and new writes 503, until the
// drain ends.
TEST(DrainTest, ProbesAndNewWritesGet503WhileTheServerDrains) {
  TempDir dir;
  WebhookReceiver receiver;
  receiver.SetResponder([](const Delivery&) {
    return Reply{.status = 200, .mode = Reply::Mode::kAnswer, .delay = milliseconds(3000)};
  });
  ServerProcess server(Binary(), dir.path() + "/data", {"--drain-timeout", "20s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("slow", 0, receiver.url())).status, 201);
  ASSERT_TRUE(receiver.WaitFor(1, seconds(10)));
  // The attempt is in flight (the receiver holds it 3 s): drain.
  const std::string delivering = "tickwheel_timers{state=\"delivering\"}";
  for (int i = 0; i < 500 && Metric(client, delivering) < 1; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(Metric(client, delivering), 1);
  server.Signal(SIGTERM);
  // Probes on new connections until one is not 200 (the signal is
  // handled): that one must be the 503, not a refused connection (0).
  JsonCall h;
  for (int i = 0; i < 1000; ++i) {
    BlockingHttpClient probe(server.address(), seconds(5));
    h = Call(probe, "GET", "/healthz");
    if (h.status != 200) break;
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(h.status, 503) << h.raw;
  EXPECT_NE(h.raw.find("draining"), std::string::npos) << h.raw;
  BlockingHttpClient writer(server.address(), seconds(5));
  const JsonCall w = Call(writer, "POST", "/v1/timers", TimerBody("late", 60'000, receiver.url()));
  EXPECT_EQ(w.status, 503) << w.raw;
  EXPECT_EQ(ErrorCode(w), "draining");
  EXPECT_EQ(server.Wait(30), 0) << server.log();
  EXPECT_EQ(receiver.count(), 1u);
}

// ---------------------------------------------------------------------------
// The HTTP threads never wait on DNS, and the resolver stays bounded.

// A name server that stops answering: lookups of the names it hangs never
// return until the test lets them. Create-time checks (the resolver's
// check lane) cannot take the threads deliveries need; a name answered
// before is still delivered to once its answer expired (the old answer is
// used while it is looked up again); the lanes' queues and the cache stay
// within their limits; lookups that time out are counted.
TEST(ResolverTest, ANameServerThatStopsAnsweringDoesNotDelayDeliveriesToKnownHosts) {
  using server::AttemptResult;
  using server::DnsResolver;
  using server::WebhookClient;
  using server::WebhookClientOptions;
  using server::WebhookRequest;
  WebhookReceiver receiver;
  struct Dns {
    std::mutex mutex;
    std::condition_variable cv;
    bool hang_all = false;
    bool released = false;
  } dns;
  WebhookClientOptions options;
  options.timeout = seconds(2);
  options.dns.ttl = seconds(1);
  options.dns.failure_ttl = seconds(1);
  options.dns.max_entries = 100;
  options.dns.max_queued = 64;
  options.dns.stale_grace = milliseconds(200);
  options.dns.lookup = [&dns](const std::string& host, const std::string& port)
      -> server::Result<DnsResolver::Endpoints> {
    std::unique_lock lock(dns.mutex);
    if (dns.hang_all || host.rfind("check-", 0) == 0 || host.rfind("blackhole-", 0) == 0) {
      dns.cv.wait(lock, [&] { return dns.released; });
      return server::Status::Unavailable("the test's name server gave up");
    }
    return DnsResolver::Endpoints{boost::asio::ip::tcp::endpoint(
        boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::stoi(port)))};
  };
  auto release = [&dns] {
    std::lock_guard lock(dns.mutex);
    dns.released = true;
    dns.cv.notify_all();
  };
  struct Release {
    std::function<void()> f;
    ~Release() { f(); }
  } release_at_end{release};
  WebhookClient client(options);
  auto request = [&](const std::string& host) {
    WebhookRequest r;
    r.url = *server::ParseHttpUrl("http://" + host + ":" + std::to_string(receiver.port()) + "/h");
    r.body = "{}";
    return r;
  };
  auto post_and_wait = [&](const std::string& host) {
    std::promise<AttemptResult> done;
    client.Post(request(host), [&](AttemptResult r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  };
  const std::string port = std::to_string(receiver.port());
  ASSERT_EQ(post_and_wait("good.test").kind, AttemptResult::Kind::kDelivered);

  // A batch of creates names 500 hosts under a zone that never answers.
  std::atomic<int> check_answers{0};
  for (int i = 0; i < 500; ++i) {
    client.resolver().Resolve("check-" + std::to_string(i) + ".test", port,
                              [&](const server::Result<DnsResolver::Endpoints>&) { ++check_answers; },
                              DnsResolver::Lane::kCheck);
  }
  // The check lane's queue is bounded: what does not fit is answered at once.
  EXPECT_GE(check_answers.load(), 500 - 64 - 4);
  EXPECT_GT(client.resolver().refused(), 0u);
  // A delivery to a name never looked up before is not stuck behind them.
  auto start = SteadyClock::now();
  AttemptResult fresh = post_and_wait("fresh.test");
  EXPECT_EQ(fresh.kind, AttemptResult::Kind::kDelivered) << fresh.error;
  EXPECT_LT(MsSince(start), 1000);

  // Now the name server answers nothing at all, and deliveries to names it
  // never answered fill the delivery lane.
  {
    std::lock_guard lock(dns.mutex);
    dns.hang_all = true;
  }
  std::atomic<int> blackholed{0};
  std::vector<std::string> blackhole_errors;
  std::mutex errors_mutex;
  for (int i = 0; i < 20; ++i) {
    client.Post(request("blackhole-" + std::to_string(i) + ".test"), [&](AttemptResult r) {
      std::lock_guard lock(errors_mutex);
      blackhole_errors.push_back(r.error);
      ++blackholed;
    });
  }
  std::this_thread::sleep_for(milliseconds(1200));  // good.test's answer expires (ttl 1 s)
  start = SteadyClock::now();
  AttemptResult known = post_and_wait("good.test");
  EXPECT_EQ(known.kind, AttemptResult::Kind::kDelivered) << known.error;
  AttemptResult literal = post_and_wait("127.0.0.1");
  EXPECT_EQ(literal.kind, AttemptResult::Kind::kDelivered) << literal.error;
  EXPECT_LT(MsSince(start), 1000) << "deliveries to known hosts waited for the name server";
  EXPECT_GT(client.resolver().stale_answers(), 0u);
  // The black-holed deliveries end at their timeout, counted.
  for (int i = 0; i < 500 && blackholed.load() < 20; ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(blackholed.load(), 20);
  EXPECT_GE(client.resolver().timeouts(), 20u);

  // The name server is back. The cache holds at most max_entries names,
  // however many are looked up.
  {
    std::lock_guard lock(dns.mutex);
    dns.hang_all = false;
  }
  release();
  for (int i = 0; i < 300; ++i) {
    std::promise<void> answered;
    client.resolver().Resolve("n-" + std::to_string(i) + ".test", port,
                              [&](const server::Result<DnsResolver::Endpoints>&) { answered.set_value(); });
    answered.get_future().wait();
  }
  EXPECT_LE(client.resolver().cached_names(), 100u);
  client.Stop();
}

// A name server that receives queries and answers none (a black-holed
// zone) until Release: then it answers each held query, and every later
// one, SERVFAIL. It listens on UDP port 53 of a loopback address of its
// own (127.53.x.y: glibc's resolv.conf takes no port).
class BlackHoleNameServer {
 public:
  BlackHoleNameServer() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    std::random_device rd;
    for (int i = 0; i < 50 && address_.empty(); ++i) {
      const std::string a = "127.53." + std::to_string(rd() % 250 + 1) + "." + std::to_string(rd() % 250 + 1);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(53);
      inet_pton(AF_INET, a.c_str(), &sa.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) address_ = a;
    }
    if (!address_.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~BlackHoleNameServer() {
    Release();
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  const std::string& address() const { return address_; }  // empty: could not bind
  // Queries received for names containing `part`.
  int QueriesFor(const std::string& part) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const Query& q : queries_) n += q.name.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
  void Release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    for (const Query& q : queries_) Refuse(q);
  }

 private:
  struct Query {
    std::string packet, name;
    sockaddr_in from{};
  };
  void Refuse(const Query& q) {
    std::string answer = q.packet;
    answer[2] = static_cast<char>(answer[2] | 0x80);         // a response
    answer[3] = static_cast<char>((answer[3] & 0xF0) | 2);   // SERVFAIL
    sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<const sockaddr*>(&q.from), sizeof q.from);
  }
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[512];
      Query q;
      socklen_t len = sizeof q.from;
      const ssize_t n = recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&q.from), &len);
      if (n < 12) continue;
      q.packet.assign(buf, static_cast<std::size_t>(n));
      for (std::size_t i = 12; i < q.packet.size() && q.packet[i] != 0; i += 1 + static_cast<unsigned char>(q.packet[i])) {
        q.name += q.packet.substr(i + 1, static_cast<unsigned char>(q.packet[i])) + ".";
      }
      std::lock_guard lock(mutex_);
      if (released_) Refuse(q);
      queries_.push_back(std::move(q));
    }
  }

  int fd_ = -1;
  std::string address_;
  std::mutex mutex_;
  std::vector<Query> queries_;
  bool released_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The real server, its name server black-holed (its own /etc/resolv.conf,
// bind-mounted in a mount namespace of its own, names the server above):
// every lookup that an attempt or a create gave up on is counted in
// tickwheel_dns_lookup_timeouts_total, one each; deliveries to a literal
// address are not delayed and count nothing.
TEST(ResolverTest, LookupsThatTimeOutAreCountedInMetrics) {
  ASSERT_EQ(geteuid(), 0u) << "needs root: a mount namespace for the server's own resolv.conf";
  BlackHoleNameServer dns;
  ASSERT_FALSE(dns.address().empty()) << "no 127.53.x.y:53 to listen on";
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/resolv.conf", "nameserver " + dns.address() + "\noptions timeout:30 attempts:1\n");
  WriteFile(dir.path() + "/tickwheel",
            "#!/bin/sh\nexec unshare --mount sh -c 'mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"' " +
                dir.path() + "/resolv.conf " + Binary() + " \"$@\"\n");
  std::filesystem::permissions(dir.path() + "/tickwheel", std::filesystem::perms::owner_all);
  ServerProcess server(dir.path() + "/tickwheel", dir.path() + "/data", {"--delivery-timeout", "1s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(30));
  EXPECT_EQ(Metric(client, "tickwheel_dns_lookup_timeouts_total"), 0);
  // Two timers to names the name server never answers (two: the check
  // lane has two threads, so each name's lookup is sent; a third would wait
  // in the lane's queue): each create's check gives up on its lookup (2 s),
  // then each one's only attempt (--delivery-timeout 1 s): four lookups
  // timed out.
  constexpr int kNames = 2;
  for (int i = 0; i < kNames; ++i) {
    const std::string url = "http://bh-" + std::to_string(i) + ".blackhole.test:" +
                            std::to_string(receiver.port()) + "/h";
    const JsonCall c = Call(client, "POST", "/v1/timers",
                            TimerBody("bh-" + std::to_string(i), 0, url, R"("retry":{"max_attempts":1})"));
    ASSERT_EQ(c.status, 201) << c.raw;
  }
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("literal", 0, receiver.url())).status, 201);
  ASSERT_TRUE(receiver.WaitFor(1, seconds(10)));
  for (int i = 0; i < kNames; ++i) {
    const std::string id = "bh-" + std::to_string(i);
    JsonCall t;
    for (int j = 0; j < 1500 && State(t = Call(client, "GET", "/v1/timers/" + id)) != "failed"; ++j) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_EQ(State(t), "failed") << t.raw;
    EXPECT_NE(std::string(t.body.at("last_error").as_string()).find("name lookup of " + id + ".blackhole.test timed out"),
              std::string::npos) << t.raw;
    EXPECT_GT(dns.QueriesFor(id + ".blackhole.test"), 0) << "the lookup never reached the test's name server";
  }
  EXPECT_EQ(Metric(client, "tickwheel_dns_lookup_timeouts_total"), 2 * kNames);
  EXPECT_EQ(receiver.count(), 1u);
  // The name server answers again (SERVFAIL), so that no lookup holds the
  // server's stop.
  dns.Release();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// ---------------------------------------------------------------------------
// A global cap on outbound webhook connections.

// 20,000 timers to 20,000 distinct receivers (127.x.y.z, one listener on
// every loopback address) on a server with 1,024 open files and
// --max-webhook-connections 64: every timer is delivered on its only
// attempt; attempts over the cap wait for a connection, none fails.
TEST(WebhookConnectionsTest, TwentyThousandDistinctReceiversAreAllDeliveredWithinTheCap) {
  RaiseOpenFiles();
  ReceiverOptions receiver_options;
  receiver_options.threads = 2;
  receiver_options.record = false;
  receiver_options.address = "0.0.0.0";
  WebhookReceiver receiver(receiver_options);
  TempDir dir;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--max-webhook-connections", "64", "--max-attempts", "1",
                        "--max-connections-per-host", "4"});
  server.set_max_open_files(1024);
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(60));
  constexpr int kTimers = 20'000;
  for (int batch = 0; batch < kTimers / 1000; ++batch) {
    std::string body = "{\"timers\":[";
    for (int i = batch * 1000; i < (batch + 1) * 1000; ++i) {
      // 127.1.0.1 ... 127.1.78.32: distinct hosts, one port.
      const std::string host = "127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
      body += std::string(i % 1000 ? "," : "") + "{\"id\":\"w" + std::to_string(i) +
              "\",\"delay_ms\":0,\"target\":{\"url\":\"" + receiver.url_for(host, "/w") + "\"}}";
    }
    body += "]}";
    const JsonCall c = Call(client, "POST", "/v1/timers:batch", body);
    ASSERT_EQ(c.status, 201) << c.raw;
  }
  double delivered = 0;
  for (int i = 0; i < 1800 && delivered < kTimers; ++i) {
    delivered = Metric(client, "tickwheel_timers_delivered_total") +
                Metric(client, "tickwheel_timers_failed_total");
    if (delivered < kTimers) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(Metric(client, "tickwheel_timers_failed_total"), 0);
  EXPECT_EQ(Metric(client, "tickwheel_timers_delivered_total"), kTimers);
  EXPECT_EQ(receiver.count(), static_cast<std::size_t>(kTimers));
  EXPECT_LE(Metric(client, "tickwheel_webhook_connections"), 64);
  EXPECT_GT(Metric(client, "tickwheel_webhook_connection_waits_total"), 0);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// ---------------------------------------------------------------------------
// Bounded reads in PostgreSQL mode.

// 10,000 pending timers with 30 KB payloads (300 MB of records), listed
// with a host filter, an id prefix and both that match nothing: each
// listing looks at the whole scan budget (10,000 rows, so it answers with
// "next_after" and no timer); and 2,000 dead letters with 60 KB payloads
// (120 MB), walked by bulk dry runs that match nothing and one that
// matches them all. The node's peak RSS grows by less than 32 MiB over
// the listings, and again over the dry runs: records are fetched only for
// rows that go on a page, in bounded chunks (before, a filtered listing
// held every scanned record as hex text in one result: 600 MB for these
// listings, 240 MB for a dry run).
TEST(BoundedReadsTest, FilteredListingsAndDryRunsOfLargeTimersStayBounded) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/node",
                       {"--postgres", postgres.url(), "--shards", "8"});
  server.LimitAsanQuarantine();
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(120));
  auto create = [&](const std::string& prefix, int count, std::size_t payload_bytes, std::int64_t delay_ms,
                    const std::string& url, const std::string& extra) {
    const std::string payload(payload_bytes, 'p');
    constexpr int kBatch = 100;
    for (int batch = 0; batch < count / kBatch; ++batch) {
      std::string body = "{\"timers\":[";
      for (int i = 0; i < kBatch; ++i) {
        body += std::string(i ? "," : "") + "{\"id\":\"" + prefix + std::to_string(batch * kBatch + i) +
                "\",\"delay_ms\":" + std::to_string(delay_ms) + ",\"target\":{\"url\":\"" + url +
                "\"}" + extra + ",\"payload\":\"" + payload + "\"}";
      }
      body += "]}";
      const JsonCall c = Call(client, "POST", "/v1/timers:batch", body);
      ASSERT_EQ(c.status, 201) << c.raw.substr(0, 300);
    }
  };
  create("big-", 10'000, 30'000, 3'600'000, receiver.url(), "");
  // Dead letters: one attempt each, to a port nothing listens on.
  constexpr int kDead = 2'000;
  create("dead-", kDead, 60'000, 0, "http://127.0.0.1:" + std::to_string(FreePort()) + "/gone",
         R"(,"retry":{"max_attempts":1})");
  for (int i = 0; i < 1200 && Metric(client, "tickwheel_timers_failed_total") < kDead; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(Metric(client, "tickwheel_timers_failed_total"), kDead);
  const std::int64_t listings_kb = PeakRssGrowthKb(server.pid(), [&] {
    for (const std::string query : {"host=nothing.example", "prefix=nothing-", "host=nothing.example&prefix=big-"}) {
      const JsonCall c = Call(client, "GET", "/v1/timers?state=pending&limit=1000&" + query);
      ASSERT_EQ(c.status, 200) << c.raw.substr(0, 300);
      EXPECT_TRUE(c.body.at("timers").as_array().empty()) << query;
      EXPECT_TRUE(c.body.as_object().contains("next_after")) << query;  // the scan budget
    }
  });
  EXPECT_LT(listings_kb, 32 * 1024) << "listings: peak RSS +" << listings_kb << " kB";
  // The bulk dry run walks the dead letters with the same reads.
  const std::int64_t dry_runs_kb = PeakRssGrowthKb(server.pid(), [&] {
    for (const auto& [filter, matched] :
         std::vector<std::pair<std::string, std::int64_t>>{{R"("host":"nothing.example")", 0},
                                                           {R"("prefix":"nothing-")", 0},
                                                           {R"("prefix":"dead-")", kDead}}) {
      const JsonCall c = Call(client, "POST", "/v1/timers:retry-failed", "{" + filter + R"(,"dry_run":true})");
      ASSERT_EQ(c.status, 200) << c.raw;
      EXPECT_EQ(c.body.at("matched").as_int64(), matched) << filter;
      EXPECT_EQ(c.body.at("done").as_int64(), 0) << filter;
    }
  });
  EXPECT_LT(dry_runs_kb, 32 * 1024) << "dry runs: peak RSS +" << dry_runs_kb << " kB";
  std::printf("peak RSS: listings +%lld kB, dry runs +%lld kB\n", static_cast<long long>(listings_kb),
              static_cast<long long>(dry_runs_kb));
  // What matches is still listed, page by page.
  const JsonCall page = Call(client, "GET", "/v1/timers?state=pending&limit=10&prefix=big-1&host=127.0.0.1");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body.at("timers").as_array().size(), 10u);
  const JsonCall dead = Call(client, "GET", "/v1/timers?state=failed&limit=10&prefix=dead-");
  ASSERT_EQ(dead.status, 200);
  EXPECT_EQ(dead.body.at("timers").as_array().size(), 10u);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// ---------------------------------------------------------------------------
// Cluster misconfiguration is refused, not silent.

// A second process with a node id a live one holds is refused at start
// (after waiting out a lease, as a crashed predecessor's heartbeat would
// lapse), saying why; the first keeps its heartbeat and its shards.
TEST(ClusterIdentityTest, ASecondProcessWithALiveNodeIdIsRefused) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "8",
                                         "--node-id", "same", "--lease", "2s"};
  ServerProcess first(Binary(), dir.path() + "/a", args);
  ASSERT_TRUE(first.Start());
  ServerProcess second(Binary(), dir.path() + "/b", args);
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("node id \"same\""), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("--node-id"), std::string::npos) << second.log();
  BlockingHttpClient client(first.address());
  const JsonCall cluster = Call(client, "GET", "/v1/cluster");
  ASSERT_EQ(cluster.status, 200) << cluster.raw;
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 1u) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("self").as_bool()) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("alive").as_bool()) << cluster.raw;
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(first.Terminate(), 0) << first.log();
  // Once the first has stopped (and removed its heartbeat), the id is free.
  ASSERT_TRUE(second.Start());
  EXPECT_EQ(second.Terminate(), 0) << second.log();
}

// The issue's case in one test: two processes with the same --node-id and
// the same --listen string (127.0.0.1:0), as two containers started from
// one configuration. The second is refused at start, saying why; the first
// keeps its heartbeat and all its shards, and its creates still fire.
TEST(ClusterIdentityTest, TheSameNodeIdAndTheSameListenStringAreRefusedNotMerged) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "8",
                                         "--node-id", "same", "--lease", "2s"};
  ServerProcess first(Binary(), dir.path() + "/a", args), second(Binary(), dir.path() + "/b", args);
  first.set_ephemeral_port();
  second.set_ephemeral_port();
  ASSERT_TRUE(first.Start());
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("node id \"same\""), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("--node-id"), std::string::npos) << second.log();
  BlockingHttpClient client(first.address());
  const JsonCall cluster = Call(client, "GET", "/v1/cluster");
  ASSERT_EQ(cluster.status, 200) << cluster.raw;
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 1u) << cluster.raw;
  EXPECT_EQ(nodes[0].at("node_id").as_string(), "same") << cluster.raw;
  EXPECT_TRUE(nodes[0].at("self").as_bool()) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("alive").as_bool()) << cluster.raw;
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(Metric(client, "tickwheel_cluster_identity_ok"), 1);
  // The refused process's exit took nothing from the first: its creates
  // fire on time (no announcement dropped as "my own", no lease lost).
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 20; ++i) {
    const std::string id = "s" + std::to_string(i);
    const JsonCall c = Call(client, "POST", "/v1/timers", TimerBody(id, 500, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(20, seconds(30))) << first.log();
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " early";
    EXPECT_LT(d.received_ms - fire_at[d.id], 3000) << d.id << " late";
  }
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(first.Terminate(), 0) << first.log();
}

// Two nodes started with the same --listen string (port 0: each gets its
// own) and no --node-id, as containers that all listen on 0.0.0.0:8080:
// they get distinct ids, share the shards, see each other's creates at
// once (nothing is dropped as "my own" announcement), and a graceful stop
// of one removes only its heartbeat.
TEST(ClusterIdentityTest, NodesWithTheSameListenStringGetDistinctIdentities) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s"};
  ServerProcess a(Binary(), dir.path() + "/a", args), b(Binary(), dir.path() + "/b", args);
  a.set_ephemeral_port();
  b.set_ephemeral_port();
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  BlockingHttpClient ca(a.address()), cb(b.address());
  bool settled = false;
  for (int i = 0; i < 500 && !settled; ++i) {
    settled = Metric(ca, "tickwheel_cluster_shards_owned") + Metric(cb, "tickwheel_cluster_shards_owned") == 16 &&
              Metric(ca, "tickwheel_cluster_shards_owned") > 0 && Metric(cb, "tickwheel_cluster_shards_owned") > 0;
    if (!settled) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(settled);
  const JsonCall cluster = Call(ca, "GET", "/v1/cluster");
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 2u) << cluster.raw;
  EXPECT_NE(nodes[0].at("node_id"), nodes[1].at("node_id")) << cluster.raw;
  // Timers created through one node, due within a second, are fired by
  // whichever owns their shard, on time.
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "x" + std::to_string(i);
    const JsonCall c = Call(i % 2 ? ca : cb, "POST", "/v1/timers", TimerBody(id, 800, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30)));
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " early";
    EXPECT_LT(d.received_ms - fire_at[d.id], 3000) << d.id << " late: an announcement was dropped";
  }
  EXPECT_EQ(b.Terminate(), 0) << b.log();
  const JsonCall after = Call(ca, "GET", "/v1/cluster");
  bool a_alive = false;
  for (const auto& n : after.body.at("nodes").as_array()) a_alive = a_alive || (n.at("self").as_bool() && n.at("alive").as_bool());
  EXPECT_TRUE(a_alive) << after.raw;
  EXPECT_EQ(a.Terminate(), 0) << a.log();
}

// A node whose wall clock is 5 s ahead of the database's (libfaketime)
// measures it at every heartbeat, says so (log, /metrics, /v1/cluster),
// and owns no shard; the other node fires everything, never early.
TEST(ClockSkewTest, ANodeWhoseClockIsAheadOwnsNoShardAndNothingFiresEarly) {
  const std::string faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
  ASSERT_TRUE(std::filesystem::exists(faketime)) << "faketime (Debian) is not installed";
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s"};
  ServerProcess good(Binary(), dir.path() + "/good", args), ahead(Binary(), dir.path() + "/ahead", args);
  // Under `make server-asan` libfaketime comes before ASan's runtime in the
  // preload list, which ASan refuses at start unless told not to check.
  const char* asan = std::getenv("ASAN_OPTIONS");
  ahead.set_env({"LD_PRELOAD=" + faketime, "FAKETIME=+5s", "FAKETIME_DONT_FAKE_MONOTONIC=1",
                 "FAKETIME_NO_CACHE=1",
                 "ASAN_OPTIONS=" + (asan ? std::string(asan) + ":" : std::string()) +
                     "verify_asan_link_order=0"});
  ASSERT_TRUE(good.Start());
  ASSERT_TRUE(ahead.Start());
  BlockingHttpClient cg(good.address()), ca(ahead.address());
  bool measured = false;
  for (int i = 0; i < 500 && !measured; ++i) {
    measured = Metric(ca, "tickwheel_cluster_clock_offset_seconds") > 4 &&
               Metric(ca, "tickwheel_cluster_clock_ok") == 0 &&
               Metric(cg, "tickwheel_cluster_shards_owned") == 16;
    if (!measured) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(measured) << ahead.log();
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  EXPECT_LT(std::abs(Metric(cg, "tickwheel_cluster_clock_offset_seconds")), 0.5);
  EXPECT_NE(ahead.log().find("ahead of the database"), std::string::npos) << ahead.log();
  // Each node's offset, as of its last heartbeat, in /v1/cluster.
  bool shown = false;
  JsonCall cluster;
  for (int i = 0; i < 300 && !shown; ++i) {
    cluster = Call(cg, "GET", "/v1/cluster");
    for (const auto& n : cluster.body.at("nodes").as_array()) {
      shown = shown || (n.at("clock_offset_ms").is_int64() && n.at("clock_offset_ms").as_int64() > 4000);
    }
    if (!shown) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(shown) << cluster.raw;
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "c" + std::to_string(i);
    const JsonCall c = Call(cg, "POST", "/v1/timers", TimerBody(id, 1000 + 25 * i, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30))) << good.log() << ahead.log();
  // Stable: still none for the node ahead.
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " fired early";
  }
  EXPECT_EQ(ahead.Terminate(), 0) << ahead.log();
  EXPECT_EQ(good.Terminate(), 0) << good.log();
}

// Past the warning threshold (a tenth of --max-clock-offset) but short of
// the refusal: a node 3 s ahead with --max-clock-offset 10s warns (log,
// its offset in /metrics and /v1/cluster, `tickwheel_cluster_clock_ok`
// still 1) and keeps owning shards: the shards are shared and every timer
// is fired.
TEST(ClockSkewTest, ANodePastTheWarningButShortOfTheRefusalWarnsAndKeepsItsShards) {
  const std::string faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
  ASSERT_TRUE(std::filesystem::exists(faketime)) << "faketime (Debian) is not installed";
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s", "--max-clock-offset", "10s"};
  ServerProcess good(Binary(), dir.path() + "/good", args), ahead(Binary(), dir.path() + "/ahead", args);
  const char* asan = std::getenv("ASAN_OPTIONS");
  ahead.set_env({"LD_PRELOAD=" + faketime, "FAKETIME=+3s", "FAKETIME_DONT_FAKE_MONOTONIC=1",
                 "FAKETIME_NO_CACHE=1",
                 "ASAN_OPTIONS=" + (asan ? std::string(asan) + ":" : std::string()) +
                     "verify_asan_link_order=0"});
  ASSERT_TRUE(good.Start());
  ASSERT_TRUE(ahead.Start());
  BlockingHttpClient cg(good.address()), ca(ahead.address());
  // Measured, warned, and the shards shared between the two.
  bool settled = false;
  for (int i = 0; i < 1000 && !settled; ++i) {
    const double owned_ahead = Metric(ca, "tickwheel_cluster_shards_owned");
    settled = Metric(ca, "tickwheel_cluster_clock_offset_seconds") > 2 && owned_ahead > 0 &&
              owned_ahead + Metric(cg, "tickwheel_cluster_shards_owned") == 16 &&
              ahead.log().find("may be that early or late") != std::string::npos;
    if (!settled) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(settled) << ahead.log();
  EXPECT_LT(Metric(ca, "tickwheel_cluster_clock_offset_seconds"), 4);
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_clock_ok"), 1);
  EXPECT_NE(ahead.log().find("ahead of the database"), std::string::npos) << ahead.log();
  EXPECT_EQ(ahead.log().find("gives up its shards and takes none"), std::string::npos) << ahead.log();
  bool shown = false;
  JsonCall cluster;
  for (int i = 0; i < 300 && !shown; ++i) {
    cluster = Call(cg, "GET", "/v1/cluster");
    for (const auto& n : cluster.body.at("nodes").as_array()) {
      shown = shown || (n.at("clock_offset_ms").is_int64() && n.at("clock_offset_ms").as_int64() > 2000 &&
                        n.at("clock_offset_ms").as_int64() < 4000);
    }
    if (!shown) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(shown) << cluster.raw;
  // Every timer is fired, by whichever node owns its shard (the node ahead
  // fires its own up to 3 s early: what the warning says).
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Call(i % 2 ? cg : ca, "POST", "/v1/timers", TimerBody("w" + std::to_string(i), 500, receiver.url())).status,
              201);
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30))) << good.log() << ahead.log();
  EXPECT_GT(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  EXPECT_EQ(ahead.Terminate(), 0) << ahead.log();
  EXPECT_EQ(good.Terminate(), 0) << good.log();
}

// ---------------------------------------------------------------------------
// What a database outage tells clients: that the store is unavailable, not
// where it is or who connects to it; the log names no password either.
TEST(StoreErrorsTest, A503NamesNoDatabaseHostUserOrPassword) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  // Trust authentication: the password is never checked, only carried.
  const std::string url = "postgresql://postgres:pw?se#cret@127.0.0.1:" +
                          std::to_string(postgres.port()) + "/postgres";
  ServerProcess server(Binary(), dir.path() + "/node", {"--postgres", url, "--shards", "4"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("t1", 600'000, receiver.url())).status, 201);
  ASSERT_TRUE(postgres.Stop());
  for (const auto& [method, target, body] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", "/v1/timers/t1", ""},
           {"GET", "/v1/timers?state=pending", ""},
           {"POST", "/v1/timers", TimerBody("t2", 600'000, receiver.url())},
           {"GET", "/v1/schedules/s1", ""},
           {"GET", "/v1/schedules", ""},
           {"POST", "/v1/schedules",
            R"({"id":"s1","every_ms":3600000,"target":{"url":")" + receiver.url() + R"("}})"}}) {
    const JsonCall c = Call(client, method, target, body);
    EXPECT_EQ(c.status, 503) << c.raw;
    for (const std::string& secret : std::vector<std::string>{
             "127.0.0.1", std::to_string(postgres.port()), "postgres", "se#cret"}) {
      EXPECT_EQ(c.raw.find(secret), std::string::npos) << secret << " in " << c.raw;
    }
  }
  EXPECT_TRUE(postgres.Start());
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  EXPECT_EQ(server.log().find("se#cret"), std::string::npos) << server.log();
  EXPECT_EQ(server.log().find("cret@"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
