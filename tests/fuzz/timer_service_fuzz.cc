// SPDX-License-Identifier: Apache-2.0
// Fuzzes TimerService on a ManualClock with operation sequences decoded
// from the input, checked against a model of its contract
// (timer_service.h):
// - After/At/Every give a valid id (invalid once stopped; Every with a
//   period <= 0 throws); Cancel and Reschedule return true exactly for
//   pending timers (one-shots not yet run, repeats not cancelled), false for
//   stale and invalid ids and once stopped; size() matches;
// - a one-shot runs exactly once, at the first tick at or after its time
//   (a delay <= 0 or a time in the past: at once), never after Cancel
//   returned true, and after Reschedule at the new time only;
// - a repeat runs at start + k * period, at most once per step of the
//   clock: missed periods are skipped and the phase kept; Reschedule
//   restarts its phase; it stops when cancelled;
// - callbacks may call the service: every callback calls size() and
//   Cancel of a stale id (false), and every third repeat cancels itself in
//   its second run (true; it never runs again);
// - callbacks' destructors may call the service: every callback owns an
//   object whose destructor calls size() and Cancel of a stale id (false),
//   wherever the service lets it go (run, cancelled, discarded by Stop).
//   The service runs no user code under its locks, so none of these
//   deadlocks (a deadlock is a -timeout failure), and every callback is
//   destroyed exactly once;
// - once Stop has returned nothing starts to run: checked in the callbacks
//   themselves until the service is destroyed (which joins its threads),
//   after the clock has moved to the end of time.
// The tick, the delays and periods (up to Duration::max()), the times and
// the clock's steps come from the input. See runtime_fuzz.h for how time
// is settled.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime_fuzz.h"
#include "tickwheel/clock.h"
#include "tickwheel/timer_service.h"

namespace tickwheel::testing {
namespace {

constexpr int kMaxOps = 300;

struct Ran {
  int label;  // < 0: a sentinel
  std::int64_t at_ns;
  bool cancelled_itself = false;
};

class TimerServiceFuzz;

// Owned by every callback: its destructor calls back into the service (see
// TimerServiceFuzz::CallbackGone).
class CallbackHook {
 public:
  explicit CallbackHook(TimerServiceFuzz* owner);
  ~CallbackHook();
  CallbackHook(const CallbackHook&) = delete;
  CallbackHook& operator=(const CallbackHook&) = delete;

 private:
  TimerServiceFuzz* const owner_;
};

class TimerServiceFuzz {
 public:
  explicit TimerServiceFuzz(FuzzSource& in)
      : in_(in),
        clock_(TimePoint(Duration(in.Bool() ? 3'600'000'000'000
                                            : in.Uniform(-(std::int64_t{1} << 61),
                                                         std::int64_t{1} << 61)))),
        ticks_{DecodeTick(in), Ns(clock_.Now())},
        service_(std::make_unique<TimerService>(
            TimerServiceOptions{.tick = Duration(ticks_.tick_ns),
                                .workers = 1,
                                .shards = static_cast<std::size_t>(in.Uniform(1, 4)),
                                .clock = &clock_})),
        service_ptr_(service_.get()) {
    // An id that is stale from the start: Cancel of it is always false.
    stale_ = service_->After(Duration(std::int64_t{1} << 40), [] {});
    service_->Cancel(stale_);
  }

  ~TimerServiceFuzz() {
    service_.reset();
    if (alive_.load() != 0) {
      Fail(std::to_string(alive_.load()) + " callbacks were never destroyed");
    }
  }

  void CallbackMade() { ++alive_; }

  // A callback's destructor: its calls back into the service, which would
  // deadlock under a lock of it. (The service is alive: every callback it
  // holds is destroyed by the time its destructor's Stop returns.)
  void CallbackGone() {
    --alive_;
    service_ptr_->size();
    if (service_ptr_->Cancel(stale_)) Fail("Cancel of a stale id returned true (in a destructor)");
  }

  void Run() {
    for (int op = 0; op < kMaxOps && !in_.done(); ++op) {
      switch (in_.Uniform(0, 11)) {
        case 0:
        case 1:
          After();
          break;
        case 2:
          At();
          break;
        case 3:
          Every();
          break;
        case 4:
        case 5:
          Cancel();
          break;
        case 6:
        case 7:
          Reschedule();
          break;
        case 8:
        case 9:
        case 10:
          AdvanceClock();
          break;
        default:
          if (in_.Uniform(0, 7) == 0) Stop();
          break;
      }
      CheckSize();
    }
    if (stopped_) {
      // Nothing starts after Stop returned (the callbacks fail if one does),
      // even when all the time there is passes. Destroying the service
      // joins its timer thread and workers: whatever they were still going
      // to run would have started by then.
      const std::size_t before = log_.size();
      clock_.AdvanceTo(TimePoint::max());
      service_.reset();
      if (log_.size() != before) Fail("a callback ran after Stop");
    }
  }

 private:
  struct Timer {
    TimerId id;
    std::int64_t period = 0;   // > 0: a repeat
    bool live = true;          // will still run (pending one-shot, or repeat)
    bool at_once = false;
    std::uint64_t due_tick = 0;
    std::int64_t run_at_ns = 0;  // its time; a repeat's next run
  };

  [[noreturn]] void Fail(const std::string& what) {
    FuzzFail("TimerService (tick " + std::to_string(ticks_.tick_ns) + " ns, origin " +
             std::to_string(ticks_.origin_ns) + " ns, now " + std::to_string(Ns(clock_.Now())) +
             " ns): " + what);
  }

  // Runs on the worker: checks that Stop has not returned, calls back into
  // the service, cancels the repeat itself if it is one that does, and logs
  // the run.
  TimerService::Callback Log(int label, bool cancels_itself = false) {
    return [this, label, cancels_itself, hook = std::make_shared<CallbackHook>(this)] {
      if (stop_returned_.load()) {
        Fail("callback " + std::to_string(label) + " started after Stop returned");
      }
      service_ptr_->size();
      if (service_ptr_->Cancel(stale_)) Fail("Cancel of a stale id returned true (in a callback)");
      Ran ran{label, Ns(clock_.Now())};
      if (cancels_itself) {
        TimerId id;
        int runs = 0;
        {
          std::lock_guard lock(ids_mutex_);
          id = ids_.at(label);
          runs = ++runs_[label];
        }
        if (runs == 2) {
          if (!service_ptr_->Cancel(id)) Fail("a repeat could not cancel itself in its run");
          ran.cancelled_itself = true;
        }
      }
      log_.Record(ran);
    };
  }

  // Files timer `t` at `time_ns` (at once if that is due now).
  void Place(Timer& t, std::int64_t time_ns, bool at_once) {
    t.run_at_ns = time_ns;
    t.due_tick = ticks_.DueTick(time_ns);
    t.at_once = at_once || t.due_tick <= ticks_.NowTick(Ns(clock_.Now()));
  }

  void Added(TimerId id, std::int64_t period, std::int64_t time_ns, bool at_once) {
    if (id.valid() == stopped_) Fail("an add returned a " + std::string(id.valid() ? "valid" : "invalid") + " id");
    if (stopped_) return;
    Timer t{id, period};
    Place(t, time_ns, at_once);
    timers_.push_back(t);
    if (t.at_once) Settle();
  }

  void After() {
    const std::int64_t delay = DecodeDelay(in_, ticks_.tick_ns);
    const int label = static_cast<int>(timers_.size());
    const std::int64_t now = Ns(clock_.Now());
    Added(service_->After(Duration(delay), Log(label)), 0,
          delay <= 0 ? now : SaturatingAdd(now, delay), delay <= 0);
  }

  void At() {
    const std::int64_t now = Ns(clock_.Now());
    const std::int64_t when =
        in_.Uniform(0, 3) == 0
            ? in_.Uniform(std::numeric_limits<std::int64_t>::min(), kMaxNs)
            : SaturatingAdd(now, in_.Uniform(-(std::int64_t{1} << 40), std::int64_t{1} << 40));
    const int label = static_cast<int>(timers_.size());
    Added(service_->At(TimePoint(Duration(when)), Log(label)), 0, when, false);
  }

  void Every() {
    std::int64_t period = DecodeDelay(in_, ticks_.tick_ns);
    const int label = static_cast<int>(timers_.size());
    if (period <= 0) {
      try {
        service_->Every(Duration(period), Log(label));
      } catch (const std::invalid_argument&) {
        return;
      }
      Fail("Every accepted a period of " + std::to_string(period) + " ns");
    }
    // Every third repeat cancels itself in its second run. Its first run is
    // a period away, so its id is known (ids_) by then.
    const bool cancels_itself = label % 3 == 2;
    const TimerId id = service_->Every(Duration(period), Log(label, cancels_itself));
    if (cancels_itself && id.valid()) {
      std::lock_guard lock(ids_mutex_);
      ids_[label] = id;
    }
    Added(id, period, SaturatingAdd(Ns(clock_.Now()), period), false);
  }

  // A timer's index, or -1 for an id that names none (stale or invalid).
  int Pick() {
    if (timers_.empty() || in_.Uniform(0, 9) == 0) return -1;
    return static_cast<int>(in_.Uniform(0, static_cast<std::int64_t>(timers_.size()) - 1));
  }

  void Cancel() {
    const int i = Pick();
    const bool ok = service_->Cancel(i < 0 ? TimerId() : timers_[i].id);
    const bool expected = !stopped_ && i >= 0 && timers_[i].live;
    if (ok != expected) Fail("Cancel of timer " + std::to_string(i) + " returned " + std::to_string(ok));
    if (ok) timers_[i].live = false;
  }

  void Reschedule() {
    const int i = Pick();
    const std::int64_t delay = DecodeDelay(in_, ticks_.tick_ns);
    const bool ok = service_->Reschedule(i < 0 ? TimerId() : timers_[i].id, Duration(delay));
    const bool expected = !stopped_ && i >= 0 && timers_[i].live;
    if (ok != expected) {
      Fail("Reschedule of timer " + std::to_string(i) + " returned " + std::to_string(ok));
    }
    if (!ok) return;
    const std::int64_t now = Ns(clock_.Now());
    Timer& t = timers_[i];
    if (delay <= 0) {
      Place(t, now, true);
    } else {
      Place(t, SaturatingAdd(now, delay), false);
    }
    if (t.at_once) Settle();
  }

  void Stop() {
    service_->Stop();
    stop_returned_.store(true);
    stopped_ = true;
    for (Timer& t : timers_) t.live = false;
  }

  void AdvanceClock() {
    clock_.Advance(Duration(DecodeStep(in_, ticks_.tick_ns, Ns(clock_.Now()))));
    Settle();
  }

  void CheckSize() {
    std::size_t live = 0;
    for (const Timer& t : timers_) live += t.live ? 1 : 0;
    if (service_->size() != live) {
      Fail("size() is " + std::to_string(service_->size()) + ", the model has " +
           std::to_string(live));
    }
  }

  void Settle() {
    if (stopped_) return;
    for (int i = 0; i < 2; ++i) {
      const int mark = -1 - next_sentinel_++;
      if (!service_->After(Duration(0), Log(mark)).valid()) Fail("sentinel refused");
      log_.WaitUntil(
          [&](const std::vector<Ran>& events) {
            for (std::size_t j = events.size(); j-- > seen_;) {
              if (events[j].label == mark) return true;
            }
            return false;
          },
          "a sentinel timer due at once to run");
    }
    Check();
  }

  void Check() {
    const std::vector<Ran> runs = log_.Since(seen_);
    seen_ += runs.size();
    const std::int64_t now = Ns(clock_.Now());
    const std::uint64_t now_tick = ticks_.NowTick(now);
    std::map<int, int> ran;
    std::set<int> cancelled_itself;
    for (const Ran& r : runs) {
      if (r.label < 0) continue;
      if (r.cancelled_itself) cancelled_itself.insert(r.label);
      if (++ran[r.label] > 1) Fail("timer " + std::to_string(r.label) + " ran twice in a step");
      const Timer& t = timers_.at(static_cast<std::size_t>(r.label));
      if (!t.live) Fail("timer " + std::to_string(r.label) + " ran, but was cancelled or ran already");
      if (!t.at_once && r.at_ns < ticks_.EarliestFiring(t.run_at_ns)) {
        Fail("timer " + std::to_string(r.label) + " ran early");
      }
    }
    for (std::size_t i = 0; i < timers_.size(); ++i) {
      Timer& t = timers_[i];
      if (!t.live) continue;
      const bool due = t.at_once || t.due_tick <= now_tick;
      const bool did = ran.count(static_cast<int>(i)) == 1;
      if (due != did) {
        Fail("timer " + std::to_string(i) + (due ? " is due (tick " : " is not due (tick ") +
             std::to_string(t.due_tick) + (t.at_once ? ", at once" : "") + ") but " +
             (did ? "ran" : "did not run") + " by tick " + std::to_string(now_tick));
      }
      if (!did) continue;
      if (t.period == 0 || cancelled_itself.count(static_cast<int>(i)) == 1) {
        t.live = false;
        continue;
      }
      // The next run: a period on, or the first one after now in phase.
      std::int64_t next = SaturatingAdd(t.run_at_ns, t.period);
      if (next <= now) {
        next = static_cast<std::int64_t>(
            std::min<Wide>(Wide{next} + Wide{t.period} * ((Wide{now} - next) / t.period + 1), kMaxNs));
      }
      Place(t, next, false);
    }
  }

  FuzzSource& in_;
  ManualClock clock_;
  const TickModel ticks_;
  CallbackLog<Ran> log_;
  std::atomic<bool> stop_returned_{false};
  std::atomic<long> alive_{0};  // callbacks made and not yet destroyed
  TimerId stale_;
  std::mutex ids_mutex_;
  std::map<int, TimerId> ids_;  // of the repeats that cancel themselves
  std::map<int, int> runs_;     // their runs so far
  std::unique_ptr<TimerService> service_;  // destroyed first
  TimerService* const service_ptr_;  // for callbacks, also while service_ goes
  std::vector<Timer> timers_;
  std::size_t seen_ = 0;
  int next_sentinel_ = 0;
  bool stopped_ = false;
};

CallbackHook::CallbackHook(TimerServiceFuzz* owner) : owner_(owner) { owner_->CallbackMade(); }
CallbackHook::~CallbackHook() { owner_->CallbackGone(); }

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzSource in(data, size);
  tickwheel::testing::TimerServiceFuzz(in).Run();
  return 0;
}
