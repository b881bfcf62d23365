// SPDX-License-Identifier: Apache-2.0
// Hot backups of the embedded store (docs/operations.md, Backup): a RocksDB
// checkpoint taken while the server runs, with a manifest beside it that
// names the record format and the server version that wrote it.
#ifndef TICKWHEEL_SERVER_TRANSFER_BACKUP_H_
#define TICKWHEEL_SERVER_TRANSFER_BACKUP_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// The manifest's file in a backup directory (RocksDB ignores files it does
// not know, so the directory stays a database `serve --data-dir` opens).
inline constexpr char kBackupManifestFile[] = "tickwheel-backup.json";

// What a backup is: {"format": 1, "record_format", "server_version",
// "taken_ms", "store": "embedded"}.
struct BackupManifest {
  int record_format = 0;       // of the records in it (store/record_codec.h)
  std::string server_version;  // of the server that took it
  std::int64_t taken_ms = 0;   // Unix ms when it was taken
};

struct BackupResult {
  std::string dir;
  BackupManifest manifest;
  std::uint64_t bytes = 0;  // of its files (hard links counted in full)
  std::uint64_t files = 0;
  std::int64_t took_ms = 0;
};

// Takes backups, one at a time.
//
// Thread safety: Take from any thread; a second Take while one runs is
// refused (kConflict "backup_in_progress") rather than queued.
// Cost: RocksDB flushes its memtables, then links (or copies) every table
// file: seconds for gigabytes on one filesystem, a full copy otherwise.
//
//   BackupTaker backups(store);
//   Result<BackupResult> r = backups.Take("/backups/tw-2026-11-23", now_ms, "0.2.0");
class BackupTaker {
 public:
  // `store` must outlive this.
  explicit BackupTaker(TimerStore& store) : store_(store) {}

  // A consistent copy of the store in `dir` (absolute; it must not exist,
  // its parent must), then the manifest. Blocks for the copy: call it off
  // the HTTP threads. kInvalidArgument for a relative or existing `dir` and
  // for the PostgreSQL store; kUnavailable if it failed (nothing is left in
  // `dir`). `server_version` (of this server) goes into the manifest.
  Result<BackupResult> Take(const std::string& dir, std::int64_t now_ms,
                            const std::string& server_version);

 private:
  TimerStore& store_;
  std::atomic<bool> running_{false};
};

// The manifest of the data directory `dir`, nullopt if it has none (it is
// not, or was not started from, a backup). kCorrupt for one that does not
// parse.
Result<std::optional<BackupManifest>> ReadBackupManifest(const std::string& dir);

// Before a server opens `dir`: a backup whose records are of a format this
// server does not read is refused (kInvalidArgument saying which version to
// run). `*note` is set to a line for the log when `dir` is a backup.
Status CheckBackupFormat(const std::string& dir, std::string* note);

std::string BackupManifestJson(const BackupManifest& manifest);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TRANSFER_BACKUP_H_
