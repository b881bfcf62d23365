// Delivery in-process, against real receivers on loopback: the webhook
// client's connections, and the dispatcher over a store that fails.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "common/metrics.h"
#include "common/server_clock.h"
#include "delivery/dispatcher.h"
#include "delivery/retry_after.h"
#include "delivery/webhook_client.h"
#include "scheduler/scheduler.h"
#include "store/rocksdb_timer_store.h"
#include "store_test_util.h"
#include "support/faulty_file_system.h"
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

// Posts and waits for the outcome.
AttemptResult PostAndWait(WebhookClient& client, WebhookRequest request) {
  std::promise<AttemptResult> done;
  client.Post(std::move(request), [&](AttemptResult r) { done.set_value(std::move(r)); });
  return done.get_future().get();
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
  AttemptResult silent = PostAndWait(client, RequestTo(receiver));
  EXPECT_EQ(silent.kind, AttemptResult::Kind::kFailed);
  EXPECT_TRUE(silent.unanswered);
  EXPECT_NE(silent.error.find("timed out"), std::string::npos) << silent.error;
  receiver.SetResponder([](const testing::Delivery&) { return Reply{200, Reply::Mode::kAnswer, milliseconds(1000)}; });
  EXPECT_EQ(PostAndWait(client, RequestTo(receiver)).kind, AttemptResult::Kind::kFailed);
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
                                             [this](std::vector<DueEntry> due) {
                                               dispatcher_->OnFired(std::move(due));
                                             });
    dispatcher_ = std::make_unique<Dispatcher>(*store_, *scheduler_, clock_, *client_, nullptr, metrics_);
    store_->SetDueListener([this](const std::string& id, std::optional<std::int64_t> due) {
      scheduler_->OnDueChange(id, due);
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
