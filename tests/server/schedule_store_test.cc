// SPDX-License-Identifier: Apache-2.0
// Schedules in both stores (RocksDB in a temporary directory, PostgreSQL in
// a throw-away server): kept by id, listed by state and prefix, counted;
// in their occurrences' shard; read with their occurrences by whoever names
// them; and the schedule service's operations, each one atomic write.
#include <gtest/gtest.h>

#include <set>

#include "schedule/schedule_record.h"
#include "schedule/schedule_service.h"
#include "store/pg_connection.h"
#include "store_test_util.h"
#include "support/postgres_server.h"
#include "timer/occurrence_id.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {
namespace {

enum class Backend { kRocksDb, kPostgres };

constexpr std::int64_t kT0 = 1'800'000'000'000;
constexpr std::int64_t kMinute = 60'000;
constexpr std::size_t kAnyBytes = std::size_t{1} << 40;  // a listing's byte bound that no page reaches

class ScheduleStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { postgres_ = new testing::PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }

  void SetUp() override {
    if (GetParam() == Backend::kRocksDb) {
      store_ = OpenStore(dir_.path());
      ASSERT_NE(store_, nullptr);
      return;
    }
    ASSERT_TRUE(postgres_->ok()) << postgres_->log();
    static int databases = 0;
    const std::string name = "schedules_" + std::to_string(++databases);
    Result<std::unique_ptr<PgConnection>> admin = PgConnection::Connect(postgres_->url());
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    ASSERT_TRUE((*admin)->ExecScript("CREATE DATABASE " + name).ok());
    std::string url = postgres_->url();
    url = url.substr(0, url.rfind('/') + 1) + name;
    StoreOptions options;
    options.postgres = url;
    options.shards = 16;
    options.node_id = "test-node";
    Result<std::unique_ptr<TimerStore>> store = OpenTimerStore(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override {
    if (store_) store_->Close();
  }

  static ScheduleRecord Every(const std::string& id, std::int64_t period) {
    ScheduleRecord r;
    r.id = id;
    r.spec.every_ms = period;
    r.target = "http://127.0.0.1:1/hook";
    r.payload = R"({"n":1})";
    r.max_attempts = 3;
    r.backoff_ms = 100;
    return r;
  }

  // Creates `r` through the service at `now`; the outcome.
  CreateOutcome Create(const ScheduleRecord& r, std::int64_t now) {
    CreateOutcome out;
    Status s = Write(*store_, {ScheduleKey(r.id)},
                     [&](StoreTxn& txn) { return CreateSchedule(txn, r, now, out); });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  ScheduleRecord Read(const std::string& id) {
    Result<std::optional<ScheduleRecord>> r = ReadSchedule(*store_, id);
    EXPECT_TRUE(r.ok() && *r) << (r.ok() ? "none" : r.status().ToString());
    return r.ok() && *r ? **r : ScheduleRecord{};
  }

  // Claims the occurrence `id` for its first attempt at `now`, as the
  // dispatcher does; what the planning decided.
  OccurrencePlanning::Claimed Claim(const std::string& id, std::int64_t now,
                                    std::int64_t owned_since = kT0 - 3'600'000) {
    OccurrencePlanning::Claimed claimed = OccurrencePlanning::Claimed::kNotAnOccurrence;
    Status s = Write(*store_, WithScheduleKeys({id}), [&](StoreTxn& txn) -> Status {
      OccurrencePlanning planning(txn, now);
      planning.Prefetch({id});
      Result<std::optional<TimerRecord>> r = txn.Get(id);
      if (!r.ok()) return r.status();
      if (!*r) return Status::NotFound("no " + id);
      Result<OccurrencePlanning::Claimed> c = planning.Claim(**r, owned_since);
      if (!c.ok()) return c.status();
      claimed = *c;
      if (claimed == OccurrencePlanning::Claimed::kFire) {
        TimerRecord next;
        EXPECT_EQ(tickwheel::server::Claim(**r, (*r)->due_ms, now, &next), ClaimResult::kClaimed);
        txn.Put(*r, next);
      }
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return claimed;
  }

  static testing::PostgresServer* postgres_;
  TempDirectory dir_;
  std::unique_ptr<TimerStore> store_;
};
testing::PostgresServer* ScheduleStoreTest::postgres_;

TEST_P(ScheduleStoreTest, SchedulesAreKeptListedByStateAndPrefixAndCounted) {
  for (int i = 0; i < 7; ++i) {
    ScheduleRow row{"s" + std::to_string(i), static_cast<std::uint8_t>(i % 3), "rec" + std::to_string(i)};
    Apply(*store_, {ScheduleKey(row.id)}, [&](StoreTxn& txn) { txn.PutSchedule(std::nullopt, row); });
  }
  Apply(*store_, {ScheduleKey("other")},
        [&](StoreTxn& txn) { txn.PutSchedule(std::nullopt, ScheduleRow{"other", 0, "x"}); });
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{4, 2, 2}));
  Result<std::optional<ScheduleRow>> got = store_->GetSchedule("s4");
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ(**got, (ScheduleRow{"s4", 1, "rec4"}));
  EXPECT_FALSE(*store_->GetSchedule("s9"));
  // Pages of 2 with the prefix "s", then by state.
  std::vector<std::string> ids;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    Result<SchedulePage> p = store_->ListSchedules(std::nullopt, after, 2, kAnyBytes, "s");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (const ScheduleRow& r : p->rows) ids.push_back(r.id);
    if (!p->next) break;
    after = *p->next;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4", "s5", "s6"}));
  Result<SchedulePage> paused = store_->ListSchedules(1, "", 100, kAnyBytes, "");
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->rows.size(), 2u);
  EXPECT_EQ(paused->rows[0].id, "s1");
  EXPECT_EQ(paused->rows[1].id, "s4");
  // A state change moves it between the states' listings and counts; an
  // erase removes it.
  Apply(*store_, {ScheduleKey("s1")}, [&](StoreTxn& txn) {
    Result<std::optional<ScheduleRow>> r = txn.GetSchedule("s1");
    ASSERT_TRUE(r.ok() && *r);
    ScheduleRow next = **r;
    next.state = 2;
    txn.PutSchedule(*r, next);
  });
  Apply(*store_, {ScheduleKey("s0")}, [&](StoreTxn& txn) {
    Result<std::optional<ScheduleRow>> r = txn.GetSchedule("s0");
    ASSERT_TRUE(r.ok() && *r);
    txn.EraseSchedule(**r);
  });
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{3, 1, 3}));
  EXPECT_EQ(store_->ListSchedules(1, "", 100, kAnyBytes, "")->rows.size(), 1u);
  EXPECT_FALSE(*store_->GetSchedule("s0"));
}

// A page stops once its records reach the byte bound (the one that
// crosses it is the last; one at least), all schedules' or one state's,
// and the next page goes on from there.
TEST_P(ScheduleStoreTest, APageStopsOnceItsRecordsReachTheByteBound) {
  for (int i = 0; i < 6; ++i) {
    ScheduleRow row{"b" + std::to_string(i), static_cast<std::uint8_t>(i % 2), std::string(1000, 'r')};
    Apply(*store_, {ScheduleKey(row.id)}, [&](StoreTxn& txn) { txn.PutSchedule(std::nullopt, row); });
  }
  auto pages = [&](std::optional<std::uint8_t> state, std::size_t max_bytes) {
    std::vector<std::vector<std::string>> out;
    std::string after;
    for (int page = 0; page < 10; ++page) {
      Result<SchedulePage> p = store_->ListSchedules(state, after, 100, max_bytes, "b");
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (!p.ok()) break;
      out.emplace_back();
      for (const ScheduleRow& r : p->rows) out.back().push_back(r.id);
      if (!p->next) break;
      after = *p->next;
    }
    return out;
  };
  using Pages = std::vector<std::vector<std::string>>;
  EXPECT_EQ(pages(std::nullopt, 2500), (Pages{{"b0", "b1", "b2"}, {"b3", "b4", "b5"}}));
  EXPECT_EQ(pages(std::nullopt, 3000), (Pages{{"b0", "b1", "b2"}, {"b3", "b4", "b5"}}));
  EXPECT_EQ(pages(std::nullopt, 1), (Pages{{"b0"}, {"b1"}, {"b2"}, {"b3"}, {"b4"}, {"b5"}}));
  EXPECT_EQ(pages(1, 1500), (Pages{{"b1", "b3"}, {"b5"}}));
  EXPECT_EQ(pages(0, kAnyBytes), (Pages{{"b0", "b2", "b4"}}));
}

// A row's plan is kept beside its record: written alone when only it
// changed, the record alone when only that changed, read back with it by
// every read, and gone with the row; a row without one (from before the
// split) stays without.
TEST_P(ScheduleStoreTest, APlanIsKeptBesideItsRecord) {
  auto put = [&](const ScheduleRow& row) {
    Apply(*store_, {ScheduleKey(row.id)}, [&](StoreTxn& txn) {
      Result<std::optional<ScheduleRow>> before = txn.GetSchedule(row.id);
      ASSERT_TRUE(before.ok());
      txn.PutSchedule(*before, row);
    });
  };
  auto get = [&](const std::string& id) {
    Result<std::optional<ScheduleRow>> r = store_->GetSchedule(id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  };
  auto in_txn = [&](const std::string& id) {
    std::optional<ScheduleRow> seen;
    Apply(*store_, {ScheduleKey(id)}, [&](StoreTxn& txn) {
      Result<std::optional<ScheduleRow>> r = txn.GetSchedule(id);
      ASSERT_TRUE(r.ok());
      seen = *r;
    });
    return seen;
  };
  put(ScheduleRow{"p", 0, "rec", "plan1"});
  put(ScheduleRow{"old", 1, "whole", ""});
  EXPECT_EQ(get("p"), (ScheduleRow{"p", 0, "rec", "plan1"}));
  put(ScheduleRow{"p", 0, "rec", "plan2"});
  EXPECT_EQ(get("p"), (ScheduleRow{"p", 0, "rec", "plan2"}));
  EXPECT_EQ(in_txn("p"), (ScheduleRow{"p", 0, "rec", "plan2"}));
  put(ScheduleRow{"p", 1, "rec2", "plan2"});
  EXPECT_EQ(get("p"), (ScheduleRow{"p", 1, "rec2", "plan2"}));
  EXPECT_EQ(get("old"), (ScheduleRow{"old", 1, "whole", ""}));
  EXPECT_EQ(in_txn("old"), (ScheduleRow{"old", 1, "whole", ""}));
  // Read ahead (as the dispatcher's claims do), then read.
  Apply(*store_, {ScheduleKey("p"), ScheduleKey("old")}, [&](StoreTxn& txn) {
    txn.Prefetch({ScheduleKey("p"), ScheduleKey("old")});
    EXPECT_EQ(*txn.GetSchedule("p"), (ScheduleRow{"p", 1, "rec2", "plan2"}));
    EXPECT_EQ(*txn.GetSchedule("old"), (ScheduleRow{"old", 1, "whole", ""}));
  });
  const std::vector<ScheduleRow> both = {ScheduleRow{"old", 1, "whole", ""},
                                         ScheduleRow{"p", 1, "rec2", "plan2"}};
  EXPECT_EQ(store_->ListSchedules(std::nullopt, "", 10, kAnyBytes, "")->rows, both);
  EXPECT_EQ(store_->ListSchedules(1, "", 10, kAnyBytes, "")->rows, both);
  Result<std::unique_ptr<StoreSnapshot>> snapshot = store_->Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  Result<StoreSnapshot::Rest> rest = (*snapshot)->SchedulesAndFlows();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->schedules, both);
  snapshot->reset();
  // Gone with its row: created again without one, it has none.
  Apply(*store_, {ScheduleKey("p")}, [&](StoreTxn& txn) { txn.EraseSchedule(*get("p")); });
  EXPECT_FALSE(get("p"));
  put(ScheduleRow{"p", 0, "rec3", ""});
  EXPECT_EQ(get("p"), (ScheduleRow{"p", 0, "rec3", ""}));
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{1, 1, 0}));
}

TEST_P(ScheduleStoreTest, AFailedMutationTakesBackItsScheduleWrites) {
  Status s = Write(*store_, {ScheduleKey("a")}, [&](StoreTxn& txn) {
    txn.PutSchedule(std::nullopt, ScheduleRow{"a", 0, "x"});
    return Status::Invalid("no", "refused");
  });
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(*store_->GetSchedule("a"));
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{0, 0, 0}));
}

TEST_P(ScheduleStoreTest, AScheduleAndItsOccurrencesShareAShard) {
  std::set<int> shards;
  for (int i = 0; i < 50; ++i) {
    const std::string id = "sched-" + std::to_string(i);
    EXPECT_EQ(store_->ShardOf(OccurrenceId(id, kT0 + i)), store_->ShardOf(id));
    EXPECT_EQ(store_->ShardOf(ScheduleKey(id)), store_->ShardOf(id));
    shards.insert(store_->ShardOf(id));
  }
  if (GetParam() == Backend::kPostgres) {
    EXPECT_GT(shards.size(), 4u);  // still spread
  }
}

TEST_P(ScheduleStoreTest, WhoNamesAScheduleReadsAndWritesItsOccurrences) {
  for (int i = 1; i <= 3; ++i) {
    const std::string id = OccurrenceId("s", kT0 + i * kMinute);
    Apply(*store_, {id}, [&](StoreTxn& txn) { txn.Put(std::nullopt, Record(id, kT0 + i * kMinute)); });
  }
  // A mutation naming only the schedule reads them (ahead, then one by
  // one) and creates another.
  Apply(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
    txn.Prefetch({OccurrenceId("s", kT0 + kMinute), OccurrenceId("s", kT0 + 2 * kMinute),
                  OccurrenceId("s", kT0 + 9 * kMinute)});
    for (int i = 1; i <= 3; ++i) {
      Result<std::optional<TimerRecord>> r = txn.Get(OccurrenceId("s", kT0 + i * kMinute));
      ASSERT_TRUE(r.ok() && *r) << i;
      EXPECT_EQ((*r)->due_ms, kT0 + i * kMinute);
    }
    Result<std::optional<TimerRecord>> none = txn.Get(OccurrenceId("s", kT0 + 9 * kMinute));
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(*none);
    txn.Put(std::nullopt, Record(OccurrenceId("s", kT0 + 4 * kMinute), kT0 + 4 * kMinute));
  });
  Result<std::vector<TimerRecord>> last = store_->LastWithPrefix(ScheduleKey("s"), "", 3);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  std::vector<std::string> ids;
  for (const TimerRecord& r : *last) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{OccurrenceId("s", kT0 + 4 * kMinute),
                                           OccurrenceId("s", kT0 + 3 * kMinute),
                                           OccurrenceId("s", kT0 + 2 * kMinute)}));
  Result<std::vector<TimerRecord>> before =
      store_->LastWithPrefix(ScheduleKey("s"), OccurrenceId("s", kT0 + 2 * kMinute), 10);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].id, OccurrenceId("s", kT0 + kMinute));
  EXPECT_TRUE(store_->LastWithPrefix(ScheduleKey("t"), "", 3)->empty());
}

TEST_P(ScheduleStoreTest, ACreatedScheduleHasItsFirstOccurrenceInTheSameWrite) {
  CreateOutcome created = Create(Every("daily", kMinute), kT0 + 5);
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(created.totals.planned, 1u);
  std::optional<TimerRecord> first = Stored(*store_, OccurrenceId("daily", kT0 + kMinute));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->state, TimerState::kPending);
  EXPECT_EQ(first->due_ms, kT0 + kMinute);
  EXPECT_EQ(first->target, "http://127.0.0.1:1/hook");
  EXPECT_EQ(first->payload, R"({"n":1})");
  EXPECT_EQ(first->max_attempts, 3u);
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{1, 0, 0}));
  // The same create again is the same schedule; another is a conflict.
  EXPECT_EQ(Create(Every("daily", kMinute), kT0 + 9).status, 200);
  ScheduleRecord other = Every("daily", 2 * kMinute);
  other.digest[0] = 1;
  Status conflict = Write(*store_, {ScheduleKey("daily")}, [&](StoreTxn& txn) {
    CreateOutcome out;
    return CreateSchedule(txn, other, kT0 + 10, out);
  });
  EXPECT_EQ(conflict.reason(), "id_conflict");
}

// A schedule's trace context (its create's traceparent) is kept with it
// and given to every occurrence; an export line carries one without in the
// format the versions before read (2), one with in format 3.
TEST_P(ScheduleStoreTest, ATracedSchedulesOccurrencesCarryItsTrace) {
  ScheduleRecord traced = Every("traced", kMinute);
  traced.trace = {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1"};
  EXPECT_EQ(Create(traced, kT0 + 5).status, 201);
  std::optional<TimerRecord> first = Stored(*store_, OccurrenceId("traced", kT0 + kMinute));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->trace, traced.trace);
  EXPECT_EQ(Read("traced").trace, traced.trace);
  EXPECT_EQ(EncodeWholeSchedule(traced)[0], 3);
  EXPECT_EQ(EncodeWholeSchedule(Every("plain", kMinute))[0], 2);
  ASSERT_EQ(Create(Every("plain", kMinute), kT0 + 5).status, 201);
  std::optional<TimerRecord> untraced = Stored(*store_, OccurrenceId("plain", kT0 + kMinute));
  ASSERT_TRUE(untraced);
  EXPECT_TRUE(untraced->trace.empty());
}

// ... and changes only the schedule's plan, not its record.
TEST_P(ScheduleStoreTest, EachClaimPlansTheNextOccurrenceInItsOwnWrite) {
  Create(Every("s", kMinute), kT0);
  const std::optional<ScheduleRow> created = *store_->GetSchedule("s");
  ASSERT_TRUE(created);
  for (int i = 1; i <= 4; ++i) {
    const std::int64_t t = kT0 + i * kMinute;
    EXPECT_EQ(Claim(OccurrenceId("s", t), t + 2), OccurrencePlanning::Claimed::kFire);
    const std::optional<ScheduleRow> claimed = *store_->GetSchedule("s");
    ASSERT_TRUE(claimed);
    EXPECT_EQ(claimed->record, created->record);
    EXPECT_NE(claimed->plan, created->plan);
    EXPECT_EQ(Stored(*store_, OccurrenceId("s", t))->state, TimerState::kDelivering);
    std::optional<TimerRecord> next = Stored(*store_, OccurrenceId("s", t + kMinute));
    ASSERT_TRUE(next) << i;
    EXPECT_EQ(next->state, TimerState::kPending);
    EXPECT_EQ(Read("s").next_ms, t + kMinute);
  }
  EXPECT_EQ(Read("s").counts.fired, 4u);
}

TEST_P(ScheduleStoreTest, PauseErasesThePlanAndResumeMakesItAgain) {
  Create(Every("s", kMinute), kT0);
  ChangeOutcome out;
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return PauseSchedule(txn, "s", kT0 + 10, out);
              }).ok());
  EXPECT_EQ(out.record.state, ScheduleState::kPaused);
  EXPECT_FALSE(Stored(*store_, OccurrenceId("s", kT0 + kMinute)));
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{0, 1, 0}));
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return ResumeSchedule(txn, "s", kT0 + 20, out);
              }).ok());
  EXPECT_EQ(out.record.state, ScheduleState::kActive);
  EXPECT_TRUE(Stored(*store_, OccurrenceId("s", kT0 + kMinute)));
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{1, 0, 0}));
}

TEST_P(ScheduleStoreTest, TriggerAndBackfillMakeOccurrencesOutsideThePlanEachOnce) {
  Create(Every("s", kMinute), kT0 + 10 * kMinute);
  TriggerOutcome trigger;
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return TriggerSchedule(txn, "s", kT0 + 10 * kMinute + 7, trigger);
              }).ok());
  EXPECT_TRUE(trigger.created);
  EXPECT_EQ(trigger.occurrence.id, OccurrenceId("s", kT0 + 10 * kMinute + 7));
  // The same millisecond again: that occurrence.
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return TriggerSchedule(txn, "s", kT0 + 10 * kMinute + 7, trigger);
              }).ok());
  EXPECT_FALSE(trigger.created);
  // Backfill [3 min, 8 min): 5 times; again: none new.
  BackfillOutcome backfill;
  auto run = [&] {
    return Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
      return BackfillSchedule(txn, "s", kT0 + 3 * kMinute, kT0 + 8 * kMinute,
                              kT0 + 10 * kMinute + 8, backfill);
    });
  };
  ASSERT_TRUE(run().ok());
  EXPECT_EQ(backfill.created, 5u);
  EXPECT_EQ(backfill.existing, 0u);
  EXPECT_FALSE(backfill.more);
  ASSERT_TRUE(run().ok());
  EXPECT_EQ(backfill.created, 0u);
  EXPECT_EQ(backfill.existing, 5u);
  // Created due now, in time order.
  std::int64_t previous = 0;
  for (int i = 3; i < 8; ++i) {
    std::optional<TimerRecord> t = Stored(*store_, OccurrenceId("s", kT0 + i * kMinute));
    ASSERT_TRUE(t);
    EXPECT_GT(t->due_ms, previous);
    previous = t->due_ms;
  }
  const ScheduleRecord r = Read("s");
  EXPECT_EQ(r.counts.triggered, 1u);
  EXPECT_EQ(r.counts.backfilled, 5u);
}

TEST_P(ScheduleStoreTest, PatchRewritesThePlannedOccurrenceOrReplans) {
  Create(Every("s", kMinute), kT0);
  ChangeOutcome out;
  SchedulePatch payload;
  payload.payload = R"({"n":2})";
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return PatchSchedule(txn, "s", payload, kT0 + 10, out);
              }).ok());
  EXPECT_EQ(Stored(*store_, OccurrenceId("s", kT0 + kMinute))->payload, R"({"n":2})");
  SchedulePatch every;
  every.every_ms = 5 * kMinute;
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return PatchSchedule(txn, "s", every, kT0 + 20, out);
              }).ok());
  EXPECT_FALSE(Stored(*store_, OccurrenceId("s", kT0 + kMinute)));
  EXPECT_TRUE(Stored(*store_, OccurrenceId("s", kT0 + 5 * kMinute)));
  EXPECT_EQ(out.record.next_ms, kT0 + 5 * kMinute);
  SchedulePatch bad;
  bad.time_zone = "Europe/Berlin";  // with every_ms
  Status refused = Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
    return PatchSchedule(txn, "s", bad, kT0 + 30, out);
  });
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.field(), "time_zone");
}

TEST_P(ScheduleStoreTest, DeleteErasesTheScheduleAndItsPlanAndLaterClaimsSkip) {
  Create(Every("s", kMinute), kT0);
  TriggerOutcome trigger;
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return TriggerSchedule(txn, "s", kT0 + 1, trigger);
              }).ok());
  ChangeOutcome out;
  ASSERT_TRUE(Write(*store_, {ScheduleKey("s")}, [&](StoreTxn& txn) {
                return DeleteSchedule(txn, "s", kT0 + 2, out);
              }).ok());
  EXPECT_FALSE(*store_->GetSchedule("s"));
  EXPECT_FALSE(Stored(*store_, OccurrenceId("s", kT0 + kMinute)));
  // The triggered one, pending still, is skipped at its claim.
  EXPECT_EQ(Claim(OccurrenceId("s", kT0 + 1), kT0 + 3), OccurrencePlanning::Claimed::kSkipped);
  std::optional<TimerRecord> t = Stored(*store_, OccurrenceId("s", kT0 + 1));
  EXPECT_EQ(t->state, TimerState::kCancelled);
  EXPECT_EQ(t->last_error, "skipped: the schedule was deleted");
  EXPECT_EQ(store_->CountSchedules(), (ScheduleCounts{0, 0, 0}));
}

INSTANTIATE_TEST_SUITE_P(Stores, ScheduleStoreTest,
                         ::testing::Values(Backend::kRocksDb, Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return p.param == Backend::kRocksDb ? "RocksDb" : "Postgres";
                         });

}  // namespace
}  // namespace tickwheel::server
