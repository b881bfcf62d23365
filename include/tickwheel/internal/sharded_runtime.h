// SPDX-License-Identifier: Apache-2.0
// The runtime that TimingWheel, TimerService and Cache are built on: shards
// (a lock, a Wheel and the owner's state each), one thread that advances
// every shard's wheel, workers that run what fired, and a two-phase Stop.
#ifndef TICKWHEEL_INTERNAL_SHARDED_RUNTIME_H_
#define TICKWHEEL_INTERNAL_SHARDED_RUNTIME_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/time_math.h"
#include "tickwheel/internal/timer_thread.h"
#include "tickwheel/internal/worker_pool.h"
#include "tickwheel/time.h"

namespace tickwheel::internal {

// The shard of `hash` among `count`, by Fibonacci hashing: the hash times
// 2^64 / phi, top bits. std::hash of an integer is the integer itself, and
// this spreads consecutive keys; the high bits it uses are independent of
// the low bits FlatMap's home slots come from.
inline std::size_t ShardIndex(std::size_t hash, std::size_t count) {
  const std::uint64_t h = std::uint64_t{hash} * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::size_t>((h >> 32) % count);
}

// The shard count when the owner asks for 0: 4 per hardware thread, at
// least 1 and at most 64 (beyond 64 shards the timer thread's pass over
// them costs more than the contention they save).
inline std::size_t DefaultShardCount() {
  return std::clamp<std::size_t>(4 * std::thread::hardware_concurrency(), 1,
                                 64);
}

// `now + delay`; a delay <= 0 is TimePoint::min() (due at the next Advance,
// whatever the rounding), and a sum past the end of time saturates.
inline TimePoint DeadlineAt(TimePoint now, Duration delay) {
  if (delay <= Duration::zero()) return TimePoint::min();
  return AddSaturated(now, delay);
}

// Makes room for one more element, so that the next push_back cannot
// throw. A State's Advance calls it before taking a timer out of its wheel
// and after each one it adds to `fired`: running out of memory then throws
// while every timer taken out is safe in `fired`.
template <typename T>
void ReserveOneMore(std::vector<T>& v) {
  if (v.size() == v.capacity()) {
    v.reserve(std::max<std::size_t>(16, 2 * v.capacity()));
  }
}

// What an owner chooses about its runtime.
struct RuntimeConfig {
  const char* who = "";  // the owner in messages: "TimingWheel"
  Duration tick{0};      // each shard's Wheel tick; must be positive
  const char* tick_name = "tick";  // what the owner calls it
  std::size_t shards = 0;          // 0: DefaultShardCount()
  // Threads that run fired items; 0: none (the shards handle what fires
  // themselves, under their locks; the owner's Run is never called).
  std::size_t workers = 1;
  Clock* clock = nullptr;  // nullptr: SystemClock::Instance()
  std::function<void(std::exception_ptr)> on_error;
};

// ShardedRuntime<State, Fired> splits an owner's timers over shards. Each
// shard is a Mutex and a State (the owner's Wheel and whatever it keeps per
// timer), guarded by that mutex. One TimerThread advances every shard's
// State to the clock's time and sleeps until the earliest deadline they
// report; what fires is handed to `workers` threads running `run`, under no
// lock, in deadline order across shards (if Fired has a `TimePoint due`
// member; otherwise shard by shard), or, without workers, destroyed on the
// timer thread under no lock.
//
// State must provide:
//   State(Duration tick, TimePoint origin, std::size_t shard_index,
//         std::size_t shard_count)
//   // Fires what is due at `now` into `fired`; returns the earliest
//   // pending deadline (nullopt: none). Called under the shard's lock.
//   // May throw (std::bad_alloc); every timer it took out of its wheel is
//   // in `fired` then, and the others stay pending for the next call.
//   std::optional<TimePoint> Advance(TimePoint now, std::vector<Fired>& fired)
//   // Drops every pending timer (Stop). Called once, with NO lock held,
//   // after the shard was marked stopped and the timer thread ended: from
//   // then on only Stop touches the state (every call checks `stopped`
//   // first), so user destructors that it runs may call back into the
//   // owner and find it stopped.
//   void Discard() noexcept
//
// Failures: an exception from a State's Advance or from handing fired
// items to the workers (out of memory) is reported like a throwing `run`
// and the timer thread tries again `retry_after` later (what was handed out
// stays handed out; nothing is lost or fired twice).
//
// Thread safety: every method may be called from any thread. Owners lock a
// shard (MutexLock lock(shard.mutex)), check `stopped`, work on `state`,
// and call Notify for each deadline they add, before unlocking; anything
// of the user's that must be destroyed is moved out and destroyed after
// unlocking.
template <typename State, typename Fired>
class ShardedRuntime {
 public:
  struct Shard {
    Shard(Duration tick, TimePoint origin, std::size_t index,
          std::size_t count)
        : state(tick, origin, index, count) {}
    Mutex mutex;
    bool stopped TW_GUARDED_BY(mutex) = false;  // every call is refused
    State state TW_GUARDED_BY(mutex);
  };
  using Run = std::function<void(Fired&)>;

  // Throws std::invalid_argument ("tickwheel::<who>: <tick_name> must be
  // positive, got ...") if config.tick <= 0, or if config.workers > 0 and
  // `run` is empty.
  ShardedRuntime(RuntimeConfig config, Run run)
      : clock_(config.clock != nullptr ? *config.clock
                                       : SystemClock::Instance()),
        shards_(MakeShards(config, clock_.Now())),
        pool_(config.workers == 0
                  ? nullptr
                  : std::make_unique<WorkerPool<Fired>>(
                        config.workers,
                        RequireCallable(std::move(run), config.who, "run"),
                        config.on_error, config.who)),
        thread_(clock_, [this](TimePoint now) { return AdvanceAll(now); },
                TimerThread::Failures{
                    .who = config.who,
                    .on_error = std::move(config.on_error),
                    .retry_after = std::max<Duration>(
                        config.tick, std::chrono::milliseconds(1))}) {}

  // Stop(). REQUIRES: not called from a worker of this runtime.
  ~ShardedRuntime() { Stop(); }

  ShardedRuntime(const ShardedRuntime&) = delete;
  ShardedRuntime& operator=(const ShardedRuntime&) = delete;

  Clock& clock() const { return clock_; }
  TimePoint DeadlineAfter(Duration delay) const {
    return DeadlineAt(clock_.Now(), delay);
  }

  std::size_t shard_count() const { return shards_.size(); }
  std::size_t IndexFor(std::size_t hash) const {
    return ShardIndex(hash, shards_.size());
  }
  Shard& shard(std::size_t index) const { return *shards_[index]; }
  Shard& ShardFor(std::size_t hash) const { return shard(IndexFor(hash)); }

  // How many runs of `run` threw (each reported to on_error), since
  // construction; 0 without workers.
  std::uint64_t callback_errors() const {
    return pool_ != nullptr ? pool_->errors() : 0;
  }

  // Says that a timer due at `deadline` was added. REQUIRES: the caller
  // holds the mutex of the shard it added to (so Stop, which takes every
  // shard's mutex first, never races with it).
  void Notify(TimePoint deadline) { thread_.Notify(deadline); }

  // Refuses every later call (shards are marked stopped), ends the timer
  // thread, discards every pending timer, drops fired items not yet run,
  // then waits for running ones, except the one Stop is called from, if
  // any. Idempotent and thread-safe. The discarding runs under no lock (a
  // destructor it runs may call back and finds the owner stopped); a
  // concurrent Stop waits for it, unless it is called from it.
  void Stop() TW_EXCLUDES(stop_mutex_) {
    bool discard = false;
    {
      MutexLock stop_lock(stop_mutex_);
      if (!stop_started_) {
        stop_started_ = true;
        discard = true;
        discarding_thread_ = std::this_thread::get_id();
        for (const std::unique_ptr<Shard>& shard : shards_) {
          MutexLock lock(shard->mutex);
          shard->stopped = true;
        }
        thread_.Stop();
      } else if (discarding_thread_ != std::this_thread::get_id()) {
        while (!discarded_) discarded_cv_.Wait(stop_mutex_);
      }
    }
    if (discard) {
      DiscardStopped();
      {
        MutexLock stop_lock(stop_mutex_);
        discarded_ = true;
      }
      discarded_cv_.SignalAll();
    }
    // Not under stop_mutex_: two items may Stop at once, and each waits here
    // for the other only until both are inside the pool's Stop.
    if (pool_ != nullptr) pool_->Stop();
  }

 private:
  static std::vector<std::unique_ptr<Shard>> MakeShards(
      const RuntimeConfig& config, TimePoint origin) {
    const Duration tick =
        RequirePositive(config.tick, config.who, config.tick_name);
    const std::size_t count =
        config.shards != 0 ? config.shards : DefaultShardCount();
    std::vector<std::unique_ptr<Shard>> shards;
    shards.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      shards.push_back(std::make_unique<Shard>(tick, origin, i, count));
    }
    return shards;
  }

  // Stop's second half: every shard is stopped and the timer thread has
  // ended, so nothing but this call touches the states (every other path
  // checks `stopped` under the shard's lock first); user destructors run
  // here under no lock.
  void DiscardStopped() TW_NO_THREAD_SAFETY_ANALYSIS {
    fired_.clear();  // the timer thread's leftovers (it has ended)
    for (const std::unique_ptr<Shard>& shard : shards_) shard->state.Discard();
  }

  // The TimerThread's step: fires what is due in every shard, then hands
  // it to the workers. If a shard's Advance throws, the other shards are
  // still advanced and what fired is still handed out; the exception is
  // rethrown for the timer thread to report (it retries soon).
  std::optional<TimePoint> AdvanceAll(TimePoint now) {
    std::optional<TimePoint> next;
    std::exception_ptr error;
    for (const std::unique_ptr<Shard>& shard : shards_) {
      try {
        MutexLock lock(shard->mutex);
        if (shard->stopped) continue;
        const std::optional<TimePoint> shard_next =
            shard->state.Advance(now, fired_);
        if (shard_next && (!next || *shard_next < *next)) next = shard_next;
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    Dispatch();
    if (error) std::rethrow_exception(error);
    return next;
  }

  // Hands fired_ to the workers in due order, or (no workers) destroys it,
  // under no lock. If the queue cannot grow, what was not queued stays in
  // fired_ for the next step, and the exception propagates.
  void Dispatch() {
    if (pool_ == nullptr) {
      fired_.clear();
      return;
    }
    if constexpr (requires(const Fired& f) { TimePoint(f.due); }) {
      // Each shard fired in due order; after a late wake-up, several shards'
      // runs interleave in time. stable_sort merges them (it does not
      // throw: without memory for a buffer it sorts in place).
      auto by_due = [](const Fired& a, const Fired& b) { return a.due < b.due; };
      if (!std::is_sorted(fired_.begin(), fired_.end(), by_due)) {
        std::stable_sort(fired_.begin(), fired_.end(), by_due);
      }
    }
    if (!pool_->SubmitAll(fired_)) fired_.clear();  // stopping: dropped
  }

  Clock& clock_;
  const std::vector<std::unique_ptr<Shard>> shards_;
  const std::unique_ptr<WorkerPool<Fired>> pool_;  // null: no workers
  std::vector<Fired> fired_;  // AdvanceAll's, on the timer thread only
  Mutex stop_mutex_;
  bool stop_started_ TW_GUARDED_BY(stop_mutex_) = false;
  bool discarded_ TW_GUARDED_BY(stop_mutex_) = false;
  std::thread::id discarding_thread_ TW_GUARDED_BY(stop_mutex_);
  CondVar discarded_cv_;  // discarded_ became true
  TimerThread thread_;    // last: starts once everything exists
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_SHARDED_RUNTIME_H_
