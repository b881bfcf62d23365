// SPDX-License-Identifier: Apache-2.0
#include "support/faulty_file_system.h"

namespace tickwheel::testing {
namespace {

class FaultyFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyFile(std::unique_ptr<rocksdb::FSWritableFile> file, FaultyFileSystem* fs, bool wal)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), wal_(wal) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (fs_->failing()) return fs_->Injected();
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (fs_->failing()) return fs_->Injected();
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (fs_->failing()) return fs_->Injected();
    if (wal_ && fs_->failing_log_syncs()) return fs_->InjectedLogSyncFailure();
    return Counted(FSWritableFileOwnerWrapper::Sync(options, dbg));
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (fs_->failing()) return fs_->Injected();
    if (wal_ && fs_->failing_log_syncs()) return fs_->InjectedLogSyncFailure();
    return Counted(FSWritableFileOwnerWrapper::Fsync(options, dbg));
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (fs_->failing()) return fs_->Injected();
    return FSWritableFileOwnerWrapper::Flush(options, dbg);
  }

 private:
  rocksdb::IOStatus Counted(rocksdb::IOStatus s) {
    if (s.ok() && wal_) fs_->CountWalSync();
    return s;
  }

  FaultyFileSystem* fs_;
  const bool wal_;  // a write-ahead log file
};

}  // namespace

rocksdb::IOStatus FaultyFileSystem::NewWritableFile(const std::string& name,
                                                    const rocksdb::FileOptions& options,
                                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                                    rocksdb::IODebugContext* dbg) {
  if (failing()) return Injected();
  rocksdb::IOStatus s = FileSystemWrapper::NewWritableFile(name, options, result, dbg);
  const bool wal = name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
  if (s.ok()) *result = std::make_unique<FaultyFile>(std::move(*result), this, wal);
  return s;
}

std::unique_ptr<rocksdb::Env> EnvOver(const std::shared_ptr<FaultyFileSystem>& fs) {
  return rocksdb::NewCompositeEnv(fs);
}

}  // namespace tickwheel::testing
