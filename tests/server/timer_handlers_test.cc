// SPDX-License-Identifier: Apache-2.0
// The timer handlers (server/api/timer_handlers.h) over the real RocksDB
// store on a file system that fails the fsync of the write-ahead log:
// docs/server.md's "a create is answered only once it is fsynced", and the
// same for a reschedule, a cancel and a retry. A mutation whose log sync
// failed is never a 2xx (the client is told to retry with the same id); the
// store heals with the disk, and everything that was acknowledged is there
// after it reopens.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "api/store_calls.h"
#include "api/timer_handlers.h"
#include "common/metrics.h"
#include "common/server_clock.h"
#include "store/rocksdb_timer_store.h"
#include "store_test_util.h"
#include "support/faulty_file_system.h"

namespace tickwheel::server {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

constexpr std::int64_t kStartMs = 1'800'000'000'000;

HttpRequest Request(http::verb method, std::string target, std::string body) {
  HttpRequest req{method, target, 11};
  req.set(http::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

std::string CreateBody(const std::string& id) {
  return R"({"id":")" + id + R"(","delay_ms":60000,"target":{"url":"http://127.0.0.1:1/x"}})";
}

class TimerHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.data_dir = dir_.path();
    auto opened = OpenRocksDbTimerStore(options, env_.get());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
    calls_ = std::make_unique<StoreCalls>(*store_, StoreCallOptions{.probe_every = {}});
    handlers_ = std::make_unique<TimerHandlers>(*calls_, clock_, metrics_, ApiLimits{});
    runner_ = std::thread([this] { ioc_.run(); });
  }

  void TearDown() override {
    work_.reset();
    runner_.join();
    handlers_.reset();
    calls_.reset();
    if (store_) store_->Close();
  }

  // Runs a handler on the test's I/O thread; its answer. Every store call
  // is answered within StoreCallOptions::timeout (10 s), so the bound is
  // only against a hang.
  HttpResponse Run(std::function<asio::awaitable<HttpResponse>()> handler) {
    std::future<HttpResponse> answer = asio::co_spawn(ioc_, std::move(handler), asio::use_future);
    if (answer.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within 60 s";
      std::abort();  // the handler still refers to this test's objects
    }
    return answer.get();
  }

  // A mutation while the log's fsync fails: never a 2xx (a 503 telling the
  // client to retry with the same id), and the failure was that fsync.
  void RefusedWhileTheLogSyncFails(
      const std::string& what, const std::function<asio::awaitable<HttpResponse>()>& mutation) {
    fs_->SetFailingLogSyncs(true);
    const std::uint64_t failed_before = fs_->failed_log_syncs();
    const HttpResponse refused = Run(mutation);
    fs_->SetFailingLogSyncs(false);
    EXPECT_GT(fs_->failed_log_syncs(), failed_before) << what << ": the log was never synced";
    EXPECT_EQ(refused.result_int(), 503) << what << ": answered " << refused.result_int()
                                         << " although the log's fsync failed: " << refused.body();
    EXPECT_NE(refused.body().find("retry it with the same id"), std::string::npos)
        << what << ": " << refused.body();
  }

  // A mutation once the disk works again: the store reopens by itself (at
  // most every 500 ms) and refuses writes until then without making them,
  // so the mutation is sent until it is acknowledged; its answer.
  HttpResponse AcknowledgedOnceHealed(
      const std::string& what, const std::function<asio::awaitable<HttpResponse>()>& mutation) {
    HttpResponse answer;
    for (int i = 0; i < 100; ++i) {
      answer = Run(mutation);
      if (answer.result_int() != 503) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(answer.result_int() / 100, 2) << what << ": " << answer.body();
    return answer;
  }

  TempDirectory dir_;
  std::shared_ptr<testing::FaultyFileSystem> fs_ = std::make_shared<testing::FaultyFileSystem>();
  std::unique_ptr<rocksdb::Env> env_ = testing::EnvOver(fs_);
  ManualServerClock clock_{kStartMs};
  Metrics metrics_;
  std::unique_ptr<TimerStore> store_;
  std::unique_ptr<StoreCalls> calls_;
  std::unique_ptr<TimerHandlers> handlers_;
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(ioc_);
  std::thread runner_;
};

TEST_F(TimerHandlersTest, AFailedLogSyncIsNeverAcknowledgedAndNothingAcknowledgedIsLost) {
  // Each mutation is tried on one timer while the log's fsync fails, then
  // made on another once the disk works. Set up while it works: timers to
  // reschedule and to cancel, and dead letters to retry.
  for (const std::string id : {"reschedule-fail", "reschedule-ok", "cancel-fail", "cancel-ok"}) {
    const HttpRequest create = Request(http::verb::post, "/v1/timers", CreateBody(id));
    const HttpResponse created = Run([&] { return handlers_->Create(create); });
    ASSERT_EQ(created.result_int(), 201) << created.body();
  }
  for (const std::string id : {"retry-fail", "retry-ok"}) {
    TimerRecord dead = Record(id, kStartMs - 1000, TimerState::kFailed);
    dead.attempts = 3;
    Apply(*store_, {dead.id}, [&](StoreTxn& txn) { txn.Put(std::nullopt, dead); });
  }
  const std::int64_t new_fire_at = kStartMs + 3'600'000;
  const std::string patch_body = R"({"fire_at_ms":)" + std::to_string(new_fire_at) + "}";
  const HttpRequest create_fail =
      Request(http::verb::post, "/v1/timers", CreateBody("create-fail"));
  const HttpRequest create_ok = Request(http::verb::post, "/v1/timers", CreateBody("create-ok"));
  const HttpRequest patch_fail =
      Request(http::verb::patch, "/v1/timers/reschedule-fail", patch_body);
  const HttpRequest patch_ok = Request(http::verb::patch, "/v1/timers/reschedule-ok", patch_body);

  // (The handlers take the id by reference: it must outlive the call.)
  const std::string reschedule_fail = "reschedule-fail", reschedule_ok = "reschedule-ok";
  const std::string cancel_fail = "cancel-fail", cancel_ok = "cancel-ok";
  const std::string retry_fail = "retry-fail", retry_ok = "retry-ok";

  RefusedWhileTheLogSyncFails("create", [&] { return handlers_->Create(create_fail); });
  EXPECT_EQ(AcknowledgedOnceHealed("create", [&] { return handlers_->Create(create_ok); })
                .result_int(),
            201);
  RefusedWhileTheLogSyncFails(
      "reschedule", [&] { return handlers_->Reschedule(patch_fail, reschedule_fail); });
  AcknowledgedOnceHealed("reschedule",
                         [&] { return handlers_->Reschedule(patch_ok, reschedule_ok); });
  RefusedWhileTheLogSyncFails("cancel", [&] { return handlers_->Cancel(cancel_fail); });
  AcknowledgedOnceHealed("cancel", [&] { return handlers_->Cancel(cancel_ok); });
  RefusedWhileTheLogSyncFails("retry", [&] { return handlers_->Retry(retry_fail); });
  AcknowledgedOnceHealed("retry", [&] { return handlers_->Retry(retry_ok); });

  // Everything acknowledged is durable: the store closed and opened again
  // on the plain file system (its log replayed). A refused mutation's
  // outcome is unknown (its record may be in the log): the timer is as
  // before it or as after it, nothing else.
  work_.reset();
  runner_.join();
  runner_ = std::thread([] {});
  handlers_.reset();
  calls_.reset();
  store_->Close();
  store_.reset();
  std::unique_ptr<TimerStore> reopened = OpenStore(dir_.path());
  ASSERT_NE(reopened, nullptr);
  auto state = [&](const std::string& id) -> std::optional<TimerState> {
    const std::optional<TimerRecord> r = Stored(*reopened, id);
    return r ? std::optional<TimerState>(r->state) : std::nullopt;
  };
  auto fire_at = [&](const std::string& id) {
    const std::optional<TimerRecord> r = Stored(*reopened, id);
    return r ? r->fire_at_ms : -1;
  };
  EXPECT_EQ(state("create-ok"), TimerState::kPending);
  EXPECT_EQ(fire_at("reschedule-ok"), new_fire_at);
  EXPECT_EQ(state("cancel-ok"), TimerState::kCancelled);
  EXPECT_EQ(state("retry-ok"), TimerState::kPending);
  const std::optional<TimerRecord> retried = Stored(*reopened, "retry-ok");
  ASSERT_TRUE(retried.has_value());
  EXPECT_EQ(retried->attempts, 0u);
  EXPECT_TRUE(!state("create-fail") || state("create-fail") == TimerState::kPending);
  EXPECT_TRUE(fire_at("reschedule-fail") == new_fire_at ||
              fire_at("reschedule-fail") == kStartMs + 60'000);
  EXPECT_TRUE(state("cancel-fail") == TimerState::kPending ||
              state("cancel-fail") == TimerState::kCancelled);
  EXPECT_TRUE(state("retry-fail") == TimerState::kFailed ||
              state("retry-fail") == TimerState::kPending);
  reopened->Close();
}

}  // namespace
}  // namespace tickwheel::server
