// SPDX-License-Identifier: Apache-2.0
#include "store/rocksdb_open.h"

#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>

#include <cstdio>
#include <filesystem>

#include "store/rocksdb_int64_add.h"
#include "store/rocksdb_logger.h"

namespace tickwheel::server {

rocksdb::Options EmbeddedDbOptions(const std::string& data_dir, rocksdb::Env* env) {
  rocksdb::Options db_options;
  if (env != nullptr) db_options.env = env;
  db_options.create_if_missing = true;
  db_options.IncreaseParallelism(2);
  db_options.OptimizeLevelStyleCompaction(64 << 20);
  db_options.max_open_files = 512;
  db_options.merge_operator = std::make_shared<Int64AddOperator>();
  // Writers on a 2-core machine: block rather than spin while the group
  // leader writes.
  db_options.enable_write_thread_adaptive_yield = false;
  // One writer inserts a group into the memtable, from where the last
  // insert of the same key kind (record, due index) left off: the group's
  // keys are mostly close together (a batch's due times and ids). Hints
  // need non-concurrent memtable writes; with one writer thread there is
  // nothing to run concurrently.
  db_options.allow_concurrent_memtable_write = false;
  db_options.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  // Counters only (the WAL sync count is a metric): no histograms.
  db_options.statistics = rocksdb::CreateDBStatistics();
  db_options.statistics->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.block_cache = rocksdb::NewLRUCache(64 << 20);
  // A bloom filter in the memtable: the existence check of every create is
  // mostly for keys that are not there.
  db_options.memtable_prefix_bloom_size_ratio = 0.1;
  db_options.memtable_whole_key_filtering = true;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (std::FILE* log = std::fopen((data_dir + "/LOG").c_str(), "a")) {
    db_options.info_log = std::make_shared<StdioLogger>(log);
  }  // else RocksDB's Open reports what is wrong with the directory
  return db_options;
}

Result<std::unique_ptr<rocksdb::DB>> OpenDb(const rocksdb::Options& options,
                                            const std::string& dir) {
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    return Status::Unavailable(
        "cannot open the store in --data-dir " + dir + ": " + s.ToString() +
        (s.IsIOError() ? " (is another tickwheel serve using it? is the directory writable?)"
                       : ""));
  }
  return std::unique_ptr<rocksdb::DB>(db);
}

}  // namespace tickwheel::server
