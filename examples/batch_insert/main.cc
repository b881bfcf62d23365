// SPDX-License-Identifier: Apache-2.0
// batch_insert: rows streamed into SQLite, one transaction per row versus
// transactions of N rows gathered by a BulkExecutor. Prints rows/s for both.
//
//   build/examples/batch_insert/batch_insert [--rows N] [--batch N]
//       [--single-seconds N] [--db PATH]
//
// The one-row-per-transaction phase runs for --single-seconds (default 3)
// at most, since on a disk with slow syncs it manages only tens of rows/s.
//
// The database is a real file with SQLite's default durability (every
// COMMIT is synced to disk), which is what makes a transaction per row slow.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "tickwheel/executors/bulk_executor.h"

namespace {

struct Row {
  long long id;
  std::string name;
  double amount;
};

Row MakeRow(long long id) {
  return {id, "customer-" + std::to_string(id % 9973),
          static_cast<double>(id % 10000) / 100.0};
}

// A SQLite connection; every error becomes an exception naming the SQL.
class Database {
 public:
  explicit Database(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + message);
    }
  }
  ~Database() { sqlite3_close(db_); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void Exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error(sql + ": " + message);
    }
  }

  long long Count(const std::string& table) {
    sqlite3_stmt* stmt = Prepare("SELECT COUNT(*) FROM " + table);
    sqlite3_step(stmt);
    const long long count = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return count;
  }

  // Inserts rows into `table` inside one transaction.
  void InsertInTransaction(const std::string& table,
                           const std::vector<Row>& rows) {
    Exec("BEGIN");
    sqlite3_stmt* stmt = Prepare("INSERT INTO " + table +
                                 " (id, name, amount) VALUES (?, ?, ?)");
    for (const Row& row : rows) {
      sqlite3_bind_int64(stmt, 1, row.id);
      sqlite3_bind_text(stmt, 2, row.name.data(),
                        static_cast<int>(row.name.size()), SQLITE_TRANSIENT);
      sqlite3_bind_double(stmt, 3, row.amount);
      if (sqlite3_step(stmt) != SQLITE_DONE) {
        const std::string message = sqlite3_errmsg(db_);
        sqlite3_finalize(stmt);
        Exec("ROLLBACK");
        throw std::runtime_error("INSERT into " + table + ": " + message);
      }
      sqlite3_reset(stmt);
    }
    sqlite3_finalize(stmt);
    Exec("COMMIT");
  }

 private:
  sqlite3_stmt* Prepare(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sql + ": " + sqlite3_errmsg(db_));
    }
    return stmt;
  }

  sqlite3* db_ = nullptr;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void PrintRate(const char* what, long long rows, double seconds) {
  std::printf("  %-36s %8lld rows in %7.3f s = %10.0f rows/s\n", what, rows,
              seconds, static_cast<double>(rows) / seconds);
}

struct Args {
  long long rows = 200'000;
  long long single_seconds = 3;
  long long batch = 1000;
  std::string db;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  tickwheel::examples::Flags()
      .Positive("--rows", &args.rows)
      .Positive("--batch", &args.batch)
      .Positive("--single-seconds", &args.single_seconds)
      .Text("--db", &args.db)
      .Parse(argc, argv);
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = ParseArgs(argc, argv);
  const bool temporary = args.db.empty();
  const std::string path =
      temporary
          ? (std::filesystem::temp_directory_path() /
             ("tickwheel_batch_insert_" + std::to_string(::getpid()) + ".db"))
                .string()
          : args.db;
  std::printf("batch_insert: SQLite %s, database %s\n", sqlite3_libversion(),
              path.c_str());
  double single_rate = 0;
  double bulk_rate = 0;
  {
    Database db(path);
    db.Exec("DROP TABLE IF EXISTS single_rows");
    db.Exec("DROP TABLE IF EXISTS bulk_rows");
    db.Exec(
        "CREATE TABLE single_rows (id INTEGER PRIMARY KEY, name TEXT, amount "
        "REAL)");
    db.Exec(
        "CREATE TABLE bulk_rows (id INTEGER PRIMARY KEY, name TEXT, amount "
        "REAL)");

    // 1. A transaction per row: what a naive producer does.
    auto start = std::chrono::steady_clock::now();
    const auto give_up = start + std::chrono::seconds(args.single_seconds);
    long long single_rows = 0;
    while (single_rows < args.rows &&
           std::chrono::steady_clock::now() < give_up) {
      db.InsertInTransaction("single_rows", {MakeRow(single_rows++)});
    }
    const double single_s = Seconds(std::chrono::steady_clock::now() - start);
    single_rate = static_cast<double>(single_rows) / single_s;
    PrintRate("one row per transaction:", single_rows, single_s);

    // 2. The same producer hands rows to a BulkExecutor, which commits them
    // in transactions of `batch` rows (or whatever came within 100 ms).
    start = std::chrono::steady_clock::now();
    {
      tickwheel::BulkExecutor<Row> inserts(
          [&](std::vector<Row> rows) {
            db.InsertInTransaction("bulk_rows", rows);
          },
          {.max_tasks = static_cast<std::size_t>(args.batch),
           .interval = std::chrono::milliseconds(100)});
      for (long long id = 0; id < args.rows; ++id) inserts.Add(MakeRow(id));
      inserts.Wait();  // every row is committed
    }
    const double bulk_s = Seconds(std::chrono::steady_clock::now() - start);
    bulk_rate = static_cast<double>(args.rows) / bulk_s;
    const std::string label =
        "BulkExecutor, " + std::to_string(args.batch) + " rows/transaction:";
    PrintRate(label.c_str(), args.rows, bulk_s);

    const long long single_count = db.Count("single_rows");
    const long long bulk_count = db.Count("bulk_rows");
    if (single_count != single_rows || bulk_count != args.rows) {
      std::fprintf(stderr, "row counts wrong: %lld and %lld\n", single_count,
                   bulk_count);
      return 1;
    }
    std::printf("  rows in the database: %lld and %lld (all there)\n",
                single_count, bulk_count);
  }
  std::printf("  batching is %.0fx faster\n", bulk_rate / single_rate);
  if (temporary) {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-journal");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "batch_insert: %s\n", e.what());
  return 2;
}
