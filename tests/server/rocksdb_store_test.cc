// SPDX-License-Identifier: Apache-2.0
// The embedded store (RocksDB on a temporary directory) and retention.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/server_clock.h"
#include "store/retention.h"
#include "store/rocksdb_open.h"
#include "store/rocksdb_timer_store.h"
#include "store_test_util.h"
#include "support/faulty_file_system.h"

namespace tickwheel::server {
namespace {

TEST(RocksDbStoreTest, KeepsDueIndexStateIndexAndCountsInStep) {
  TempDirectory dir;
  {
    auto store = OpenStore(dir.path());
    Apply(*store, {"a", "b", "c", "d"}, [](StoreTxn& txn) {
      txn.Put(std::nullopt, Record("b", 200));
      txn.Put(std::nullopt, Record("a", 200));
      txn.Put(std::nullopt, Record("c", 100));
      txn.Put(std::nullopt, Record("d", 300));
    });
    // Within one mutation, reads see its earlier writes.
    Apply(*store, {"c", "d"}, [](StoreTxn& txn) {
      auto d = *txn.Get("d");
      TimerRecord next = *d;
      next.state = TimerState::kCancelled;
      txn.Put(d, next);
      EXPECT_EQ((*txn.Get("d"))->state, TimerState::kCancelled);
      auto c = *txn.Get("c");
      TimerRecord moved = *c;
      moved.due_ms = 250;
      txn.Put(c, moved);
    });
    std::vector<DueEntry> due = store->ScanDue({0}, {0, ""}, 1000, 10)->entries;
    ASSERT_EQ(due.size(), 3u);
    EXPECT_EQ(due[0], (DueEntry{200, "a"}));
    EXPECT_EQ(due[1], (DueEntry{200, "b"}));
    EXPECT_EQ(due[2], (DueEntry{250, "c"}));
    EXPECT_TRUE(store->ScanDue({0}, {0, ""}, 200, 10)->entries.empty());
    // From a position: (200, "b") onwards.
    EXPECT_EQ(store->ScanDue({0}, {200, "b"}, 1000, 10)->entries.size(), 2u);
    EXPECT_TRUE(store->ScanDue({1}, {0, ""}, 1000, 10)->entries.empty());  // not a shard of it
    ListPage cancelled = *store->List(TimerState::kCancelled, std::nullopt, 10, 1 << 20, {});
    ASSERT_EQ(cancelled.records.size(), 1u);
    EXPECT_EQ(cancelled.records[0].id, "d");
    EXPECT_FALSE(cancelled.next);
    ListPage pending = *store->List(TimerState::kPending, ListCursor{200, "a"}, 10, 1 << 20, {});
    ASSERT_EQ(pending.records.size(), 2u);
    EXPECT_EQ(pending.records[0].id, "b");
    EXPECT_EQ(store->Counts()[0], 3);
    EXPECT_EQ(store->Counts()[4], 1);
  }
  auto reopened = OpenStore(dir.path());
  EXPECT_EQ(reopened->Counts()[0], 3);
  EXPECT_EQ(reopened->Counts()[4], 1);
  EXPECT_EQ(Stored(*reopened, "c")->due_ms, 250);
  EXPECT_FALSE(Stored(*reopened, "zzz"));
}

// Mutations over the same id run one at a time: concurrent read-modify-
// write increments lose nothing. Mutations over other ids run meanwhile.
TEST(RocksDbStoreTest, MutationsOnTheSameIdNeverInterleave) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Apply(*store, {"k"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("k", 1)); });
  constexpr int kOps = 2000;
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < kOps; ++i) {
    const std::string other = "o" + std::to_string(i);
    store->Submit(
        {"k", other},
        [other](StoreTxn& txn) -> Status {
          auto r = *txn.Get("k");
          TimerRecord next = *r;
          ++next.attempts;
          txn.Put(r, next);
          txn.Put(std::nullopt, Record(other, 5));
          return Status::Ok();
        },
        [&](const Status& s) {
          EXPECT_TRUE(s.ok()) << s.ToString();
          std::lock_guard lock(mutex);
          ++done;
          cv.notify_all();
        },
        WriteOptions{.sync = i % 7 == 0});
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kOps; }));
  }
  EXPECT_EQ(Stored(*store, "k")->attempts, static_cast<std::uint32_t>(kOps));
  EXPECT_EQ(store->Counts()[0], kOps + 1);
  std::string metrics;
  store->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("tickwheel_store_wal_syncs_total "), std::string::npos);
  store->Close();
  Status after_close = Write(*store, {"k"}, [](StoreTxn&) {
    ADD_FAILURE() << "ran after Close";
    return Status::Ok();
  });
  EXPECT_EQ(after_close.code(), StatusCode::kUnavailable);
}

// A mutation that returns an error writes nothing, even what it Put before
// failing; the other mutations of its group are written.
TEST(RocksDbStoreTest, AFailedMutationWritesNothingAndItsGroupGoesOn) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  Apply(*store, {"x"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("x", 10)); });
  std::vector<std::string> seen_by_later;
  std::promise<Status> first, second, third;
  // Queued together, so that they likely share a group; either way the
  // outcome is the same.
  store->Submit({"x", "y"},
                [](StoreTxn& txn) -> Status {
                  txn.Put(std::nullopt, Record("y", 20));
                  auto x = *txn.Get("x");
                  TimerRecord gone = *x;
                  gone.state = TimerState::kCancelled;
                  txn.Put(x, gone);
                  return Status::Conflict("test", "changed my mind");
                },
                [&](const Status& s) { first.set_value(s); }, WriteOptions{});
  store->Submit({"x", "y"},
                [&](StoreTxn& txn) -> Status {
                  EXPECT_FALSE(*txn.Get("y")) << "saw a write that was taken back";
                  EXPECT_EQ((*txn.Get("x"))->state, TimerState::kPending);
                  txn.Put(std::nullopt, Record("z", 30));
                  return Status::Ok();
                },
                [&](const Status& s) { second.set_value(s); }, WriteOptions{});
  store->Submit({"z"}, [](StoreTxn&) { return Status::Ok(); },
                [&](const Status& s) { third.set_value(s); }, WriteOptions{.sync = true});
  EXPECT_EQ(first.get_future().get().reason(), "test");
  EXPECT_TRUE(second.get_future().get().ok());
  EXPECT_TRUE(third.get_future().get().ok());
  EXPECT_FALSE(Stored(*store, "y"));
  EXPECT_EQ(Stored(*store, "x")->state, TimerState::kPending);
  EXPECT_TRUE(Stored(*store, "z"));
  EXPECT_EQ(store->Counts()[0], 2);
  EXPECT_EQ(store->Counts()[4], 0);
  EXPECT_EQ(store->ScanDue({0}, {0, ""}, 1000, 10)->entries.size(), 2u);
}

// A record the server cannot read (a newer format) answers kCorrupt, and no
// mutation can overwrite it: a create with its id does not replace it.
TEST(RocksDbStoreTest, AnUnreadableRecordIsReportedAndNeverOverwritten) {
  TempDirectory dir;
  {
    rocksdb::DB* db = nullptr;
    rocksdb::Options options;
    options.create_if_missing = true;
    ASSERT_TRUE(rocksdb::DB::Open(options, dir.path(), &db).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "rfuture", std::string("\x09\x00rest", 6)).ok());
    delete db;
  }
  auto store = OpenStore(dir.path());
  Result<std::optional<TimerRecord>> read = store->Get("future");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kCorrupt);
  Status create = Write(*store, {"future"}, [](StoreTxn& txn) {
    // A careless mutation that treats "unreadable" as "absent".
    (void)txn.Get("future");
    txn.Put(std::nullopt, Record("future", 5));
    return Status::Ok();
  });
  EXPECT_EQ(create.code(), StatusCode::kCorrupt);
  EXPECT_EQ(store->Counts()[0], 0);
  EXPECT_EQ(store->Get("future").status().code(), StatusCode::kCorrupt);
}

// A store whose schedules' plans were kept under their old prefix ('P', by
// builds before the plans moved among the keys that change all the time)
// has them moved at its open: each schedule reads back whole, and no key
// is left under the old prefix.
TEST(RocksDbStoreTest, PlansUnderTheirOldPrefixAreMovedAtOpen) {
  TempDirectory dir;
  const std::vector<ScheduleRow> rows = {ScheduleRow{"a", 0, "rec-a", "plan-a"},
                                         ScheduleRow{"b", 1, "rec-b", "plan-b"},
                                         ScheduleRow{"whole", 0, "rec-w", ""}};
  {
    auto store = OpenStore(dir.path());
    for (const ScheduleRow& row : rows) {
      ASSERT_TRUE(Write(*store, {ScheduleKey(row.id)}, [&](StoreTxn& txn) {
                    txn.PutSchedule(std::nullopt, row);
                    return Status::Ok();
                  }).ok());
    }
  }
  auto keys_with = [&](char prefix) {
    rocksdb::DB* db = nullptr;
    EXPECT_TRUE(rocksdb::DB::Open(EmbeddedDbOptions(dir.path(), nullptr), dir.path(), &db).ok());
    std::map<std::string, std::string> found;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(std::string(1, prefix)); it->Valid() && it->key()[0] == prefix; it->Next()) {
      found[it->key().ToString()] = it->value().ToString();
    }
    it.reset();
    delete db;
    return found;
  };
  {  // As an older build left them.
    const std::map<std::string, std::string> plans = keys_with('p');
    ASSERT_EQ(plans.size(), 2u);
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(EmbeddedDbOptions(dir.path(), nullptr), dir.path(), &db).ok());
    for (const auto& [key, plan] : plans) {
      ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), key).ok());
      std::string old_key = key;
      old_key[0] = 'P';
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), old_key, plan).ok());
    }
    delete db;
  }
  {
    auto store = OpenStore(dir.path());
    for (const ScheduleRow& row : rows) {
      Result<std::optional<ScheduleRow>> read = store->GetSchedule(row.id);
      ASSERT_TRUE(read.ok()) << read.status().ToString();
      EXPECT_EQ(*read, row);
    }
    EXPECT_EQ(store->ListSchedules(std::nullopt, "", 10, 1 << 20, "")->rows, rows);
  }
  EXPECT_TRUE(keys_with('P').empty());
  EXPECT_EQ(keys_with('p').size(), 2u);
}

// Paging resumes from a position, not from a timer looked up again: a page
// boundary whose timer changed state or was deleted neither restarts the
// listing nor loops; every page moves forward.
TEST(RocksDbStoreTest, PagesResumeFromAPositionWhateverHappenedToItsTimer) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.push_back("t" + std::to_string(100 + i));
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (int i = 0; i < 50; ++i) txn.Put(std::nullopt, Record(ids[i], 1000 + i));
  });
  std::vector<std::string> listed;
  std::optional<ListCursor> after;
  int pages = 0;
  do {
    ListPage page = *store->List(TimerState::kPending, after, 10, 1 << 20, {});
    for (const TimerRecord& r : page.records) listed.push_back(r.id);
    if (!page.records.empty()) {
      // The page's last timer is cancelled, the one before deleted.
      const std::string last = page.records.back().id;
      Apply(*store, {last}, [&](StoreTxn& txn) {
        auto r = *txn.Get(last);
        TimerRecord next = *r;
        next.state = TimerState::kCancelled;
        txn.Put(r, next);
      });
      if (page.records.size() > 1) {
        const std::string before = page.records[page.records.size() - 2].id;
        Apply(*store, {before}, [&](StoreTxn& txn) { txn.Erase(**txn.Get(before)); });
      }
    }
    if (after && page.next) {
      EXPECT_TRUE(page.next->time_ms > after->time_ms ||
                  (page.next->time_ms == after->time_ms && page.next->id > after->id));
    }
    after = page.next;
  } while (after && ++pages < 100);
  EXPECT_EQ(listed.size(), 50u);
  EXPECT_LE(pages, 6);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()).size(), 50u);
}

// Listing delivering timers scans the due index, which is mostly pending
// ones: each call looks at a bounded number of entries and says where to
// resume, so a listing never stalls the server.
TEST(RocksDbStoreTest, ListingScansABoundedNumberOfEntriesAndResumes) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
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
  std::optional<ListCursor> after;
  int calls = 0;
  do {
    ListPage page = *store->List(TimerState::kDelivering, after, 10, 1 << 20, {});
    for (const TimerRecord& r : page.records) found.push_back(r.id);
    after = page.next;
    ++calls;
  } while (after && calls < 100);
  EXPECT_EQ(found, std::vector<std::string>{"busy"});
  EXPECT_EQ(calls, 3);
  ListPage first = *store->List(TimerState::kPending, std::nullopt, 10, 1 << 20, {});
  EXPECT_EQ(first.records.size(), 10u);
  ASSERT_TRUE(first.next);
  EXPECT_EQ(first.next->id, "p9");
}

// A page stops once its records reach the byte budget (at least one).
TEST(RocksDbStoreTest, APageStopsAtItsByteBudget) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  std::vector<std::string> ids = {"a", "b", "c", "d"};
  Apply(*store, ids, [&](StoreTxn& txn) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      TimerRecord r = Record(ids[i], 10 + static_cast<std::int64_t>(i));
      r.payload = "\"" + std::string(10'000, 'x') + "\"";
      txn.Put(std::nullopt, r);
    }
  });
  ListPage page = *store->List(TimerState::kPending, std::nullopt, 1000, 15'000, {});
  EXPECT_EQ(page.records.size(), 2u);
  ASSERT_TRUE(page.next);
  EXPECT_EQ(store->List(TimerState::kPending, std::nullopt, 1000, 1, {})->records.size(), 1u);
}

// The store tells its listener of every change to when a timer is due, in
// commit order, and nothing for a claim (same due time) or a failed write.
TEST(RocksDbStoreTest, TellsItsListenerOfDueChangesInCommitOrder) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
  std::mutex mutex;
  std::vector<std::pair<std::string, std::optional<std::int64_t>>> changes;
  store->SetDueListener([&](const std::string& id, std::optional<std::int64_t> due,
                            const std::string&) {
    std::lock_guard lock(mutex);
    changes.emplace_back(id, due);
  });
  Apply(*store, {"a"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("a", 10)); });
  Apply(*store, {"a"}, [](StoreTxn& txn) {  // a claim: same due time
    auto r = *txn.Get("a");
    TimerRecord next = *r;
    next.state = TimerState::kDelivering;
    txn.Put(r, next);
  });
  Apply(*store, {"a"}, [](StoreTxn& txn) {  // a retry later
    auto r = *txn.Get("a");
    TimerRecord next = *r;
    next.state = TimerState::kPending;
    next.due_ms = 50;
    txn.Put(r, next);
  });
  (void)Write(*store, {"a"}, [](StoreTxn& txn) {
    auto r = *txn.Get("a");
    TimerRecord next = *r;
    next.due_ms = 99;
    txn.Put(r, next);
    return Status::Conflict("x", "refused");
  });
  Apply(*store, {"a"}, [](StoreTxn& txn) {
    auto r = *txn.Get("a");
    TimerRecord next = *r;
    next.state = TimerState::kCancelled;
    txn.Put(r, next);
  });
  std::lock_guard lock(mutex);
  using Change = std::pair<std::string, std::optional<std::int64_t>>;
  EXPECT_EQ(changes, (std::vector<Change>{{"a", 10}, {"a", 50}, {"a", std::nullopt}}));
}

// A store in `dir` over a FaultyFileSystem. Members are destroyed in reverse
// order: the store before the Env and the file system it writes through.
struct StoreOverFaultyDisk {
  explicit StoreOverFaultyDisk(const std::string& dir) {
    StoreOptions options;
    options.data_dir = dir;
    auto opened = OpenRocksDbTimerStore(options, env.get());
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) store = std::move(*opened);
  }
  std::shared_ptr<testing::FaultyFileSystem> fs = std::make_shared<testing::FaultyFileSystem>();
  std::unique_ptr<rocksdb::Env> env = testing::EnvOver(fs);
  std::unique_ptr<TimerStore> store;
};

// docs/server.md: a mutation is acknowledged only once it is in the
// write-ahead log and the log is synced. Each durable write (what every API
// mutation asks for: create, reschedule, cancel, retry) syncs the log before
// its `done` runs.
TEST(RocksDbStoreTest, ADurableWriteSyncsTheLogBeforeItIsAcknowledged) {
  TempDirectory dir;
  StoreOverFaultyDisk disk(dir.path());
  ASSERT_NE(disk.store, nullptr);
  const std::shared_ptr<testing::FaultyFileSystem>& fs = disk.fs;
  std::unique_ptr<TimerStore>& store = disk.store;
  const std::vector<std::pair<std::string, std::function<void(StoreTxn&)>>> writes = {
      {"create", [](StoreTxn& txn) { txn.Put(std::nullopt, Record("t", 10)); }},
      {"change", [](StoreTxn& txn) { txn.Put(**txn.Get("t"), Record("t", 20)); }},
      {"erase", [](StoreTxn& txn) { txn.Erase(**txn.Get("t")); }},
  };
  for (const auto& [what, mutation] : writes) {
    const std::uint64_t before = fs->wal_syncs();
    std::uint64_t at_done = 0;
    std::promise<Status> done;
    store->Submit({"t"}, [&](StoreTxn& txn) { mutation(txn); return Status::Ok(); },
                  [&](const Status& s) { at_done = fs->wal_syncs(); done.set_value(s); },
                  WriteOptions{.sync = true});
    const Status s = done.get_future().get();
    ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
    EXPECT_GT(at_done, before) << what << ": acknowledged without a sync of the log";
  }
  store->Close();
}

// A disk that fails writes: the group fails with kUnavailable and nothing of
// it is kept; once the disk works again the store writes again by itself,
// and what was acknowledged before is all there.
TEST(RocksDbStoreTest, AWriteErrorFailsItsGroupAndTheStoreHealsWithTheDisk) {
  TempDirectory dir;
  StoreOverFaultyDisk disk(dir.path());
  ASSERT_NE(disk.store, nullptr);
  const std::shared_ptr<testing::FaultyFileSystem>& fs = disk.fs;
  std::unique_ptr<TimerStore>& store = disk.store;
  Apply(*store, {"before"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("before", 1)); });
  for (bool no_space : {false, true}) {
    fs->SetFailing(true, no_space);
    for (int i = 0; i < 3; ++i) {
      Status s = Write(*store, {"during"}, [](StoreTxn& txn) {
        txn.Put(std::nullopt, Record("during", 2));
        return Status::Ok();
      });
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    }
    EXPECT_GT(fs->failed_writes(), 0u);
    EXPECT_FALSE(Stored(*store, "during"));
    // Reads go on meanwhile.
    EXPECT_TRUE(Stored(*store, "before"));
    fs->SetFailing(false);
    // The store reopens by itself (at most every half second).
    const std::string id = no_space ? "after-full" : "after-error";
    Status healed;
    for (int i = 0; i < 100; ++i) {
      healed = Write(*store, {id}, [&](StoreTxn& txn) {
        txn.Put(std::nullopt, Record(id, 3));
        return Status::Ok();
      });
      if (healed.ok()) break;
      EXPECT_EQ(healed.code(), StatusCode::kUnavailable);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(healed.ok()) << healed.ToString();
  }
  std::string metrics;
  store->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("tickwheel_store_reopens_total 2"), std::string::npos) << metrics;
  EXPECT_TRUE(Stored(*store, "before"));
  EXPECT_TRUE(Stored(*store, "after-error"));
  EXPECT_TRUE(Stored(*store, "after-full"));
  EXPECT_EQ(store->Counts()[0], 3);
  store->Close();
  // Everything acknowledged survives a reopen.
  auto reopened = OpenStore(dir.path());
  EXPECT_TRUE(Stored(*reopened, "before"));
  EXPECT_TRUE(Stored(*reopened, "after-full"));
  EXPECT_FALSE(Stored(*reopened, "during"));
  EXPECT_EQ(reopened->Counts()[0], 3);
}

TEST(RocksDbStoreTest, OpenFailsWithAMessageWhenTheDirectoryIsLocked) {
  TempDirectory dir;
  auto first = OpenStore(dir.path());
  StoreOptions options;
  options.data_dir = dir.path();
  Result<std::unique_ptr<TimerStore>> second = OpenTimerStore(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(dir.path()), std::string::npos);
  EXPECT_NE(second.status().message().find("another tickwheel serve"), std::string::npos);
}

// Retention deletes delivered and cancelled timers that finished before the
// cutoff, with their index keys and counts; it keeps dead letters, pending
// timers and what finished later.
TEST(RetentionTest, DeletesOnlyWhatFinishedBeforeTheCutoff) {
  TempDirectory dir;
  auto store = OpenStore(dir.path());
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
  ManualServerClock clock(10'000);
  Retention retention(*store, clock, std::chrono::milliseconds(5000));
  EXPECT_EQ(retention.PurgeOnce(), static_cast<std::size_t>(kOld + 1));
  EXPECT_FALSE(Stored(*store, "old-0"));
  EXPECT_FALSE(Stored(*store, "old-cancelled"));
  EXPECT_TRUE(Stored(*store, "new-delivered"));
  EXPECT_TRUE(Stored(*store, "old-failed"));
  EXPECT_TRUE(Stored(*store, "pending"));
  EXPECT_TRUE(store->FinishedBefore(TimerState::kDelivered, 9000, 10)->empty());
  const StateCounts counts = store->Counts();
  EXPECT_EQ(counts[static_cast<int>(TimerState::kDelivered)], 1);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kCancelled)], 0);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kFailed)], 1);
  EXPECT_EQ(counts[static_cast<int>(TimerState::kPending)], 1);
  EXPECT_EQ(retention.PurgeOnce(), 0u);
  // Its sweeper runs on the clock: once 5 s later, "new-delivered" is gone.
  retention.Start();
  clock.Advance(std::chrono::seconds(5));
  EXPECT_FALSE(Stored(*store, "new-delivered"));
  retention.Stop();
}

}  // namespace
}  // namespace tickwheel::server
