// SPDX-License-Identifier: Apache-2.0
// Cache swept over its allocations, also on its timer and report threads
// (alloc_sweep.h says what every sweep checks).
#include "alloc/alloc_sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime_test_util.h"
#include "tickwheel/cache.h"
#include "tickwheel/clock.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::WithinDeadline;
using testing::alloc::FailOthers;

// ---------------------------------------------------------------------------
// Cache.

class CacheAllocTest : public ::testing::Test {
 protected:
  using TrackedCache = Cache<int, Tracked>;
  // Keys 0..7 (the limit), one shard, no jitter; key 0 expires at 1 ms but
  // the wheel is too coarse for its timer to have run.
  void Make() {
    cache_ = std::make_unique<TrackedCache>(
        seconds(10), CacheOptions{.limit = 8, .jitter = 0.0,
                                  .resolution = std::chrono::hours(1),
                                  .shards = 1, .clock = &clock_});
    raw_ = cache_.get();
    for (int k = 0; k < 8; ++k) {
      cache_->Set(k, Tracked(100 + k, &call_back_),
                  k == 0 ? milliseconds(1) : seconds(10));
    }
    clock_.Advance(milliseconds(2));
  }
  // Key -> value of every live entry, read without changing recency.
  std::map<int, int> Contents() {
    std::map<int, int> contents;
    for (int k = 0; k < 40; ++k) {
      if (std::optional<Tracked> v = cache_->Get(k)) contents[k] = v->value;
    }
    return contents;
  }

  ManualClock clock_;
  TrackedCache* raw_ = nullptr;
  std::function<void()> call_back_ = [this] { raw_->size(); };
  std::unique_ptr<TrackedCache> cache_;
};

TEST_F(CacheAllocTest, EveryCallHappensOrChangesNothing) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("Set of a new key (evicting one)", [&](long n) {
      Make();
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        cache_->Set(20, Tracked(200, &call_back_));
      });
      std::map<int, int> want = {{1, 101}, {2, 102}, {3, 103}, {4, 104},
                                 {5, 105}, {6, 106}, {7, 107}};
      if (!threw) want[20] = 200;  // evicted: 0 (expired anyway)
      EXPECT_EQ(Contents(), want);
      cache_.reset();
      return injected;
    }), 0);
    Sweep("Set of a key that exists, Get of an expired one, Del", [&](long n) {
      Make();
      bool injected;
      std::optional<Tracked> got;
      bool deleted = false;
      const bool threw = Throws(n, injected, [&] {
        cache_->Set(3, Tracked(300, &call_back_));
        got = cache_->Get(0);
        deleted = cache_->Del(5);
      });
      EXPECT_FALSE(threw);
      EXPECT_FALSE(got.has_value());
      EXPECT_TRUE(deleted);
      EXPECT_EQ(Contents(), (std::map<int, int>{{1, 101}, {2, 102}, {3, 300},
                                                {4, 104}, {6, 106}, {7, 107}}));
      cache_.reset();
      return injected;
    });
    EXPECT_GT(Sweep("Take of a missing key", [&](long n) {
      Make();
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        cache_->Take(30, [&] { return Tracked(130, &call_back_); });
      });
      EXPECT_EQ(Contents().count(30), threw ? 0u : 1u);
      // A Take that failed left no fetch behind for others to wait on.
      EXPECT_EQ(cache_->Take(31, [&] { return Tracked(131); }).value, 131);
      cache_.reset();
      return injected;
    }), 0);
  });
  EXPECT_EQ(live_values.load(), 0);
}

// The cache's timer thread runs out of memory freeing expired entries:
// retried, and every entry is freed in the end (never returned expired).
TEST_F(CacheAllocTest, TimerThreadOutOfMemoryFreesEveryEntryInTheEnd) {
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 6; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the timer thread");
      cache_ = std::make_unique<TrackedCache>(
          milliseconds(10), CacheOptions{.jitter = 0.0,
                                         .resolution = milliseconds(1),
                                         .shards = 2, .clock = &clock_});
      raw_ = cache_.get();
      for (int key = 0; key < 40; ++key) cache_->Set(key, Tracked(key, &call_back_));
      {
        FailOthers fail(k);
        for (int t = 0; t < 30 && fail.failed() < k; ++t) {
          clock_.Advance(milliseconds(1));
        }
      }
      clock_.Advance(milliseconds(20));
      EXPECT_EQ(cache_->size(), 0u);
      EXPECT_EQ(cache_->stats().expirations, 40u);
      cache_.reset();
    }
  });
  EXPECT_EQ(live_values.load(), 0);
}

// The report thread runs out of memory inside `report` (which allocates,
// as building a log line does; the report thread itself allocates
// nothing): what `report` threw is counted (Cache::callback_errors())
// and handed to on_error, the thread goes on, and every later interval is
// reported. (Before: std::terminate.)
TEST_F(CacheAllocTest, ReportThreadOutOfMemoryIsCountedAndReportingGoesOn) {
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 3; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the report thread");
      std::atomic<long> calls{0};
      std::atomic<long> completed{0};
      std::atomic<long> bad_allocs{0};
      cache_ = std::make_unique<TrackedCache>(
          std::chrono::hours(24),
          CacheOptions{.jitter = 0.0,
                       .resolution = std::chrono::hours(1),
                       .shards = 1,
                       .clock = &clock_,
                       .report_interval = minutes(1),
                       .report =
                           [&](const CacheStats& stats) {
                             ++calls;
                             std::string line(64, ' ');  // one allocation
                             line[0] = static_cast<char>('0' + stats.size % 10);
                             ++completed;
                           },
                       .on_error =
                           [&](std::exception_ptr e) {
                             try {
                               std::rethrow_exception(e);
                             } catch (const std::bad_alloc&) {
                               ++bad_allocs;
                             } catch (...) {
                             }
                           }});
      raw_ = cache_.get();
      cache_->Set(1, Tracked(1, &call_back_));
      clock_.Advance(minutes(1));  // a first report, and the timer thread's
                                   // first pass: its lists have room now
      EXPECT_EQ(completed.load(), 1);
      {
        FailOthers fail(k);
        for (int t = 0; t < 10 && fail.failed() < k; ++t) {
          clock_.Advance(minutes(1));
        }
        EXPECT_EQ(fail.failed(), k);
      }
      const long before = calls.load();
      clock_.Advance(minutes(1));
      clock_.Advance(minutes(1));
      EXPECT_EQ(calls.load(), before + 2);  // reporting goes on
      EXPECT_EQ(completed.load(), calls.load() - k);
      EXPECT_EQ(bad_allocs.load(), k);
      EXPECT_EQ(cache_->callback_errors(), static_cast<std::uint64_t>(k));
      EXPECT_THAT(cache_->Get(1), ::testing::Optional(::testing::Field(
                                      &Tracked::value, 1)));
      cache_.reset();
    }
  });
  EXPECT_EQ(live_values.load(), 0);
}

}  // namespace
}  // namespace tickwheel
