// SPDX-License-Identifier: Apache-2.0
// The admin routes (docs/server.md, "Admin: backup, export, import, pause"),
// for an admin token only:
//
//   POST /v1/admin/backup {"to": DIR}       a hot backup of the embedded
//                                           store into DIR, on the server's
//                                           machine (transfer/backup.h)
//   GET  /v1/admin/export?state=S&limit=N   the first page of an export
//        /v1/admin/export?cursor=C&limit=N  the next ones (JSON lines,
//                                           api/transfer_json.h; the
//                                           Tickwheel-Export-Cursor header
//                                           while pages follow)
//   POST /v1/admin/import                   JSON lines in (timers,
//                                           schedules, flows): created,
//                                           existing, conflicts
//   POST /v1/admin/delivery:pause|:resume   stop / resume firing timers
//   POST /v1/admin/writes:pause|:resume     refuse / take clients' writes
//
// As every handler (api/api.h): export pages are store reads and imports
// store writes through api/store_calls.h (the read pool and deadline; the
// write limiter, one durable write per request). A backup is not: it
// copies the whole store and may take longer than any deadline, so it runs
// on the admin pool (api/background_call.h), off the HTTP threads, one or
// two at a time.
#ifndef TICKWHEEL_SERVER_API_ADMIN_HANDLERS_H_
#define TICKWHEEL_SERVER_API_ADMIN_HANDLERS_H_

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "api/http_response.h"
#include "api/timer_request.h"
#include "common/metrics.h"
#include "common/server_clock.h"
#include "flow/flow_service.h"
#include "api/store_calls.h"
#include "store/timer_store.h"
#include "transfer/backup.h"
#include "transfer/export_sessions.h"

namespace tickwheel::server {

// What the admin routes switch on the server they run in.
struct AdminControls {
  // Stops (true) or resumes firing timers. Reads and writes go on.
  std::function<void(bool paused)> pause_delivery;
  std::function<bool()> delivery_paused;
  // Attempts fired whose outcome is not yet written.
  std::function<std::int64_t()> in_flight;
  // Clients' writes are refused while true (the Api reads it).
  std::atomic<bool>* writes_paused = nullptr;
  // How long delivery:pause waits for the attempts in flight.
  std::chrono::milliseconds pause_wait{std::chrono::seconds(30)};
};

// Everything the admin routes use; all of it must outlive the handlers.
struct AdminParts {
  StoreCalls& calls;
  ServerClock& clock;
  FlowService& flows;  // imports' flow settings go through it (as a PUT's)
  ExportSessions& exports;
  BackupTaker& backups;
  boost::asio::thread_pool& pool;  // where backups and delivery:pause's wait run
  std::string store_kind;          // "embedded" | "postgres", for exports
};

// Thread safety: every handler may run on any number of threads at once.
class AdminHandlers {
 public:
  AdminHandlers(AdminParts parts, ApiLimits limits, AdminControls controls);

  boost::asio::awaitable<HttpResponse> Backup(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> Export(std::string_view query);
  boost::asio::awaitable<HttpResponse> Import(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> Delivery(bool pause);
  HttpResponse Writes(bool pause);

  // {"delivery": "running"|"paused", "writes": "accepted"|"paused",
  //  "in_flight": n}
  std::string ModeJson() const;

  static constexpr std::size_t kDefaultPageLimit = 1000;
  static constexpr std::size_t kMaxPageLimit = 10'000;
  static constexpr std::size_t kPageBytes = 4 << 20;

 private:
  AdminParts parts_;
  const ApiLimits limits_;
  const AdminControls controls_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_ADMIN_HANDLERS_H_
