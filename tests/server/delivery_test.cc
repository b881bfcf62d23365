// SPDX-License-Identifier: Apache-2.0
// Delivery in-process, against real receivers on loopback: the webhook
// client's connections, and the dispatcher over a store that fails.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <future>
#include <memory>
#include <thread>

#include "common/metrics.h"
#include "common/server_clock.h"
#include "delivery/connection_budget.h"
#include "delivery/dispatcher.h"
#include "delivery/retry_after.h"
#include "delivery/tls_client.h"
#include "delivery/webhook_client.h"
#include "delivery/webhook_signer.h"
#include "scheduler/scheduler.h"
#include "store/rocksdb_timer_store.h"
#include "store_test_util.h"
#include "support/faulty_file_system.h"
#include "support/server_process.h"
#include "support/standard_webhooks.h"
#include "support/test_pki.h"
#include "support/webhook_receiver.h"

namespace tickwheel::server {
namespace {

using std::chrono::milliseconds;
using testing::Reply;
using testing::WebhookReceiver;

WebhookRequest RequestTo(const WebhookReceiver& receiver, const std::string& id = "t") {
  WebhookRequest r{*ParseHttpUrl(receiver.url()), "{\"id\":\"" + id + "\"}", {}};
  r.headers.emplace_back("Idempotency-Key", id);
  return r;
}

// Posts and waits for the outcome, at most 30 s: an attempt without one
// by then fails the test (every client here times out well before).
AttemptResult PostAndWait(WebhookClient& client, WebhookRequest request) {
  auto done = std::make_shared<std::promise<AttemptResult>>();
  std::future<AttemptResult> outcome = done->get_future();
  client.Post(std::move(request), [done](AttemptResult r) { done->set_value(std::move(r)); });
  if (outcome.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "the attempt had no outcome after 30 s";
    AttemptResult none;
    none.kind = AttemptResult::Kind::kAborted;
    none.error = "no outcome after 30 s";
    return none;
  }
  return outcome.get();
}

// Polls `done` every 10 ms for up to `patience` (real time).
bool Eventually(const std::function<bool()>& done, milliseconds patience = milliseconds(20'000)) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// Over the limit a taker waits in line and is granted, first come first
// served, the slots given back; each waiter asks once for an idle
// connection to be closed.
TEST(ConnectionBudgetTest, TakersOverTheLimitWaitInLineForReleasedSlots) {
  ConnectionBudget budget(2);
  int reclaims = 0;
  budget.SetReclaim([&] { ++reclaims; });
  std::vector<int> granted;
  EXPECT_TRUE(budget.Acquire([&] { granted.push_back(0); }));
  EXPECT_TRUE(budget.Acquire([&] { granted.push_back(1); }));
  EXPECT_FALSE(budget.Acquire([&] { granted.push_back(2); }));
  EXPECT_FALSE(budget.Acquire([&] { granted.push_back(3); }));
  EXPECT_EQ(budget.waiting(), 2u);
  EXPECT_EQ(reclaims, 2);
  EXPECT_EQ(budget.in_use(), 2u);
  budget.Release();
  EXPECT_EQ(granted, std::vector<int>{2});
  EXPECT_EQ(budget.in_use(), 2u);  // passed on, not freed
  budget.Release();
  budget.Release();
  EXPECT_EQ(granted, (std::vector<int>{2, 3}));
  EXPECT_EQ(budget.in_use(), 1u);
  EXPECT_EQ(budget.waited(), 2u);
  // A newcomer does not overtake the line.
  EXPECT_TRUE(budget.Acquire([] {}));
  EXPECT_FALSE(budget.Acquire([&] { granted.push_back(4); }));
  budget.Clear();
  budget.Release();
  EXPECT_EQ(granted, (std::vector<int>{2, 3}));
}

TEST(WebhookClientTest, ALimitOfOneConnectionPerHostIsOneConnection) {
  WebhookReceiver receiver(2);
  receiver.SetResponder([](const testing::Delivery&) { return Reply{200, Reply::Mode::kAnswer, milliseconds(20)}; });
  WebhookClientOptions options;
  options.threads = 2;
  options.max_connections_per_host = 1;
  WebhookClient client(options);
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    client.Post(RequestTo(receiver, "t" + std::to_string(i)), [&](AttemptResult r) {
      EXPECT_EQ(r.kind, AttemptResult::Kind::kDelivered) << r.error;
      ++done;
    });
  }
  ASSERT_TRUE(Eventually([&] { return done == 20; }));
  EXPECT_EQ(receiver.max_connections(), 1u);
  EXPECT_EQ(receiver.count(), 20u);
}

TEST(WebhookClientTest, AHostsLimitIsSharedAcrossItsThreads) {
  WebhookReceiver receiver(2);
  receiver.SetResponder([](const testing::Delivery&) { return Reply{200, Reply::Mode::kAnswer, milliseconds(50)}; });
  WebhookClientOptions options;
  options.threads = 2;
  options.max_connections_per_host = 3;
  WebhookClient client(options);
  std::atomic<int> done{0};
  for (int i = 0; i < 30; ++i) client.Post(RequestTo(receiver), [&](AttemptResult) { ++done; });
  ASSERT_TRUE(Eventually([&] { return done == 30; }));
  EXPECT_EQ(receiver.max_connections(), 3u);
}

// Connections left idle close, and a host with none is forgotten: timers
// to many hosts do not pile up sockets.
TEST(WebhookClientTest, IdleConnectionsCloseAndTheirHostsAreForgotten) {
  std::vector<std::unique_ptr<WebhookReceiver>> receivers;
  for (int i = 0; i < 5; ++i) receivers.push_back(std::make_unique<WebhookReceiver>());
  WebhookClientOptions options;
  options.idle_timeout = milliseconds(200);
  WebhookClient client(options);
  for (auto& r : receivers) {
    EXPECT_EQ(PostAndWait(client, RequestTo(*r)).kind, AttemptResult::Kind::kDelivered);
  }
  EXPECT_EQ(client.connections(), 5u);
  ASSERT_TRUE(Eventually([&] { return client.connections() == 0 && client.hosts() == 0; }))
      << client.connections() << " connections, " << client.hosts() << " hosts";
  for (auto& r : receivers) EXPECT_TRUE(Eventually([&] { return r->connections() == 0; }));
  // And it connects again when there is something to send.
  EXPECT_EQ(PostAndWait(client, RequestTo(*receivers[0])).kind, AttemptResult::Kind::kDelivered);
}

// A name that takes long to look up delays only the attempts to it, and
// those end at the attempt's timeout.
TEST(WebhookClientTest, ASlowNameLookupDelaysOnlyItsOwnHost) {
  WebhookReceiver receiver;
  const auto port = static_cast<unsigned short>(receiver.port());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  WebhookClientOptions options;
  options.threads = 1;
  options.timeout = milliseconds(1000);
  options.dns.lookup = [&](const std::string& host, const std::string&)
      -> Result<std::vector<boost::asio::ip::tcp::endpoint>> {
    if (host == "slow.test") released.wait();
    return std::vector<boost::asio::ip::tcp::endpoint>{
        {boost::asio::ip::make_address("127.0.0.1"), port}};
  };
  WebhookClient client(options);
  std::promise<AttemptResult> slow;
  WebhookRequest slow_request = RequestTo(receiver, "slow");
  slow_request.url = *ParseHttpUrl("http://slow.test:" + std::to_string(port) + "/hook");
  const auto start = std::chrono::steady_clock::now();
  client.Post(std::move(slow_request), [&](AttemptResult r) { slow.set_value(std::move(r)); });
  WebhookRequest fast_request = RequestTo(receiver, "fast");
  fast_request.url = *ParseHttpUrl("http://fast.test:" + std::to_string(port) + "/hook");
  AttemptResult fast = PostAndWait(client, std::move(fast_request));
  EXPECT_EQ(fast.kind, AttemptResult::Kind::kDelivered) << fast.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(900));
  AttemptResult timed_out = slow.get_future().get();
  EXPECT_EQ(timed_out.kind, AttemptResult::Kind::kFailed);
  EXPECT_NE(timed_out.error.find("timed out"), std::string::npos) << timed_out.error;
  EXPECT_FALSE(timed_out.unanswered);  // nothing was sent
  release.set_value();
  client.Stop();
}

// A receiver that reads a request and resets the connection may have
// processed it: the client does not send it again on its own (the attempt
// fails, counted as unanswered).
TEST(WebhookClientTest, ARequestIsNeverSentTwiceByTheClient) {
  WebhookReceiver receiver;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{0, Reply::Mode::kReset}; });
  WebhookClient client(WebhookClientOptions{});
  AttemptResult r = PostAndWait(client, RequestTo(receiver));
  EXPECT_EQ(r.kind, AttemptResult::Kind::kFailed);
  EXPECT_TRUE(r.unanswered);
  EXPECT_EQ(receiver.count(), 1u);
}

// A kept-alive connection that the receiver closed while it was idle is
// noticed before it is reused: the next request goes on a new connection,
// once, and succeeds.
TEST(WebhookClientTest, AKeptAliveConnectionClosedByTheReceiverIsNotReused) {
  WebhookReceiver receiver;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{200, Reply::Mode::kCloseAfterAnswer}; });
  WebhookClient client(WebhookClientOptions{});
  for (int i = 0; i < 5; ++i) {
    AttemptResult r = PostAndWait(client, RequestTo(receiver));
    ASSERT_EQ(r.kind, AttemptResult::Kind::kDelivered) << i << ": " << r.error;
    ASSERT_TRUE(Eventually([&] { return receiver.connections() == 0; }));
  }
  EXPECT_EQ(receiver.count(), 5u);
}

TEST(WebhookClientTest, SilentSlowAndGarbageReceiversFailTheAttemptInBoundedTime) {
  WebhookReceiver receiver;
  WebhookClientOptions options;
  options.threads = 1;
  options.timeout = milliseconds(300);
  WebhookClient client(options);
  receiver.SetResponder([](const testing::Delivery&) { return Reply{0, Reply::Mode::kNeverAnswer}; });
  const auto start = std::chrono::steady_clock::now();
  AttemptResult silent = PostAndWait(client, RequestTo(receiver));
  EXPECT_GE(std::chrono::steady_clock::now() - start, options.timeout) << "timed out early";
  EXPECT_EQ(silent.kind, AttemptResult::Kind::kFailed);
  EXPECT_TRUE(silent.unanswered);
  EXPECT_NE(silent.error.find("timed out"), std::string::npos) << silent.error;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{200, Reply::Mode::kAnswer, milliseconds(1000)}; });
  AttemptResult slow = PostAndWait(client, RequestTo(receiver));
  EXPECT_EQ(slow.kind, AttemptResult::Kind::kFailed);
  EXPECT_TRUE(slow.unanswered);
  EXPECT_NE(slow.error.find("timed out"), std::string::npos) << slow.error;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{0, Reply::Mode::kGarbage}; });
  AttemptResult garbage = PostAndWait(client, RequestTo(receiver));
  EXPECT_EQ(garbage.kind, AttemptResult::Kind::kFailed);
  EXPECT_NE(garbage.error.find("connection error"), std::string::npos) << garbage.error;
  receiver.SetResponder({});
  EXPECT_EQ(PostAndWait(client, RequestTo(receiver)).kind, AttemptResult::Kind::kDelivered);
  EXPECT_EQ(client.connections(), 1u);  // the failed ones were closed
}

TEST(WebhookClientTest, ReadsRetryAfterOf429And503) {
  WebhookReceiver receiver;
  WebhookClient client(WebhookClientOptions{});
  receiver.SetResponder([](const testing::Delivery&) { return Reply{503, Reply::Mode::kAnswer, milliseconds(0), "7"}; });
  AttemptResult r = PostAndWait(client, RequestTo(receiver));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.retry_after_ms, 7000);
  receiver.SetResponder([](const testing::Delivery&) { return Reply{500, Reply::Mode::kAnswer, milliseconds(0), "7"}; });
  EXPECT_EQ(PostAndWait(client, RequestTo(receiver)).retry_after_ms, 0);  // only 429 and 503
  EXPECT_EQ(RetryAfterMs("Wed, 21 Oct 2026 07:28:00 GMT", 1792567670), 10'000);
  EXPECT_EQ(RetryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", 1792567670), 0);
  EXPECT_EQ(RetryAfterMs("soon", 0), 0);
  EXPECT_EQ(RetryAfterMs("-5", 0), 0);
}

TEST(WebhookClientTest, StopAbortsWhatIsQueuedAndInFlight) {
  WebhookReceiver receiver;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{0, Reply::Mode::kNeverAnswer}; });
  WebhookClientOptions options;
  options.max_connections_per_host = 1;
  options.threads = 1;
  WebhookClient client(options);
  std::promise<AttemptResult> first, second;
  client.Post(RequestTo(receiver, "a"), [&](AttemptResult r) { first.set_value(std::move(r)); });
  client.Post(RequestTo(receiver, "b"), [&](AttemptResult r) { second.set_value(std::move(r)); });
  ASSERT_TRUE(receiver.WaitFor(1, milliseconds(10'000)));
  const auto start = std::chrono::steady_clock::now();
  client.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000)) << "waited for the timeout";
  EXPECT_EQ(first.get_future().get().kind, AttemptResult::Kind::kAborted);
  EXPECT_EQ(second.get_future().get().kind, AttemptResult::Kind::kAborted);
}

// --- HTTPS, signatures and the SSRF guard, per attempt ---

using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;

// Every name resolves to `*address` (changed by the test), at the port asked.
std::function<Result<Endpoints>(const std::string&, const std::string&)> LookupTo(
    std::shared_ptr<std::string> address, std::shared_ptr<std::mutex> mutex) {
  return [address, mutex](const std::string&, const std::string& port) -> Result<Endpoints> {
    std::lock_guard lock(*mutex);
    return Endpoints{{boost::asio::ip::make_address(*address),
                      static_cast<unsigned short>(std::stoi(port))}};
  };
}

// Certificates made once for the suite with the openssl command line.
class WebhookTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    pki_ = new testing::TestPki(dir_->path());
    const std::vector<std::string> sans = {"DNS:receiver.test", "IP:127.0.0.1"};
    valid_ = pki_->Issue("valid", sans);
    expired_ = pki_->Issue("expired", sans, -1);
    wrong_host_ = pki_->Issue("wrong-host", {"DNS:other.example"});
    unknown_ca_ = pki_->Issue("unknown-ca-cert", sans, 2, true);
  }
  static void TearDownTestSuite() {
    delete pki_;
    delete dir_;
  }

  static WebhookClientOptions Options(bool with_ca = true) {
    WebhookClientOptions o;
    o.threads = 1;
    o.max_connections_per_host = 2;
    o.tls = *MakeTlsClientContext({with_ca ? pki_->ca_file() : ""});
    o.dns.lookup = LookupTo(std::make_shared<std::string>("127.0.0.1"), std::make_shared<std::mutex>());
    return o;
  }
  static WebhookRequest To(const testing::WebhookReceiver& r, const std::string& host,
                           const std::string& id = "t") {
    WebhookRequest req{*ParseHttpUrl(r.url_for(host)), "{\"id\":\"" + id + "\"}", {}};
    req.headers.emplace_back("Idempotency-Key", id);
    return req;
  }
  static testing::WebhookReceiver Receiver(const testing::CertFiles& cert) {
    return testing::WebhookReceiver(testing::ReceiverOptions{1, true, cert.cert, cert.key});
  }

  static testing::TempDir* dir_;
  static testing::TestPki* pki_;
  static testing::CertFiles valid_, expired_, wrong_host_, unknown_ca_;
};
testing::TempDir* WebhookTlsTest::dir_;
testing::TestPki* WebhookTlsTest::pki_;
testing::CertFiles WebhookTlsTest::valid_, WebhookTlsTest::expired_, WebhookTlsTest::wrong_host_,
    WebhookTlsTest::unknown_ca_;

TEST_F(WebhookTlsTest, AVerifiedReceiverGetsEveryRequestOverFewReusedConnectionsWithSni) {
  testing::WebhookReceiver receiver(testing::ReceiverOptions{2, true, valid_.cert, valid_.key});
  WebhookClient client(Options());
  std::atomic<int> done{0};
  for (int i = 0; i < 60; ++i) {
    client.Post(To(receiver, "receiver.test", "t" + std::to_string(i)), [&](AttemptResult r) {
      EXPECT_EQ(r.kind, AttemptResult::Kind::kDelivered) << r.error;
      ++done;
    });
  }
  ASSERT_TRUE(Eventually([&] { return done == 60; }));
  EXPECT_EQ(receiver.count(), 60u);
  EXPECT_LE(receiver.handshakes(), 2u);  // the host's limit: connections are kept
  EXPECT_EQ(client.tls_handshakes(), receiver.handshakes());
  for (const testing::Delivery& d : receiver.deliveries()) EXPECT_EQ(d.sni, "receiver.test");
  // By IP address: the certificate's IP entry is checked; no SNI is sent.
  EXPECT_EQ(PostAndWait(client, To(receiver, "127.0.0.1")).kind, AttemptResult::Kind::kDelivered);
  EXPECT_EQ(receiver.deliveries().back().sni, "");
}

TEST_F(WebhookTlsTest, CertificateErrorsFailTheAttemptSayingWhatIsWrong) {
  struct Case {
    const testing::CertFiles* cert;
    bool with_ca;
    const char* says;
  };
  for (const Case& c : {Case{&expired_, true, "the certificate has expired"},
                        Case{&wrong_host_, true, "is not for receiver.test (wrong host)"},
                        Case{&unknown_ca_, true, "signed by an unknown CA"},
                        Case{&valid_, false, "signed by an unknown CA"}}) {
    testing::WebhookReceiver receiver = Receiver(*c.cert);
    WebhookClient client(Options(c.with_ca));
    AttemptResult r = PostAndWait(client, To(receiver, "receiver.test"));
    EXPECT_EQ(r.kind, AttemptResult::Kind::kFailed);
    EXPECT_NE(r.error.find(c.says), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("TLS handshake with receiver.test:"), std::string::npos) << r.error;
    EXPECT_FALSE(r.unanswered);  // nothing was sent
    EXPECT_EQ(receiver.count(), 0u);
    EXPECT_EQ(client.connections(), 0u);
  }
  // A plain HTTP receiver addressed as https://.
  WebhookReceiver plain;
  WebhookClient client(Options());
  WebhookRequest request = To(plain, "receiver.test");
  request.url.tls = true;  // https://receiver.test:PORT/hook
  AttemptResult r = PostAndWait(client, request);
  EXPECT_EQ(r.kind, AttemptResult::Kind::kFailed);
  EXPECT_NE(r.error.find("TLS handshake"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("does the receiver speak TLS"), std::string::npos) << r.error;
}

TEST_F(WebhookTlsTest, ANewConnectionResumesTheHostsTlsSession) {
  testing::WebhookReceiver receiver = Receiver(valid_);
  WebhookClientOptions options = Options();
  options.idle_timeout = milliseconds(100);
  WebhookClient client(options);
  ASSERT_EQ(PostAndWait(client, To(receiver, "receiver.test")).kind, AttemptResult::Kind::kDelivered);
  ASSERT_TRUE(Eventually([&] { return client.connections() == 0; }));
  ASSERT_EQ(PostAndWait(client, To(receiver, "receiver.test")).kind, AttemptResult::Kind::kDelivered);
  EXPECT_EQ(client.tls_handshakes(), 2u);
  EXPECT_EQ(client.tls_resumed(), 1u);
  EXPECT_EQ(receiver.handshakes(), 2u);
}

TEST(WebhookSigningTest, EachRequestCarriesStandardWebhooksSignaturesOfEverySecret) {
  const std::string old_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string new_secret = "whsec_dGhlIG5ldyBzZWNyZXQgb2YgdGhlIHJvdGF0aW9u";
  WebhookReceiver receiver;
  WebhookClientOptions options;
  options.signer = std::make_shared<WebhookSigner>(
      *WebhookSigner::FromLines({old_secret, new_secret}, "test"));
  options.unix_seconds = [] { return std::int64_t{1700000000}; };
  WebhookClient client(options);
  WebhookRequest signed_request = RequestTo(receiver, "t1");
  signed_request.message_id = "t1";
  ASSERT_EQ(PostAndWait(client, signed_request).kind, AttemptResult::Kind::kDelivered);
  ASSERT_EQ(PostAndWait(client, RequestTo(receiver, "t2")).kind, AttemptResult::Kind::kDelivered);
  const std::vector<testing::Delivery> d = receiver.deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].headers.at("webhook-id"), "t1");
  EXPECT_EQ(d[0].headers.at("webhook-timestamp"), "1700000000");
  std::string why;
  EXPECT_TRUE(testing::VerifyStandardWebhook(old_secret, d[0].headers, d[0].body, &why)) << why;
  EXPECT_TRUE(testing::VerifyStandardWebhook(new_secret, d[0].headers, d[0].body, &why)) << why;
  EXPECT_FALSE(testing::VerifyStandardWebhook("whsec_c29tZSBvdGhlciBzZWNyZXQgb2YgMjQgYnl0ZXM=",
                                              d[0].headers, d[0].body, &why));
  auto tampered = d[0].headers;
  tampered["webhook-timestamp"] = "1700000001";
  EXPECT_FALSE(testing::VerifyStandardWebhook(old_secret, tampered, d[0].body, &why));
  EXPECT_EQ(d[1].headers.count("webhook-signature"), 0u);  // no message id: not signed
}

// The SSRF guard at the attempt: the name's addresses are checked every
// time, so DNS that changes after the create cannot aim the server at a
// denied address, even while a connection to the old one is open.
TEST(WebhookSsrfTest, ANameThatNowResolvesToADeniedAddressFailsTheAttempt) {
  WebhookReceiver receiver;
  auto address = std::make_shared<std::string>("127.0.0.1");
  auto mutex = std::make_shared<std::mutex>();
  WebhookClientOptions options;
  options.threads = 1;
  options.dns.ttl = std::chrono::seconds(0);  // every attempt looks up again
  options.dns.lookup = LookupTo(address, mutex);
  options.policy = std::make_shared<TargetPolicy>();
  WebhookClient client(options);
  WebhookRequest request = RequestTo(receiver);
  request.url = *ParseHttpUrl(receiver.url_for("hooks.test"));
  ASSERT_EQ(PostAndWait(client, request).kind, AttemptResult::Kind::kDelivered);
  EXPECT_EQ(client.connections(), 1u);
  {
    std::lock_guard lock(*mutex);
    *address = "169.254.169.254";
  }
  AttemptResult denied = PostAndWait(client, request);
  EXPECT_EQ(denied.kind, AttemptResult::Kind::kFailed);
  EXPECT_NE(denied.error.find("target denied: hooks.test (169.254.169.254)"), std::string::npos)
      << denied.error;
  EXPECT_FALSE(denied.unanswered);
  EXPECT_EQ(receiver.count(), 1u);
  EXPECT_EQ(client.connections(), 0u);  // the old connection is not used either
  {
    std::lock_guard lock(*mutex);
    *address = "127.0.0.1";
  }
  ASSERT_EQ(PostAndWait(client, request).kind, AttemptResult::Kind::kDelivered);
  EXPECT_EQ(receiver.accepted(), 2u);
}

constexpr std::int64_t kStart = 1'800'000'000'000;

// Store (on a disk that can be made to fail), scheduler, dispatcher and
// webhook client wired as the server wires them, on a manual clock; the
// receiver is real.
class DispatchFixture {
 public:
  DispatchFixture() : fs_(std::make_shared<testing::FaultyFileSystem>()), env_(testing::EnvOver(fs_)),
                      clock_(kStart) {
    StoreOptions options;
    options.data_dir = dir_.path();
    store_ = std::move(*OpenRocksDbTimerStore(options, env_.get()));
    WebhookClientOptions webhook;
    webhook.timeout = milliseconds(5000);
    client_ = std::make_unique<WebhookClient>(webhook);
    scheduler_ = std::make_unique<Scheduler>(*store_, clock_, SchedulerOptions{},
                                             [this](std::vector<FiredTimer> due) {
                                               dispatcher_->OnFired(std::move(due));
                                             });
    dispatcher_ = std::make_unique<Dispatcher>(*store_, *scheduler_, clock_, *client_, nullptr, metrics_);
    store_->SetDueListener(
        [this](const std::string& id, std::optional<std::int64_t> due, const std::string& flow) {
          scheduler_->OnDueChange(id, due, flow);
        });
    scheduler_->AddShards({0});
    scheduler_->Start();
    Advance(milliseconds(0));
  }
  ~DispatchFixture() {
    scheduler_->Stop();
    client_->Stop();
    dispatcher_->Stop();
    store_->Close();
  }

  void Create(const std::string& id, std::int64_t due, std::uint32_t max_attempts = 1) {
    Apply(*store_, {id}, [&](StoreTxn& txn) {
      TimerRecord r = Record(id, due);
      r.target = receiver_.url();
      r.max_attempts = max_attempts;
      r.backoff_ms = 100;
      txn.Put(std::nullopt, r);
    });
  }
  void Advance(milliseconds d) { clock_.manual().AdvanceTo(clock_.manual().Now() + d); }
  TimerState StateOf(const std::string& id) { return Stored(*store_, id)->state; }

  TempDirectory dir_;
  std::shared_ptr<testing::FaultyFileSystem> fs_;
  std::unique_ptr<rocksdb::Env> env_;
  ManualServerClock clock_;
  Metrics metrics_;
  WebhookReceiver receiver_{2};
  std::unique_ptr<TimerStore> store_;
  std::unique_ptr<WebhookClient> client_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

// An outcome that cannot be written is kept and written after a pause: the
// timer does not stay `delivering` until a restart, and is not sent again.
TEST(DispatcherTest, AnOutcomeTheStoreCouldNotWriteIsWrittenOnceItHeals) {
  DispatchFixture f;
  f.receiver_.SetResponder([&](const testing::Delivery&) {
    f.fs_->SetFailing(true);  // the claim is written; the outcome will not be
    return Reply{};
  });
  f.Create("t", kStart + 10);
  f.Advance(milliseconds(20));
  ASSERT_TRUE(f.receiver_.WaitFor(1, milliseconds(10'000)));
  ASSERT_TRUE(Eventually([&] { return f.metrics_.store_write_failures.load() >= 1; }));
  const std::uint64_t failed_writes = f.fs_->failed_writes();
  f.Advance(milliseconds(100));  // less than the first pause: no write tried
  EXPECT_EQ(f.fs_->failed_writes(), failed_writes) << "written again in a spin";
  EXPECT_EQ(f.dispatcher_->in_flight(), 1);
  f.fs_->SetFailing(false);
  for (int i = 0; i < 100 && f.dispatcher_->in_flight() > 0; ++i) {
    f.Advance(milliseconds(100));
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_EQ(f.StateOf("t"), TimerState::kDelivered);
  EXPECT_EQ(f.receiver_.count(), 1u);
  EXPECT_EQ(f.scheduler_->loaded(), 0u);
}

// A claim that cannot be written: the timer fires again after a pause that
// grows, not in a spin, and is delivered once the store heals.
TEST(DispatcherTest, AClaimTheStoreCouldNotWriteIsTriedAgainAfterAPause) {
  DispatchFixture f;
  f.Create("t", kStart + 10);
  f.fs_->SetFailing(true);
  f.Advance(milliseconds(20));
  ASSERT_TRUE(Eventually([&] { return f.metrics_.store_write_failures.load() >= 1; }));
  for (int i = 0; i < 20; ++i) {  // 2 s of the clock
    f.Advance(milliseconds(100));
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_LE(f.metrics_.store_write_failures.load(), 6u) << "claimed again in a spin";
  EXPECT_EQ(f.receiver_.count(), 0u);
  f.fs_->SetFailing(false);
  // The store reopens at most every half second of real time.
  ASSERT_TRUE(Eventually([&] {
    f.Advance(milliseconds(100));
    return f.receiver_.count() > 0;
  }));
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_EQ(f.StateOf("t"), TimerState::kDelivered);
  EXPECT_EQ(f.receiver_.count(), 1u);
}

// "The dispatcher re-checks the wall clock when it claims the timer"
// (docs/server.md): a timer is armed on the steady clock for when the wall
// clock should reach its due time; then the wall clock is stepped back
// 500 ms. When the steady clock gets there, the claim finds the wall clock
// short of the due time and the timer waits for it: it is sent once the
// wall clock reaches due, not 500 ms early, and once.
TEST(DispatcherTest, AWallClockSteppedBackHoldsTheTimerUntilItsDueTime) {
  DispatchFixture f;
  std::atomic<std::int64_t> sent_at_wall_ms{0};
  f.receiver_.SetResponder([&](const testing::Delivery&) {
    std::int64_t none = 0;
    sent_at_wall_ms.compare_exchange_strong(none, f.clock_.WallMs());
    return Reply{};
  });
  const std::int64_t due = kStart + 1000;
  f.Create("t", due);
  f.Advance(milliseconds(100));  // loaded and armed for steady +1000 ms
  f.clock_.StepWall(-500);
  f.Advance(milliseconds(950));  // the arming is passed; the wall clock reads due - 450
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_EQ(f.receiver_.count(), 0u) << "sent with the wall clock " << due - sent_at_wall_ms.load()
                                     << " ms before its due time";
  EXPECT_EQ(f.StateOf("t"), TimerState::kPending);
  f.Advance(milliseconds(400));  // wall clock: due - 50
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_EQ(f.receiver_.count(), 0u);
  f.Advance(milliseconds(60));  // wall clock: due + 10
  ASSERT_TRUE(f.receiver_.WaitFor(1, milliseconds(10'000)));
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_GE(sent_at_wall_ms.load(), due);
  EXPECT_EQ(f.StateOf("t"), TimerState::kDelivered);
  EXPECT_EQ(f.receiver_.count(), 1u);
}

// Attempts given up because the server stops (the drain timed out) write
// nothing: a timer on its last attempt stays `delivering`, for the next
// start to fire, instead of becoming a dead letter that was never sent.
TEST(DispatcherTest, AttemptsAbortedByAStoppingServerStayDelivering) {
  DispatchFixture f;
  f.receiver_.SetResponder([](const testing::Delivery&) { return Reply{0, Reply::Mode::kNeverAnswer}; });
  f.Create("sent", kStart + 10);
  f.Create("queued", kStart + 10);
  f.Advance(milliseconds(20));
  ASSERT_TRUE(f.receiver_.WaitFor(2, milliseconds(10'000)));
  f.scheduler_->Stop();
  f.client_->Stop();
  ASSERT_TRUE(Eventually([&] { return f.dispatcher_->in_flight() == 0; }));
  EXPECT_EQ(f.StateOf("sent"), TimerState::kDelivering);
  EXPECT_EQ(f.StateOf("queued"), TimerState::kDelivering);
  EXPECT_EQ(f.metrics_.failed.load(), 0u);
}

}  // namespace
}  // namespace tickwheel::server
