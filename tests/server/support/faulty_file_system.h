// SPDX-License-Identifier: Apache-2.0
// A RocksDB FileSystem that fails writes while told to: store faults for
// tests (a disk that errs, then heals). It also counts the syncs of the
// write-ahead log, and can fail those syncs alone (the log written, its
// fsync failing).
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_FAULTY_FILE_SYSTEM_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_FAULTY_FILE_SYSTEM_H_

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>

namespace tickwheel::testing {

// Thread safety: SetFailing and the counters from any thread.
class FaultyFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultyFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FaultyFileSystem"; }

  // While failing, every append, sync and flush of a file written by the
  // database fails with an I/O error ("no space left" when `no_space`).
  void SetFailing(bool failing, bool no_space = false) {
    no_space_.store(no_space);
    failing_.store(failing);
  }
  bool failing() const { return failing_.load(); }
  // While failing log syncs, every Sync and Fsync of a write-ahead log file
  // (*.log) fails with an I/O error; appends and other files go on.
  void SetFailingLogSyncs(bool failing) { failing_log_syncs_.store(failing); }
  bool failing_log_syncs() const { return failing_log_syncs_.load(); }
  // Log syncs failed by SetFailingLogSyncs.
  std::uint64_t failed_log_syncs() const { return failed_log_syncs_.load(); }
  rocksdb::IOStatus InjectedLogSyncFailure() {
    failed_log_syncs_.fetch_add(1);
    return rocksdb::IOStatus::IOError("injected: fsync of the write-ahead log failed");
  }
  std::uint64_t failed_writes() const { return failed_.load(); }
  // Syncs (Sync or Fsync) of write-ahead log files (*.log) that succeeded.
  std::uint64_t wal_syncs() const { return wal_syncs_.load(); }
  void CountWalSync() { wal_syncs_.fetch_add(1); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;

  rocksdb::IOStatus Injected() {
    failed_.fetch_add(1);
    return no_space_.load() ? rocksdb::IOStatus::NoSpace("injected: no space left")
                            : rocksdb::IOStatus::IOError("injected write error");
  }

 private:
  std::atomic<bool> failing_{false};
  std::atomic<bool> no_space_{false};
  std::atomic<bool> failing_log_syncs_{false};
  std::atomic<std::uint64_t> failed_log_syncs_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> wal_syncs_{0};
};

// An Env over `fs`, for rocksdb::Options::env.
std::unique_ptr<rocksdb::Env> EnvOver(const std::shared_ptr<FaultyFileSystem>& fs);

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_FAULTY_FILE_SYSTEM_H_
