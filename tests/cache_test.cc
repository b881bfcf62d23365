// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_util.h"

namespace tickwheel {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::Eventually;
using ::testing::HasSubstr;
using ::testing::Optional;

using StringCache = Cache<std::string, std::string>;

class CacheTest : public ::testing::Test {
 protected:
  CacheOptions Options() { return {.clock = &clock_}; }
  CacheOptions ExactOptions() { return {.jitter = 0.0, .clock = &clock_}; }

  ManualClock clock_;
};

// go-zero's TestCacheSet.
TEST_F(CacheTest, SetStoresWithTheDefaultOrItsOwnTtl) {
  StringCache cache(seconds(2), Options());
  cache.Set("first", "first element");
  cache.Set("second", "second element", seconds(3));
  EXPECT_THAT(cache.Get("first"), Optional(std::string("first element")));
  EXPECT_THAT(cache.Get("second"), Optional(std::string("second element")));
}

// go-zero's TestCacheDel.
TEST_F(CacheTest, DelRemovesOnlyItsKey) {
  StringCache cache(seconds(2), Options());
  cache.Set("first", "first element");
  cache.Set("second", "second element");
  EXPECT_TRUE(cache.Del("first"));
  EXPECT_FALSE(cache.Del("first"));
  EXPECT_EQ(cache.Get("first"), std::nullopt);
  EXPECT_THAT(cache.Get("second"), Optional(std::string("second element")));
  EXPECT_EQ(cache.size(), 1u);
}

// go-zero's TestCacheTake. The fetch holds on until all 100 callers have
// looked the key up (each counts its miss before it joins the fetch), so
// they are all concurrent with it, without relying on a sleep.
TEST_F(CacheTest, ConcurrentTakesOfAMissingKeyFetchOnce) {
  constexpr int kCallers = 100;
  StringCache cache(seconds(2), Options());
  std::atomic<int> fetches{0};
  std::atomic<int> right_values{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&] {
      const std::string value = cache.Take("first", [&] {
        ++fetches;
        EXPECT_TRUE(
            Eventually([&] { return cache.stats().misses == kCallers; }));
        return std::string("first element");
      });
      if (value == "first element") ++right_values;
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(fetches.load(), 1);
  EXPECT_EQ(right_values.load(), kCallers);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_THAT(cache.Get("first"), Optional(std::string("first element")));
}

// go-zero's TestCacheTakeExists.
TEST_F(CacheTest, TakeOfAPresentKeyDoesNotFetch) {
  StringCache cache(seconds(2), Options());
  std::atomic<int> fetches{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 100; ++i) {
    callers.emplace_back([&] {
      cache.Set("first", "first element");
      cache.Take("first", [&] {
        ++fetches;
        return std::string("fetched");
      });
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(fetches.load(), 0);
  EXPECT_EQ(cache.size(), 1u);
}

// go-zero's TestCacheTakeError.
TEST_F(CacheTest, ConcurrentTakesShareTheFetchError) {
  constexpr int kCallers = 100;
  StringCache cache(seconds(2), Options());
  std::atomic<int> fetches{0};
  std::atomic<int> dummy_errors{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&] {
      try {
        cache.Take("first", [&]() -> std::string {
          ++fetches;
          EXPECT_TRUE(
              Eventually([&] { return cache.stats().misses == kCallers; }));
          throw std::runtime_error("dummy");
        });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "dummy") ++dummy_errors;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(fetches.load(), 1);
  EXPECT_EQ(dummy_errors.load(), kCallers);
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(CacheTest, TakeCachesAValueButNotAnError) {
  StringCache cache(seconds(2), Options());
  int fetches = 0;
  EXPECT_THROW(cache.Take("k",
                          [&]() -> std::string {
                            ++fetches;
                            throw std::runtime_error("down");
                          }),
               std::runtime_error);
  auto fetch = [&] {
    ++fetches;
    return std::string("v");
  };
  EXPECT_EQ(cache.Take("k", fetch), "v");
  EXPECT_EQ(cache.Take("k", fetch), "v");
  EXPECT_EQ(fetches, 2);
}

// go-zero's TestCacheWithLruEvicts.
TEST_F(CacheTest, LruLimitEvictsTheLeastRecentlyUsed) {
  StringCache cache(minutes(1), {.limit = 3, .clock = &clock_});
  cache.Set("first", "first element");
  cache.Set("second", "second element");
  cache.Set("third", "third element");
  cache.Set("fourth", "fourth element");
  EXPECT_EQ(cache.Get("first"), std::nullopt);
  EXPECT_THAT(cache.Get("second"), Optional(std::string("second element")));
  EXPECT_THAT(cache.Get("third"), Optional(std::string("third element")));
  EXPECT_THAT(cache.Get("fourth"), Optional(std::string("fourth element")));
}

// go-zero's TestCacheWithLruEvicted: a Get keeps a key.
TEST_F(CacheTest, LruGetMakesAKeyRecent) {
  StringCache cache(minutes(1), {.limit = 3, .clock = &clock_});
  cache.Set("first", "first element");
  cache.Set("second", "second element");
  cache.Set("third", "third element");
  cache.Set("fourth", "fourth element");
  EXPECT_EQ(cache.Get("first"), std::nullopt);
  EXPECT_THAT(cache.Get("second"), Optional(std::string("second element")));
  cache.Set("fifth", "fifth element");
  cache.Set("sixth", "sixth element");
  EXPECT_EQ(cache.Get("third"), std::nullopt);
  EXPECT_EQ(cache.Get("fourth"), std::nullopt);
  EXPECT_THAT(cache.Get("second"), Optional(std::string("second element")));
  EXPECT_EQ(cache.stats().evictions, 3u);
  EXPECT_EQ(cache.size(), 3u);
}

TEST_F(CacheTest, LimitIsSplitExactlyAmongShards) {
  Cache<int, int> cache(minutes(1),
                        {.limit = 10, .shards = 4, .clock = &clock_});
  for (int i = 0; i < 1000; ++i) cache.Set(i, i);
  EXPECT_LE(cache.size(), 10u);
  EXPECT_EQ(cache.stats().evictions, 1000u - cache.size());
}

// "At most `limit` entries" holds with more shards asked for than the
// limit: the cache uses no more shards than the limit (each shard holds at
// least one entry; 8 shards of one held 8 entries for a limit of 2).
TEST_F(CacheTest, LimitHoldsWithMoreShardsThanTheLimit) {
  Cache<int, int> cache(minutes(1),
                        {.limit = 2, .shards = 8, .clock = &clock_});
  for (int i = 0; i < 100; ++i) {
    cache.Set(i, i);
    ASSERT_LE(cache.size(), 2u) << "after Set(" << i << ")";
  }
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.stats().evictions, 98u);
}

TEST_F(CacheTest, ExpiredEntryIsNeverReturnedEvenBeforeItsTimerRuns) {
  // A coarse wheel: the timer runs up to an hour after the expiry.
  StringCache cache(seconds(10),
                    {.jitter = 0.0, .resolution = hours(1), .clock = &clock_});
  cache.Set("k", "v");
  clock_.Advance(seconds(10) - Duration(1));
  EXPECT_THAT(cache.Get("k"), Optional(std::string("v")));
  clock_.Advance(Duration(1));
  EXPECT_EQ(cache.Get("k"), std::nullopt);
  EXPECT_EQ(cache.Take("k", [] { return std::string("fresh"); }), "fresh");
}

// The fuzzers found now + Duration::max() overflowing in the runtime; the
// cache's expiry did the same with no jitter (undefined behaviour; in
// practice an expiry in the past, so the entry was never returned).
TEST_F(CacheTest, LongestTtlKeepsTheEntry) {
  StringCache cache(Duration::max(), ExactOptions());
  cache.Set("k", "v");
  clock_.Advance(hours(24 * 365));
  EXPECT_THAT(cache.Get("k"), Optional(std::string("v")));
}

TEST_F(CacheTest, TimerFreesExpiredEntries) {
  Cache<int, int> cache(seconds(1), ExactOptions());
  for (int i = 0; i < 100; ++i) cache.Set(i, i);
  clock_.Advance(seconds(1) + milliseconds(100));  // ttl + resolution
  EXPECT_TRUE(Eventually([&] { return cache.size() == 0; }));
  EXPECT_EQ(cache.stats().expirations, 100u);
}

TEST_F(CacheTest, PerSetTtlOverridesTheDefault) {
  StringCache cache(seconds(10), ExactOptions());
  cache.Set("short", "s", seconds(5));
  cache.Set("default", "d");
  clock_.Advance(seconds(5));
  EXPECT_EQ(cache.Get("short"), std::nullopt);
  EXPECT_THAT(cache.Get("default"), Optional(std::string("d")));
  clock_.Advance(seconds(5));
  EXPECT_EQ(cache.Get("default"), std::nullopt);
}

// go-zero's TestCacheSetRefreshesExpiry.
TEST_F(CacheTest, SetRefreshesTheExpiry) {
  StringCache cache(seconds(2), ExactOptions());
  cache.Set("key", "1");
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(seconds(1));
    cache.Set("key", "2");
  }
  EXPECT_THAT(cache.Get("key"), Optional(std::string("2")));
  clock_.Advance(seconds(2));
  EXPECT_EQ(cache.Get("key"), std::nullopt);
}

// A Set that moves the expiry later leaves the timer where it was; when it
// fires, the timer must follow the entry, not free it or drop it.
TEST_F(CacheTest, TimerFollowsAnEntryWhoseExpiryMovedLater) {
  Cache<int, int> cache(seconds(1), ExactOptions());
  cache.Set(1, 1);
  clock_.Advance(milliseconds(500));
  cache.Set(1, 2);  // now expires at 1.5 s; the timer still says 1 s
  clock_.Advance(milliseconds(600));  // the timer fired and re-armed
  EXPECT_EQ(cache.Get(1), 2);
  EXPECT_EQ(cache.stats().expirations, 0u);
  clock_.Advance(milliseconds(500));  // past 1.5 s and a resolution
  EXPECT_TRUE(Eventually([&] { return cache.size() == 0; }));
  EXPECT_EQ(cache.stats().expirations, 1u);
}

TEST_F(CacheTest, ShorterTtlMovesTheTimerEarlier) {
  Cache<int, int> cache(seconds(3600), ExactOptions());
  cache.Set(1, 1);
  cache.Set(1, 2, seconds(1));
  clock_.Advance(seconds(1) + milliseconds(100));
  EXPECT_TRUE(Eventually([&] { return cache.size() == 0; }));
}

TEST_F(CacheTest, ExpiryIsJitteredWithinFivePercent) {
  Cache<int, int> cache(seconds(100), Options());
  constexpr int kKeys = 1000;
  for (int i = 0; i < kKeys; ++i) cache.Set(i, i);
  auto live = [&] {
    int n = 0;
    for (int i = 0; i < kKeys; ++i) n += cache.Get(i).has_value() ? 1 : 0;
    return n;
  };
  clock_.Advance(seconds(95) - Duration(1));
  EXPECT_EQ(live(), kKeys);
  clock_.Advance(seconds(5));  // at 100 s about half have expired
  const int at_ttl = live();
  EXPECT_GT(at_ttl, kKeys / 4);
  EXPECT_LT(at_ttl, kKeys * 3 / 4);
  clock_.Advance(seconds(5));
  EXPECT_EQ(live(), 0);
}

TEST_F(CacheTest, StatsCountHitsMissesEvictionsAndExpirations) {
  Cache<int, int> cache(seconds(10),
                        {.limit = 2, .jitter = 0.0, .clock = &clock_});
  cache.Set(1, 1);
  cache.Set(2, 2);
  cache.Get(1);                     // hit
  cache.Get(3);                     // miss
  cache.Set(3, 3);                  // evicts 2
  cache.Take(1, [] { return 0; });  // hit
  cache.Take(4, [] { return 4; });  // miss; evicts 3
  clock_.Advance(seconds(10));
  cache.Get(1);  // miss, and expired
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.evictions, 2u);
  EXPECT_GE(stats.expirations, 1u);
  EXPECT_DOUBLE_EQ(stats.hit_ratio(), 0.4);
}

// CacheStats keeps the five fields it had in 0.2.0 (issue 17: code written
// against the headers must still compile), so this binding of them
// compiles: a field added to CacheStats breaks the build here.
TEST_F(CacheTest, StatsBindToTheirFiveNames) {
  Cache<int, int> cache(seconds(10),
                        {.limit = 1, .jitter = 0.0, .clock = &clock_});
  cache.Set(1, 1);
  cache.Get(1);                 // hit
  cache.Set(2, 2);              // evicts 1
  cache.Get(1);                 // miss
  clock_.Advance(seconds(11));  // 2 expires and its timer frees it
  auto [hits, misses, evictions, expirations, size] = cache.stats();
  EXPECT_EQ(hits, 1u);
  EXPECT_EQ(misses, 1u);
  EXPECT_EQ(evictions, 1u);
  EXPECT_EQ(expirations, 1u);
  EXPECT_EQ(size, 0u);
}

TEST_F(CacheTest, ReportsEachIntervalsCounts) {
  std::vector<CacheStats> reports;  // written by the report thread only
  Cache<int, int> cache(
      hours(1), {.clock = &clock_,
                 .report_interval = minutes(1),
                 .report = [&](const CacheStats& s) { reports.push_back(s); }});
  cache.Set(1, 1);
  for (int i = 0; i < 3; ++i) cache.Get(1);
  cache.Get(2);
  clock_.Advance(minutes(1));  // returns after the report ran
  clock_.Advance(minutes(1));
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].hits, 3u);
  EXPECT_EQ(reports[0].misses, 1u);
  EXPECT_EQ(reports[0].size, 1u);
  EXPECT_EQ(reports[1].hits, 0u);
  EXPECT_EQ(reports[1].misses, 0u);
}

TEST_F(CacheTest, DefaultReportIsALineOnStderr) {
  ::testing::internal::CaptureStderr();
  {
    Cache<int, int> cache(
        hours(1),
        {.clock = &clock_, .report_interval = minutes(1), .name = "users"});
    cache.Get(1);
    clock_.Advance(minutes(1));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("cache(users)"));
  EXPECT_THAT(err, HasSubstr("lookups 1, hit ratio 0.0%"));
}

// A `report` that throws: what it threw is counted (callback_errors(),
// before on_error sees it) and goes to on_error, on the report thread, and
// the cache goes on, reporting every later interval with that interval's
// counts (CacheOptions::on_error). Before: std::terminate.
TEST_F(CacheTest, AThrowingReportGoesToOnErrorAndReportingGoesOn) {
  std::vector<CacheStats> reports;    // written by the report thread only
  std::vector<std::string> errors;    // likewise
  std::vector<std::uint64_t> counted;  // likewise: in on_error
  std::vector<std::uint64_t> seen;     // likewise: in each report
  Cache<int, int>* self = nullptr;     // set before the first report
  Cache<int, int> cache(
      hours(1),
      {.clock = &clock_,
       .report_interval = minutes(1),
       .report =
           [&](const CacheStats& s) {
             reports.push_back(s);
             seen.push_back(self->callback_errors());
             if (reports.size() == 1) throw std::runtime_error("report down");
           },
       .on_error =
           [&](std::exception_ptr e) {
             counted.push_back(self->callback_errors());
             try {
               std::rethrow_exception(e);
             } catch (const std::exception& what) {
               errors.push_back(what.what());
             }
           }});
  self = &cache;
  EXPECT_EQ(cache.callback_errors(), 0u);
  cache.Set(1, 1);
  cache.Get(1);
  clock_.Advance(minutes(1));  // returns after the report ran (and threw)
  EXPECT_EQ(errors, std::vector<std::string>{"report down"});
  EXPECT_EQ(counted, std::vector<std::uint64_t>{1});
  EXPECT_EQ(cache.callback_errors(), 1u);
  cache.Get(1);
  cache.Get(1);
  cache.Get(2);
  clock_.Advance(minutes(1));
  clock_.Advance(minutes(1));
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].hits, 1u);
  EXPECT_EQ(reports[1].hits, 2u);  // the second interval's own counts
  EXPECT_EQ(reports[1].misses, 1u);
  // Since construction: the first report's throw, from the second on.
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 1}));
  EXPECT_EQ(errors.size(), 1u);
  EXPECT_EQ(cache.callback_errors(), 1u);
  EXPECT_THAT(cache.Get(1), Optional(1));
}

// Without on_error, what `report` threw is one line on stderr; an on_error
// that throws itself (it must not) is one line on stderr too. Neither ends
// the process or the reporting.
TEST_F(CacheTest, AThrowingReportWithoutOnErrorIsALineOnStderr) {
  for (const bool throwing_on_error : {false, true}) {
    SCOPED_TRACE(throwing_on_error ? "on_error throws" : "no on_error");
    std::atomic<int> reports{0};
    std::function<void(std::exception_ptr)> on_error;
    if (throwing_on_error) {
      on_error = [](std::exception_ptr) {
        throw std::logic_error("on_error down");
      };
    }
    ::testing::internal::CaptureStderr();
    {
      Cache<int, int> cache(
          hours(1), {.clock = &clock_,
                     .report_interval = minutes(1),
                     .report =
                         [&](const CacheStats&) {
                           ++reports;
                           throw std::runtime_error("report down");
                         },
                     .on_error = on_error});
      clock_.Advance(minutes(1));
      clock_.Advance(minutes(1));
      EXPECT_EQ(cache.callback_errors(), 2u);  // counted all the same
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(reports.load(), 2);
    if (throwing_on_error) {
      EXPECT_THAT(err, HasSubstr("tickwheel::Cache: the on_error handler "
                                 "threw: on_error down"));
      EXPECT_THAT(err, ::testing::Not(HasSubstr("report down")));
    } else {
      EXPECT_THAT(err, HasSubstr("tickwheel::Cache: user code threw: "
                                 "report down"));
    }
  }
}

TEST_F(CacheTest, RejectsBadArgumentsNamingThem) {
  auto message = [](auto make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_EQ(message([] { StringCache c(Duration::zero()); }),
            "tickwheel::Cache: ttl must be positive, got 0ns");
  EXPECT_EQ(message([] { StringCache c(seconds(1), {.jitter = 1.0}); }),
            "tickwheel::Cache: jitter must be in [0, 1), got 1.000000");
  EXPECT_EQ(
      message([] { StringCache c(seconds(1), {.resolution = Duration(-1)}); }),
      "tickwheel::Cache: resolution must be positive, got -1ns");
  StringCache cache(seconds(1), Options());
  EXPECT_EQ(message([&] { cache.Set("k", "v", seconds(-1)); }),
            "tickwheel::Cache: ttl must be positive, got -1000000000ns");
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace tickwheel
