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
//   it, and those timers follow the same rules;
// - after Stop nothing executes.
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
constexpr int kMaxOps = 300;

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
        wheel_(std::make_unique<TimingWheel<int, int>>(
            Duration(ticks_.tick_ns),
            [this](const int& key, const int& value) { Execute(key, value); },
            TimingWheelOptions{.workers = 1,
                               .shards = static_cast<std::size_t>(in.Uniform(1, 4)),
                               .clock = &clock_})) {}

  ~TimingWheelFuzz() { wheel_.reset(); }

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
    // Everything still pending fires when its time comes.
    if (!stopped_) {
      std::int64_t last = 0;
      for (const auto& [key, p] : pending_) last = std::max(last, Ns(p.deadline));
      if (last < kTimeLimitNs && !pending_.empty()) {
        clock_.AdvanceTo(TimePoint(Duration(last)));
        Settle();
      }
    } else {
      // Nothing runs after Stop, even when time passes.
      const std::size_t before = log_.size();
      clock_.Advance(Duration(std::int64_t{1} << 40));
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
    const bool ok = wheel_->SetTimer(key, value, Duration(delay));
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
    const bool ok = wheel_->Drain([&](const int& key, const int& value) {
      if (!drained.emplace(key, value).second) Fail("Drain handed a key over twice");
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
      if (!wheel_->SetTimer(key, e.rearm_value, Duration(rearm))) {
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
      if (!wheel_->SetTimer(kSentinel, mark, Duration(0))) Fail("sentinel refused");
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
    for (const Executed& e : events) {
      if (e.key == kSentinel) continue;
      auto it = due.find(e.key);
      if (it == due.end() || it->second != e.value) {
        Fail("executed key " + std::to_string(e.key) + " value " + std::to_string(e.value) +
             ", which is not due (removed, moved, replaced, drained, not yet due, or ran "
             "already)");
      }
      const Pending& p = pending_.at(e.key);
      if (!p.at_once && e.at_ns < Ns(p.deadline)) Fail("executed before its deadline");
      due.erase(it);
      pending_.erase(e.key);
      if (e.rearm_value > 0) rearms.push_back(e);
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
  std::unique_ptr<TimingWheel<int, int>> wheel_;  // last: first to go
  std::map<int, Pending> pending_;
  std::size_t seen_ = 0;
  int next_value_ = 1;
  int next_sentinel_ = 0;
  bool stopped_ = false;
};

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzSource in(data, size);
  tickwheel::testing::TimingWheelFuzz(in).Run();
  return 0;
}
