// SPDX-License-Identifier: Apache-2.0
// Data in and out, in-process on both stores (RocksDB in a temporary
// directory, PostgreSQL in a throw-away server): snapshots that stay as of
// when they were taken while the store changes, exports paged from them,
// imports that create what is missing and overwrite nothing, hot
// checkpoints, and the export format's lines read back as the same records.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "api/transfer_json.h"
#include "common/base64.h"
#include "schedule/schedule_record.h"
#include "store/pg_connection.h"
#include "store/record_codec.h"
#include "store_test_util.h"
#include "support/postgres_server.h"
#include "transfer/backup.h"
#include "transfer/export_sessions.h"
#include "transfer/import_write.h"

namespace tickwheel::server {
namespace {

enum class Backend { kRocksDb, kPostgres };

void WriteFileText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A timer in `state` as the server would have it: a finished one with its
// attempts, a dead letter with its last error and log.
TimerRecord Timer(const std::string& id, TimerState state, std::int64_t due = 5'000) {
  TimerRecord r = Record(id, due, state);
  r.max_attempts = 3;
  r.backoff_ms = 100;
  r.created_ms = 1'000;
  r.updated_ms = state == TimerState::kPending ? 1'000 : 2'000 + static_cast<std::int64_t>(id.size());
  r.digest[0] = static_cast<std::uint8_t>(id.size());
  r.digest[31] = 7;
  r.headers = {{"X-Tenant", "acme"}};
  if (state == TimerState::kFailed || state == TimerState::kDelivered) r.attempts = 3;
  if (state == TimerState::kDelivering) r.attempts = 1;
  if (state == TimerState::kFailed) {
    r.last_error = "HTTP 500";
    r.attempt_log = {{1'500, 12, 500, "HTTP 500"}, {1'700, 9, 0, "connection refused"}};
  }
  return r;
}

class TransferTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { postgres_ = new testing::PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }

  void SetUp() override { store_ = Open(); }
  void TearDown() override {
    if (store_) store_->Close();
  }

  std::unique_ptr<TimerStore> Open() {
    if (GetParam() == Backend::kRocksDb) {
      static int dirs = 0;
      return OpenStore(dir_.path() + "/db" + std::to_string(++dirs));
    }
    EXPECT_TRUE(postgres_->ok()) << postgres_->log();
    static int databases = 0;
    const std::string name = "transfer_" + std::to_string(++databases);
    Result<std::unique_ptr<PgConnection>> admin = PgConnection::Connect(postgres_->url());
    EXPECT_TRUE(admin.ok()) << admin.status().ToString();
    if (!admin.ok()) return nullptr;
    EXPECT_TRUE((*admin)->ExecScript("CREATE DATABASE " + name).ok());
    std::string url = postgres_->url();
    url = url.substr(0, url.rfind('/') + 1) + name;
    StoreOptions options;
    options.postgres = url;
    options.shards = 4;
    options.node_id = "test-node";
    Result<std::unique_ptr<TimerStore>> store = OpenTimerStore(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }

  // Every record of the snapshot, page by page (`limit` a page).
  static std::vector<TimerRecord> ReadAll(StoreSnapshot& snapshot, std::size_t limit,
                                          unsigned states = kAllStates, int* pages = nullptr) {
    std::vector<TimerRecord> out;
    std::optional<std::string> after;
    for (int page = 0; page < 1000; ++page) {
      Result<StoreSnapshot::Page> p = snapshot.Timers(after, limit, 1 << 20, states);
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (!p.ok()) break;
      for (TimerRecord& r : p->records) out.push_back(std::move(r));
      if (pages) *pages = page + 1;
      if (!p->next) break;
      after = p->next;
    }
    return out;
  }

  // Imports `records` in one write; the outcomes.
  static std::vector<ImportOutcome> Import(TimerStore& store, std::vector<TimerRecord> records) {
    auto batch = std::make_shared<ImportBatch>();
    batch->records = std::move(records);
    Status s = Write(store, batch->ids(), ImportMutation(batch));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return batch->outcomes;
  }

  static testing::PostgresServer* postgres_;
  TempDirectory dir_;
  std::unique_ptr<TimerStore> store_;
};
testing::PostgresServer* TransferTest::postgres_;

std::vector<TimerRecord> MixedTimers(int n) {
  std::vector<TimerRecord> out;
  for (int i = 0; i < n; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "t%03d", i);
    out.push_back(Timer(id, static_cast<TimerState>(i % kNumStates), 5'000 + i));
  }
  return out;
}

TEST_P(TransferTest, ASnapshotSeesTheStoreAsOfWhenItWasTaken) {
  ASSERT_NE(store_, nullptr);
  const std::vector<TimerRecord> before = MixedTimers(30);
  std::vector<std::string> ids;
  for (const TimerRecord& r : before) ids.push_back(r.id);
  Apply(*store_, ids, [&](StoreTxn& txn) {
    for (const TimerRecord& r : before) txn.Put(std::nullopt, r);
  });
  Result<std::unique_ptr<StoreSnapshot>> snapshot = store_->Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  // The store changes: a pending timer is cancelled, one is deleted, and
  // new ones come, one of them before every other id.
  Apply(*store_, {"t000", "t005", "a-new", "z-new"}, [&](StoreTxn& txn) {
    TimerRecord cancelled = before[0];
    cancelled.state = TimerState::kCancelled;
    cancelled.updated_ms = 9'000;
    txn.Put(before[0], cancelled);
    txn.Erase(before[5]);
    txn.Put(std::nullopt, Timer("a-new", TimerState::kPending));
    txn.Put(std::nullopt, Timer("z-new", TimerState::kPending));
  });
  int pages = 0;
  std::vector<TimerRecord> seen = ReadAll(**snapshot, 7, kAllStates, &pages);
  EXPECT_EQ(seen, before);  // in id order, each once, as they were
  EXPECT_EQ(pages, 5);
  StateCounts expected{};
  for (const TimerRecord& r : before) ++expected[static_cast<std::size_t>(r.state)];
  EXPECT_EQ((*snapshot)->counts(), expected);
  EXPECT_GT((*snapshot)->taken_ms(), 1'600'000'000'000);
  // A snapshot taken now sees the changes.
  Result<std::unique_ptr<StoreSnapshot>> now = store_->Snapshot();
  ASSERT_TRUE(now.ok());
  std::vector<TimerRecord> after = ReadAll(**now, 100);
  ASSERT_EQ(after.size(), 31u);
  EXPECT_EQ(after.front().id, "a-new");
  EXPECT_EQ(after.back().id, "z-new");
  EXPECT_EQ(after[1].state, TimerState::kCancelled);
}

ScheduleRecord Schedule(const std::string& id, std::uint8_t digest, std::int64_t planned_until) {
  ScheduleRecord r;
  r.id = id;
  r.spec.every_ms = 60'000;
  r.target = "http://127.0.0.1:1/hook";
  r.payload = R"({"n":1})";
  r.digest[0] = digest;
  r.created_ms = 1'000;
  r.planned_until_ms = planned_until;
  return r;
}

// Schedules and flow settings are in the snapshot as of when it was taken,
// and an import creates the missing ones and overwrites none.
TEST_P(TransferTest, SchedulesAndFlowSettingsComeFromTheSnapshotAndImportWithoutOverwriting) {
  ASSERT_NE(store_, nullptr);
  const ScheduleRow a = EncodeSchedule(Schedule("sched-a", 1, 60'000));
  const ScheduleRow b = EncodeSchedule(Schedule("sched-b", 2, 120'000));
  Apply(*store_, {ScheduleKey("sched-a"), ScheduleKey("sched-b")}, [&](StoreTxn& txn) {
    txn.PutSchedule(std::nullopt, a);
    txn.PutSchedule(std::nullopt, b);
  });
  auto set = [&](const std::string& flow, const std::string& bytes) {
    Result<std::optional<std::string>> r = store_->UpdateFlowSettings(
        flow, [&](const std::optional<std::string>&) -> Result<std::optional<std::string>> {
          return std::optional<std::string>(bytes);
        });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  FlowSettings paused;
  paused.paused = true;
  paused.rate_per_s = 5;
  paused.updated_ms = 3'000;
  set("api.example.com:443", EncodeFlowSettings(paused));
  Result<std::unique_ptr<StoreSnapshot>> snapshot = store_->Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  // Changed after the snapshot: a schedule planned further, one more flow.
  const ScheduleRow a_later = EncodeSchedule(Schedule("sched-a", 1, 180'000));
  Apply(*store_, {ScheduleKey("sched-a")}, [&](StoreTxn& txn) { txn.PutSchedule(a, a_later); });
  set("other:80", EncodeFlowSettings(FlowSettings{}));
  Result<StoreSnapshot::Rest> rest = (*snapshot)->SchedulesAndFlows();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->schedules, (std::vector<ScheduleRow>{a, b}));
  ASSERT_EQ(rest->flows.size(), 1u);
  EXPECT_EQ(rest->flows[0].first, "api.example.com:443");
  Result<FlowSettings> read = DecodeFlowSettings("api.example.com:443", rest->flows[0].second);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, paused);
  (*snapshot).reset();

  // Imported into another store: created; again: existing; a schedule of
  // the same id made by another create: a conflict, left as it was.
  std::unique_ptr<TimerStore> other = Open();
  ASSERT_NE(other, nullptr);
  auto import = [&](std::vector<ScheduleRow> rows) {
    auto batch = std::make_shared<ImportBatch>();
    batch->schedules = std::move(rows);
    Status s = Write(*other, batch->ids(), ImportMutation(batch));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return batch->schedule_outcomes;
  };
  EXPECT_EQ(import(rest->schedules),
            (std::vector<ImportOutcome>{ImportOutcome::kCreated, ImportOutcome::kCreated}));
  EXPECT_EQ(import(rest->schedules),
            (std::vector<ImportOutcome>{ImportOutcome::kExisting, ImportOutcome::kExisting}));
  // The same create further along its recurrence is the same schedule.
  EXPECT_EQ(import({a_later}), std::vector<ImportOutcome>{ImportOutcome::kExisting});
  const ScheduleRow impostor = EncodeSchedule(Schedule("sched-b", 9, 0));
  EXPECT_EQ(import({impostor}), std::vector<ImportOutcome>{ImportOutcome::kConflict});
  Result<std::optional<ScheduleRow>> kept = other->GetSchedule("sched-b");
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ(**kept, b);
  Result<std::optional<ScheduleRow>> first = other->GetSchedule("sched-a");
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(**first, a);  // as exported, not as changed after the snapshot
  other->Close();
}

// The export lines of a schedule and a flow read back as what was stored.
TEST(TransferJsonTest, ScheduleAndFlowLinesReadBackAsStored) {
  ScheduleRecord s = Schedule("nightly", 4, 86'400'000);
  s.headers = {{"Authorization", "Bearer x"}};
  const ScheduleRow row = EncodeSchedule(s);
  std::string line = ExportScheduleLine(row);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  Result<ImportLine> parsed = ParseImportLine(line, ApiLimits{}, 0);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->kind, ImportLine::Kind::kSchedule);
  EXPECT_EQ(parsed->schedule, row);
  EXPECT_NE(line.find(R"("Authorization":"Bearer x")"), std::string::npos) << line;  // readable too
  // The line holds the whole schedule (format 2), which the versions before
  // the plan's split read too.
  EXPECT_NE(line.find("\"record\":\"" + Base64Encode(EncodeWholeSchedule(s)) + "\""),
            std::string::npos);
  // A paused one imports paused.
  s.state = ScheduleState::kPaused;
  s.paused_ms = 5'000;
  std::string paused_line = ExportScheduleLine(EncodeSchedule(s));
  paused_line.pop_back();
  Result<ImportLine> paused = ParseImportLine(paused_line, ApiLimits{}, 0);
  ASSERT_TRUE(paused.ok()) << paused.status().ToString();
  EXPECT_EQ(paused->schedule, EncodeSchedule(s));
  FlowSettings f;
  f.max_in_flight = 3;
  f.paused = true;
  f.updated_ms = 77;
  std::string flow = ExportFlowLine("q.example:443", EncodeFlowSettings(f));
  flow.pop_back();
  Result<ImportLine> back = ParseImportLine(flow, ApiLimits{}, 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << " " << flow;
  EXPECT_EQ(back->kind, ImportLine::Kind::kFlow);
  EXPECT_EQ(back->flow_key, "q.example:443");
  EXPECT_EQ(back->flow_settings, f);
}

TEST_P(TransferTest, ASnapshotPageKeepsTheStatesAskedForWithinTheScanBudget) {
  ASSERT_NE(store_, nullptr);
  constexpr std::size_t kMany = StoreSnapshot::kPageScanBudget + 20;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < kMany; ++i) ids.push_back(std::to_string(100000 + i));
  ids.push_back("zz-failed");
  Apply(*store_, ids, [&](StoreTxn& txn) {
    for (std::size_t i = 0; i < kMany; ++i) {
      txn.Put(std::nullopt, Timer(ids[i], TimerState::kPending));
    }
    txn.Put(std::nullopt, Timer("zz-failed", TimerState::kFailed));
  });
  Result<std::unique_ptr<StoreSnapshot>> snapshot = store_->Snapshot();
  ASSERT_TRUE(snapshot.ok());
  const unsigned failed = 1u << static_cast<unsigned>(TimerState::kFailed);
  Result<StoreSnapshot::Page> first = (*snapshot)->Timers(std::nullopt, 10, 1 << 20, failed);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->records.empty());  // the budget ran out among pending ones
  ASSERT_TRUE(first->next.has_value());
  int pages = 0;
  std::vector<TimerRecord> seen = ReadAll(**snapshot, 10, failed, &pages);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "zz-failed");
  EXPECT_EQ(pages, 2);
  // A byte bound ends a page early, never before its first record.
  Result<StoreSnapshot::Page> small = (*snapshot)->Timers(std::nullopt, 100, 1, kAllStates);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->records.size(), 1u);
  EXPECT_EQ(small->next, std::optional<std::string>(small->records[0].id));
}

TEST_P(TransferTest, AnImportRestoresEachStateAndOverwritesNothing) {
  ASSERT_NE(store_, nullptr);
  const std::vector<TimerRecord> timers = MixedTimers(10);
  std::vector<ImportOutcome> first = Import(*store_, timers);
  EXPECT_EQ(first, std::vector<ImportOutcome>(10, ImportOutcome::kCreated));
  for (const TimerRecord& r : timers) EXPECT_EQ(Stored(*store_, r.id), r) << r.id;
  StateCounts expected{};
  for (const TimerRecord& r : timers) ++expected[static_cast<std::size_t>(r.state)];
  for (int i = 0; i < 50 && store_->Counts() != expected; ++i) {  // PostgreSQL refreshes them
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(store_->Counts(), expected);
  // Pending and delivering ones are due at their time; finished ones are
  // found by the retention from when they finished.
  std::vector<int> shards(static_cast<std::size_t>(store_->shard_count()));
  for (int i = 0; i < store_->shard_count(); ++i) shards[static_cast<std::size_t>(i)] = i;
  Result<DueScan> due = store_->ScanDue(shards, {INT64_MIN, "", ""}, INT64_MAX, 100);
  ASSERT_TRUE(due.ok());
  std::vector<DueEntry> scheduled;
  for (const TimerRecord& r : timers) {
    if (IsScheduled(r.state)) scheduled.push_back({r.due_ms, r.id, r.flow});
  }
  EXPECT_EQ(due->entries, scheduled);
  Result<std::vector<std::string>> old = store_->FinishedBefore(TimerState::kDelivered, 2'005, 10);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*old, (std::vector<std::string>{"t002", "t007"}));
  // The same again: nothing changes. A timer changed since (delivered
  // here) is the same timer: left as it is.
  TimerRecord progressed = timers[0];
  progressed.state = TimerState::kDelivered;
  progressed.attempts = 1;
  progressed.updated_ms = 7'000;
  Apply(*store_, {"t000"}, [&](StoreTxn& txn) { txn.Put(timers[0], progressed); });
  EXPECT_EQ(Import(*store_, timers), std::vector<ImportOutcome>(10, ImportOutcome::kExisting));
  EXPECT_EQ(Stored(*store_, "t000"), progressed);
  // Another timer with a taken id (another payload, or a line edited under
  // its digest) is a conflict, and the stored one stays; new ids in the
  // same request are created.
  TimerRecord other = timers[3];
  other.payload = R"({"a":2})";
  TimerRecord fresh = Timer("u-fresh", TimerState::kPending);
  EXPECT_EQ(Import(*store_, {other, fresh}),
            (std::vector<ImportOutcome>{ImportOutcome::kConflict, ImportOutcome::kCreated}));
  EXPECT_EQ(Stored(*store_, "t003"), timers[3]);
  EXPECT_EQ(Stored(*store_, "u-fresh"), fresh);
}

TEST_P(TransferTest, ACheckpointHoldsEveryWriteCompletedBeforeIt) {
  ASSERT_NE(store_, nullptr);
  const std::string backup = dir_.path() + "/backup";
  if (GetParam() == Backend::kPostgres) {
    Status s = store_->Checkpoint(backup);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("pg_dump"), std::string::npos) << s.message();
    return;
  }
  // Writes keep coming while the checkpoint is taken; every one answered
  // before it began must be in it.
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string id = std::to_string(1000000 + i);
      Apply(*store_, {id}, [&](StoreTxn& txn) { txn.Put(std::nullopt, Timer(id, TimerState::kPending)); });
      written.store(i + 1);
    }
  });
  while (written.load() < 200) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int before = written.load();
  ASSERT_TRUE(store_->Checkpoint(backup).ok());
  stop.store(true);
  writer.join();
  EXPECT_EQ(store_->Checkpoint(backup).code(), StatusCode::kInvalidArgument);  // it exists
  std::unique_ptr<TimerStore> copy = OpenStore(backup);
  ASSERT_NE(copy, nullptr);
  for (int i = 0; i < before; ++i) {
    ASSERT_TRUE(Stored(*copy, std::to_string(1000000 + i)).has_value()) << i;
  }
  EXPECT_GE(copy->Counts()[0], before);
  copy->Close();
}

TEST_P(TransferTest, ExportSessionsPageFromOneSnapshotAndExpireWhenIdle) {
  ASSERT_NE(store_, nullptr);
  const std::vector<TimerRecord> timers = MixedTimers(12);
  Import(*store_, timers);
  ManualServerClock clock(1'800'000'000'000);
  ExportSessions exports(*store_, clock,
                         {.idle_timeout = std::chrono::seconds(10), .max_sessions = 2});
  Result<ExportSessions::Started> started = exports.Start(kAllStates);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->counts[static_cast<std::size_t>(TimerState::kFailed)], 2);
  Import(*store_, {Timer("a-later", TimerState::kPending)});  // not in the export
  std::vector<std::string> ids;
  ExportCursor cursor{started->session, std::nullopt};
  for (;;) {
    Result<ExportSessions::PageOut> page = exports.Page(cursor, 5, 1 << 20);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const TimerRecord& r : page->records) ids.push_back(r.id);
    if (!page->next) break;
    // A page asked again (its answer was lost) is the same page.
    Result<ExportSessions::PageOut> again = exports.Page(cursor, 5, 1 << 20);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->records, page->records);
    cursor.after = page->next;
    EXPECT_EQ(ParseExportCursor(EncodeExportCursor(cursor))->after, cursor.after);
  }
  ASSERT_EQ(ids.size(), 12u);
  EXPECT_EQ(ids.front(), "t000");
  // At most two at once; an idle one expires.
  ASSERT_TRUE(exports.Start(kAllStates).ok());
  Result<ExportSessions::Started> third = exports.Start(kAllStates);
  EXPECT_EQ(third.status().reason(), "too_many_exports");
  clock.Advance(std::chrono::seconds(6));
  ASSERT_TRUE(exports.Page({started->session, std::nullopt}, 1, 1 << 20).ok());  // still used
  clock.Advance(std::chrono::seconds(6));
  EXPECT_EQ(exports.open(), 1u);
  clock.Advance(std::chrono::seconds(12));
  EXPECT_EQ(exports.open(), 0u);
  Result<ExportSessions::PageOut> gone = exports.Page({started->session, std::nullopt}, 1, 1 << 20);
  EXPECT_EQ(gone.status().reason(), "export_expired");
  ASSERT_TRUE(exports.Start(kAllStates).ok());
  exports.Clear();
  EXPECT_EQ(exports.open(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Stores, TransferTest,
                         ::testing::Values(Backend::kRocksDb, Backend::kPostgres),
                         [](const auto& test) {
                           return test.param == Backend::kRocksDb ? "RocksDb" : "Postgres";
                         });

// ---- the export format ----

ApiLimits Limits() {
  ApiLimits limits;
  limits.https_enabled = true;
  limits.nats_enabled = true;
  return limits;
}

TEST(TransferJsonTest, EveryStateReadsBackAsTheSameRecord) {
  std::vector<TimerRecord> records = MixedTimers(5);
  TimerRecord legacy = Timer("legacy-1", TimerState::kPending);
  legacy.digest_kind = DigestKind::kLegacy;
  legacy.digest = {};
  legacy.headers.clear();
  legacy.target = "nats:orders.due";
  records.push_back(legacy);
  TimerRecord retry = Timer("retrying", TimerState::kPending, 9'000);
  retry.fire_at_ms = 4'000;  // a retry: due after its fire time
  retry.attempts = 2;
  retry.last_error = "timeout";
  retry.attempt_log = {{4'000, 10'000, 0, "timeout"}};
  records.push_back(retry);
  TimerRecord traced = Timer("traced", TimerState::kPending);
  traced.trace = {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "rojo=1,congo=2"};
  records.push_back(traced);
  TimerRecord traced_only_parent = Timer("traced-2", TimerState::kFailed);
  traced_only_parent.trace.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  records.push_back(traced_only_parent);
  for (const TimerRecord& r : records) {
    const std::string line = ExportTimerLine(r);
    ASSERT_EQ(line.back(), '\n');
    Result<ImportLine> back = ParseImportLine(line.substr(0, line.size() - 1), Limits(), 123);
    ASSERT_TRUE(back.ok()) << r.id << ": " << back.status().ToString() << "\n" << line;
    EXPECT_EQ(back->kind, ImportLine::Kind::kTimer);
    TimerRecord expected = r;
    if (!IsScheduled(r.state)) expected.due_ms = r.fire_at_ms;  // not part of a finished timer
    EXPECT_EQ(back->record, expected) << line;
  }
}

TEST(TransferJsonTest, TheHeaderAndEndLinesFrameTheTimers) {
  ExportHeader h{"9.9.9", "embedded", 1'234, (1u << 0) | (1u << 3), {5, 1, 2, 3, 4}};
  const std::string line = ExportHeaderLine(h);
  EXPECT_EQ(line,
            "{\"kind\":\"export\",\"format\":1,\"server_version\":\"9.9.9\",\"store\":\"embedded\","
            "\"taken_ms\":1234,\"states\":[\"pending\",\"failed\"],\"counts\":{\"pending\":5,"
            "\"delivering\":1,\"delivered\":2,\"failed\":3,\"cancelled\":4},\"timers\":8}\n");
  Result<ImportLine> header = ParseImportLine(line, Limits(), 0);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->kind, ImportLine::Kind::kHeader);
  EXPECT_EQ(header->timers, 8);
  EXPECT_EQ(ParseImportLine(ExportEndLine(), Limits(), 0)->kind, ImportLine::Kind::kEnd);
  EXPECT_EQ(ParseImportLine(R"({"kind":"export","format":2})", Limits(), 0).status().reason(),
            "unsupported_format");
}

TEST(TransferJsonTest, ABadLineNamesItsField) {
  struct Case {
    const char* line;
    const char* reason;
    const char* field;
  };
  const std::string ok =
      R"("id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"retry":{"max_attempts":3,"backoff_ms":10})";
  const Case cases[] = {
      {R"({"kind":"bucket","id":"s"})", "unsupported_kind", "kind"},
      {R"({"kind":"schedule","id":"s"})", "missing_field", "record"},
      {R"({"kind":"schedule","id":"s","record":"AAAA"})", "invalid_value", "record"},
      {R"({"kind":"schedule","id":"s@1","record":"AAAA"})", "invalid_id", "id"},
      {R"({"kind":"flow","key":"k"})", "missing_field", "settings"},
      {R"({"kind":"flow","key":"k","settings":{"rate_per_s":"x"}})", "invalid_value", "settings"},
      {R"({"id":"a","fire_at_ms":100,"target":{"url":"http://h/x"}})", "missing_field", "state"},
      {R"({"state":"pending","fire_at_ms":100,"target":{"url":"http://h/x"}})", "missing_field", "id"},
      {R"({"state":"asleep","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"}})", "invalid_value", "state"},
      {R"({"state":"pending","id":"a","fire_at_ms":100,"target":{"url":"ftp://h/x"}})", "unsupported_target", "target.url"},
      {R"({"state":"pending","id":"a b","fire_at_ms":100,"target":{"url":"http://h/x"}})", "invalid_id", "id"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"attempts":11})", "out_of_range", "attempts"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"attempt_log":[{"duration_ms":3}]})", "missing_field", "attempt_log[0].started_ms"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"attempt_log":[{"started_ms":5,"throttled_ms":4294967296}]})", "out_of_range", "attempt_log[0].throttled_ms"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"create_digest":"md5:x"})", "invalid_value", "create_digest"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"colour":"red"})", "unknown_field", "colour"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"traceparent":"00-x"})", "invalid_trace_context", "traceparent"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"traceparent":7})", "invalid_type", "traceparent"},
      {R"({"state":"failed","id":"a","fire_at_ms":100,"target":{"url":"http://h/x"},"tracestate":"a=b"})", "invalid_trace_context", "tracestate"},
      {R"(["not an object"])", "invalid_type", ""},
      {R"({"state":)", "invalid_json", ""},
  };
  for (const Case& c : cases) {
    Result<ImportLine> r = ParseImportLine(c.line, Limits(), 0);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.status().reason(), c.reason) << c.line << ": " << r.status().ToString();
    EXPECT_EQ(r.status().field(), c.field) << c.line << ": " << r.status().ToString();
  }
  // A fire time long past is kept as it was (a delivered timer's), and a
  // line without kind or digest is a timer whose digest is its create body's.
  std::string delivered = R"({"state":"delivered",)";
  delivered += ok;
  delivered += '}';
  Result<ImportLine> past = ParseImportLine(delivered, Limits(), 9'000);
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  EXPECT_EQ(past->record.fire_at_ms, 100);
  EXPECT_EQ(past->record.created_ms, 9'000);
  EXPECT_EQ(past->record.digest_kind, DigestKind::kSha256);
}

TEST(BackupManifestTest, ABackupOfANewerRecordFormatIsRefusedAtStart) {
  TempDirectory dir;
  std::string note;
  EXPECT_TRUE(CheckBackupFormat(dir.path(), &note).ok());
  EXPECT_EQ(note, "");  // not a backup
  WriteFileText(dir.path() + "/" + kBackupManifestFile,
                BackupManifestJson({kRecordFormat, "0.2.0", 1'234}));
  EXPECT_TRUE(CheckBackupFormat(dir.path(), &note).ok());
  EXPECT_NE(note.find("tickwheel 0.2.0"), std::string::npos) << note;
  WriteFileText(dir.path() + "/" + kBackupManifestFile,
                BackupManifestJson({kRecordFormat + 1, "9.0.0", 1'234}));
  Status newer = CheckBackupFormat(dir.path(), &note);
  EXPECT_EQ(newer.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(newer.message().find("9.0.0 or later"), std::string::npos) << newer.message();
  WriteFileText(dir.path() + "/" + kBackupManifestFile, "{not json");
  EXPECT_EQ(CheckBackupFormat(dir.path(), &note).code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace tickwheel::server
