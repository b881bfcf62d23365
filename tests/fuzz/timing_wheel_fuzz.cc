// SPDX-License-Identifier: Apache-2.0
// Fuzzes TimingWheel<int, int> on a ManualClock with operation sequences
// decoded from the input, checked against a model of its contract
// (timing_wheel.h):
// - SetTimer/MoveTimer/RemoveTimer/Drain return true, true-iff-pending,
//   true-iff-pending, true; all return false once stopped; size() matches;
// - a key fires exactly once per arming, with the value it was last set
//   to, at the first tick at or after its deadline (never earlier; exactly
//   then, since time is manual); a delay <= 0 fires at once;
// - after RemoveTimer returns true, or Drain hands the key over, it never
//   executes; after MoveTimer it fires at the new time only;
// - Drain hands over exactly the pending keys and values;
// - `execute` may call the wheel: some keys re-arm themselves from inside
//   it, and those timers follow the same rules; every execute also calls
//   size() and RemoveTimer of a key never set (false);
// - values' destructors may call the wheel: every value's calls size() and
//   RemoveTimer of a key never set (false), wherever the wheel lets it go
//   (replaced, removed, fired, drained, discarded by Stop). The wheel runs
//   no user code under its locks, so none of these deadlocks (a deadlock
//   is a -timeout failure), and every value is destroyed exactly once;
// - when the input ends, everything still pending fires when its time
//   comes (up to the end of time);
// - once Stop has returned nothing starts to execute: checked in execute
//   itself until the wheel is destroyed (which joins its threads), after
//   the clock has moved to the end of time.
// The interval (1 ns to 18 minutes), the number of shards, the keys (a few,
// so they are reused), the delays (<= 0 to Duration::max()) and the clock's
// steps come from the input. See runtime_fuzz.h for how time is settled.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime_fuzz.h"
#include "tickwheel/clock.h"
#include "tickwheel/timing_wheel.h"

namespace tickwheel::testing {
namespace {

constexpr int kSentinel = -1;
constexpr int kKeys = 6;
constexpr int kGhostKey = 1000;  // never set
constexpr int kMaxOps = 300;

class TimingWheelFuzz;

// A value whose destructor calls back into the wheel that held it, as a
// handle stored in a TimingWheel may (see ValueGone). A moved-from one
// calls nothing.
class FuzzValue {
 public:
  FuzzValue(int value, TimingWheelFuzz* owner);
  FuzzValue(FuzzValue&& other) noexcept
      : value_(other.value_), owner_(std::exchange(other.owner_, nullptr)) {}
  FuzzValue& operator=(FuzzValue&& other) noexcept {
    if (this != &other) {
      Gone();
      value_ = other.value_;
      owner_ = std::exchange(other.owner_, nullptr);
    }
    return *this;
  }
  ~FuzzValue() { Gone(); }
  int value() const { return value_; }

 private:
  void Gone();

  int value_;
  TimingWheelFuzz* owner_;
};

using FuzzWheel = TimingWheel<int, FuzzValue>;

struct Executed {
  int key;
  int value;
  std::int64_t at_ns;       // the clock when execute ran
  int rearm_value = 0;      // > 0: execute re-armed the key with it
  std::int64_t rearm_delay = 0;
};

class TimingWheelFuzz {
 public:
  explicit TimingWheelFuzz(FuzzSource& in)
      : in_(in),
        clock_(TimePoint(Duration(in.Bool() ? 3'600'000'000'000
                                            : in.Uniform(-(std::int64_t{1} << 61),
                                                         std::int64_t{1} << 61)))),
        ticks_{DecodeTick(in), Ns(clock_.Now())},
        wheel_(std::make_unique<FuzzWheel>(
            Duration(ticks_.tick_ns),
            [this](const int& key, const FuzzValue& value) {
              Execute(key, value.value());
            },
            TimingWheelOptions{.workers = 1,
                               .shards = static_cast<std::size_t>(in.Uniform(1, 4)),
                               .clock = &clock_})),
        wheel_ptr_(wheel_.get()) {}

  ~TimingWheelFuzz() {
    wheel_.reset();
    if (alive_.load() != 0) {
      Fail(std::to_string(alive_.load()) + " values were never destroyed");
    }
  }

  // A value was made (alive until it is destroyed).
  void ValueMade() { ++alive_; }

  // A value's destructor: its calls back into the wheel. Under a lock of
  // the wheel they would deadlock. (The wheel is alive: every value it
  // holds is destroyed by the time its destructor's Stop returns.)
  void ValueGone() {
    --alive_;
    wheel_ptr_->size();
    if (wheel_ptr_->RemoveTimer(kGhostKey)) {
      Fail("RemoveTimer of a key never set returned true (in a destructor)");
    }
  }

  void Run() {
    for (int op = 0; op < kMaxOps && !in_.done(); ++op) {
      switch (in_.Uniform(0, 11)) {
        case 0:
        case 1:
        case 2:
          Set();
          break;
        case 3:
        case 4:
          Move();
          break;
        case 5:
          Remove();
          break;
        case 6:
        case 7:
        case 8:
          AdvanceClock();
          break;
        case 9:
          Drain();
          break;
        case 10:
          if (in_.Uniform(0, 7) == 0) Stop();
          break;
        default:
          Settle();
          break;
      }
      CheckSize();
    }
    // Everything still pending fires when its time comes, however late
    // (a deadline saturated at the end of time fires there).
    if (!stopped_) {
      std::int64_t last = Ns(clock_.Now());
      for (const auto& [key, p] : pending_) last = std::max(last, Ns(p.deadline));
      if (!pending_.empty()) {
        clock_.AdvanceTo(TimePoint(Duration(last)));
        Settle();  // checks that everything due has run
      }
    } else {
      // Nothing starts after Stop returned (Execute fails if it does), even
      // when all the time there is passes. Destroying the wheel joins its
      // timer thread and workers: whatever they were still going to run
      // would have started by then.
      const std::size_t before = log_.size();
      clock_.AdvanceTo(TimePoint::max());
      wheel_.reset();
      if (log_.size() != before) Fail("execute ran after Stop");
    }
  }

 private:
  struct Pending {
    int value;
    bool at_once;
    std::uint64_t due_tick;
    TimePoint deadline;  // as the wheel computes it
  };

  [[noreturn]] void Fail(const std::string& what) {
    FuzzFail("TimingWheel (interval " + std::to_string(ticks_.tick_ns) + " ns, origin " +
             std::to_string(ticks_.origin_ns) + " ns, now " + std::to_string(Ns(clock_.Now())) +
             " ns): " + what);
  }

  int Key() { return static_cast<int>(in_.Uniform(0, kKeys - 1)); }

  // Where the model puts a timer set or moved `delay_ns` from now.
  Pending Arm(int value, std::int64_t delay_ns) {
    if (delay_ns <= 0) return {value, true, 0, TimePoint::min()};
    const std::int64_t deadline = SaturatingAdd(Ns(clock_.Now()), delay_ns);
    return {value, false, ticks_.DueTick(deadline), TimePoint(Duration(deadline))};
  }

  void Set() {
    const int key = Key();
    const int value = next_value_++;
    const std::int64_t delay = DecodeDelay(in_, ticks_.tick_ns);
    // Some keys re-arm themselves from inside execute, once.
    if (in_.Uniform(0, 3) == 0) {
      std::lock_guard lock(rearm_mutex_);
      rearm_[value] = in_.Uniform(1, ticks_.tick_ns * 3 > 0 ? ticks_.tick_ns * 3 : 1);
    }
    const bool ok = wheel_->SetTimer(key, FuzzValue(value, this), Duration(delay));
    if (ok == stopped_) Fail("SetTimer returned " + std::to_string(ok));
    if (stopped_) return;
    pending_[key] = Arm(value, delay);
    if (delay <= 0) Settle();
  }

  void Move() {
    const int key = Key();
    const std::int64_t delay = DecodeDelay(in_, ticks_.tick_ns);
    const bool ok = wheel_->MoveTimer(key, Duration(delay));
    auto it = pending_.find(key);
    if (ok != (!stopped_ && it != pending_.end())) {
      Fail("MoveTimer(" + std::to_string(key) + ") returned " + std::to_string(ok));
    }
    if (!ok) return;
    it->second = Arm(it->second.value, delay);
    if (delay <= 0) Settle();
  }

  void Remove() {
    const int key = Key();
    const bool ok = wheel_->RemoveTimer(key);
    if (ok != (!stopped_ && pending_.count(key) == 1)) {
      Fail("RemoveTimer(" + std::to_string(key) + ") returned " + std::to_string(ok));
    }
    pending_.erase(key);
  }

  void Drain() {
    std::map<int, int> drained;
    const bool ok = wheel_->Drain([&](const int& key, const FuzzValue& value) {
      if (!drained.emplace(key, value.value()).second) {
        Fail("Drain handed a key over twice");
      }
    });
    if (ok == stopped_) Fail("Drain returned " + std::to_string(ok));
    std::map<int, int> expected;
    if (!stopped_) {
      for (const auto& [key, p] : pending_) expected[key] = p.value;
    }
    if (drained != expected) Fail("Drain handed over other keys or values than pending");
    pending_.clear();
  }

  void Stop() {
    wheel_->Stop();
    stop_returned_.store(true);
    stopped_ = true;
    pending_.clear();
  }

  void AdvanceClock() {
    const std::int64_t step = DecodeStep(in_, ticks_.tick_ns, Ns(clock_.Now()));
    clock_.Advance(Duration(step));
    Settle();
  }

  void CheckSize() {
    if (wheel_->size() != pending_.size()) {
      Fail("size() is " + std::to_string(wheel_->size()) + ", the model has " +
           std::to_string(pending_.size()));
    }
  }

  // Runs on the worker.
  void Execute(int key, int value) {
    if (stop_returned_.load()) {
      Fail("execute of key " + std::to_string(key) + " started after Stop returned");
    }
    // Calls back into the wheel, under no lock of it.
    wheel_ptr_->size();
    if (wheel_ptr_->RemoveTimer(kGhostKey)) {
      Fail("RemoveTimer of a key never set returned true (in execute)");
    }
    Executed e{key, value, Ns(clock_.Now())};
    if (key == kSentinel) {
      if (value % 2 == 1) rearm_window_.store(false);  // the second sentinel
      log_.Record(e);
      return;
    }
    std::int64_t rearm = 0;
    {
      std::lock_guard lock(rearm_mutex_);
      auto it = rearm_.find(value);
      if (it != rearm_.end()) rearm = it->second;
    }
    if (rearm > 0 && rearm_window_.load()) {
      e.rearm_value = rearm_value_.fetch_add(1);
      e.rearm_delay = rearm;
      if (!wheel_ptr_->SetTimer(key, FuzzValue(e.rearm_value, this), Duration(rearm))) {
        Fail("SetTimer from inside execute returned false");
      }
    }
    log_.Record(e);
  }

  // Waits until everything handed out so far has run (runtime_fuzz.h), then
  // checks it against the model.
  void Settle() {
    if (stopped_) return;
    rearm_window_.store(true);
    for (int i = 0; i < 2; ++i) {
      const int mark = next_sentinel_++;
      if (!wheel_->SetTimer(kSentinel, FuzzValue(mark, this), Duration(0))) {
        Fail("sentinel refused");
      }
      log_.WaitUntil(
          [&](const std::vector<Executed>& events) {
            for (std::size_t j = events.size(); j-- > seen_;) {
              if (events[j].key == kSentinel && events[j].value == mark) return true;
            }
            return false;
          },
          "a sentinel timer due at once to run");
    }
    if (next_sentinel_ % 2 != 0) Fail("sentinels out of step");
    Check();
  }

  void Check() {
    const std::vector<Executed> events = log_.Since(seen_);
    seen_ += events.size();
    const std::int64_t now = Ns(clock_.Now());
    const std::uint64_t now_tick = ticks_.NowTick(now);
    std::map<int, int> due;  // key -> value expected to have run
    for (const auto& [key, p] : pending_) {
      if (p.at_once || p.due_tick <= now_tick) due[key] = p.value;
    }
    std::vector<Executed> rearms;
    // Re-arms due at once (at the end of time, a delay saturates to the
    // last tick, which has passed): they may run in this settle or the next.
    std::map<int, int> rearmed_due;
    for (const Executed& e : events) {
      if (e.key == kSentinel) continue;
      if (auto r = rearmed_due.find(e.key); r != rearmed_due.end() && r->second == e.value) {
        rearmed_due.erase(r);
        std::erase_if(rearms, [&](const Executed& x) { return x.rearm_value == e.value; });
        if (e.rearm_value > 0) Fail("a value re-armed from execute re-armed again");
        continue;
      }
      auto it = due.find(e.key);
      if (it == due.end() || it->second != e.value) {
        Fail("executed key " + std::to_string(e.key) + " value " + std::to_string(e.value) +
             ", which is not due (removed, moved, replaced, drained, not yet due, or ran "
             "already)");
      }
      const Pending& p = pending_.at(e.key);
      if (!p.at_once && e.at_ns < ticks_.EarliestFiring(Ns(p.deadline))) {
        Fail("executed before its deadline");
      }
      due.erase(it);
      pending_.erase(e.key);
      if (e.rearm_value > 0) {
        rearms.push_back(e);
        const std::int64_t deadline = SaturatingAdd(e.at_ns, e.rearm_delay);
        if (ticks_.DueTick(deadline) <= now_tick) rearmed_due[e.key] = e.rearm_value;
      }
    }
    if (!due.empty()) {
      const auto& [key, value] = *due.begin();
      const Pending& p = pending_.at(key);
      Fail("key " + std::to_string(key) + " value " + std::to_string(value) + " due at tick " +
           std::to_string(p.due_tick) + (p.at_once ? " (at once)" : "") +
           " did not run by tick " + std::to_string(now_tick));
    }
    for (const Executed& e : rearms) {
      if (pending_.count(e.key)) Fail("a re-armed key was pending already");
      const std::int64_t deadline = SaturatingAdd(e.at_ns, e.rearm_delay);
      pending_[e.key] = {e.rearm_value, false, ticks_.DueTick(deadline),
                         TimePoint(Duration(deadline))};
    }
  }

  FuzzSource& in_;
  ManualClock clock_;
  const TickModel ticks_;
  CallbackLog<Executed> log_;
  std::mutex rearm_mutex_;
  std::map<int, std::int64_t> rearm_;  // value -> re-arm delay; guarded
  std::atomic<bool> rearm_window_{false};
  std::atomic<int> rearm_value_{1'000'000'000};
  std::atomic<bool> stop_returned_{false};
  std::atomic<long> alive_{0};  // values made and not yet destroyed
  std::unique_ptr<FuzzWheel> wheel_;  // destroyed first
  FuzzWheel* const wheel_ptr_;  // for callbacks, also while wheel_ goes
  std::map<int, Pending> pending_;
  std::size_t seen_ = 0;
  int next_value_ = 1;
  int next_sentinel_ = 0;
  bool stopped_ = false;
};

FuzzValue::FuzzValue(int value, TimingWheelFuzz* owner) : value_(value), owner_(owner) {
  owner_->ValueMade();
}

void FuzzValue::Gone() {
  if (TimingWheelFuzz* owner = std::exchange(owner_, nullptr)) owner->ValueGone();
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzSource in(data, size);
  tickwheel::testing::TimingWheelFuzz(in).Run();
  return 0;
}
