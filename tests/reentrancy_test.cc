// SPDX-License-Identifier: Apache-2.0
// User code never runs under a lock of the library: values, keys and
// callbacks whose destructors call back into the TimerService, TimingWheel
// or Cache that held them, at every place where the library lets one go.
// Before the fix each of these destroyed the object under the shard lock
// and the call back deadlocked; the watchdog turns that into a failure.
// One shard everywhere (except where two are the point), so that the call
// back needs the very lock a broken library would hold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime_test_util.h"
#include "tickwheel/cache.h"
#include "tickwheel/clock.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/timer_service.h"
#include "tickwheel/timing_wheel.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Gate;
using testing::OnDestroy;
using testing::WithinDeadline;

// A value (or a callback's capture) that runs `fn` when its last copy goes.
using Hook = std::shared_ptr<OnDestroy>;
Hook MakeHook(std::function<void()> fn) {
  return std::make_shared<OnDestroy>(std::move(fn));
}

// ---------------------------------------------------------------------------
// TimerService: callbacks whose destructors use the service.

class TimerServiceReentrancyTest : public ::testing::Test {
 protected:
  TimerServiceReentrancyTest()
      : service_(std::make_unique<TimerService>(TimerServiceOptions{
            .tick = milliseconds(1), .workers = 1, .shards = 1,
            .clock = &clock_})) {}

  // A callback that holds the only reference to a hook running `fn`.
  TimerService::Callback HookedCallback(std::function<void()> fn) {
    return [hook = MakeHook(std::move(fn))] {};
  }

  ManualClock clock_;
  std::unique_ptr<TimerService> service_;
};

TEST_F(TimerServiceReentrancyTest, CancelDestroysTheCallbackAfterUnlocking) {
  const TimerId other = service_->After(hours(1), [] {});
  bool called_back = false;
  const TimerId id = service_->After(hours(1), HookedCallback([&] {
    EXPECT_TRUE(service_->Cancel(other));
    EXPECT_EQ(service_->size(), 0u);
    called_back = true;
  }));
  WithinDeadline("TimerService::Cancel",
                 [&] { EXPECT_TRUE(service_->Cancel(id)); });
  EXPECT_TRUE(called_back);
}

TEST_F(TimerServiceReentrancyTest, StopDestroysCallbacksAfterUnlocking) {
  int called_back = 0;
  for (int i = 0; i < 3; ++i) {
    service_->After(hours(1), HookedCallback([&] {
      EXPECT_FALSE(service_->After(hours(1), [] {}).valid());
      EXPECT_EQ(service_->size(), 0u);
      ++called_back;
    }));
  }
  service_->Every(hours(1), HookedCallback([&] { ++called_back; }));
  WithinDeadline("TimerService::Stop", [&] { service_->Stop(); });
  EXPECT_EQ(called_back, 4);
}

TEST_F(TimerServiceReentrancyTest, DestructorDestroysCallbacksThatCallIt) {
  std::atomic<int> called_back{0};
  TimerService* service = service_.get();  // service_ is null while it goes
  service_->After(hours(1), HookedCallback([&] {
    EXPECT_EQ(service->size(), 0u);  // stopping: nothing will run
    EXPECT_FALSE(service->Cancel(TimerId()));
    ++called_back;
  }));
  WithinDeadline("~TimerService", [&] { service_.reset(); });
  EXPECT_EQ(called_back.load(), 1);
}

TEST_F(TimerServiceReentrancyTest, RanCallbackIsDestroyedUnderNoLock) {
  Gate destroyed;
  service_->After(milliseconds(1), HookedCallback([&] {
    EXPECT_TRUE(service_->After(hours(1), [] {}).valid());
    EXPECT_EQ(service_->size(), 1u);
    destroyed.Open();
  }));
  WithinDeadline("a one-shot's run", [&] {
    clock_.Advance(milliseconds(1));
    EXPECT_TRUE(destroyed.Wait());
  });
}

TEST_F(TimerServiceReentrancyTest, RepeatCancelledInItsRunIsDestroyedUnderNoLock) {
  Gate destroyed;
  auto id = std::make_shared<TimerId>();
  TimerService* service = service_.get();
  *id = service->Every(milliseconds(1),
                       [service, id, hook = MakeHook([&] {
                          EXPECT_EQ(service->size(), 0u);
                          destroyed.Open();
                        })] { EXPECT_TRUE(service->Cancel(*id)); });
  WithinDeadline("a repeat cancelled in its run", [&] {
    clock_.Advance(milliseconds(1));
    EXPECT_TRUE(destroyed.Wait());
  });
}

// ---------------------------------------------------------------------------
// TimingWheel: values (and keys) whose destructors use the wheel.

using HookWheel = TimingWheel<int, Hook>;

class TimingWheelReentrancyTest : public ::testing::Test {
 protected:
  void Make(std::size_t shards = 1) {
    wheel_ = std::make_unique<HookWheel>(
        milliseconds(1), [](const int&, const Hook&) {},
        TimingWheelOptions{.workers = 1, .shards = shards, .clock = &clock_});
  }

  ManualClock clock_;
  std::unique_ptr<HookWheel> wheel_;
};

TEST_F(TimingWheelReentrancyTest, SetTimerDestroysTheReplacedValueAfterUnlocking) {
  Make();
  ASSERT_TRUE(wheel_->SetTimer(2, nullptr, hours(1)));
  bool called_back = false;
  ASSERT_TRUE(wheel_->SetTimer(1, MakeHook([&] {
    EXPECT_TRUE(wheel_->RemoveTimer(2));
    EXPECT_EQ(wheel_->size(), 1u);
    called_back = true;
  }), hours(1)));
  WithinDeadline("TimingWheel::SetTimer replacing a value",
                 [&] { EXPECT_TRUE(wheel_->SetTimer(1, nullptr, hours(1))); });
  EXPECT_TRUE(called_back);
}

TEST_F(TimingWheelReentrancyTest, RemoveTimerDestroysTheValueAfterUnlocking) {
  Make();
  ASSERT_TRUE(wheel_->SetTimer(2, nullptr, hours(1)));
  bool called_back = false;
  ASSERT_TRUE(wheel_->SetTimer(1, MakeHook([&] {
    EXPECT_TRUE(wheel_->MoveTimer(2, hours(2)));
    EXPECT_EQ(wheel_->size(), 1u);
    called_back = true;
  }), hours(1)));
  WithinDeadline("TimingWheel::RemoveTimer",
                 [&] { EXPECT_TRUE(wheel_->RemoveTimer(1)); });
  EXPECT_TRUE(called_back);
}

TEST_F(TimingWheelReentrancyTest, StopDestroysValuesAfterUnlocking) {
  Make();
  int called_back = 0;
  for (int key = 0; key < 3; ++key) {
    ASSERT_TRUE(wheel_->SetTimer(key, MakeHook([&] {
      EXPECT_FALSE(wheel_->SetTimer(7, nullptr, hours(1)));
      EXPECT_FALSE(wheel_->RemoveTimer(0));
      EXPECT_EQ(wheel_->size(), 0u);
      ++called_back;
    }), hours(1)));
  }
  WithinDeadline("TimingWheel::Stop", [&] { wheel_->Stop(); });
  EXPECT_EQ(called_back, 3);
}

// SetTimers holds two shards' locks at once (the one it works on and the
// next): a replaced value that called the other shard could deadlock ABBA
// with another batch. Destroyed after every lock is released, it cannot.
TEST_F(TimingWheelReentrancyTest, SetTimersDestroysReplacedValuesAfterUnlocking) {
  Make(/*shards=*/2);
  const std::vector<int> keys = {0, 1, 2, 3, 4, 5, 6, 7};
  int in_shard_0 = 0;
  for (int key : keys) {
    in_shard_0 += internal::ShardIndex(std::hash<int>{}(key), 2) == 0 ? 1 : 0;
  }
  ASSERT_GT(in_shard_0, 0);
  ASSERT_LT(in_shard_0, static_cast<int>(keys.size()));
  int called_back = 0;
  for (int key : keys) {
    ASSERT_TRUE(wheel_->SetTimer(key, MakeHook([&] {
      EXPECT_EQ(wheel_->size(), keys.size());  // every shard's lock
      ++called_back;
    }), hours(1)));
  }
  std::vector<Hook> values(keys.size());
  std::vector<Duration> delays(keys.size(), hours(2));
  WithinDeadline("TimingWheel::SetTimers replacing values", [&] {
    EXPECT_EQ(wheel_->SetTimers(keys, values, delays), keys.size());
  });
  EXPECT_EQ(called_back, static_cast<int>(keys.size()));
}

TEST_F(TimingWheelReentrancyTest, RemoveTimersDestroysValuesAfterUnlocking) {
  Make(/*shards=*/2);
  const std::vector<int> keys = {0, 1, 2, 3, 4, 5};
  int called_back = 0;
  for (int key : keys) {
    ASSERT_TRUE(wheel_->SetTimer(key, MakeHook([&] {
      wheel_->size();
      EXPECT_FALSE(wheel_->RemoveTimer(100));
      ++called_back;
    }), hours(1)));
  }
  WithinDeadline("TimingWheel::RemoveTimers", [&] {
    EXPECT_EQ(wheel_->RemoveTimers(keys), keys.size());
  });
  EXPECT_EQ(called_back, static_cast<int>(keys.size()));
}

TEST_F(TimingWheelReentrancyTest, DrainDestroysValuesAfterUnlocking) {
  Make(/*shards=*/2);
  int called_back = 0;
  for (int key = 0; key < 4; ++key) {
    ASSERT_TRUE(wheel_->SetTimer(key, MakeHook([&] {
      EXPECT_TRUE(wheel_->SetTimer(100 + called_back, nullptr, hours(1)));
      ++called_back;
    }), hours(1)));
  }
  int drained = 0;
  WithinDeadline("TimingWheel::Drain", [&] {
    EXPECT_TRUE(wheel_->Drain([&](const int&, const Hook&) {
      EXPECT_EQ(wheel_->size(), 0u);  // fn runs under no lock too
      ++drained;
    }));
  });
  EXPECT_EQ(drained, 4);
  EXPECT_EQ(called_back, 4);
  EXPECT_EQ(wheel_->size(), 4u);
}

TEST_F(TimingWheelReentrancyTest, FiredValueIsDestroyedAfterExecuteUnderNoLock) {
  Make();
  Gate destroyed;
  ASSERT_TRUE(wheel_->SetTimer(1, MakeHook([&] {
    EXPECT_TRUE(wheel_->SetTimer(2, nullptr, hours(1)));
    destroyed.Open();
  }), milliseconds(1)));
  WithinDeadline("a fired value's destruction", [&] {
    clock_.Advance(milliseconds(1));
    EXPECT_TRUE(destroyed.Wait());
  });
}

// A key type whose copies share a hook: the hook runs when the last copy
// of a key (the map's or the wheel's) goes. Equality and hash look at the
// id only, so a bare key finds a hooked one.
struct HookedKey {
  int id = 0;
  Hook hook;
  friend bool operator==(const HookedKey& a, const HookedKey& b) {
    return a.id == b.id;
  }
};
struct HookedKeyHash {
  std::size_t operator()(const HookedKey& k) const {
    return std::hash<int>{}(k.id);
  }
};
using HookedKeyWheel = TimingWheel<HookedKey, int, HookedKeyHash>;

TEST(TimingWheelKeyReentrancyTest, RemovedAndStoppedKeysAreDestroyedAfterUnlocking) {
  ManualClock clock;
  HookedKeyWheel wheel(milliseconds(1), [](const HookedKey&, const int&) {},
                       TimingWheelOptions{.shards = 1, .clock = &clock});
  int called_back = 0;
  ASSERT_TRUE(wheel.SetTimer(HookedKey{1, MakeHook([&] {
                               EXPECT_EQ(wheel.size(), 1u);
                               ++called_back;
                             })},
                             0, hours(1)));
  ASSERT_TRUE(wheel.SetTimer(HookedKey{2, MakeHook([&] {
                               EXPECT_EQ(wheel.size(), 0u);
                               ++called_back;
                             })},
                             0, hours(1)));
  WithinDeadline("TimingWheel::RemoveTimer of a hooked key",
                 [&] { EXPECT_TRUE(wheel.RemoveTimer(HookedKey{1})); });
  EXPECT_EQ(called_back, 1);
  WithinDeadline("TimingWheel::Stop with a hooked key", [&] { wheel.Stop(); });
  EXPECT_EQ(called_back, 2);
}

// ---------------------------------------------------------------------------
// Cache: values whose destructors use the cache.

using HookCache = Cache<int, Hook>;

class CacheReentrancyTest : public ::testing::Test {
 protected:
  CacheOptions Options(std::size_t limit = 0) {
    return {.limit = limit, .jitter = 0.0, .resolution = milliseconds(1),
            .shards = 1, .clock = &clock_};
  }

  ManualClock clock_;
};

TEST_F(CacheReentrancyTest, SetDestroysTheReplacedValueAfterUnlocking) {
  HookCache cache(hours(1), Options());
  bool called_back = false;
  cache.Set(1, MakeHook([&] {
    EXPECT_EQ(cache.Get(1), nullptr);  // the new value is in place
    cache.Set(2, nullptr);
    called_back = true;
  }));
  WithinDeadline("Cache::Set replacing a value", [&] { cache.Set(1, nullptr); });
  EXPECT_TRUE(called_back);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(CacheReentrancyTest, DelDestroysTheValueAfterUnlocking) {
  HookCache cache(hours(1), Options());
  bool called_back = false;
  cache.Set(1, MakeHook([&] {
    EXPECT_FALSE(cache.Get(1).has_value());
    cache.Set(2, nullptr);
    called_back = true;
  }));
  WithinDeadline("Cache::Del", [&] { EXPECT_TRUE(cache.Del(1)); });
  EXPECT_TRUE(called_back);
}

TEST_F(CacheReentrancyTest, ExpiredEntryFoundByGetOrTakeIsDestroyedAfterUnlocking) {
  // A resolution of an hour: the timer has not run when Get finds the
  // entry expired and frees it itself.
  HookCache cache(seconds(1), {.jitter = 0.0, .resolution = hours(1),
                               .shards = 1, .clock = &clock_});
  int called_back = 0;
  cache.Set(1, MakeHook([&] {
    cache.Set(3, nullptr);
    ++called_back;
  }));
  cache.Set(2, MakeHook([&] {
    cache.Set(4, nullptr);
    ++called_back;
  }));
  clock_.Advance(seconds(2));
  WithinDeadline("Cache::Get of an expired entry",
                 [&] { EXPECT_FALSE(cache.Get(1).has_value()); });
  WithinDeadline("Cache::Take of an expired entry", [&] {
    EXPECT_EQ(cache.Take(2, [] { return Hook(); }), nullptr);
  });
  EXPECT_EQ(called_back, 2);
}

TEST_F(CacheReentrancyTest, EvictedValueIsDestroyedAfterUnlocking) {
  HookCache cache(hours(1), Options(/*limit=*/2));
  bool called_back = false;
  cache.Set(1, MakeHook([&] {
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_TRUE(cache.Get(2).has_value());
    called_back = true;
  }));
  cache.Set(2, nullptr);
  WithinDeadline("Cache::Set evicting a value", [&] { cache.Set(3, nullptr); });
  EXPECT_TRUE(called_back);
}

TEST_F(CacheReentrancyTest, ValueExpiredByTheTimerIsDestroyedUnderNoLock) {
  HookCache cache(seconds(1), Options());
  std::atomic<bool> called_back{false};
  cache.Set(1, MakeHook([&] {
    cache.Set(2, nullptr);  // on the timer thread
    called_back = true;
  }));
  // Advance returns once the timer thread has handed out what was due,
  // which for a cache means freeing it.
  WithinDeadline("the cache's expiry timer",
                 [&] { clock_.Advance(seconds(1)); });
  EXPECT_TRUE(called_back);
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace tickwheel
