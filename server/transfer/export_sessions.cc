// SPDX-License-Identifier: Apache-2.0
#include "transfer/export_sessions.h"

#include <openssl/rand.h>

#include <cstdio>
#include <vector>

namespace tickwheel::server {

namespace {

std::string NewSessionId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(std::rand());
  }
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

}  // namespace

std::string EncodeExportCursor(const ExportCursor& cursor) {
  return cursor.session + ":" + cursor.after.value_or("");
}

Result<ExportCursor> ParseExportCursor(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::Invalid("invalid_value",
                           "cursor must be what the last page gave (\"<export>:<id>\")",
                           "cursor");
  }
  ExportCursor out;
  out.session = std::string(text.substr(0, colon));
  if (colon + 1 < text.size()) out.after = std::string(text.substr(colon + 1));
  return out;
}

ExportSessions::ExportSessions(TimerStore& store, ServerClock& clock,
                               ExportSessionOptions options)
    : store_(store), clock_(clock), options_(options) {
  const auto every = std::max<std::chrono::milliseconds>(
      std::chrono::milliseconds(100), std::min<std::chrono::milliseconds>(
                                          options_.idle_timeout / 4, std::chrono::seconds(5)));
  expirer_ = std::make_unique<internal::PeriodicThread>(clock_.steady(), every,
                                                        [this] { Expire(); });
}

ExportSessions::~ExportSessions() {
  expirer_.reset();
  Clear();
}

Result<ExportSessions::Started> ExportSessions::Start(unsigned states) {
  {
    internal::MutexLock lock(mutex_);
    if (sessions_.size() >= options_.max_sessions) {
      return Status(StatusCode::kUnavailable, "too_many_exports",
                    std::to_string(sessions_.size()) +
                        " exports are open on this server; finish them or wait for them to "
                        "expire (" +
                        std::to_string(options_.idle_timeout.count() / 1000) + " s idle)");
    }
  }
  Result<std::unique_ptr<StoreSnapshot>> snapshot = store_.Snapshot();
  if (!snapshot.ok()) return snapshot.status();
  auto session = std::make_shared<Session>();
  Started out;
  out.session = NewSessionId();
  out.counts = (*snapshot)->counts();
  out.taken_ms = (*snapshot)->taken_ms();
  out.states = states;
  {
    internal::MutexLock page_lock(session->mutex);
    session->snapshot = std::move(*snapshot);
  }
  session->states = states;
  internal::MutexLock lock(mutex_);
  session->last_used = clock_.steady().Now();
  sessions_.emplace(out.session, std::move(session));
  return out;
}

Result<ExportSessions::PageOut> ExportSessions::Page(const ExportCursor& cursor,
                                                     std::size_t limit, std::size_t max_bytes) {
  std::shared_ptr<Session> session;
  {
    internal::MutexLock lock(mutex_);
    auto it = sessions_.find(cursor.session);
    if (it == sessions_.end()) {
      return Status(StatusCode::kNotFound, "export_expired",
                    "export " + cursor.session +
                        " is not open on this server: it finished, was idle for longer than " +
                        std::to_string(options_.idle_timeout.count() / 1000) +
                        " s, or was started on another node (page through the node that "
                        "started it); start the export again",
                    "cursor");
    }
    session = it->second;
    session->last_used =
        clock_.steady().Now();
  }
  internal::MutexLock page_lock(session->mutex);
  if (!session->snapshot) {
    return Status(StatusCode::kNotFound, "export_expired",
                  "export " + cursor.session + " was dropped; start the export again",
                  "cursor");
  }
  Result<StoreSnapshot::Page> page =
      session->snapshot->Timers(cursor.after, limit, max_bytes, session->states);
  if (!page.ok()) return page.status();
  PageOut out;
  out.records = std::move(page->records);
  out.next = std::move(page->next);
  out.states = session->states;
  if (!out.next && out.states == kAllStates) {
    Result<StoreSnapshot::Rest> rest = session->snapshot->SchedulesAndFlows();
    if (!rest.ok()) return rest.status();
    out.rest = std::move(*rest);
  }
  {
    internal::MutexLock lock(mutex_);
    session->last_used =
        clock_.steady().Now();
  }
  return out;
}

void ExportSessions::Finish(const std::string& session) {
  std::shared_ptr<Session> dropped;
  {
    internal::MutexLock lock(mutex_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    dropped = std::move(it->second);
    sessions_.erase(it);
  }
  internal::MutexLock page_lock(dropped->mutex);  // after a page being read
  dropped->snapshot.reset();
}

void ExportSessions::Clear() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    internal::MutexLock lock(mutex_);
    all.swap(sessions_);
  }
  for (auto& [id, session] : all) {
    internal::MutexLock page_lock(session->mutex);
    session->snapshot.reset();
  }
}

std::size_t ExportSessions::open() const {
  internal::MutexLock lock(mutex_);
  return sessions_.size();
}

void ExportSessions::Expire() {
  std::vector<std::shared_ptr<Session>> expired;
  {
    internal::MutexLock lock(mutex_);
    const TimePoint now = clock_.steady().Now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (now - it->second->last_used >= options_.idle_timeout) {
        expired.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& session : expired) {
    internal::MutexLock page_lock(session->mutex);
    session->snapshot.reset();
  }
}

}  // namespace tickwheel::server
