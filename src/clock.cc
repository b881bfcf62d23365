#include "tickwheel/clock.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tickwheel/internal/time_math.h"

namespace tickwheel {
namespace {

class SystemSleeper final : public Sleeper {
 public:
  std::uint64_t token() const override {
    std::lock_guard lock(mutex_);
    return token_;
  }

  void SleepUntil(TimePoint deadline, std::uint64_t token) override {
    std::unique_lock lock(mutex_);
    // steady_clock deadlines make libstdc++ wait on CLOCK_MONOTONIC.
    cv_.wait_until(lock, deadline, [&] { return token_ != token; });
  }

  void Wake() override {
    {
      std::lock_guard lock(mutex_);
      ++token_;
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t token_ = 0;  // guarded by mutex_
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
  std::mutex mutex;
  std::condition_variable wake;     // the sleeping thread waits here
  std::condition_variable settled;  // Advance waits here
  // All guarded by mutex:
  std::uint64_t token = 0;
  bool blocked = false;        // waiting with a deadline after blocked_at_ns
  std::int64_t blocked_at_ns = 0;  // the time it read before blocking
  bool closed = false;         // the sleeper is gone
};

class ManualClock::ManualSleeper final : public Sleeper {
 public:
  ManualSleeper(const ManualClock& clock, std::shared_ptr<SleeperState> state)
      : clock_(clock), state_(std::move(state)) {}

  ~ManualSleeper() override {
    {
      std::lock_guard lock(state_->mutex);
      state_->closed = true;
    }
    state_->settled.notify_all();
  }

  std::uint64_t token() const override {
    std::lock_guard lock(state_->mutex);
    return state_->token;
  }

  void SleepUntil(TimePoint deadline, std::uint64_t token) override {
    std::unique_lock lock(state_->mutex);
    while (state_->token == token) {
      const TimePoint now = clock_.Now();
      if (now >= deadline) break;
      state_->blocked = true;
      state_->blocked_at_ns = now.time_since_epoch().count();
      state_->settled.notify_all();
      state_->wake.wait(lock);
      state_->blocked = false;
    }
  }

  void Wake() override {
    {
      std::lock_guard lock(state_->mutex);
      ++state_->token;
    }
    state_->wake.notify_all();
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
  std::lock_guard lock(mutex_);
  // Forget sleepers that are gone, so the list does not grow without bound.
  std::erase_if(sleepers_, [](const std::shared_ptr<SleeperState>& s) {
    std::lock_guard state_lock(s->mutex);
    return s->closed;
  });
  sleepers_.push_back(state);
  return std::make_unique<ManualSleeper>(*this, std::move(state));
}

void ManualClock::Advance(Duration d) {
  if (d.count() > 0) AdvanceTo(internal::AddSaturated(Now(), d));
}

void ManualClock::AdvanceTo(TimePoint t) {
  std::lock_guard advance_lock(advance_mutex_);
  const std::int64_t target = std::max(now_ns_.load(std::memory_order_relaxed),
                                       t.time_since_epoch().count());
  now_ns_.store(target, std::memory_order_release);

  std::vector<std::shared_ptr<SleeperState>> sleepers;
  {
    std::lock_guard lock(mutex_);
    sleepers = sleepers_;
  }
  for (const std::shared_ptr<SleeperState>& state : sleepers) {
    std::unique_lock lock(state->mutex);
    // A blocked thread that read an older time must wake and look again;
    // a busy one reads the new time before it blocks.
    state->wake.notify_all();
    const bool settled =
        state->settled.wait_for(lock, std::chrono::seconds(60), [&] {
          return state->closed ||
                 (state->blocked && state->blocked_at_ns >= target);
        });
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
