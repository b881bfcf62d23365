// SPDX-License-Identifier: Apache-2.0
#include "cluster/notification_listener.h"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "store/pg_connection.h"
#include "store/postgres_timer_store.h"

namespace tickwheel::server {

NotificationListener::NotificationListener(std::string postgres, std::string node_id,
                                           NotificationCallbacks callbacks)
    : postgres_(std::move(postgres)),
      node_id_(std::move(node_id)),
      callbacks_(std::move(callbacks)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

NotificationListener::~NotificationListener() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void NotificationListener::Start() { thread_ = std::thread([this] { Loop(); }); }

void NotificationListener::Stop() {
  if (stop_.exchange(true)) return;
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void NotificationListener::Loop() {
  while (!stop_.load()) {
    Result<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(postgres_);
    Status s = conn.ok() ? (*conn)->ExecScript("LISTEN " + std::string(kDueChannel) +
                                               "; LISTEN tickwheel_leases; LISTEN " +
                                               std::string(kFlowsChannel))
                         : conn.status();
    if (!s.ok()) {
      spdlog::warn("notifications: {}; trying again", s.message());
      pollfd wake{wake_fd_, POLLIN, 0};
      poll(&wake, 1, 1000);
      continue;
    }
    // Whatever was announced while no one listened (before the first
    // LISTEN, or while the connection was down): look again.
    if (callbacks_.resync) callbacks_.resync();
    PGconn* pg = (*conn)->raw();
    while (!stop_.load()) {
      pollfd fds[2] = {{PQsocket(pg), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      poll(fds, 2, 1000);
      if (PQconsumeInput(pg) == 0) break;  // the connection is gone
      while (PGnotify* n = PQnotifies(pg)) {
        const std::string channel = n->relname;
        const std::string payload = n->extra;
        PQfreemem(n);
        if (channel == "tickwheel_leases") {
          if (payload != node_id_ && callbacks_.leases) callbacks_.leases();
          continue;
        }
        if (channel == kFlowsChannel) {
          if (callbacks_.flows) callbacks_.flows(payload);
          continue;
        }
        std::optional<DuePayload> due = DecodeDuePayload(payload);
        if (!due || due->node_id == node_id_) continue;
        for (const DueNotice& notice : due->notices) {
          notices_.fetch_add(1, std::memory_order_relaxed);
          if (callbacks_.due) callbacks_.due(notice.id, notice.due_ms, notice.flow);
        }
      }
    }
    if (!stop_.load()) spdlog::warn("notifications: the connection was lost; reconnecting");
  }
}

}  // namespace tickwheel::server
