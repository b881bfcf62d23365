// SPDX-License-Identifier: Apache-2.0
// Exports in pages from one consistent point (docs/operations.md, Export
// and import): an export takes a snapshot of the store (StoreSnapshot) and
// keeps it between the pages its client asks for, until it is finished or
// left idle too long.
#ifndef TICKWHEEL_SERVER_TRANSFER_EXPORT_SESSIONS_H_
#define TICKWHEEL_SERVER_TRANSFER_EXPORT_SESSIONS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/server_clock.h"
#include "common/status.h"
#include "store/timer_store.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

struct ExportSessionOptions {
  // An export no page was asked of for this long is dropped (its snapshot
  // holds back RocksDB's compaction or PostgreSQL's VACUUM).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
  // Exports open at once; one more is refused (kUnavailable).
  std::size_t max_sessions = 4;
};

// A position in an export: its session and the last id it gave. Clients
// pass it back as "<session>:<id>" ("<session>:" before the first page), so
// a page asked again (after a lost answer) is the same page.
struct ExportCursor {
  std::string session;
  std::optional<std::string> after;
};
std::string EncodeExportCursor(const ExportCursor& cursor);
// kInvalidArgument (field "cursor") for text that is not a cursor.
Result<ExportCursor> ParseExportCursor(std::string_view text);

// Thread safety: every method from any thread; the pages of one export are
// read one at a time (a second reader waits). Snapshots are taken and read
// by the caller's thread: call off the HTTP threads.
// Memory: a snapshot per open export, and one page of records while read.
//
//   ExportSessions exports(store, clock, {});
//   auto started = exports.Start(kAllStates);          // the snapshot
//   auto page = exports.Page({started->session, {}}, 1000, 4 << 20);
//   ... Page({started->session, page->next}, ...) until !page->next
class ExportSessions {
 public:
  struct Started {
    std::string session;
    StateCounts counts{};      // every timer per state in the snapshot
    std::int64_t taken_ms = 0;  // when the snapshot was taken
    unsigned states = kAllStates;
  };
  struct PageOut {
    std::vector<TimerRecord> records;
    std::optional<std::string> next;  // the cursor's `after` for the next page; none at the end
    unsigned states = kAllStates;
    // On the last page of an export of every state: the snapshot's
    // schedules and flow settings (an export of some states holds only
    // timers).
    std::optional<StoreSnapshot::Rest> rest;
  };

  // `store` and `clock` must outlive this.
  ExportSessions(TimerStore& store, ServerClock& clock, ExportSessionOptions options = {});
  ~ExportSessions();  // Clear()

  // Takes a snapshot of the timers of `states` (bit 1 << state).
  Result<Started> Start(unsigned states);
  // The page after `cursor`: kNotFound (reason "export_expired") for a
  // session that is unknown here (finished, expired, or started on another
  // node).
  Result<PageOut> Page(const ExportCursor& cursor, std::size_t limit, std::size_t max_bytes);
  // Drops the export (its client is done with it).
  void Finish(const std::string& session);
  // Drops every export. REQUIRES: called before the store closes.
  void Clear();

  std::size_t open() const;

 private:
  struct Session {
    internal::Mutex mutex;  // one page at a time
    std::unique_ptr<StoreSnapshot> snapshot TW_GUARDED_BY(mutex);
    unsigned states = kAllStates;
    TimePoint last_used;  // under the registry's mutex
  };
  void Expire();

  TimerStore& store_;
  ServerClock& clock_;
  const ExportSessionOptions options_;
  mutable internal::Mutex mutex_;
  std::map<std::string, std::shared_ptr<Session>> sessions_ TW_GUARDED_BY(mutex_);
  std::unique_ptr<internal::PeriodicThread> expirer_;  // last: runs once the rest exists
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TRANSFER_EXPORT_SESSIONS_H_
