// SPDX-License-Identifier: Apache-2.0
// A RocksDB FileSystem that fails writes while told to: store faults for
// tests (a disk that errs, then heals).
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
  std::uint64_t failed_writes() const { return failed_.load(); }

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
  std::atomic<std::uint64_t> failed_{0};
};

// An Env over `fs`, for rocksdb::Options::env.
std::unique_ptr<rocksdb::Env> EnvOver(const std::shared_ptr<FaultyFileSystem>& fs);

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_FAULTY_FILE_SYSTEM_H_
