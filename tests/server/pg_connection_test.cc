// SPDX-License-Identifier: Apache-2.0
// PgConnection's prepared statements on a throw-away PostgreSQL: each
// distinct statement prepared once per connection, the cache bounded, a
// statement whose plan a schema change broke prepared again, and a
// connection (and the PostgreSQL store's pool) after PostgreSQL restarted;
// the store's insert-only path for creates and its fall-back when an id
// exists; its fenced writes.
#include "store/pg_connection.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>

#include "store/pg_rows.h"
#include "store/shard_fence.h"
#include "store_test_util.h"
#include "support/postgres_server.h"

namespace tickwheel::server {
namespace {

class PgConnectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { postgres_ = new testing::PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(postgres_->ok()) << postgres_->log(); }

  // A connection to a database of its own.
  std::unique_ptr<PgConnection> Connect() {
    if (url_.empty()) {
      static int databases = 0;
      const std::string name = "conn_" + std::to_string(++databases);
      Result<std::unique_ptr<PgConnection>> admin = PgConnection::Connect(postgres_->url());
      EXPECT_TRUE(admin.ok()) << admin.status().ToString();
      if (!admin.ok()) return nullptr;
      EXPECT_TRUE((*admin)->ExecScript("CREATE DATABASE " + name).ok());
      url_ = postgres_->url();
      url_ = url_.substr(0, url_.rfind('/') + 1) + name;
    }
    Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(url_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The PostgreSQL store, 4 shards, on the database of Connect() (call it
  // first); null (with a failure) if it does not open.
  std::unique_ptr<TimerStore> OpenStore() {
    StoreOptions options;
    options.postgres = url_;
    options.shards = 4;
    options.node_id = "test-node";
    Result<std::unique_ptr<TimerStore>> opened = OpenTimerStore(options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(*opened) : nullptr;
  }

  // The statements prepared on the server for `c`'s session.
  static std::int64_t ServerPrepared(PgConnection& c) {
    Result<PgResult> r = c.Exec("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'tw%'");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->Int(0, 0) : -1;
  }

  static testing::PostgresServer* postgres_;
  std::string url_;
};

testing::PostgresServer* PgConnectionTest::postgres_ = nullptr;

TEST_F(PgConnectionTest, AStatementIsPreparedOnceAndRunWithEachCallsParameters) {
  std::unique_ptr<PgConnection> c = Connect();
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 3; ++i) {
    Result<PgResult> r = c->Exec("SELECT $1::int + 1", {std::to_string(i)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->Int(0, 0), i + 1);
  }
  EXPECT_EQ(c->prepared(), 1u);
  // The count's own statement is the second.
  EXPECT_EQ(ServerPrepared(*c), 2);
  EXPECT_EQ(c->prepared(), 2u);
}

// The write path's array parameters in binary form: every element type
// PostgreSQL reads back as given, through a prepared statement and beside
// text parameters; empty arrays and the widths' extremes included.
TEST_F(PgConnectionTest, BinaryArraysArriveAsGiven) {
  std::unique_ptr<PgConnection> c = Connect();
  ASSERT_NE(c, nullptr);
  const std::vector<std::string> texts = {"a", "", "quote \" and \\ and {,}", "\xc3\xa9t\xc3\xa9",
                                          "NULL"};
  const std::vector<std::string> bytes = {std::string("\0\x01\xff\\\"", 5), "", "plain"};
  const std::vector<std::int64_t> bigints = {0, -1, INT64_MIN, INT64_MAX, 1764288000000};
  const std::vector<std::int64_t> ints = {0, -1, INT32_MIN, INT32_MAX};
  const std::vector<std::int64_t> smallints = {0, -1, INT16_MIN, INT16_MAX};
  for (int round = 0; round < 2; ++round) {  // prepared at the first, reused at the second
    Result<PgResult> r = c->ExecBinary(
        "SELECT $1::text[], $2::bytea[], $3::bigint[], $4::int[], $5::smallint[], $6::text",
        {PgBinaryTextArray(texts), PgBinaryByteaArray(bytes), PgBinaryBigintArray(bigints),
         PgBinaryIntArray(ints), PgBinarySmallintArray(smallints), "beside"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // The results come back in binary form: the same encoding as sent.
    EXPECT_EQ(r->Text(0, 0), *PgBinaryTextArray(texts).value);
    EXPECT_EQ(r->Text(0, 1), *PgBinaryByteaArray(bytes).value);
    EXPECT_EQ(r->Text(0, 2), *PgBinaryBigintArray(bigints).value);
    EXPECT_EQ(r->Text(0, 3), *PgBinaryIntArray(ints).value);
    EXPECT_EQ(r->Text(0, 4), *PgBinarySmallintArray(smallints).value);
    EXPECT_EQ(r->Text(0, 5), "beside");
  }
  // And element by element, in text form, as unnest hands them to an INSERT.
  Result<PgResult> rows = c->Exec(
      "SELECT t, encode(b, 'hex'), n FROM unnest($1::text[], $2::bytea[], $3::bigint[]) "
      "AS u(t, b, n)",
      {PgBinaryTextArray({"x", "\xc3\xa9"}), PgBinaryByteaArray({std::string("\0\xff", 2), ""}),
       PgBinaryBigintArray({-5, 7})});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows(), 2);
  EXPECT_EQ(rows->Text(0, 0), "x");
  EXPECT_EQ(rows->Text(0, 1), "00ff");
  EXPECT_EQ(rows->Int(0, 2), -5);
  EXPECT_EQ(rows->Text(1, 0), "\xc3\xa9");
  EXPECT_EQ(rows->Text(1, 1), "");
  EXPECT_EQ(rows->Int(1, 2), 7);
  Result<PgResult> empty = c->Exec("SELECT cardinality($1::text[]), cardinality($2::int[])",
                                   {PgBinaryTextArray({}), PgBinaryIntArray({})});
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->Int(0, 0), 0);
  EXPECT_EQ(empty->Int(0, 1), 0);
  // An element type other than the cast's is refused, not misread.
  Result<PgResult> wrong = c->Exec("SELECT $1::int[]", {PgBinaryBigintArray({1})});
  EXPECT_FALSE(wrong.ok());
}

// COPY's binary stream: every column type arrives as written; a unique
// violation is kConflict and copies nothing, and the connection goes on.
TEST_F(PgConnectionTest, ACopyInsertsEveryRowOrNone) {
  std::unique_ptr<PgConnection> c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->ExecScript("CREATE TABLE copied (id text PRIMARY KEY, s smallint, i int, "
                            "b bigint, raw bytea)")
                  .ok());
  auto stream = [](const std::vector<std::string>& ids) {
    PgCopyStream s;
    for (std::size_t n = 0; n < ids.size(); ++n) {
      s.Row(5);
      s.Bytes(ids[n]);
      s.Integer(-static_cast<std::int64_t>(n), 2);
      s.Integer(INT32_MIN + static_cast<std::int64_t>(n), 4);
      s.Integer(INT64_MAX - static_cast<std::int64_t>(n), 8);
      s.Bytes(std::string("\0\xff", 2) + ids[n]);
    }
    return s.Finish();
  };
  const std::string copy = "COPY copied (id, s, i, b, raw) FROM STDIN (FORMAT binary)";
  ASSERT_TRUE(c->CopyIn(copy, stream({"a", "b\xc3\xa9", ""})).ok());
  Result<PgResult> rows =
      c->Exec("SELECT id, s, i, b, encode(raw, 'hex') FROM copied ORDER BY id");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows(), 3);
  EXPECT_EQ(rows->Text(0, 0), "");
  EXPECT_EQ(rows->Int(0, 1), -2);
  EXPECT_EQ(rows->Int(0, 2), INT32_MIN + 2);
  EXPECT_EQ(rows->Int(0, 3), INT64_MAX - 2);
  EXPECT_EQ(rows->Text(0, 4), "00ff");
  EXPECT_EQ(rows->Text(1, 0), "a");
  EXPECT_EQ(rows->Int(1, 1), 0);
  EXPECT_EQ(rows->Text(1, 4), "00ff61");
  EXPECT_EQ(rows->Text(2, 0), "b\xc3\xa9");
  Status again = c->CopyIn(copy, stream({"c", "a"}));
  EXPECT_EQ(again.code(), StatusCode::kConflict) << again.ToString();
  Result<PgResult> count = c->Exec("SELECT count(*) FROM copied");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(count->Int(0, 0), 3);
  Status bad = c->CopyIn(copy, "not a COPY stream");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.code(), StatusCode::kConflict) << bad.ToString();
  ASSERT_TRUE(c->CopyIn(copy, stream({"z"})).ok());
}

TEST_F(PgConnectionTest, StatementsBeyondTheLimitRunUnprepared) {
  std::unique_ptr<PgConnection> c = Connect();
  ASSERT_NE(c, nullptr);
  const int n = static_cast<int>(PgConnection::kMaxPrepared) + 10;
  for (int i = 0; i < n; ++i) {
    Result<PgResult> r = c->Exec("SELECT $1::int + " + std::to_string(i), {"1"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->Int(0, 0), i + 1);
  }
  EXPECT_EQ(c->prepared(), PgConnection::kMaxPrepared);
  EXPECT_EQ(ServerPrepared(*c), static_cast<std::int64_t>(PgConnection::kMaxPrepared));
}

TEST_F(PgConnectionTest, AStatementWhoseResultTypeChangedIsRetriedThenPreparedAgain) {
  std::unique_ptr<PgConnection> c = Connect();
  std::unique_ptr<PgConnection> other = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(c->ExecScript("CREATE TABLE t (a int); INSERT INTO t VALUES (1)").ok());
  ASSERT_TRUE(c->Exec("SELECT * FROM t").ok());
  ASSERT_TRUE(other->ExecScript("ALTER TABLE t ADD COLUMN b int DEFAULT 2").ok());
  Result<PgResult> changed = c->Exec("SELECT * FROM t");
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), StatusCode::kConflict) << changed.status().ToString();
  Result<PgResult> again = c->Exec("SELECT * FROM t");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->Int(0, 1), 2);
}

TEST_F(PgConnectionTest, AfterARestartTheOldConnectionFailsAndANewOnePreparesAgain) {
  std::unique_ptr<PgConnection> c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Exec("SELECT $1::int", {"7"}).ok());
  ASSERT_TRUE(postgres_->Stop());
  ASSERT_TRUE(postgres_->Start()) << postgres_->log();
  Result<PgResult> broken = c->Exec("SELECT $1::int", {"7"});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable) << broken.status().ToString();
  EXPECT_FALSE(c->healthy());
  std::unique_ptr<PgConnection> fresh = Connect();
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->prepared(), 0u);
  Result<PgResult> r = fresh->Exec("SELECT $1::int", {"7"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Int(0, 0), 7);
  EXPECT_EQ(fresh->prepared(), 1u);
}

// The store's pooled connections hold prepared statements that die with
// the server: after a restart, writes fail with kUnavailable (never a false
// ok) until the broken connections are dropped, then new ones prepare again.
TEST_F(PgConnectionTest, TheStoreCreatesAgainAfterPostgresRestarted) {
  ASSERT_NE(Connect(), nullptr);  // the database
  std::unique_ptr<TimerStore> opened = OpenStore();
  ASSERT_NE(opened, nullptr);
  TimerStore& store = *opened;
  auto create = [&](const std::string& id) {
    return Write(store, {id}, [id](StoreTxn& txn) -> Status {
      Result<std::optional<TimerRecord>> existing = txn.Get(id);
      if (!existing.ok()) return existing.status();
      if (*existing) return Status::Conflict("exists", id + " exists");
      txn.Put(std::nullopt, Record(id, 1'000'000));
      return Status::Ok();
    });
  };
  ASSERT_TRUE(create("before").ok());
  EXPECT_EQ(create("before").code(), StatusCode::kConflict);
  ASSERT_TRUE(postgres_->Stop());
  ASSERT_TRUE(postgres_->Start()) << postgres_->log();
  Status after = create("after");
  for (int i = 0; i < 16 && !after.ok(); ++i) {
    EXPECT_EQ(after.code(), StatusCode::kUnavailable) << after.ToString();
    after = create("after");
  }
  ASSERT_TRUE(after.ok()) << after.ToString();
  EXPECT_EQ(create("before").code(), StatusCode::kConflict);
  EXPECT_EQ(create("after").code(), StatusCode::kConflict);
  ASSERT_TRUE(Stored(store, "after").has_value());
  store.Close();
}

// What a node believes of its leases, as the test sets it.
class TestFence final : public ShardFence {
 public:
  std::optional<std::int64_t> EpochOf(int) const override { return epoch; }
  std::optional<std::int64_t> epoch;
};

// A fenced write (a claim's, an outcome's) commits only while the lease it
// names (this node, the epoch it believes, not expired by the database's
// clock) is still in the database: taken over, renewed under a newer epoch,
// expired, or not believed held, it is refused (kFenced) and writes
// nothing; an unfenced write goes on. The cluster tests pause a node to see
// this happen; this is the same check without the timing.
TEST_F(PgConnectionTest, AFencedWriteCommitsOnlyUnderTheLeaseItNames) {
  std::unique_ptr<PgConnection> admin = Connect();
  ASSERT_NE(admin, nullptr);
  TestFence fence;
  StoreOptions options;
  options.postgres = url_;
  options.shards = 4;
  options.node_id = "test-node";
  options.fence = &fence;
  Result<std::unique_ptr<TimerStore>> opened = OpenTimerStore(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  TimerStore& store = **opened;
  auto leases = [&](const std::string& owner, std::int64_t epoch, const std::string& expires) {
    ASSERT_TRUE(admin
                    ->Exec("UPDATE tickwheel_shard_leases SET owner = $1, epoch = $2, "
                           "expires_at = clock_timestamp() + $3::interval",
                           {owner, std::to_string(epoch), expires})
                    .ok());
  };
  auto create = [&](const std::string& id, bool fenced) {
    std::promise<Status> done;
    store.Submit({id},
                 [id](StoreTxn& txn) -> Status {
                   txn.Put(std::nullopt, Record(id, 1'000'000));
                   return Status::Ok();
                 },
                 [&](const Status& s) { done.set_value(s); },
                 WriteOptions{.sync = true, .fenced = fenced});
    return done.get_future().get();
  };
  fence.epoch = 7;
  leases("test-node", 7, "1 minute");
  EXPECT_TRUE(create("held", true).ok());
  leases("other-node", 8, "1 minute");  // taken over
  EXPECT_EQ(create("taken", true).code(), StatusCode::kFenced);
  leases("test-node", 8, "1 minute");  // held again, under an epoch this node does not know
  EXPECT_EQ(create("newer", true).code(), StatusCode::kFenced);
  leases("test-node", 7, "-1 second");  // expired
  EXPECT_EQ(create("expired", true).code(), StatusCode::kFenced);
  leases("test-node", 7, "1 minute");
  fence.epoch.reset();  // the node believes it holds nothing
  EXPECT_EQ(create("not-believed", true).code(), StatusCode::kFenced);
  EXPECT_TRUE(create("unfenced", false).ok());
  EXPECT_TRUE(Stored(store, "held"));
  EXPECT_TRUE(Stored(store, "unfenced"));
  for (const char* id : {"taken", "newer", "expired", "not-believed"}) {
    EXPECT_FALSE(Stored(store, id)) << id;
  }
  store.Close();
}

// Creates of new ids take the insert-only path; a create of an id that
// exists falls back to the transaction that reads it, which lets the
// mutation decide (here: a conflict, nothing written). The counts a fresh
// store reads from the database are exact either way.
TEST_F(PgConnectionTest, CreatesOfExistingIdsFallBackAndTheCountsStayExact) {
  ASSERT_NE(Connect(), nullptr);
  std::unique_ptr<TimerStore> opened = OpenStore();
  ASSERT_NE(opened, nullptr);
  TimerStore& store = *opened;
  // Creates every id, or none if one exists.
  auto create = [&](std::vector<std::string> ids) {
    return Write(store, ids, [ids](StoreTxn& txn) -> Status {
      for (const std::string& id : ids) {
        Result<std::optional<TimerRecord>> existing = txn.Get(id);
        if (!existing.ok()) return existing.status();
        if (*existing) return Status::Conflict("exists", id + " exists");
        txn.Put(std::nullopt, Record(id, 1'000'000));
      }
      return Status::Ok();
    });
  };
  ASSERT_TRUE(create({"a", "b"}).ok());
  EXPECT_EQ(create({"c", "a"}).code(), StatusCode::kConflict);
  EXPECT_FALSE(Stored(store, "c").has_value());
  ASSERT_TRUE(create({"c"}).ok());
  // Reads an existing id and creates another: not for the insert-only path.
  Status mixed = Write(store, {"a", "d"}, [](StoreTxn& txn) -> Status {
    Result<std::optional<TimerRecord>> a = txn.Get("a");
    if (!a.ok() || !*a) return Status::Invalid("test", "a should exist");
    TimerRecord d = Record("d", (*a)->due_ms + 1);
    txn.Put(std::nullopt, d);
    return Status::Ok();
  });
  ASSERT_TRUE(mixed.ok()) << mixed.ToString();
  ASSERT_TRUE(Stored(store, "d").has_value());
  EXPECT_EQ(Stored(store, "d")->due_ms, 1'000'001);
  EXPECT_EQ(store.Counts()[static_cast<int>(TimerState::kPending)], 4);
  store.Close();
  std::unique_ptr<TimerStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->Counts()[static_cast<int>(TimerState::kPending)], 4);
  reopened->Close();
}

// A batch large enough for the insert-only path's COPY (one write creating
// many ids, as the batch API's): written whole; and, in a group with a
// create of an id that exists (a client's retry, answered as the stored
// timer), not by the COPY, which copies nothing, but by the general
// transaction. The counts stay exact.
TEST_F(PgConnectionTest, ALargeBatchIsCopiedWholeOrFallsBack) {
  ASSERT_NE(Connect(), nullptr);
  std::unique_ptr<TimerStore> opened = OpenStore();
  ASSERT_NE(opened, nullptr);
  TimerStore& store = *opened;
  // Creates each id that does not exist yet; `created` counts them.
  auto create = [](std::vector<std::string> ids, std::shared_ptr<int> created) {
    return [ids, created](StoreTxn& txn) -> Status {
      *created = 0;  // the mutation may run again
      for (const std::string& id : ids) {
        Result<std::optional<TimerRecord>> existing = txn.Get(id);
        if (!existing.ok()) return existing.status();
        if (*existing) continue;
        txn.Put(std::nullopt, Record(id, 2'000'000));
        ++*created;
      }
      return Status::Ok();
    };
  };
  auto ids = [](const std::string& prefix, std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
  };
  const std::size_t n = kPgCopyRows + 44;
  auto first = std::make_shared<int>(0);
  ASSERT_TRUE(Write(store, ids("first-", n), create(ids("first-", n), first)).ok());
  EXPECT_EQ(*first, static_cast<int>(n));
  ASSERT_TRUE(Stored(store, "first-0").has_value());
  EXPECT_EQ(Stored(store, "first-" + std::to_string(n - 1))->due_ms, 2'000'000);
  EXPECT_EQ(store.Counts()[static_cast<int>(TimerState::kPending)], static_cast<std::int64_t>(n));

  auto second = std::make_shared<int>(0), retried = std::make_shared<int>(0);
  std::promise<Status> second_done, retried_done;
  std::vector<TimerStore::Write> group;
  group.push_back({ids("second-", n), create(ids("second-", n), second),
                   [&](const Status& s) { second_done.set_value(s); }, WriteOptions{.sync = true}});
  group.push_back({{"first-7"}, create({"first-7"}, retried),
                   [&](const Status& s) { retried_done.set_value(s); }, WriteOptions{.sync = true}});
  store.SubmitAll(std::move(group));
  Status s2 = second_done.get_future().get();
  Status r2 = retried_done.get_future().get();
  ASSERT_TRUE(s2.ok()) << s2.ToString();
  ASSERT_TRUE(r2.ok()) << r2.ToString();
  EXPECT_EQ(*second, static_cast<int>(n));
  EXPECT_EQ(*retried, 0);
  ASSERT_TRUE(Stored(store, "second-" + std::to_string(n - 1)).has_value());
  EXPECT_EQ(store.Counts()[static_cast<int>(TimerState::kPending)],
            static_cast<std::int64_t>(2 * n));
  store.Close();
  std::unique_ptr<TimerStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->Counts()[static_cast<int>(TimerState::kPending)],
            static_cast<std::int64_t>(2 * n));
  reopened->Close();
}

}  // namespace
}  // namespace tickwheel::server
