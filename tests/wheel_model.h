// SPDX-License-Identifier: Apache-2.0
// A reference model of Wheel<T>, shared by the randomized model test
// (tests/wheel_model_test.cc, choices from a seeded RNG) and the fuzzer
// (tests/fuzz/wheel_fuzz.cc, choices decoded from the fuzzer's input).
//
// The model runs sequences of Schedule, Cancel, Reschedule and Advance (by
// jumps from nothing to centuries, or to NextDeadline()), with callbacks that
// themselves schedule, cancel and reschedule, against a plain reference: a
// map of pending timers and the tick each is due at. What it checks, at every
// step:
// - every timer fires exactly once, at the first Advance whose tick reaches
//   its due tick (deadline rounded up to a tick): never early, at most one
//   tick late; fired in due order; Advance returns the number fired;
// - cancelled timers never fire; Cancel/Reschedule of fired, cancelled,
//   never-issued or forged ids return false (a forged id that happens to
//   name a pending timer is that timer);
// - size() matches; NextDeadline() is nullopt exactly when empty, and never
//   later than the earliest time a pending timer becomes due;
// - CheckInvariants() passes (every step, or every 97 steps);
// - at the end, the tickless loop `Advance(*NextDeadline())` drains the
//   wheel, each call firing something or moving NextDeadline forward, within
//   a bounded number of calls.
// Timers that callbacks schedule or move during an Advance may fire in that
// Advance or the next one (the documented rule for timers made due from
// inside on_expire), never early. With `throwing_callbacks`, a callback now
// and then throws: Advance must propagate it, the timer it was firing is
// consumed, and every other pending timer still fires by the next Advance.
//
// Failures do not throw or abort: the first one is kept in failure() (with
// the step it happened at) and the model stops. The driver reports it.
#ifndef TICKWHEEL_TESTS_WHEEL_MODEL_H_
#define TICKWHEEL_TESTS_WHEEL_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "tickwheel/wheel.h"

namespace tickwheel::testing {

__extension__ using Int128 = __int128;

// Choices from a seeded RNG, as the model test makes them.
class RandomSource {
 public:
  explicit RandomSource(std::uint64_t seed) : rng_(seed) {}
  std::int64_t Uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool done() const { return false; }

 private:
  std::mt19937_64 rng_;
};

struct WheelModelOptions {
  // Delays within a few level-1 revolutions and small steps of time, so that
  // big slots are cascaded a share per Advance (spread cascades).
  bool dense = false;
  // CheckInvariants() after every step rather than every 97 (and dense).
  bool check_every_step = false;
  // The fuzzer's extras (each makes more choices, so the model test, which
  // keeps its sequences, leaves them off): callbacks that throw, forged ids,
  // and deadlines anywhere in the representable range.
  bool throwing_callbacks = false;
  bool forged_ids = false;
  bool raw_deadlines = false;
};

// Payload types: a plain int, and a move-only box so that ASan sees every
// payload the wheel copies, leaks or destroys twice.
inline int PayloadValue(int p) { return p; }
inline int PayloadValue(const std::unique_ptr<int>& p) { return *p; }
template <typename Payload>
Payload MakePayload(int value) {
  if constexpr (std::is_same_v<Payload, int>) {
    return value;
  } else {
    return std::make_unique<int>(value);
  }
}

// REQUIRES: Source has `std::int64_t Uniform(lo, hi)` (inclusive) and
// `bool done()`.
template <typename Source, typename Payload = int>
class WheelModel {
 public:
  WheelModel(Source source, std::int64_t tick_ns, std::int64_t origin_ns,
             WheelModelOptions options = {})
      : options_(options),
        source_(std::move(source)),
        tick_ns_(tick_ns),
        origin_ns_(origin_ns),
        max_tick_(static_cast<std::uint64_t>(
            (Int128{std::numeric_limits<std::int64_t>::max()} -
             std::max<std::int64_t>(origin_ns, 0)) /
            tick_ns)),
        wheel_(Duration(tick_ns), TimePoint(Duration(origin_ns))),
        now_ns_(origin_ns) {}

  // Runs up to `steps` operations (fewer if the source is done), then drains
  // the wheel with the tickless loop. Stops at the first failure.
  void Run(int steps) {
    for (step_ = 0; step_ < steps && !source_.done(); ++step_) {
      const std::int64_t op = Uniform(0, 99);
      if (op < 40) {
        Schedule();
      } else if (op < 52) {
        Cancel();
      } else if (op < 72) {
        Reschedule();
      } else if (op < 97) {
        Advance(NextTime());
      } else if (auto next = wheel_.NextDeadline()) {
        Advance(next->time_since_epoch().count());
      }
      if (failed()) return;
      if (wheel_.size() != pending_.size()) {
        return Fail("size() is " + std::to_string(wheel_.size()) +
                    ", the model has " + std::to_string(pending_.size()));
      }
      CheckNextDeadline();
      if (failed()) return;
      if (step_ % 97 == 0 || options_.dense || options_.check_every_step) {
        CheckInvariants();
        if (failed()) return;
      }
    }
    DrainTickless();
  }

  // Rounds of 50 to 300 Schedules, Cancels and Reschedules (a third each,
  // stale ids included) with nothing that reads the slots in between, then
  // one Advance and the checks: the slot work that Cancels and Reschedules
  // queue (up to 64 entries; Wheel::ApplyPending) is applied when the queue
  // is full as well as when the wheel is read. Then drains the wheel.
  void RunBursts(int rounds) {
    for (step_ = 0; step_ < rounds && !source_.done(); ++step_) {
      const std::int64_t ops = Uniform(50, 300);
      for (std::int64_t i = 0; i < ops; ++i) {
        const std::int64_t op = Uniform(0, 2);
        if (op == 0) {
          Schedule();
        } else if (op == 1) {
          Cancel();
        } else {
          Reschedule();
        }
        if (failed()) return;
        if (wheel_.size() != pending_.size()) {
          return Fail("size() is " + std::to_string(wheel_.size()) +
                      ", the model has " + std::to_string(pending_.size()));
        }
      }
      if (step_ % 3 == 0) CheckInvariants();
      CheckNextDeadline();
      if (failed()) return;
      Advance(NextTime());
      if (failed()) return;
    }
    DrainTickless();
  }

  // Empty while every check has passed; otherwise the first failure.
  const std::string& failure() const { return failure_; }
  bool failed() const { return !failure_.empty(); }

 private:
  struct ModelTimer {
    TimerId id;
    std::int64_t deadline_ns;  // as given
    std::uint64_t due_tick;    // when it may fire: max(rounded-up, now tick)
    bool touched_in_callback = false;
  };
  // What a callback throws when the model tells it to.
  struct CallbackThrow {};

  void Fail(const std::string& what) {
    if (failed()) return;
    std::ostringstream out;
    out << "step " << step_ << " (tick " << tick_ns_ << " ns, origin "
        << origin_ns_ << " ns, now " << now_ns_ << " ns): " << what;
    failure_ = out.str();
  }

  void CheckInvariants() {
    try {
      wheel_.CheckInvariants();
    } catch (const std::exception& e) {
      Fail(e.what());
    }
  }

  std::int64_t Uniform(std::int64_t lo, std::int64_t hi) {
    return source_.Uniform(lo, hi);
  }

  // The largest time the wheel can represent without clamping.
  std::int64_t MaxTimeNs() const {
    return static_cast<std::int64_t>(Int128{origin_ns_} +
                                     Int128{max_tick_} * tick_ns_);
  }

  std::int64_t ClampTime(Int128 t) const {
    return static_cast<std::int64_t>(
        std::clamp<Int128>(t, std::numeric_limits<std::int64_t>::min(),
                           MaxTimeNs()));
  }

  // An offset in ticks: from a few ticks to across every level.
  Int128 RandomTicks() {
    if (options_.dense) {
      return Uniform(0, 9) == 0 ? Uniform(0, std::int64_t{1} << 20)
                                : Uniform(0, 3 * 4096);
    }
    switch (Uniform(0, 9)) {
      case 0:
      case 1:
      case 2:
        return Uniform(0, 3);
      case 3:
      case 4:
        return Uniform(0, 130);
      case 5:
      case 6:
        return Uniform(0, std::int64_t{1} << 18);
      case 7:
        return Uniform(0, std::int64_t{1} << 30);
      case 8:
        return Uniform(0, std::int64_t{1} << 42);
      default:
        return Uniform(0, std::int64_t{1} << 60);  // centuries at 1 ns
    }
  }

  std::int64_t RandomDeadline() {
    if (options_.raw_deadlines && Uniform(0, 15) == 0) {
      return ClampTime(Uniform(std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max()));
    }
    // Sub-tick offsets too, so rounding is exercised.
    const Int128 offset =
        RandomTicks() * tick_ns_ + Uniform(-tick_ns_, tick_ns_);
    if (Uniform(0, 9) == 0) return ClampTime(Int128{now_ns_} - offset);  // past
    return ClampTime(Int128{now_ns_} + offset);
  }

  std::int64_t NextTime() {
    if (options_.dense) {
      return ClampTime(Int128{now_ns_} + Int128{Uniform(0, 40)} * tick_ns_ +
                       Uniform(0, tick_ns_));
    }
    return ClampTime(Int128{now_ns_} + RandomTicks() * tick_ns_ +
                     Uniform(0, tick_ns_));
  }

  std::uint64_t DueTick(std::int64_t deadline_ns) const {
    const Int128 d = Int128{deadline_ns} - origin_ns_;
    if (d <= 0) return now_tick_;
    const Int128 ceil = (d + tick_ns_ - 1) / tick_ns_;
    const auto tick = static_cast<std::uint64_t>(
        std::min<Int128>(ceil, Int128{max_tick_}));
    return std::max(tick, now_tick_);
  }

  std::uint64_t NowTick(std::int64_t now_ns) const {
    const Int128 d = Int128{now_ns} - origin_ns_;
    if (d <= 0) return 0;
    return static_cast<std::uint64_t>(
        std::min<Int128>(d / tick_ns_, Int128{max_tick_}));
  }

  static TimePoint Time(std::int64_t ns) { return TimePoint(Duration(ns)); }

  int PickPending() {
    if (pending_.empty()) return -1;
    auto it = pending_.begin();
    std::advance(it,
                 Uniform(0, static_cast<std::int64_t>(pending_.size()) - 1));
    return it->first;
  }

  TimerId PickDeadId() {
    if (dead_.empty()) return TimerId();
    return dead_[static_cast<std::size_t>(
        Uniform(0, static_cast<std::int64_t>(dead_.size()) - 1))];
  }

  // A stale id, or in fuzz mode now and then a forged one (which may name a
  // pending timer). Returns the payload it names, or -1 if none.
  std::pair<TimerId, int> PickIdToRefuse() {
    if (options_.forged_ids && Uniform(0, 3) == 0) {
      const TimerId forged = internal::TimerIdCodec::Make(
          static_cast<std::uint32_t>(Uniform(0, 70)),
          static_cast<std::uint32_t>(Uniform(0, 3)));
      for (const auto& [payload, t] : pending_) {
        if (t.id == forged) return {forged, payload};
      }
      return {forged, -1};
    }
    return {PickDeadId(), -1};
  }

  void Schedule(bool in_callback = false) {
    const std::int64_t deadline = RandomDeadline();
    const int payload = next_payload_++;
    const TimerId id =
        wheel_.Schedule(Time(deadline), MakePayload<Payload>(payload));
    pending_[payload] = {id, deadline, DueTick(deadline), in_callback};
  }

  void Cancel() {
    if (Uniform(0, 9) == 0) {
      const auto [id, names] = PickIdToRefuse();
      if (wheel_.Cancel(id) != (names >= 0)) {
        return Fail(names >= 0 ? "Cancel refused a forged id of a pending timer"
                               : "Cancel accepted a stale or forged id");
      }
      if (names >= 0) Forget(names);
      return;
    }
    const int payload = PickPending();
    if (payload < 0) return;
    if (!wheel_.Cancel(pending_[payload].id)) {
      return Fail("Cancel of pending timer " + std::to_string(payload) +
                  " returned false");
    }
    Forget(payload);
  }

  void Forget(int payload) {
    dead_.push_back(pending_[payload].id);
    pending_.erase(payload);
  }

  void Reschedule(bool in_callback = false) {
    if (Uniform(0, 9) == 0) {
      const auto [id, names] = PickIdToRefuse();
      if (names >= 0) {
        MoveTo(names, id, now_ns_, in_callback);
      } else if (wheel_.Reschedule(id, Time(now_ns_))) {
        Fail("Reschedule accepted a stale or forged id");
      }
      return;
    }
    const int payload = PickPending();
    if (payload < 0) return;
    ModelTimer& t = pending_[payload];
    // The heartbeat case half the time: a little later than before.
    const std::int64_t deadline =
        Uniform(0, 1) == 0
            ? ClampTime(Int128{t.deadline_ns} + Int128{Uniform(0, 100)} * tick_ns_)
            : RandomDeadline();
    MoveTo(payload, t.id, deadline, in_callback);
  }

  void MoveTo(int payload, TimerId id, std::int64_t deadline, bool in_callback) {
    if (!wheel_.Reschedule(id, Time(deadline))) {
      return Fail("Reschedule of pending timer " + std::to_string(payload) +
                  " returned false");
    }
    ModelTimer& t = pending_[payload];
    t.deadline_ns = deadline;
    t.due_tick = DueTick(deadline);
    t.touched_in_callback = t.touched_in_callback || in_callback;
    ++reschedules_;
  }

  void Advance(std::int64_t to_ns) {
    now_ns_ = std::max(now_ns_, to_ns);
    const std::uint64_t target_tick = std::max(now_tick_, NowTick(now_ns_));
    const bool check_order = !relax_order_once_;
    relax_order_once_ = false;
    std::size_t calls = 0;
    std::uint64_t last_due = 0;
    bool threw = false;
    std::size_t fired = 0;
    try {
      fired = wheel_.Advance(Time(now_ns_), [&](Payload p) {
        ++calls;
        if (failed()) return;
        const int payload = PayloadValue(p);
        auto it = pending_.find(payload);
        if (it == pending_.end()) {
          return Fail("fired timer " + std::to_string(payload) +
                      ", which is not pending (cancelled, or fired twice)");
        }
        const ModelTimer t = it->second;
        pending_.erase(it);
        dead_.push_back(t.id);
        if (std::min(t.deadline_ns, MaxTimeNs()) > now_ns_) {
          return Fail("fired timer " + std::to_string(payload) +
                      " early: deadline " + std::to_string(t.deadline_ns));
        }
        if (t.due_tick > target_tick) {
          return Fail("fired timer " + std::to_string(payload) +
                      " before its tick " + std::to_string(t.due_tick) +
                      " (now tick " + std::to_string(target_tick) + ")");
        }
        if (!t.touched_in_callback && check_order) {
          if (t.due_tick < last_due) {
            return Fail("fired timer " + std::to_string(payload) +
                        " (due tick " + std::to_string(t.due_tick) +
                        ") out of order, after one due at tick " +
                        std::to_string(last_due));
          }
          last_due = t.due_tick;
        }
        // Callbacks act on the wheel now and then (not while draining).
        switch (draining_ ? -1 : Uniform(0, 19)) {
          case 0:
            Schedule(/*in_callback=*/true);
            break;
          case 1:
            Cancel();
            break;
          case 2:
            Reschedule(/*in_callback=*/true);
            break;
          default:
            break;
        }
        if (options_.throwing_callbacks && !draining_ && Uniform(0, 15) == 0) {
          throw CallbackThrow{};
        }
      });
    } catch (const CallbackThrow&) {
      threw = true;
    } catch (const std::exception& e) {
      return Fail(std::string("Advance threw ") + e.what());
    }
    if (failed()) return;
    if (!threw && fired != calls) {
      return Fail("Advance returned " + std::to_string(fired) + " but called " +
                  std::to_string(calls) + " callbacks");
    }
    now_tick_ = target_tick;
    for (auto& [payload, t] : pending_) {
      // After a throw the rest of the due timers wait for the next Advance,
      // which may fire them in any order.
      if (!t.touched_in_callback && !threw && t.due_tick <= now_tick_) {
        return Fail("timer " + std::to_string(payload) + " due at tick " +
                    std::to_string(t.due_tick) + " not fired by tick " +
                    std::to_string(now_tick_) + " (more than a tick late)");
      }
      // Touched timers had this Advance as grace; from now on the rule is
      // the plain one, counted from the current tick.
      t.touched_in_callback = false;
      t.due_tick = std::max(t.due_tick, now_tick_);
    }
    if (threw) relax_order_once_ = true;
  }

  void CheckNextDeadline() {
    const std::optional<TimePoint> next = wheel_.NextDeadline();
    if (pending_.empty()) {
      if (next) return Fail("NextDeadline() is set on an empty wheel");
      return;
    }
    if (!next) return Fail("NextDeadline() is nullopt with timers pending");
    std::uint64_t earliest = std::numeric_limits<std::uint64_t>::max();
    for (const auto& [payload, t] : pending_) {
      earliest = std::min(earliest, t.due_tick);
    }
    const Int128 earliest_ns = Int128{origin_ns_} + Int128{earliest} * tick_ns_;
    if (next->time_since_epoch().count() > earliest_ns) {
      Fail("NextDeadline() " + std::to_string(next->time_since_epoch().count()) +
           " is later than the earliest due time " +
           std::to_string(static_cast<std::int64_t>(earliest_ns)));
    }
  }

  void DrainTickless() {
    draining_ = true;
    const std::size_t bound = (pending_.size() + reschedules_) * 12 + 2;
    std::size_t calls = 0;
    while (auto next = wheel_.NextDeadline()) {
      const std::size_t before = pending_.size();
      Advance(next->time_since_epoch().count());
      if (failed()) return;
      const std::optional<TimePoint> after = wheel_.NextDeadline();
      if (!(pending_.size() < before || !after || *after > *next)) {
        return Fail("Advance(NextDeadline()) neither fired nor moved on: a spin");
      }
      if (++calls > bound) {
        return Fail("the tickless drain took more than " +
                    std::to_string(bound) + " calls");
      }
    }
    if (!pending_.empty() || wheel_.size() != 0) {
      return Fail("NextDeadline() is nullopt but " +
                  std::to_string(pending_.size()) + " timers are pending");
    }
    CheckInvariants();
  }

  const WheelModelOptions options_;
  Source source_;
  const std::int64_t tick_ns_;
  const std::int64_t origin_ns_;
  const std::uint64_t max_tick_;
  Wheel<Payload> wheel_;
  std::int64_t now_ns_;
  std::uint64_t now_tick_ = 0;
  int step_ = 0;
  int next_payload_ = 0;
  std::map<int, ModelTimer> pending_;
  std::vector<TimerId> dead_;
  std::size_t reschedules_ = 0;
  bool draining_ = false;
  bool relax_order_once_ = false;
  std::string failure_;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_WHEEL_MODEL_H_
