// SPDX-License-Identifier: Apache-2.0
// The scheduler with flow control, on a manual clock over a real store:
// limited flows fire within their limits, keep their backlog in the store,
// never hold up other flows, pause and resume in due order, and report how
// long their timers waited for them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "common/server_clock.h"
#include "flow/flow_registry.h"
#include "scheduler/scheduler.h"
#include "store_test_util.h"

namespace tickwheel::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr std::int64_t kStart = 1'800'000'000'000;

struct Fire {
  FiredTimer timer;
  std::int64_t at_ms;
};

// The scheduler as the server wires it, with a flow registry. What fires is
// recorded and, unless the flow's attempts are held (hold_flows), answered
// and finished at the next step (marked delivered in the store).
class FlowFixture {
 public:
  explicit FlowFixture(TimerStore& store, SchedulerOptions options = {})
      : store_(store),
        clock_(kStart),
        scheduler_(
            store, clock_, options,
            [this](std::vector<FiredTimer> due) {
              std::lock_guard lock(mutex_);
              max_loaded_ = std::max(max_loaded_, scheduler_.loaded());
              for (FiredTimer& d : due) {
                fired_.push_back({d, clock_.WallMs()});
                (held_.count(d.entry.flow) ? in_flight_ : finish_).push_back(d.entry.id);
              }
            },
            &flows_) {
    store.SetDueListener(
        [this](const std::string& id, std::optional<std::int64_t> due, const std::string& flow) {
          scheduler_.OnDueChange(id, due, flow);
        });
    scheduler_.AddShards({0});
  }
  ~FlowFixture() { scheduler_.Stop(); }

  FlowRegistry& flows() { return flows_; }
  Scheduler& scheduler() { return scheduler_; }
  ManualServerClock& clock() { return clock_; }
  void Start() {
    scheduler_.Start();
    Settle();
  }
  void Settle() { clock_.manual().AdvanceTo(clock_.manual().Now()); }
  void Set(const std::string& flow, FlowSettings settings) {
    flows_.Set(flow, settings);
    scheduler_.Nudge();
    Settle();
  }
  // Attempts of `flow` stay in flight until EndAttempts.
  void HoldAttempts(const std::string& flow) {
    std::lock_guard lock(mutex_);
    held_.insert(flow);
  }
  // Ends (answers and finishes) up to `n` held attempts, oldest first, with
  // `signal`.
  void EndAttempts(std::size_t n, const FlowSignal& signal = {}) {
    std::vector<std::string> ids;
    {
      std::lock_guard lock(mutex_);
      n = std::min(n, in_flight_.size());
      ids.assign(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(n));
      in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    Deliver(ids, signal);
  }
  std::size_t held_in_flight() {
    std::lock_guard lock(mutex_);
    return in_flight_.size();
  }

  // Advances the clock in `step`s up to `total`, answering what fired.
  void Run(milliseconds total, milliseconds step = milliseconds(1)) {
    for (milliseconds t{0}; t < total; t += step) {
      clock_.Advance(step);
      std::vector<std::string> finish;
      {
        std::lock_guard lock(mutex_);
        finish.swap(finish_);
      }
      Deliver(finish, {.delivered = true});
    }
  }

  std::vector<Fire> fired() {
    std::lock_guard lock(mutex_);
    return fired_;
  }
  std::vector<Fire> fired_of(const std::string& flow) {
    std::vector<Fire> out;
    for (const Fire& f : fired()) {
      if (f.timer.entry.flow == flow) out.push_back(f);
    }
    return out;
  }
  std::size_t max_loaded() {
    std::lock_guard lock(mutex_);
    return max_loaded_;
  }

 private:
  void Deliver(const std::vector<std::string>& ids, const FlowSignal& signal) {
    if (ids.empty()) return;
    for (const std::string& id : ids) scheduler_.AttemptEnded(id, signal);
    Apply(store_, ids, [&](StoreTxn& txn) {
      for (const std::string& id : ids) {
        auto r = *txn.Get(id);
        if (!r) continue;
        TimerRecord next = *r;
        next.state = TimerState::kDelivered;
        txn.Put(r, next);
      }
    });
    for (const std::string& id : ids) scheduler_.Finish(id);
  }

  TimerStore& store_;
  ManualServerClock clock_;
  FlowRegistry flows_;
  std::mutex mutex_;
  std::vector<Fire> fired_;
  std::vector<std::string> finish_;
  std::vector<std::string> in_flight_;
  std::set<std::string> held_;
  std::size_t max_loaded_ = 0;
  Scheduler scheduler_;
};

// `n` timers of `flow` due at `due(i)`, ids "<flow>-<i>".
template <typename Due>
void Create(TimerStore& store, const std::string& flow, int n, Due due) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(flow + "-" + std::to_string(i));
  for (std::size_t from = 0; from < ids.size(); from += 5000) {
    std::vector<std::string> part(ids.begin() + static_cast<std::ptrdiff_t>(from),
                                  ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), from + 5000)));
    Apply(store, part, [&](StoreTxn& txn) {
      for (std::size_t i = 0; i < part.size(); ++i) {
        TimerRecord r = Record(part[i], due(static_cast<int>(from + i)));
        r.flow = flow;
        txn.Put(std::nullopt, r);
      }
    });
  }
}

FlowSettings Rate(double rate, std::int64_t burst) {
  FlowSettings s;
  s.rate_per_s = rate;
  s.burst = burst;
  return s;
}

// The most fires in any window of `w_ms` (over every fire).
std::size_t MaxInWindow(std::vector<Fire> fires, std::int64_t w_ms) {
  std::sort(fires.begin(), fires.end(), [](const Fire& a, const Fire& b) { return a.at_ms < b.at_ms; });
  std::size_t best = 0, lo = 0;
  for (std::size_t hi = 0; hi < fires.size(); ++hi) {
    while (fires[hi].at_ms - fires[lo].at_ms >= w_ms) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  return best;
}

void ExpectEachOnceNeverEarly(const std::vector<Fire>& fires, std::size_t expected) {
  std::map<std::string, int> count;
  for (const Fire& f : fires) {
    ++count[f.timer.entry.id];
    EXPECT_GE(f.at_ms, f.timer.entry.due_ms) << f.timer.entry.id << " fired early";
  }
  EXPECT_EQ(count.size(), expected);
  for (const auto& [id, n] : count) EXPECT_EQ(n, 1) << id << " fired " << n << " times";
}

TEST(FlowSchedulerTest, ARateLimitedFlowFiresAtItsRateAndItsBacklogStaysInTheStore) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Create(*store, "slow", 5000, [](int) { return kStart - 1000; });  // all overdue at once
  SchedulerOptions options;
  options.max_window_timers = 100'000;
  FlowFixture f(*store, options);
  f.flows().Set("slow", Rate(100, 10));
  f.Start();
  f.Run(milliseconds(5000), milliseconds(5));
  const std::vector<Fire> fires = f.fired_of("slow");
  EXPECT_LE(MaxInWindow(fires, 1000), 100u + 10u);  // rate + burst in any second
  EXPECT_GE(fires.size(), 480u);                    // and it does send at its rate
  EXPECT_LE(fires.size(), 510u);
  // Memory: what it can send soon (its quota: burst + 2 s of rate, at least
  // 256), not the backlog of 5000 the window's cap would have let in.
  EXPECT_LE(f.max_loaded(), 256u);
  // Each waited for its flow, and says how long: the n-th went out about
  // n/100 s after the scheduler started (they were due before: that second
  // was the server's, not the flow's).
  for (const Fire& fire : fires) {
    EXPECT_GE(fire.timer.throttled_ms, fire.at_ms - kStart - 5) << fire.timer.entry.id;
    EXPECT_LE(fire.timer.throttled_ms, fire.at_ms - kStart) << fire.timer.entry.id;
  }
  ExpectEachOnceNeverEarly(fires, fires.size());
}

TEST(FlowSchedulerTest, AThrottledFlowNeverDelaysAnotherFlow) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  // 20,000 due behind a flow of 10 a second (a backlog 10x the window's cap)...
  Create(*store, "slow", 20'000, [](int i) { return kStart - 10 + i % 7; });
  // ... and another flow's timers due every 10 ms meanwhile.
  Create(*store, "fast", 200, [](int i) { return kStart + 10 + 10 * i; });
  SchedulerOptions options;
  options.max_window_timers = 2000;
  FlowFixture f(*store, options);
  f.flows().Set("slow", Rate(10, 1));
  f.Start();
  f.Run(milliseconds(2500));
  const std::vector<Fire> fast = f.fired_of("fast");
  ExpectEachOnceNeverEarly(fast, 200);
  for (const Fire& fire : fast) {
    EXPECT_LE(fire.at_ms - fire.timer.entry.due_ms, 1) << fire.timer.entry.id << " was held up";
    EXPECT_EQ(fire.timer.throttled_ms, 0);
  }
  EXPECT_LE(f.fired_of("slow").size(), 10u * 3 + 1);
  // The slow flow's backlog stays in the store: memory is its quota and the
  // fast flow's window, far from the 20,000 (or the cap of 2000).
  EXPECT_LE(f.max_loaded(), 256u + 200u);
}

TEST(FlowSchedulerTest, AFlowWithAHugeBacklogDoesNotStarveASmallOne) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  // No limits at all: 8000 overdue of one flow, and one timer of another due
  // after them.
  Create(*store, "big", 8000, [](int i) { return kStart - 5000 + i / 4; });
  Create(*store, "small", 1, [](int) { return kStart + 5; });
  SchedulerOptions options;
  options.max_window_timers = 1000;
  FlowFixture f(*store, options);
  f.HoldAttempts("big");  // the big flow's receiver is slow: nothing of it ends
  f.Start();
  f.Run(milliseconds(10));
  // The big one holds a quarter of the window, and the small one is loaded
  // and fires on time.
  ASSERT_EQ(f.fired_of("small").size(), 1u);
  EXPECT_LE(f.fired_of("small")[0].at_ms, kStart + 6);
  EXPECT_LE(f.fired_of("big").size(), 250u);
  f.EndAttempts(100'000);
  f.Run(milliseconds(1000));
  f.EndAttempts(100'000);
  EXPECT_LE(f.max_loaded(), 1000u);
}

// A flow without a cap of its own has at most 8,192 attempts started and
// not answered (docs/server.md: its backlog cannot fill the delivery
// pipeline ahead of the others), and uses them; as attempts end, as many
// more start; another flow meanwhile goes out on time.
TEST(FlowSchedulerTest, AFlowWithoutACapHasAtMost8192AttemptsInFlight) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Create(*store, "big", 10'000, [](int) { return kStart - 1000; });  // all overdue
  SchedulerOptions options;
  options.max_window_timers = 100'000;  // a quarter of it holds the whole backlog
  FlowFixture f(*store, options);
  f.HoldAttempts("big");  // its receiver answers nothing until told
  f.Start();
  f.Run(milliseconds(1000), milliseconds(10));
  EXPECT_EQ(f.held_in_flight(), 8192u);
  Create(*store, "small", 10, [](int) { return kStart + 1100; });
  f.Run(milliseconds(200), milliseconds(10));
  ASSERT_EQ(f.fired_of("small").size(), 10u);
  for (const Fire& fire : f.fired_of("small")) EXPECT_LE(fire.at_ms, kStart + 1110);
  f.EndAttempts(1000, {.delivered = true});
  f.Run(milliseconds(200), milliseconds(10));
  EXPECT_EQ(f.held_in_flight(), 8192u);
  ExpectEachOnceNeverEarly(f.fired_of("big"), 9192);
  f.EndAttempts(100'000);
  f.Run(milliseconds(200), milliseconds(10));
}

TEST(FlowSchedulerTest, TheInFlightCapHoldsUntilAttemptsEnd) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Create(*store, "capped", 30, [](int i) { return kStart + i; });
  FlowFixture f(*store);
  FlowSettings cap;
  cap.max_in_flight = 4;
  f.flows().Set("capped", cap);
  f.HoldAttempts("capped");
  f.Start();
  f.Run(milliseconds(100));
  EXPECT_EQ(f.fired_of("capped").size(), 4u);
  EXPECT_EQ(f.held_in_flight(), 4u);
  f.EndAttempts(1);
  f.Run(milliseconds(1));
  EXPECT_EQ(f.fired_of("capped").size(), 5u);
  for (int i = 0; i < 40; ++i) {
    f.EndAttempts(2);
    f.Run(milliseconds(1));
    EXPECT_LE(f.held_in_flight(), 4u);
  }
  ExpectEachOnceNeverEarly(f.fired_of("capped"), 30);
  // In due order.
  const std::vector<Fire> fires = f.fired_of("capped");
  for (std::size_t i = 1; i < fires.size(); ++i) {
    EXPECT_LE(fires[i - 1].timer.entry.due_ms, fires[i].timer.entry.due_ms);
  }
}

TEST(FlowSchedulerTest, APausedFlowKeepsItsTimersPendingAndSendsThemInDueOrderOnResume) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  FlowFixture f(*store);
  FlowSettings paused;
  paused.paused = true;
  f.flows().Set("p", paused);
  f.Start();
  // Due in reverse of their creation order, some before the pause began.
  Create(*store, "p", 300, [](int i) { return kStart + 1000 - 3 * i; });
  Create(*store, "q", 10, [](int i) { return kStart + 100 * i; });
  f.Run(milliseconds(2000), milliseconds(5));
  EXPECT_TRUE(f.fired_of("p").empty());
  EXPECT_EQ(f.fired_of("q").size(), 10u);  // another flow goes on
  EXPECT_EQ(Stored(*store, "p-0")->state, TimerState::kPending);
  EXPECT_EQ(Stored(*store, "p-299")->state, TimerState::kPending);
  EXPECT_EQ(f.scheduler().loaded(), 0u);  // paused: nothing of it in memory
  FlowSettings limited = Rate(200, 20);    // resumed, with a rate
  f.Set("p", limited);
  f.Run(milliseconds(3000), milliseconds(5));
  const std::vector<Fire> fires = f.fired_of("p");
  ExpectEachOnceNeverEarly(fires, 300);
  for (std::size_t i = 1; i < fires.size(); ++i) {
    EXPECT_LE(fires[i - 1].timer.entry.due_ms, fires[i].timer.entry.due_ms) << i;
  }
  EXPECT_LE(MaxInWindow(fires, 1000), 220u);
  // They waited for the flow (paused), and say so.
  EXPECT_GT(fires.front().timer.throttled_ms, 1000);
}

TEST(FlowSchedulerTest, PausingAFlowWithTimersInMemorySendsNoMoreOfThem) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Create(*store, "r", 1000, [](int i) { return kStart + 10 + i; });
  FlowFixture f(*store);
  f.flows().Set("r", Rate(100, 1));
  f.Start();
  f.Run(milliseconds(500));
  const std::size_t before = f.fired_of("r").size();
  EXPECT_GT(before, 40u);
  FlowSettings paused = Rate(100, 1);
  paused.paused = true;
  f.Set("r", paused);
  f.Run(milliseconds(2000), milliseconds(10));
  EXPECT_EQ(f.fired_of("r").size(), before);
  EXPECT_EQ(f.scheduler().loaded(), 0u);  // what it held went back to the store
  f.Set("r", Rate(1000, 100));
  f.Run(milliseconds(2000), milliseconds(5));
  ExpectEachOnceNeverEarly(f.fired_of("r"), 1000);
}

TEST(FlowSchedulerTest, RetryAfterHoldsTheWholeFlowAndRepeated429sLowerItsRate) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Create(*store, "h", 2000, [](int i) { return kStart + i / 2; });
  FlowFixture f(*store);
  f.HoldAttempts("h");
  f.flows().Set("h", Rate(100, 10));
  f.Start();
  f.Run(milliseconds(200));
  ASSERT_GT(f.held_in_flight(), 0u);
  f.EndAttempts(1, {.retry_after_ms = 2000});
  const std::int64_t held_at = f.clock().WallMs();
  f.EndAttempts(100'000, {.delivered = true});
  const std::size_t before = f.fired_of("h").size();
  f.Run(milliseconds(1990), milliseconds(10));
  EXPECT_EQ(f.fired_of("h").size(), before) << "sent during the hold";
  f.Run(milliseconds(500), milliseconds(5));
  EXPECT_GT(f.fired_of("h").size(), before);
  for (const Fire& fire : f.fired_of("h")) {
    if (fire.at_ms > held_at) {
      EXPECT_GE(fire.at_ms, held_at + 2000);
    }
  }
  // Three 429s without Retry-After: half the rate.
  f.EndAttempts(100'000);
  f.Run(milliseconds(200));
  ASSERT_GE(f.held_in_flight(), 3u);
  f.EndAttempts(3, {.too_many_requests = true});
  std::vector<FlowStats> stats = f.scheduler().Flows();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_DOUBLE_EQ(stats[0].lowered_rate, 50);
  f.EndAttempts(100'000);
  const std::size_t at_lowering = f.fired_of("h").size();
  f.Run(milliseconds(1000), milliseconds(1));
  f.EndAttempts(100'000);
  EXPECT_LE(f.fired_of("h").size() - at_lowering, 50u + 5u);
}

}  // namespace
}  // namespace tickwheel::server
