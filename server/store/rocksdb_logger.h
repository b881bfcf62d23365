// SPDX-License-Identifier: Apache-2.0
// StdioLogger: the embedded store's RocksDB info log, which drops what it
// cannot write instead of aborting.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_LOGGER_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_LOGGER_H_

#include <rocksdb/env.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace tickwheel::server {

// RocksDB's own log, the LOG file in the data directory, written with
// stdio. RocksDB's file logger aborts the process on the line after one it
// failed to write (an assertion that Debian's build of RocksDB keeps), and a
// full disk makes sure of that failure; this logger drops the lines it
// cannot write. One logger for every open of the store, so reopening after
// a write error adds no LOG.old files to a disk that may be full.
// Thread safety: Logv from any thread.
class StdioLogger final : public rocksdb::Logger {
 public:
  explicit StdioLogger(std::FILE* file)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), file_(file) {}
  ~StdioLogger() override { std::fclose(file_); }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;

 private:
  std::mutex mutex_;
  std::FILE* file_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_LOGGER_H_
