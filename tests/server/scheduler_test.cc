// SPDX-License-Identifier: Apache-2.0
// The scheduler on a manual clock, over a real store: what it loads, when it
// fires, and how it keeps memory within its cap.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "common/server_clock.h"
#include "scheduler/scheduler.h"
#include "store_test_util.h"

namespace tickwheel::server {
namespace {

using std::chrono::milliseconds;
constexpr std::int64_t kStart = 1'800'000'000'000;

// A store that fails its next `failures` scans (reads that cannot be made),
// and otherwise is the real one.
class ScanFailingStore final : public TimerStore {
 public:
  explicit ScanFailingStore(TimerStore& store) : store_(store) {}
  std::atomic<int> failures{0};
  std::atomic<int> scans{0};

  void Submit(std::vector<std::string> ids, Mutation m, Done d, WriteOptions o) override {
    store_.Submit(std::move(ids), std::move(m), std::move(d), o);
  }
  Result<std::optional<TimerRecord>> Get(const std::string& id) const override { return store_.Get(id); }
  Result<DueScan> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                          std::int64_t to_ms, std::size_t limit,
                          const FlowSet* skip) const override {
    ++const_cast<ScanFailingStore*>(this)->scans;
    if (const_cast<ScanFailingStore*>(this)->failures.fetch_sub(1) > 0) {
      return Status::Unavailable("injected read error");
    }
    return store_.ScanDue(shards, from, to_ms, limit, skip);
  }
  Result<DueScan> ScanFlowDue(const std::string& flow, const std::vector<int>& shards,
                              const DueEntry& from, std::int64_t to_ms,
                              std::size_t limit) const override {
    return store_.ScanFlowDue(flow, shards, from, to_ms, limit);
  }
  Result<FlowCount> CountFlowDue(const std::string& flow, std::int64_t before_ms,
                                 std::size_t cap, const std::vector<int>* shards) const override {
    return store_.CountFlowDue(flow, before_ms, cap, shards);
  }
  Result<std::optional<std::string>> UpdateFlowSettings(
      const std::string& flow, const FlowSettingsChange& change) override {
    return store_.UpdateFlowSettings(flow, change);
  }
  Result<std::vector<std::pair<std::string, std::string>>> ListFlowSettings() const override {
    return store_.ListFlowSettings();
  }
  Result<ListPage> List(TimerState s, const std::optional<ListCursor>& a, std::size_t l,
                        std::size_t b, const ListFilter& f) const override {
    return store_.List(s, a, l, b, f);
  }
  Result<std::vector<std::int64_t>> CountDue(const std::vector<std::int64_t>& b,
                                             std::size_t cap) const override {
    return store_.CountDue(b, cap);
  }
  Result<std::uint64_t> ApproximateBytes() const override { return store_.ApproximateBytes(); }
  Result<std::optional<ClusterState>> Cluster() const override { return store_.Cluster(); }
  Result<std::vector<std::string>> FinishedBefore(TimerState s, std::int64_t t,
                                                  std::size_t l) const override {
    return store_.FinishedBefore(s, t, l);
  }
  StateCounts Counts() const override { return store_.Counts(); }
  Result<std::unique_ptr<StoreSnapshot>> Snapshot() const override { return store_.Snapshot(); }
  Status Checkpoint(const std::string& dir) override { return store_.Checkpoint(dir); }
  Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) const override {
    return store_.GetSchedule(id);
  }
  Result<SchedulePage> ListSchedules(std::optional<std::uint8_t> s, const std::string& a,
                                     std::size_t l, std::size_t b,
                                     const std::string& p) const override {
    return store_.ListSchedules(s, a, l, b, p);
  }
  ScheduleCounts CountSchedules() const override { return store_.CountSchedules(); }
  Result<std::vector<TimerRecord>> LastWithPrefix(const std::string& p, const std::string& b,
                                                  std::size_t l) const override {
    return store_.LastWithPrefix(p, b, l);
  }
  int shard_count() const override { return store_.shard_count(); }
  int ShardOf(std::string_view id) const override { return store_.ShardOf(id); }
  void SetDueListener(DueListener l) override { store_.SetDueListener(std::move(l)); }
  void AppendMetrics(std::string& out) const override { store_.AppendMetrics(out); }
  void Close() override { store_.Close(); }

 private:
  TimerStore& store_;
};

// A scheduler wired to a store as the server wires it, on a manual clock;
// fired timers are recorded with the wall time they fired at and, unless
// `hold` is set, delivered at the next step: marked delivered in the store,
// then finished.
class SchedulerFixture {
 public:
  explicit SchedulerFixture(TimerStore& store, SchedulerOptions options = {})
      : store_(store),
        clock_(kStart),
        scheduler_(store, clock_, options, [this](std::vector<FiredTimer> due) {
          const std::int64_t now = clock_.WallMs();
          std::lock_guard lock(mutex_);
          max_loaded_ = std::max(max_loaded_, scheduler_.loaded());
          for (const FiredTimer& d : due) {
            fired_.push_back({d.entry, now});
            if (!hold_) finish_.push_back(d.entry.id);
          }
        }) {
    store.SetDueListener(
        [this](const std::string& id, std::optional<std::int64_t> due, const std::string& flow) {
          scheduler_.OnDueChange(id, due, flow);
        });
    scheduler_.AddShards({0});
  }
  ~SchedulerFixture() { scheduler_.Stop(); }

  ManualServerClock& clock() { return clock_; }
  // Starts the scheduler and waits until its first turn is done.
  void Start() {
    scheduler_.Start();
    Settle();
  }
  // Waits until the scheduler's thread is asleep again.
  void Settle() { clock_.manual().AdvanceTo(clock_.manual().Now()); }
  Scheduler& scheduler() { return scheduler_; }
  void set_hold(bool hold) { hold_ = hold; }

  // Advances the clock in `step`s up to `total`, finishing what fired.
  void Run(milliseconds total, milliseconds step = milliseconds(1)) {
    for (milliseconds t{0}; t < total; t += step) {
      clock_.Advance(step);
      std::vector<std::string> finish;
      {
        std::lock_guard lock(mutex_);
        finish.swap(finish_);
      }
      if (!finish.empty()) {
        Apply(store_, finish, [&](StoreTxn& txn) {
          for (const std::string& id : finish) {
            auto r = *txn.Get(id);
            if (!r) continue;
            TimerRecord next = *r;
            next.state = TimerState::kDelivered;
            txn.Put(r, next);
          }
        });
      }
      for (const std::string& id : finish) scheduler_.Finish(id);
    }
  }

  std::vector<std::pair<DueEntry, std::int64_t>> fired() {
    std::lock_guard lock(mutex_);
    return fired_;
  }
  std::size_t max_loaded() {
    std::lock_guard lock(mutex_);
    return max_loaded_;
  }

 private:
  TimerStore& store_;
  ManualServerClock clock_;
  std::mutex mutex_;
  std::vector<std::pair<DueEntry, std::int64_t>> fired_;
  std::vector<std::string> finish_;
  std::size_t max_loaded_ = 0;
  std::atomic<bool> hold_{false};
  Scheduler scheduler_;
};

void ExpectEachOnceNeverEarly(const std::vector<std::pair<DueEntry, std::int64_t>>& fired,
                              std::size_t expected) {
  std::map<std::string, int> count;
  for (const auto& [entry, at] : fired) {
    ++count[entry.id];
    EXPECT_GE(at, entry.due_ms) << entry.id << " fired early";
  }
  EXPECT_EQ(count.size(), expected);
  for (const auto& [id, n] : count) EXPECT_EQ(n, 1) << id << " fired " << n << " times";
}

// Timers written to the store fire once, never before their wall-clock due
// time and at most a tick after; a cancelled one not at all.
TEST(SchedulerTest, FiresWhatTheStoreSchedulesOnTimeAndNothingCancelled) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  // One timer in the store before start: the first load finds it overdue.
  Apply(*store, {"stored"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("stored", kStart - 5)); });
  SchedulerFixture f(*store);
  f.set_hold(true);
  f.Start();
  Apply(*store, {"a", "b", "gone"}, [](StoreTxn& txn) {
    txn.Put(std::nullopt, Record("a", kStart + 30));
    txn.Put(std::nullopt, Record("b", kStart + 60));
    txn.Put(std::nullopt, Record("gone", kStart + 40));
  });
  Apply(*store, {"gone"}, [](StoreTxn& txn) {
    auto r = *txn.Get("gone");
    TimerRecord next = *r;
    next.state = TimerState::kCancelled;
    txn.Put(r, next);
  });
  f.Run(milliseconds(29));
  ASSERT_EQ(f.fired().size(), 1u);  // only the overdue one so far
  f.Run(milliseconds(2));
  ASSERT_EQ(f.fired().size(), 2u);
  EXPECT_EQ(f.fired()[1].first.id, "a");
  EXPECT_LE(f.fired()[1].second, kStart + 32);
  f.Run(milliseconds(40));
  ExpectEachOnceNeverEarly(f.fired(), 3);
  EXPECT_EQ(f.scheduler().in_flight(), 3u);
  EXPECT_EQ(f.scheduler().loaded(), 3u);
}

// A backlog five times the window's cap (a restart after an outage) is
// loaded as it drains: every timer fires exactly once, never early, and the
// scheduler never holds more than the cap.
TEST(SchedulerTest, ABacklogLargerThanTheCapDrainsCompletelyWithinTheCap) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  constexpr int kOverdue = 5000;
  constexpr int kSoon = 1000;
  std::vector<std::string> ids;
  for (int i = 0; i < kOverdue + kSoon; ++i) ids.push_back("t" + std::to_string(i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (int i = 0; i < kOverdue; ++i) txn.Put(std::nullopt, Record(ids[i], kStart - 1000 + i / 5));
    for (int i = 0; i < kSoon; ++i) txn.Put(std::nullopt, Record(ids[kOverdue + i], kStart + 100 + i / 2));
  });
  SchedulerOptions options;
  options.max_window_timers = 1000;
  SchedulerFixture f(*store, options);
  f.Start();
  f.Run(milliseconds(2000));
  ExpectEachOnceNeverEarly(f.fired(), kOverdue + kSoon);
  EXPECT_LE(f.max_loaded(), options.max_window_timers);
  EXPECT_GT(f.scheduler().refills(), 5u);  // loaded in parts
}

// Many timers due in the same millisecond: the window ends inside that
// millisecond (at a timer, not at a time), so memory stays within the cap.
TEST(SchedulerTest, TimersDueInOneMillisecondAreLoadedWithinTheCap) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  constexpr int kSame = 20'000;
  std::vector<std::string> ids;
  for (int i = 0; i < kSame; ++i) ids.push_back("same-" + std::to_string(i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (const std::string& id : ids) txn.Put(std::nullopt, Record(id, kStart + 50));
  });
  SchedulerOptions options;
  options.max_window_timers = 1000;
  SchedulerFixture f(*store, options);
  f.Start();
  EXPECT_LE(f.scheduler().loaded(), options.max_window_timers);
  // One flow holds at most a quarter of the window; the rest of it waits in
  // the store, deferred from inside that millisecond.
  EXPECT_LE(f.scheduler().loaded(), options.max_window_timers / 4);
  ASSERT_EQ(f.scheduler().Flows().size(), 1u);
  EXPECT_TRUE(f.scheduler().Flows()[0].deferred);
  f.Run(milliseconds(200));
  ExpectEachOnceNeverEarly(f.fired(), kSame);
  EXPECT_LE(f.max_loaded(), options.max_window_timers);
}

// Creates arriving into a full window do not grow it: the window ends
// before them instead, and they fire once it reaches them.
TEST(SchedulerTest, CreatesIntoAFullWindowShrinkItInsteadOfGrowingIt) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  SchedulerOptions options;
  options.max_window_timers = 500;
  SchedulerFixture f(*store, options);
  f.set_hold(true);  // nothing finishes: what fires stays in memory
  f.Start();
  f.Run(milliseconds(1));
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<std::string> ids;
    for (int i = 0; i < 300; ++i) ids.push_back("c" + std::to_string(batch) + "-" + std::to_string(i));
    Apply(*store, ids, [&](StoreTxn& txn) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        // Over 100 flows: none reaches its quota (a quarter of the window).
        TimerRecord r = Record(ids[i], kStart + 5'000);
        r.flow = "flow-" + std::to_string(i % 100);
        txn.Put(std::nullopt, r);
      }
    });
    EXPECT_LE(f.scheduler().loaded(), options.max_window_timers);
  }
  EXPECT_EQ(f.scheduler().loaded(), options.max_window_timers);
  EXPECT_EQ(f.scheduler().window_end().due_ms, kStart + 5'000);
  f.set_hold(false);
  f.Run(milliseconds(10'000), milliseconds(5));
  ExpectEachOnceNeverEarly(f.fired(), 3000);
  EXPECT_LE(f.max_loaded(), options.max_window_timers);
}

// A store that cannot be read: nothing is lost (the window does not move
// past what it could not load), and the scheduler tries again after a
// pause, not in a spin.
TEST(SchedulerTest, AStoreThatCannotBeReadIsRetriedAfterAPause) {
  TempDirectory dir;
  auto real = OpenStore(dir.path());
  Apply(*real, {"x", "y"}, [](StoreTxn& txn) {
    txn.Put(std::nullopt, Record("x", kStart - 10));
    txn.Put(std::nullopt, Record("y", kStart + 20'000));
  });
  ScanFailingStore store(*real);
  store.failures = 3;
  SchedulerFixture f(store);
  f.Start();
  f.Run(milliseconds(500), milliseconds(10));
  EXPECT_TRUE(f.fired().empty());
  EXPECT_LE(store.scans.load(), 2) << "retried in a spin";
  f.Run(milliseconds(3000), milliseconds(10));
  ASSERT_EQ(f.fired().size(), 1u);
  EXPECT_EQ(f.fired()[0].first.id, "x");
  f.Run(milliseconds(18'000), milliseconds(100));
  ExpectEachOnceNeverEarly(f.fired(), 2);
}

// Retrying a fired timer later (its claim could not be written) keeps its
// due time for the claim, and fires it no earlier than asked.
TEST(SchedulerTest, FinishAndRetryInFiresAgainAfterTheDelay) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  SchedulerFixture f(*store);
  f.set_hold(true);
  f.Start();
  Apply(*store, {"r"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("r", kStart + 10)); });
  f.Run(milliseconds(20));
  ASSERT_EQ(f.fired().size(), 1u);
  f.scheduler().FinishAndRetryIn("r", kStart + 10, milliseconds(1000));
  f.Run(milliseconds(990), milliseconds(10));
  EXPECT_EQ(f.fired().size(), 1u);
  f.Run(milliseconds(20));
  ASSERT_EQ(f.fired().size(), 2u);
  EXPECT_EQ(f.fired()[1].first, (DueEntry{kStart + 10, "r"}));
  EXPECT_GE(f.fired()[1].second, kStart + 1010);
}

// A shard given up drops its timers; owning it again loads them back.
TEST(SchedulerTest, ShardsAddedAndRemovedLoadAndDropTheirTimers) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Apply(*store, {"s"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("s", kStart + 100)); });
  SchedulerFixture f(*store);
  f.Start();
  f.Run(milliseconds(1));
  EXPECT_EQ(f.scheduler().loaded(), 1u);
  f.scheduler().RemoveShards({0});
  EXPECT_EQ(f.scheduler().loaded(), 0u);
  // Not owned: changes are ignored.
  Apply(*store, {"t"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("t", kStart + 50)); });
  EXPECT_EQ(f.scheduler().loaded(), 0u);
  f.Run(milliseconds(10));
  f.scheduler().AddShards({0});
  f.Run(milliseconds(1));
  EXPECT_EQ(f.scheduler().loaded(), 2u);
  f.Run(milliseconds(200));
  ExpectEachOnceNeverEarly(f.fired(), 2);
}

}  // namespace
}  // namespace tickwheel::server
