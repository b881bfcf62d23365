// Unit tests of the server's parts: record encoding, request validation,
// URL parsing, and the store (on a temporary directory).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <future>
#include <map>
#include <unistd.h>

#include "api/timer_request.h"
#include "delivery/http_url.h"
#include "scheduler/scheduler.h"
#include "store/retention.h"
#include "store/timer_record.h"
#include "store/timer_store.h"
#include "wall_clock.h"

namespace tickwheel::server {
namespace {

namespace json = boost::json;

class TempDirectory {
 public:
  TempDirectory() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tickwheel-unit-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TimerRecord Record(const std::string& id, std::int64_t due, TimerState state = TimerState::kPending) {
  TimerRecord r;
  r.id = id;
  r.state = state;
  r.fire_at_ms = due;
  r.due_ms = due;
  r.url = "http://127.0.0.1:1/x";
  r.payload = R"({"a":1})";
  return r;
}

// Runs one mutation over `ids` and waits until it is written.
void Apply(TimerStore& store, std::vector<std::string> ids,
           std::function<void(StoreTxn&)> m) {
  std::promise<Status> done;
  store.Submit(std::move(ids), std::move(m), [&](const Status& s) { done.set_value(s); }, true);
  ASSERT_TRUE(done.get_future().get().ok());
}

TEST(TimerRecordTest, EncodesAndDecodesEveryField) {
  TimerRecord r = Record("abc", 1234);
  r.state = TimerState::kFailed;
  r.attempts = 3;
  r.max_attempts = 5;
  r.backoff_ms = 250;
  r.created_ms = -7;
  r.updated_ms = 99;
  r.request_hash = 0xdeadbeefcafe;
  r.last_error = "HTTP 500";
  std::optional<TimerRecord> d = DecodeRecord("abc", EncodeRecord(r));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, r.state);
  EXPECT_EQ(d->fire_at_ms, 1234);
  EXPECT_EQ(d->attempts, 3u);
  EXPECT_EQ(d->max_attempts, 5u);
  EXPECT_EQ(d->backoff_ms, 250u);
  EXPECT_EQ(d->created_ms, -7);
  EXPECT_EQ(d->request_hash, r.request_hash);
  EXPECT_EQ(d->url, r.url);
  EXPECT_EQ(d->payload, r.payload);
  EXPECT_EQ(d->last_error, "HTTP 500");
}

TEST(TimerRecordTest, RejectsTruncatedAndForeignBytes) {
  const std::string bytes = EncodeRecord(Record("x", 1));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeRecord("x", bytes.substr(0, n))) << n;
  }
  EXPECT_FALSE(DecodeRecord("x", bytes + "z"));
  std::string bad_state = bytes;
  bad_state[1] = 9;
  EXPECT_FALSE(DecodeRecord("x", bad_state));
}

TEST(HttpUrlTest, ParsesHostPortAndTarget) {
  auto u = ParseHttpUrl("http://example.com:8081/a/b?c=1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, "8081");
  EXPECT_EQ(u->target, "/a/b?c=1");
  auto d = ParseHttpUrl("http://h");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, "80");
  EXPECT_EQ(d->target, "/");
  bool unsupported = false;
  std::string error;
  EXPECT_FALSE(ParseHttpUrl("https://h/x", &error, &unsupported));
  EXPECT_TRUE(unsupported);
  EXPECT_FALSE(ParseHttpUrl("http://h:99999/", &error, &unsupported));
  EXPECT_FALSE(unsupported);
  EXPECT_FALSE(ParseHttpUrl("http://user@h/", &error));
  EXPECT_FALSE(ParseHttpUrl("http://h/a b", &error));
  EXPECT_FALSE(ParseHttpUrl("h:80/x", &error));
}

TEST(TimerRequestTest, FireTimeInThePastMeansNow) {
  ApiLimits limits;
  auto spec = ParseTimerSpec(json::parse(R"({"fire_at_ms": 5, "target": {"url": "http://h/"}})"),
                             limits, 1'000'000);
  ASSERT_TRUE(std::holds_alternative<TimerSpec>(spec));
  EXPECT_EQ(std::get<TimerSpec>(spec).fire_at_ms, 1'000'000);
}

TEST(TimerRequestTest, DefaultsAndExplicitRetry) {
  ApiLimits limits;
  limits.default_max_attempts = 4;
  limits.default_backoff_ms = 300;
  auto a = ParseTimerSpec(json::parse(R"({"delay_ms": 10, "target": {"url": "http://h/"}})"), limits, 100);
  ASSERT_TRUE(std::holds_alternative<TimerSpec>(a));
  EXPECT_EQ(std::get<TimerSpec>(a).fire_at_ms, 110);
  EXPECT_EQ(std::get<TimerSpec>(a).max_attempts, 4u);
  EXPECT_EQ(std::get<TimerSpec>(a).backoff_ms, 300u);
  EXPECT_EQ(std::get<TimerSpec>(a).payload, "null");
  auto b = ParseTimerSpec(json::parse(R"({"delay_ms": 10, "target": {"url": "http://h/"},
                                          "retry": {"max_attempts": 2, "backoff_ms": 5}})"), limits, 100);
  ASSERT_TRUE(std::holds_alternative<TimerSpec>(b));
  EXPECT_EQ(std::get<TimerSpec>(b).max_attempts, 2u);
  EXPECT_EQ(std::get<TimerSpec>(b).backoff_ms, 5u);
}

TEST(TimerRequestTest, SameBodySameHashOtherBodyOtherHash) {
  ApiLimits limits;
  auto parse = [&](const char* text) {
    return std::get<TimerSpec>(ParseTimerSpec(json::parse(text), limits, 0)).request_hash;
  };
  EXPECT_EQ(parse(R"({"id":"a","delay_ms":1,"target":{"url":"http://h/"}})"),
            parse(R"({ "id" : "a", "delay_ms" : 1, "target" : {"url":"http://h/"} })"));
  EXPECT_NE(parse(R"({"id":"a","delay_ms":1,"target":{"url":"http://h/"}})"),
            parse(R"({"id":"a","delay_ms":2,"target":{"url":"http://h/"}})"));
}

TEST(TimerRequestTest, BatchNamesTheIndexOfTheBadTimerAndDuplicateIds) {
  ApiLimits limits;
  auto r = ParseBatch(json::parse(R"({"timers":[{"delay_ms":1,"target":{"url":"http://h/"}},
                                                {"delay_ms":true,"target":{"url":"http://h/"}}]})"),
                      limits, 0);
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_EQ(std::get<ApiError>(r).field, "timers[1].delay_ms");
  auto d = ParseBatch(json::parse(R"({"timers":[{"id":"x","delay_ms":1,"target":{"url":"http://h/"}},
                                                {"id":"x","delay_ms":2,"target":{"url":"http://h/"}}]})"),
                      limits, 0);
  ASSERT_TRUE(std::holds_alternative<ApiError>(d));
  EXPECT_EQ(std::get<ApiError>(d).code, "duplicate_id");
}

TEST(TimerStoreTest, KeepsDueIndexStateIndexAndCountsInStep) {
  TempDirectory dir;
  std::string error;
  {
    auto store = TimerStore::Open(dir.path(), &error);
    ASSERT_TRUE(store) << error;
    Apply(*store, {"a", "b", "c", "d"}, [](StoreTxn& txn) {
      txn.Put(std::nullopt, Record("b", 200));
      txn.Put(std::nullopt, Record("a", 200));
      txn.Put(std::nullopt, Record("c", 100));
      txn.Put(std::nullopt, Record("d", 300));
    });
    // Within one mutation, reads see its earlier writes.
    Apply(*store, {"c", "d"}, [](StoreTxn& txn) {
      auto d = txn.Get("d");
      TimerRecord next = *d;
      next.state = TimerState::kCancelled;
      txn.Put(d, next);
      auto again = txn.Get("d");
      EXPECT_EQ(again->state, TimerState::kCancelled);
      auto c = txn.Get("c");
      TimerRecord moved = *c;
      moved.due_ms = 250;
      txn.Put(c, moved);
    });
    std::vector<DueEntry> due = store->ScanDue(0, 1000, 10);
    ASSERT_EQ(due.size(), 3u);
    EXPECT_EQ(due[0].id, "a");
    EXPECT_EQ(due[1].id, "b");
    EXPECT_EQ(due[2].id, "c");
    EXPECT_EQ(due[2].due_ms, 250);
    EXPECT_EQ(store->ScanDue(0, 200, 10).size(), 0u);
    EXPECT_EQ(store->ScanDue(200, 201, 1).size(), 1u);
    auto cancelled = store->List(TimerState::kCancelled, "", 10);
    ASSERT_EQ(cancelled.size(), 1u);
    EXPECT_EQ(cancelled[0].id, "d");
    auto pending = store->List(TimerState::kPending, "a", 10);
    ASSERT_EQ(pending.size(), 2u);
    EXPECT_EQ(pending[0].id, "b");
    EXPECT_EQ(store->Counts()[0], 3);
    EXPECT_EQ(store->Counts()[4], 1);
  }
  auto reopened = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(reopened) << error;
  EXPECT_EQ(reopened->Counts()[0], 3);
  EXPECT_EQ(reopened->Counts()[4], 1);
  EXPECT_EQ(reopened->Get("c")->due_ms, 250);
  EXPECT_FALSE(reopened->Get("zzz"));
}

// Mutations over the same id run one at a time: concurrent read-modify-
// write increments lose nothing. Mutations over other ids run meanwhile.
TEST(TimerStoreTest, MutationsOnTheSameIdNeverInterleave) {
  TempDirectory dir;
  std::string error;
  auto store = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(store) << error;
  Apply(*store, {"k"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("k", 1)); });
  constexpr int kOps = 2000;
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < kOps; ++i) {
    const std::string other = "o" + std::to_string(i);
    store->Submit({"k", other},
                  [other](StoreTxn& txn) {
                    auto r = txn.Get("k");
                    TimerRecord next = *r;
                    ++next.attempts;
                    txn.Put(r, next);
                    txn.Put(std::nullopt, Record(other, 5));
                  },
                  [&](const Status& s) {
                    EXPECT_TRUE(s.ok()) << s.message;
                    std::lock_guard lock(mutex);
                    ++done;
                    cv.notify_all();
                  },
                  i % 7 == 0);
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kOps; }));
  }
  EXPECT_EQ(store->Get("k")->attempts, static_cast<std::uint32_t>(kOps));
  EXPECT_EQ(store->Counts()[0], kOps + 1);
  EXPECT_GT(store->wal_syncs(), 0u);
  store->Close();
  bool refused = false;
  store->Submit({"k"}, [](StoreTxn&) { ADD_FAILURE() << "ran after Close"; },
                [&](const Status& s) { refused = !s.ok(); }, true);
  EXPECT_TRUE(refused);
}

// Listing delivering timers scans the due index, which is mostly pending
// ones: each call looks at a bounded number of entries and says where to
// resume, so a listing never stalls the server.
TEST(TimerStoreTest, ListingScansABoundedNumberOfEntriesAndResumes) {
  TempDirectory dir;
  std::string error;
  auto store = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(store) << error;
  const std::size_t kPending = TimerStore::kListScanBudget * 2 + 5;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < kPending; ++i) ids.push_back("p" + std::to_string(i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (std::size_t i = 0; i < kPending; ++i) {
      txn.Put(std::nullopt, Record(ids[i], 1000 + static_cast<std::int64_t>(i)));
    }
  });
  Apply(*store, {"busy"}, [](StoreTxn& txn) {
    txn.Put(std::nullopt, Record("busy", 999'999, TimerState::kDelivering));
  });
  std::vector<std::string> found;
  std::string after;
  int calls = 0;
  do {
    std::string resume;
    for (const TimerRecord& r : store->List(TimerState::kDelivering, after, 10, &resume)) {
      found.push_back(r.id);
    }
    after = resume;
    ++calls;
  } while (!after.empty() && calls < 100);
  EXPECT_EQ(found, std::vector<std::string>{"busy"});
  EXPECT_EQ(calls, 3);
  std::string resume;
  EXPECT_EQ(store->List(TimerState::kPending, "", 10, &resume).size(), 10u);
  EXPECT_EQ(resume, "p9");
}

// Retention deletes delivered and cancelled timers that finished before
// the cutoff, with their index keys and counts; it keeps dead letters,
// pending timers and what finished later.
TEST(RetentionTest, DeletesOnlyWhatFinishedBeforeTheCutoff) {
  TempDirectory dir;
  std::string error;
  auto store = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(store) << error;
  auto finished = [](const std::string& id, TimerState state, std::int64_t at) {
    TimerRecord r = Record(id, 1);
    r.state = state;
    r.updated_ms = at;
    return r;
  };
  constexpr int kOld = 2500;  // more than one write's worth
  std::vector<std::string> ids = {"new-delivered", "old-cancelled", "old-failed", "pending"};
  for (int i = 0; i < kOld; ++i) ids.push_back("old-" + std::to_string(i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (int i = 0; i < kOld; ++i) {
      txn.Put(std::nullopt, finished("old-" + std::to_string(i), TimerState::kDelivered, 1000 + i));
    }
    txn.Put(std::nullopt, finished("new-delivered", TimerState::kDelivered, 9000));
    txn.Put(std::nullopt, finished("old-cancelled", TimerState::kCancelled, 1000));
    txn.Put(std::nullopt, finished("old-failed", TimerState::kFailed, 1000));
    txn.Put(std::nullopt, Record("pending", 5));
  });
  Retention retention(*store, std::chrono::milliseconds(5000));
  EXPECT_EQ(retention.PurgeOnce(/*now_ms=*/10'000), static_cast<std::size_t>(kOld + 1));
  EXPECT_FALSE(store->Get("old-0"));
  EXPECT_FALSE(store->Get("old-cancelled"));
  EXPECT_TRUE(store->Get("new-delivered"));
  EXPECT_TRUE(store->Get("old-failed"));
  EXPECT_TRUE(store->Get("pending"));
  EXPECT_TRUE(store->FinishedBefore(TimerState::kDelivered, 9000, 10).empty());
  const StateCounts counts = store->Counts();
  EXPECT_EQ(counts[static_cast<int>(TimerState::kDelivered)], 1);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kCancelled)], 0);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kFailed)], 1);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kPending)], 1);
  auto delivered = store->List(TimerState::kDelivered, "", 10);
  ASSERT_EQ(delivered.size(), 1u);
  EXPECT_EQ(delivered[0].id, "new-delivered");
  EXPECT_EQ(retention.PurgeOnce(10'000), 0u);
}

TEST(TimerStoreTest, OpenFailsWithAMessageWhenTheDirectoryIsLocked) {
  TempDirectory dir;
  std::string error;
  auto first = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(first) << error;
  auto second = TimerStore::Open(dir.path(), &error);
  EXPECT_FALSE(second);
  EXPECT_NE(error.find(dir.path()), std::string::npos) << error;
}

// The scheduler fires a timer armed in the window once, never before its
// wall-clock due time, and a disarmed one not at all.
TEST(SchedulerTest, FiresArmedTimersOnTimeAndNotDisarmedOnes) {
  TempDirectory dir;
  std::string error;
  auto store = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(store) << error;
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::pair<DueEntry, std::int64_t>> fired;
  Scheduler scheduler(*store, {}, [&](std::vector<DueEntry> due) {
    const std::int64_t now = WallNowMs();
    std::lock_guard lock(mutex);
    for (auto& d : due) fired.push_back({d, now});
    cv.notify_all();
  });
  const std::int64_t now = WallNowMs();
  // One timer already in the store before start (the recovery load).
  Apply(*store, {"stored"}, [&](StoreTxn& txn) { txn.Put(std::nullopt, Record("stored", now - 5)); });
  scheduler.Start();
  // As the server does: write the store, then tell the scheduler.
  Apply(*store, {"a", "b", "gone"}, [&](StoreTxn& txn) {
    txn.Put(std::nullopt, Record("a", now + 30));
    txn.Put(std::nullopt, Record("b", now + 60));
    txn.Put(std::nullopt, Record("gone", now + 40));
  });
  scheduler.Arm("a", now + 30);
  scheduler.Arm("b", now + 60);
  scheduler.Arm("gone", now + 40);
  Apply(*store, {"gone"}, [&](StoreTxn& txn) {
    auto r = txn.Get("gone");
    TimerRecord next = *r;
    next.state = TimerState::kCancelled;
    txn.Put(r, next);
  });
  scheduler.Disarm("gone");
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return fired.size() >= 3; }));
  }
  // A sentinel later than "gone": once it fired, "gone" would have too.
  const std::int64_t sentinel_due = WallNowMs() + 20;
  Apply(*store, {"sentinel"}, [&](StoreTxn& txn) { txn.Put(std::nullopt, Record("sentinel", sentinel_due)); });
  scheduler.Arm("sentinel", sentinel_due);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return fired.size() >= 4; }));
  }
  scheduler.Stop();
  std::set<std::string> ids;
  for (auto& [entry, at] : fired) {
    EXPECT_TRUE(ids.insert(entry.id).second) << entry.id << " fired twice";
    EXPECT_GE(at, entry.due_ms) << entry.id << " fired early";
  }
  EXPECT_EQ(ids, (std::set<std::string>{"a", "b", "stored", "sentinel"}));
  EXPECT_EQ(scheduler.in_flight(), 4u);
}

}  // namespace
}  // namespace tickwheel::server

namespace tickwheel::server {
namespace {

// A backlog five times the window's cap (a restart after an outage) is
// loaded as it drains: every timer fires exactly once, never early, and the
// scheduler never holds much more than the cap.
TEST(SchedulerTest, BacklogLargerThanTheCapDrainsCompletelyWithinTheCap) {
  TempDirectory dir;
  std::string error;
  auto store = TimerStore::Open(dir.path(), &error);
  ASSERT_TRUE(store) << error;
  const std::int64_t now = WallNowMs();
  constexpr int kOverdue = 5000;
  constexpr int kSoon = 1000;
  std::vector<std::string> ids;
  for (int i = 0; i < kOverdue + kSoon; ++i) ids.push_back("t" + std::to_string(i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (int i = 0; i < kOverdue; ++i) txn.Put(std::nullopt, Record(ids[i], now - 1000 + i / 5));
    for (int i = 0; i < kSoon; ++i) {
      txn.Put(std::nullopt, Record(ids[kOverdue + i], now + 100 + i / 2));
    }
  });
  SchedulerOptions options;
  options.max_window_timers = 1000;
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::string, int> fired;
  std::size_t max_loaded = 0;
  int early = 0;
  Scheduler* self = nullptr;
  Scheduler scheduler(*store, options, [&](std::vector<DueEntry> due) {
    const std::int64_t at = WallNowMs();
    {
      std::lock_guard lock(mutex);
      max_loaded = std::max(max_loaded, self->loaded());
      for (const DueEntry& d : due) {
        ++fired[d.id];
        if (at < d.due_ms) ++early;
      }
    }
    for (const DueEntry& d : due) self->Finish(d.id);  // delivered
    cv.notify_all();
  });
  self = &scheduler;
  scheduler.Start();
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] {
      return fired.size() == static_cast<std::size_t>(kOverdue + kSoon);
    })) << fired.size();
  }
  scheduler.Stop();
  for (const auto& [id, n] : fired) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(early, 0);
  EXPECT_LE(max_loaded, options.max_window_timers + 10);  // + one millisecond's worth
  EXPECT_GT(scheduler.refills(), 5u);  // loaded in parts
}

}  // namespace
}  // namespace tickwheel::server
