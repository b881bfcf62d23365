// SPDX-License-Identifier: Apache-2.0
// How the embedded store opens RocksDB: its options (memtables, compaction,
// bloom filters, the log) and the open itself, with an error that says what
// to check.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_OPEN_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_OPEN_H_

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace tickwheel::server {

// The options of the store in `data_dir` (created if missing, with its LOG
// file), on `env` (nullptr: the default one).
rocksdb::Options EmbeddedDbOptions(const std::string& data_dir, rocksdb::Env* env);

// Opens the database in `dir`; kUnavailable saying what to check.
Result<std::unique_ptr<rocksdb::DB>> OpenDb(const rocksdb::Options& options,
                                            const std::string& dir);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_OPEN_H_
