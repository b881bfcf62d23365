// SPDX-License-Identifier: Apache-2.0
// What the console reads from a store, on both stores (RocksDB in a
// temporary directory, PostgreSQL in a throw-away server): listings
// filtered by id prefix and target host within the scan budget, counts of
// what is due soon with a cap, the store's size, and the cluster's leases.
#include <gtest/gtest.h>

#include <set>

#include "store/pg_connection.h"
#include "store_test_util.h"
#include "support/postgres_server.h"

namespace tickwheel::server {
namespace {

enum class Backend { kRocksDb, kPostgres };

class StoreConsoleTest : public ::testing::TestWithParam<Backend> {
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
    // A database of its own per test.
    static int databases = 0;
    const std::string name = "console_" + std::to_string(++databases);
    Result<std::unique_ptr<PgConnection>> admin = PgConnection::Connect(postgres_->url());
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    ASSERT_TRUE((*admin)->ExecScript("CREATE DATABASE " + name).ok());
    std::string url = postgres_->url();
    url = url.substr(0, url.rfind('/') + 1) + name;
    StoreOptions options;
    options.postgres = url;
    options.shards = 4;
    options.node_id = "test-node";
    Result<std::unique_ptr<TimerStore>> store = OpenTimerStore(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override {
    if (store_) store_->Close();
  }

  static TimerRecord To(TimerRecord r, const std::string& url) {
    r.target = url;
    return r;
  }

  // Every id of `state` the filter matches, page by page (`limit` a page).
  std::vector<std::string> ListAll(TimerState state, const ListFilter& filter, std::size_t limit,
                                   int* pages = nullptr) {
    std::vector<std::string> ids;
    std::optional<ListCursor> after;
    for (int page = 0; page < 100; ++page) {
      Result<ListPage> p = store_->List(state, after, limit, 1 << 20, filter);
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (!p.ok()) break;
      for (const TimerRecord& r : p->records) ids.push_back(r.id);
      if (pages) *pages = page + 1;
      if (!p->next) break;
      after = p->next;
    }
    return ids;
  }

  static testing::PostgresServer* postgres_;
  TempDirectory dir_;
  std::unique_ptr<TimerStore> store_;
};
testing::PostgresServer* StoreConsoleTest::postgres_;

TEST_P(StoreConsoleTest, ListsOnlyWhatTheFilterMatchesAcrossPages) {
  Apply(*store_, {"order-1", "order-2", "order-3", "invoice-1", "nats-1"}, [](StoreTxn& txn) {
    txn.Put(std::nullopt, To(Record("order-1", 100), "http://hooks.example.com/a"));
    txn.Put(std::nullopt, To(Record("order-2", 200), "https://HOOKS.example.com:8443/b"));
    txn.Put(std::nullopt, To(Record("order-3", 300), "http://other.example.com/c"));
    txn.Put(std::nullopt, To(Record("invoice-1", 150), "http://hooks.example.com/d"));
    txn.Put(std::nullopt, To(Record("nats-1", 120), "nats:orders.hooks"));
  });
  using V = std::vector<std::string>;
  EXPECT_EQ(ListAll(TimerState::kPending, {.id_prefix = "order-"}, 1),
            (V{"order-1", "order-2", "order-3"}));
  EXPECT_EQ(ListAll(TimerState::kPending, {.host = "hooks.example.com"}, 2),
            (V{"order-1", "invoice-1", "order-2"}));
  EXPECT_EQ(ListAll(TimerState::kPending, {.id_prefix = "order-", .host = "hooks.example.com"}, 10),
            (V{"order-1", "order-2"}));
  EXPECT_EQ(ListAll(TimerState::kPending, {.id_prefix = "order-1"}, 10), (V{"order-1"}));
  EXPECT_TRUE(ListAll(TimerState::kPending, {.host = "orders.hooks"}, 10).empty());
  EXPECT_TRUE(ListAll(TimerState::kPending, {.id_prefix = "zzz"}, 10).empty());
  EXPECT_TRUE(ListAll(TimerState::kCancelled, {.id_prefix = "order-"}, 10).empty());
  EXPECT_EQ(ListAll(TimerState::kPending, {}, 10).size(), 5u);
}

// A filter that matches little still looks at no more than the scan
// budget per page: the page is empty, with a position to go on from.
TEST_P(StoreConsoleTest, AFilteredPageStopsAtTheScanBudgetAndResumes) {
  constexpr std::size_t kMany = TimerStore::kListScanBudget + 50;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < kMany; ++i) ids.push_back("noise-" + std::to_string(i));
  ids.push_back("needle");
  Apply(*store_, ids, [&](StoreTxn& txn) {
    for (std::size_t i = 0; i < kMany; ++i) {
      txn.Put(std::nullopt, Record(ids[i], 1000 + static_cast<std::int64_t>(i)));
    }
    txn.Put(std::nullopt, Record("needle", 1'000'000));  // after every other
  });
  Result<ListPage> first = store_->List(TimerState::kPending, std::nullopt, 10, 1 << 20,
                                        {.id_prefix = "needle"});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->records.empty());
  ASSERT_TRUE(first->next.has_value());
  int pages = 0;
  EXPECT_EQ(ListAll(TimerState::kPending, {.id_prefix = "needle"}, 10, &pages),
            std::vector<std::string>{"needle"});
  EXPECT_EQ(pages, 2);
}

TEST_P(StoreConsoleTest, CountsWhatIsDueBeforeEachBoundUpToTheCap) {
  Apply(*store_, {"a", "b", "c", "d", "e"}, [](StoreTxn& txn) {
    txn.Put(std::nullopt, Record("a", 50));  // overdue counts too
    txn.Put(std::nullopt, Record("b", 150));
    txn.Put(std::nullopt, Record("c", 250, TimerState::kDelivering));
    txn.Put(std::nullopt, Record("d", 5000));
    TimerRecord done = Record("e", 60, TimerState::kDelivered);
    done.updated_ms = 70;
    txn.Put(std::nullopt, done);  // not in the due index
  });
  Result<std::vector<std::int64_t>> all = store_->CountDue({100, 200, 1000}, 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, (std::vector<std::int64_t>{1, 2, 3}));
  Result<std::vector<std::int64_t>> capped = store_->CountDue({100, 200, 1000}, 2);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(*capped, (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(*store_->CountDue({}, 10), std::vector<std::int64_t>{});
}

TEST_P(StoreConsoleTest, ReportsItsSizeAndItsCluster) {
  Apply(*store_, {"a"}, [](StoreTxn& txn) { txn.Put(std::nullopt, Record("a", 50)); });
  Result<std::uint64_t> bytes = store_->ApproximateBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_GT(*bytes, 0u);
  Result<std::optional<ClusterState>> cluster = store_->Cluster();
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  if (GetParam() == Backend::kRocksDb) {
    EXPECT_FALSE(cluster->has_value());
    return;
  }
  ASSERT_TRUE(cluster->has_value());
  const ClusterState& c = **cluster;
  ASSERT_EQ(c.leases.size(), 4u);  // --shards 4; no node holds one yet
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.leases[static_cast<std::size_t>(i)].shard, i);
    EXPECT_EQ(c.leases[static_cast<std::size_t>(i)].owner, "");
  }
  EXPECT_TRUE(c.nodes.empty());
  EXPECT_GT(c.now_ms, 1'600'000'000'000);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConsoleTest,
                         ::testing::Values(Backend::kRocksDb, Backend::kPostgres),
                         [](const auto& suite) {
                           return suite.param == Backend::kRocksDb ? "RocksDb" : "Postgres";
                         });

}  // namespace
}  // namespace tickwheel::server
