// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/clock.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/time_math.h"

namespace tickwheel {
namespace {

using internal::CondVar;
using internal::Mutex;
using internal::MutexLock;

class SystemSleeper final : public Sleeper {
 public:
  std::uint64_t token() const override {
    MutexLock lock(mutex_);
    return token_;
  }

  void SleepUntil(TimePoint deadline, std::uint64_t token) override {
    MutexLock lock(mutex_);
    // steady_clock deadlines make libstdc++ wait on CLOCK_MONOTONIC.
    while (token_ == token) {
      if (!cv_.WaitUntil(mutex_, deadline)) break;
    }
  }

  void Wake() override {
    {
      MutexLock lock(mutex_);
      ++token_;
    }
    cv_.SignalAll();
  }

 private:
  mutable Mutex mutex_;
  CondVar cv_;
  std::uint64_t token_ TW_GUARDED_BY(mutex_) = 0;
};

}  // namespace

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

TimePoint SystemClock::Now() const { return std::chrono::steady_clock::now(); }

std::unique_ptr<Sleeper> SystemClock::NewSleeper() {
  return std::make_unique<SystemSleeper>();
}

// What a manual sleeper shares with its clock. It outlives the sleeper while
// an Advance still looks at it.
struct ManualClock::SleeperState {
  Mutex mutex;
  CondVar wake;     // the sleeping thread waits here
  CondVar settled;  // Advance waits here
  std::uint64_t token TW_GUARDED_BY(mutex) = 0;
  // Waiting with a deadline after blocked_at_ns.
  bool blocked TW_GUARDED_BY(mutex) = false;
  std::int64_t blocked_at_ns TW_GUARDED_BY(mutex) = 0;  // read before blocking
  bool closed TW_GUARDED_BY(mutex) = false;  // the sleeper is gone
};

class ManualClock::ManualSleeper final : public Sleeper {
 public:
  ManualSleeper(const ManualClock& clock, std::shared_ptr<SleeperState> state)
      : clock_(clock), state_(std::move(state)) {}

  ~ManualSleeper() override {
    SleeperState& state = *state_;
    {
      MutexLock lock(state.mutex);
      state.closed = true;
    }
    state.settled.SignalAll();
  }

  std::uint64_t token() const override {
    SleeperState& state = *state_;
    MutexLock lock(state.mutex);
    return state.token;
  }

  void SleepUntil(TimePoint deadline, std::uint64_t token) override {
    SleeperState& state = *state_;
    MutexLock lock(state.mutex);
    while (state.token == token) {
      const TimePoint now = clock_.Now();
      if (now >= deadline) break;
      state.blocked = true;
      state.blocked_at_ns = now.time_since_epoch().count();
      state.settled.SignalAll();
      state.wake.Wait(state.mutex);
      state.blocked = false;
    }
  }

  void Wake() override {
    SleeperState& state = *state_;
    {
      MutexLock lock(state.mutex);
      ++state.token;
    }
    state.wake.SignalAll();
  }

 private:
  const ManualClock& clock_;
  std::shared_ptr<SleeperState> state_;
};

ManualClock::ManualClock(TimePoint start)
    : now_ns_(start.time_since_epoch().count()) {}

ManualClock::~ManualClock() = default;

TimePoint ManualClock::Now() const {
  return TimePoint(Duration(now_ns_.load(std::memory_order_acquire)));
}

std::unique_ptr<Sleeper> ManualClock::NewSleeper() {
  auto state = std::make_shared<SleeperState>();
  // Made before it is listed: a state listed without its sleeper would
  // never close, and every Advance would wait for it (out of memory, the
  // sleeper's destructor closes it; it was never listed).
  auto sleeper = std::make_unique<ManualSleeper>(*this, state);
  MutexLock lock(mutex_);
  // Forget sleepers that are gone, so the list does not grow without bound.
  std::erase_if(sleepers_, [](const std::shared_ptr<SleeperState>& s) {
    SleeperState& gone = *s;
    MutexLock state_lock(gone.mutex);
    return gone.closed;
  });
  sleepers_.push_back(std::move(state));
  return sleeper;
}

void ManualClock::Advance(Duration d) {
  if (d.count() > 0) AdvanceTo(internal::AddSaturated(Now(), d));
}

void ManualClock::AdvanceTo(TimePoint t) {
  MutexLock advance_lock(advance_mutex_);
  // TimePoint::max() stands for "never" (what a thread with nothing to wait
  // for sleeps until), so time stops one tick of the clock short of it.
  const std::int64_t target = std::max(
      now_ns_.load(std::memory_order_relaxed),
      std::min(t.time_since_epoch().count(),
               TimePoint::max().time_since_epoch().count() - 1));
  now_ns_.store(target, std::memory_order_release);

  std::vector<std::shared_ptr<SleeperState>> sleepers;
  {
    MutexLock lock(mutex_);
    sleepers = sleepers_;
  }
  for (const std::shared_ptr<SleeperState>& shared : sleepers) {
    SleeperState& state = *shared;
    MutexLock lock(state.mutex);
    // A blocked thread that read an older time must wake and look again;
    // a busy one reads the new time before it blocks.
    state.wake.SignalAll();
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool settled = true;
    while (!state.closed && !(state.blocked && state.blocked_at_ns >= target)) {
      if (!state.settled.WaitUntil(state.mutex, give_up)) {
        settled = state.closed ||
                  (state.blocked && state.blocked_at_ns >= target);
        break;
      }
    }
    if (!settled) {
      std::fprintf(stderr,
                   "tickwheel::ManualClock: a sleeper did not block again "
                   "within 60 s of real time after Advance; is Advance called "
                   "from a thread that sleeper waits for?\n");
      std::abort();
    }
  }
}

}  // namespace tickwheel
