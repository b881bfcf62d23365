// SPDX-License-Identifier: Apache-2.0
// Clients that send headers and then nothing, trickle bodies or hold
// thousands of connections (docs/server.md's "Threat model"); a drain;
// and a global cap on outbound webhook connections. Each test failed on
// the build before its fix.
#include <gtest/gtest.h>
#include <atomic>
#include <thread>

#include "attack/attack_util.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using server::BlockingHttpClientOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

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

}  // namespace
}  // namespace tickwheel::testing
