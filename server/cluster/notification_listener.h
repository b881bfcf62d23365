// SPDX-License-Identifier: Apache-2.0
// NotificationListener: what other cluster nodes announce through
// PostgreSQL's LISTEN/NOTIFY: changes to timers due soon (so the owner of
// their shard arms them at once), shards handed over (so the others take
// them at once), and flows' settings changed (so every node applies them at
// once, not at its next read a second later).
#ifndef TICKWHEEL_SERVER_CLUSTER_NOTIFICATION_LISTENER_H_
#define TICKWHEEL_SERVER_CLUSTER_NOTIFICATION_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace tickwheel::server {

struct NotificationCallbacks {
  // A timer (of flow `flow`) changed on another node: due at `due_ms`, or
  // no longer scheduled.
  std::function<void(const std::string& id, std::optional<std::int64_t> due_ms,
                     const std::string& flow)>
      due;
  // Notifications may have been missed (the connection was lost and is
  // back): look at the store again.
  std::function<void()> resync;
  // Another node handed shards over.
  std::function<void()> leases;
  // A flow's settings changed (on any node).
  std::function<void(const std::string& flow)> flows;
};

// Thread safety: Start and Stop from the owner; callbacks on the listener's
// thread. Announcements this node made itself are skipped (its own writes
// reach its scheduler directly).
class NotificationListener {
 public:
  NotificationListener(std::string postgres, std::string node_id, NotificationCallbacks callbacks);
  ~NotificationListener();  // Stop()

  void Start();
  void Stop();

  std::uint64_t notices() const { return notices_.load(); }

 private:
  void Loop();

  const std::string postgres_;
  const std::string node_id_;
  const NotificationCallbacks callbacks_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> notices_{0};
  int wake_fd_ = -1;  // an eventfd that Stop writes to
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_CLUSTER_NOTIFICATION_LISTENER_H_
