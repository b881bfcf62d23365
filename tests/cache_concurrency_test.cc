// SPDX-License-Identifier: Apache-2.0
// Cache under many threads: no entry left without an expiry, no expired
// entry returned, one fetch per missing key, the LRU limit kept.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "runtime_test_util.h"
#include "tickwheel/cache.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Eventually;

constexpr int kThreads = 8;

template <typename F>
void RunThreads(int n, F body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back([&body, t] { body(t); });
  for (auto& thread : threads) thread.join();
}

// go-zero's Del removes the entry under the lock and the timer after it: a
// Set in between re-creates the entry, and Del then cancels the new timer,
// leaving an entry that never expires. Pairs of threads race a Set, Set of
// each key against Dels of it; once time has passed every TTL, every entry
// must have been freed.
TEST(CacheConcurrencyTest, RacingSetsAndDelsLeaveNoEntryWithoutExpiry) {
  constexpr int kPairs = 1;  // both threads of a pair run at once on 2 cores
  constexpr int kKeysPerPair = 20000;
  ManualClock clock;
  Cache<int, int> cache(seconds(1), {.clock = &clock});
  auto progress = std::make_unique<std::atomic<int>[]>(kPairs);
  for (int p = 0; p < kPairs; ++p) progress[p] = 0;
  RunThreads(2 * kPairs, [&](int t) {
    const int pair = t / 2;
    const int first = pair * kKeysPerPair;
    for (int i = 0; i < kKeysPerPair; ++i) {
      if (t % 2 == 0) {  // the setter
        cache.Set(first + i, 1);
        cache.Set(first + i, 2);
        progress[pair] = i + 1;
      } else {  // the deleter keeps deleting key i until the setter is past it
        while (progress[pair].load() <= i) cache.Del(first + i);
      }
    }
  });
  clock.Advance(seconds(2));  // past every ttl with jitter and resolution
  EXPECT_TRUE(Eventually([&] { return cache.size() == 0; }))
      << cache.size() << " entries outlived their expiry";
}

// Pauses a thread that called Arm() every time it hashes a key, until the
// test lets it go on: the test can then run a Set at each step of a Del.
class Interleaver {
 public:
  static Interleaver& Get() {
    static Interleaver instance;
    return instance;
  }
  static inline thread_local bool armed = false;

  void Pause() {
    std::unique_lock lock(mutex_);
    ++paused_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return resumed_ == paused_; });
  }
  // Waits until the armed thread pauses (true) or `done` (false).
  bool WaitForPause(const std::atomic<bool>& done) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return paused_ > resumed_ || done.load(); });
    return paused_ > resumed_;
  }
  void Resume() {
    std::lock_guard lock(mutex_);
    ++resumed_;
    cv_.notify_all();
  }
  void Wake() { cv_.notify_all(); }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int paused_ = 0;   // guarded by mutex_
  int resumed_ = 0;  // guarded by mutex_
};

// A Set on a thread of its own, watched: how many times it hashed the key,
// and whether it finished.
struct WatchedSet {
  std::atomic<pid_t> tid{0};
  std::atomic<int> hashes{0};
  std::atomic<bool> done{false};
  static inline thread_local WatchedSet* current = nullptr;
};

struct PausingHash {
  std::size_t operator()(int key) const {
    if (Interleaver::armed) Interleaver::Get().Pause();
    if (WatchedSet::current != nullptr) ++WatchedSet::current->hashes;
    return std::hash<int>{}(key);
  }
};

// Whether thread `tid` of this process is asleep in a futex wait (a mutex),
// as the kernel says: /proc/self/task/TID/syscall names the system call a
// blocked thread is in ("running" otherwise).
bool InFutexWait(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  return static_cast<bool>(in >> number) && number == SYS_futex;
}

enum class SetOutcome { kFinished, kBlocked, kNeither };

// Waits (up to testing::kPatience) until the Set finished or is blocked on
// the shard's mutex. Cache::Set hashes the key once before it locks the
// shard and again under the lock, and nothing between the two can sleep
// but that lock: a Set seen in a futex wait, and still at one hash after
// it was seen there, waits for the shard's mutex.
SetOutcome Await(const WatchedSet& set) {
  const auto give_up = std::chrono::steady_clock::now() + testing::kPatience;
  while (std::chrono::steady_clock::now() < give_up) {
    if (set.done) return SetOutcome::kFinished;
    if (set.hashes == 1 && InFutexWait(set.tid) && set.hashes == 1 && !set.done) {
      return SetOutcome::kBlocked;
    }
    std::this_thread::yield();
  }
  return SetOutcome::kNeither;
}

// The same race, forced: a Set runs at every point where Del hashes the key
// (before, inside and after its critical section). Had Del touched the timer
// outside the entry's lock, one of those Sets would complete in between and
// Del would cancel its timer.
TEST(CacheConcurrencyTest, SetAtEveryStepOfADelLeavesNoEntryWithoutExpiry) {
  ManualClock clock;
  Cache<int, int, PausingHash> cache(seconds(1), {.clock = &clock});
  static constexpr int kKey = 7;
  cache.Set(kKey, 0);
  std::atomic<bool> del_done{false};
  std::thread deleter([&] {
    Interleaver::armed = true;
    cache.Del(kKey);
    Interleaver::armed = false;
    del_done = true;
    Interleaver::Get().Wake();
  });
  // At each pause of Del: launch a Set, until one cannot finish (Del holds
  // the entry's lock); from then on only give that one the chance to finish
  // (a later Set would re-arm the timer and hide a lost one). A Set that
  // can finish is waited for before Del goes on.
  std::vector<std::thread> setters;
  std::shared_ptr<WatchedSet> pending;  // the Set that blocked
  int steps = 0;
  int blocked_steps = 0;
  while (Interleaver::Get().WaitForPause(del_done)) {
    ++steps;
    if (!pending) {
      pending = std::make_shared<WatchedSet>();
      setters.emplace_back([&cache, set = pending, value = steps] {
        set->tid = static_cast<pid_t>(syscall(SYS_gettid));
        WatchedSet::current = set.get();
        cache.Set(kKey, value);
        WatchedSet::current = nullptr;
        set->done = true;
      });
      while (pending->tid == 0) std::this_thread::yield();
    }
    const SetOutcome outcome = Await(*pending);
    ASSERT_NE(outcome, SetOutcome::kNeither)
        << "a Set neither finished nor waited for the shard's lock at step " << steps;
    if (outcome == SetOutcome::kFinished) {
      if (blocked_steps == 0) pending.reset();  // finished at once: next
    } else {
      ++blocked_steps;
    }
    Interleaver::Get().Resume();
  }
  deleter.join();
  for (auto& setter : setters) setter.join();
  EXPECT_GE(steps, 2);
  EXPECT_GE(blocked_steps, 1);  // a Set did wait for Del's lock
  clock.Advance(seconds(2));
  EXPECT_TRUE(Eventually([&] { return cache.size() == 0; }))
      << "an entry outlived its expiry";
}

// Writers store each entry's exact expiry as its value (no jitter; the clock
// does not move while a writer reads it and sets). Readers check that what
// they get had not expired when they asked, while time keeps moving.
TEST(CacheConcurrencyTest, NoExpiredEntryIsReturnedWhileTimeMoves) {
  constexpr Duration kTtl = milliseconds(10);
  ManualClock clock;
  // A coarse wheel: timers do not free anything during the test, so only
  // the deadline check stands between readers and expired entries.
  Cache<int, std::int64_t> cache(
      kTtl,
      {.jitter = 0.0, .resolution = std::chrono::hours(1), .clock = &clock});
  std::shared_mutex time_lock;  // writers shared, the clock mover exclusive
  std::atomic<bool> mover_waiting{false};  // writers back off: no starvation
  std::atomic<bool> done{false};
  std::atomic<int> stale{0};
  std::atomic<std::int64_t> returned{0};

  std::atomic<int> sets{0};
  std::atomic<int> gets{0};
  std::thread mover([&] {
    for (int step = 0; step < 200; ++step) {
      // Each step of time sees some writes and reads.
      const int sets_before = sets.load();
      const int gets_before = gets.load();
      while (sets.load() < sets_before + 10 || gets.load() < gets_before + 10) {
        std::this_thread::yield();
      }
      mover_waiting = true;
      std::unique_lock lock(time_lock);
      mover_waiting = false;
      clock.Advance(milliseconds(1));
    }
    done = true;
  });
  RunThreads(4, [&](int t) {
    std::mt19937 random(static_cast<unsigned>(t));
    while (!done) {
      const int key = static_cast<int>(random() % 64);
      if (t % 2 == 0) {
        while (mover_waiting) std::this_thread::yield();
        std::shared_lock lock(time_lock);
        cache.Set(key, (clock.Now() + kTtl).time_since_epoch().count());
        ++sets;
      } else {
        const std::int64_t asked_at = clock.Now().time_since_epoch().count();
        const std::optional<std::int64_t> expiry = cache.Get(key);
        ++gets;
        if (expiry) {
          ++returned;
          if (asked_at >= *expiry) ++stale;
        }
      }
    }
  });
  mover.join();
  EXPECT_EQ(stale.load(), 0);
  EXPECT_GT(returned.load(), 0);  // the check did look at live entries
}

TEST(CacheConcurrencyTest, EachMissingKeyIsFetchedOnce) {
  constexpr int kKeys = 200;
  ManualClock clock;  // never moves: nothing expires
  Cache<int, int> cache(seconds(1), {.clock = &clock});
  auto fetches = std::make_unique<std::atomic<int>[]>(kKeys);
  for (int k = 0; k < kKeys; ++k) fetches[k] = 0;
  std::atomic<int> wrong{0};
  RunThreads(kThreads, [&](int t) {
    std::mt19937 random(static_cast<unsigned>(t));
    for (int i = 0; i < 5000; ++i) {
      const int key = static_cast<int>(random() % kKeys);
      const int value = cache.Take(key, [&] {
        ++fetches[key];
        return key * 7;
      });
      if (value != key * 7) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  for (int k = 0; k < kKeys; ++k) EXPECT_LE(fetches[k].load(), 1) << k;
}

TEST(CacheConcurrencyTest, LruLimitHoldsUnderManyWriters) {
  constexpr std::size_t kLimit = 1000;
  ManualClock clock;
  Cache<int, int> cache(seconds(60), {.limit = kLimit, .clock = &clock});
  std::atomic<bool> over{false};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < 5000; ++i) {
      cache.Set(t * 5000 + i, i);
      if (i % 500 == 0 && cache.size() > kLimit) over = true;
    }
  });
  EXPECT_FALSE(over.load());
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.size, kLimit);
  EXPECT_EQ(stats.evictions, kThreads * 5000 - kLimit);
}

}  // namespace
}  // namespace tickwheel
