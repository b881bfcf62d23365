// Model-based test of Wheel<T>: long random sequences of Schedule, Cancel,
// Reschedule and Advance, with time jumps from nothing to centuries, checked
// against a plain reference (a map of pending timers and their due ticks)
// and the wheel's own invariant checker.
//
// What is asserted, at every step:
// - every timer fires exactly once, at the first Advance whose tick reaches
//   its due tick (deadline rounded up to a tick): never early, at most one
//   tick late; fired in due order;
// - cancelled timers never fire; Cancel/Reschedule of fired, cancelled or
//   never-issued ids return false;
// - size() matches; NextDeadline() is never later than the earliest time a
//   pending timer becomes due;
// - the tickless loop `Advance(*NextDeadline())` drains the wheel, each call
//   firing something or moving NextDeadline forward (it never spins).
// Timers that callbacks schedule or move during an Advance may fire in that
// Advance or the next one (the documented rule for timers made due from
// inside on_expire), never early. The burst mode runs hundreds of Cancels
// and Reschedules between looks at the wheel, so that the work they queue
// (up to 64 entries; see Wheel::ApplyPending) is applied when the queue is
// full as well as when the wheel is read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tickwheel/wheel.h"

namespace tickwheel {
namespace {

__extension__ using Int128 = __int128;

struct ModelTimer {
  TimerId id;
  std::int64_t deadline_ns;  // as given
  std::uint64_t due_tick;    // when it may fire: max(rounded-up, now tick)
  bool touched_in_callback = false;
};

class WheelModel {
 public:
  // Dense: delays within a few level-1 revolutions and small steps of time,
  // so that big slots are cascaded a share per Advance (spread cascades).
  WheelModel(std::uint64_t seed, std::int64_t tick_ns, std::int64_t origin_ns,
             bool dense = false)
      : dense_(dense),
        rng_(seed),
        tick_ns_(tick_ns),
        origin_ns_(origin_ns),
        max_tick_(static_cast<std::uint64_t>(
            (Int128{std::numeric_limits<std::int64_t>::max()} -
             std::max<std::int64_t>(origin_ns, 0)) /
            tick_ns)),
        wheel_(Duration(tick_ns), TimePoint(Duration(origin_ns))),
        now_ns_(origin_ns) {}

  // Rounds of 50 to 300 Schedules, Cancels and Reschedules (a third each,
  // stale ids included) with nothing that reads the slots in between, then
  // one Advance and the checks.
  void RunBursts(int rounds) {
    for (int round = 0; round < rounds; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
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
        if (::testing::Test::HasFatalFailure()) return;
        ASSERT_EQ(wheel_.size(), pending_.size());
      }
      if (round % 3 == 0) {
        ASSERT_NO_THROW(wheel_.CheckInvariants());
      }
      CheckNextDeadline();
      if (::testing::Test::HasFatalFailure()) return;
      Advance(NextTime());
      if (::testing::Test::HasFatalFailure()) return;
    }
    DrainTickless();
  }

  void Run(int steps) {
    for (int step = 0; step < steps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
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
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_EQ(wheel_.size(), pending_.size());
      CheckNextDeadline();
      if (step % 97 == 0 || dense_) {
        ASSERT_NO_THROW(wheel_.CheckInvariants());
      }
    }
    DrainTickless();
  }

 private:
  std::int64_t Uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

  // The largest time the wheel can represent without clamping.
  std::int64_t MaxTimeNs() const {
    return origin_ns_ + static_cast<std::int64_t>(max_tick_) * tick_ns_;
  }

  std::int64_t ClampTime(Int128 t) const {
    return static_cast<std::int64_t>(
        std::clamp<Int128>(t, std::numeric_limits<std::int64_t>::min(),
                           MaxTimeNs()));
  }

  // An offset in ticks: from a few ticks to across every level.
  Int128 RandomTicks() {
    if (dense_) {
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
    // Sub-tick offsets too, so rounding is exercised.
    const Int128 offset = RandomTicks() * tick_ns_ + Uniform(-tick_ns_, tick_ns_);
    if (Uniform(0, 9) == 0) return ClampTime(Int128{now_ns_} - offset);  // past
    return ClampTime(Int128{now_ns_} + offset);
  }

  std::int64_t NextTime() {
    if (dense_) {
      return ClampTime(Int128{now_ns_} + Uniform(0, 40) * tick_ns_ +
                       Uniform(0, tick_ns_));
    }
    return ClampTime(Int128{now_ns_} + RandomTicks() * tick_ns_ +
                     Uniform(0, tick_ns_));
  }

  std::uint64_t DueTick(std::int64_t deadline_ns) const {
    const Int128 d = Int128{deadline_ns} - origin_ns_;
    if (d <= 0) return std::max<std::uint64_t>(0, now_tick_);
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

  TimePoint Time(std::int64_t ns) const { return TimePoint(Duration(ns)); }

  int PickPending() {
    if (pending_.empty()) return -1;
    auto it = pending_.begin();
    std::advance(it, Uniform(0, static_cast<std::int64_t>(pending_.size()) - 1));
    return it->first;
  }

  TimerId PickDeadId() {
    if (dead_.empty()) return TimerId();
    return dead_[static_cast<std::size_t>(
        Uniform(0, static_cast<std::int64_t>(dead_.size()) - 1))];
  }

  void Schedule(bool in_callback = false) {
    const std::int64_t deadline = RandomDeadline();
    const int payload = next_payload_++;
    const TimerId id = wheel_.Schedule(Time(deadline), payload);
    pending_[payload] = {id, deadline, DueTick(deadline), in_callback};
  }

  void Cancel(bool in_callback = false) {
    if (Uniform(0, 9) == 0) {
      ASSERT_FALSE(wheel_.Cancel(PickDeadId())) << "stale id accepted";
      return;
    }
    const int payload = PickPending();
    if (payload < 0) return;
    ASSERT_TRUE(wheel_.Cancel(pending_[payload].id));
    dead_.push_back(pending_[payload].id);
    pending_.erase(payload);
    (void)in_callback;
  }

  void Reschedule(bool in_callback = false) {
    if (Uniform(0, 9) == 0) {
      ASSERT_FALSE(wheel_.Reschedule(PickDeadId(), Time(now_ns_)))
          << "stale id accepted";
      return;
    }
    const int payload = PickPending();
    if (payload < 0) return;
    ModelTimer& t = pending_[payload];
    // The heartbeat case half the time: a little later than before.
    const std::int64_t deadline =
        Uniform(0, 1) == 0
            ? ClampTime(Int128{t.deadline_ns} + Uniform(0, 100) * tick_ns_)
            : RandomDeadline();
    ASSERT_TRUE(wheel_.Reschedule(t.id, Time(deadline)));
    t.deadline_ns = deadline;
    t.due_tick = DueTick(deadline);
    t.touched_in_callback = t.touched_in_callback || in_callback;
    ++reschedules_;
  }

  void Advance(std::int64_t to_ns) {
    now_ns_ = std::max(now_ns_, to_ns);
    const std::uint64_t target_tick = std::max(now_tick_, NowTick(now_ns_));
    std::size_t calls = 0;
    std::uint64_t last_due = 0;
    const std::size_t fired = wheel_.Advance(Time(now_ns_), [&](int payload) {
      ++calls;
      auto it = pending_.find(payload);
      ASSERT_NE(it, pending_.end()) << "fired a timer that is not pending "
                                       "(cancelled, or fired twice)";
      const ModelTimer t = it->second;
      pending_.erase(it);
      dead_.push_back(t.id);
      ASSERT_LE(t.deadline_ns, now_ns_) << "fired early";
      ASSERT_LE(t.due_tick, target_tick) << "fired before its tick";
      if (!t.touched_in_callback) {
        ASSERT_GE(t.due_tick, last_due) << "fired out of order";
        last_due = t.due_tick;
      }
      // Callbacks act on the wheel now and then (not while draining).
      switch (draining_ ? -1 : Uniform(0, 19)) {
        case 0:
          Schedule(/*in_callback=*/true);
          break;
        case 1:
          Cancel(/*in_callback=*/true);
          break;
        case 2:
          Reschedule(/*in_callback=*/true);
          break;
        default:
          break;
      }
    });
    ASSERT_EQ(fired, calls);
    now_tick_ = target_tick;
    for (auto& [payload, t] : pending_) {
      if (!t.touched_in_callback) {
        ASSERT_GT(t.due_tick, now_tick_)
            << "timer " << payload << " due at tick " << t.due_tick
            << " not fired by tick " << now_tick_ << " (more than a tick late)";
      }
      // Touched timers had this Advance as grace; from now on the rule is
      // the plain one, counted from the current tick.
      t.touched_in_callback = false;
      t.due_tick = std::max(t.due_tick, now_tick_);
    }
  }

  void CheckNextDeadline() {
    const std::optional<TimePoint> next = wheel_.NextDeadline();
    if (pending_.empty()) {
      ASSERT_FALSE(next.has_value());
      return;
    }
    ASSERT_TRUE(next.has_value());
    std::uint64_t earliest = std::numeric_limits<std::uint64_t>::max();
    for (const auto& [payload, t] : pending_) {
      earliest = std::min(earliest, t.due_tick);
    }
    const std::int64_t earliest_ns =
        origin_ns_ + static_cast<std::int64_t>(earliest) * tick_ns_;
    ASSERT_LE(next->time_since_epoch().count(), earliest_ns)
        << "NextDeadline later than the earliest due time";
  }

  void DrainTickless() {
    draining_ = true;
    const std::size_t bound = (pending_.size() + reschedules_) * 12 + 2;
    std::size_t calls = 0;
    while (auto next = wheel_.NextDeadline()) {
      const std::size_t before = pending_.size();
      Advance(next->time_since_epoch().count());
      if (::testing::Test::HasFatalFailure()) return;
      const std::optional<TimePoint> after = wheel_.NextDeadline();
      ASSERT_TRUE(pending_.size() < before || !after || *after > *next)
          << "Advance(NextDeadline()) neither fired nor moved on: a spin";
      ASSERT_LE(++calls, bound);
    }
    ASSERT_TRUE(pending_.empty());
    ASSERT_EQ(wheel_.size(), 0u);
    ASSERT_NO_THROW(wheel_.CheckInvariants());
  }

  const bool dense_;
  std::mt19937_64 rng_;
  const std::int64_t tick_ns_;
  const std::int64_t origin_ns_;
  const std::uint64_t max_tick_;
  Wheel<int> wheel_;
  std::int64_t now_ns_;
  std::uint64_t now_tick_ = 0;
  int next_payload_ = 0;
  std::map<int, ModelTimer> pending_;
  std::vector<TimerId> dead_;
  std::size_t reschedules_ = 0;
  bool draining_ = false;
};

class WheelModelTest : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(WheelModelTest, RandomOperationsMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 pick(seed);
    // Origins at zero, at a typical steady_clock reading, and near the end
    // of the representable range (so clamping is exercised).
    const std::int64_t origins[] = {
        0, 3'600'000'000'000 + static_cast<std::int64_t>(pick() % 1000),
        static_cast<std::int64_t>(
            std::numeric_limits<std::int64_t>::max() -
            std::min<Int128>(Int128{tick_ns} << 40,
                             std::numeric_limits<std::int64_t>::max() / 2))};
    WheelModel model(seed, tick_ns, origins[seed % 3]);
    model.Run(2500);
    if (HasFatalFailure()) return;
  }
}

// Thousands of timers within a few level-1 revolutions, time moving a few
// ticks at a time: most slots that come up have been partly moved down by
// earlier Advances.
TEST_P(WheelModelTest, DenseTimersWithSmallStepsMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    WheelModel model(seed, tick_ns, 3'600'000'000'000 + 17, /*dense=*/true);
    model.Run(6000);
    if (HasFatalFailure()) return;
  }
}

// Hundreds of Cancels and Reschedules between Advances: the slot work they
// queue is applied in full batches, in any order with Schedules, and stale
// ids (including ones cancelled a moment ago, whose unlink is still queued)
// are refused.
TEST_P(WheelModelTest, BurstsOfCancelsAndMovesMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    WheelModel model(seed, tick_ns, 3'600'000'000'000 + 5,
                     /*dense=*/seed % 2 == 0);
    model.RunBursts(60);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Ticks, WheelModelTest,
                         ::testing::Values(1, 1000, 1'000'000, 7'000'000,
                                           1'000'000'000),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param) + "ns";
                         });

}  // namespace
}  // namespace tickwheel
