// SPDX-License-Identifier: Apache-2.0
// Server: the parts of `tickwheel serve` wired together: store, scheduler,
// dispatcher and delivery, API and HTTP server, retention.
#ifndef TICKWHEEL_SERVER_SERVE_SERVER_H_
#define TICKWHEEL_SERVER_SERVE_SERVER_H_

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "api/admin_handlers.h"
#include "api/api.h"
#include "api/flow_handlers.h"
#include "api/http_server.h"
#include "api/store_calls.h"
#include "api/timer_handlers.h"
#include "cluster/lease_manager.h"
#include "cluster/notification_listener.h"
#include "common/metrics.h"
#include "common/metrics_series.h"
#include "common/server_clock.h"
#include "common/status.h"
#include "delivery/dispatcher.h"
#include "delivery/nats_publisher.h"
#include "delivery/webhook_client.h"
#include "egress/target_policy.h"
#include "flow/flow_registry.h"
#include "flow/flow_service.h"
#include "flow/flow_shares.h"
#include "scheduler/scheduler.h"
#include "serve/serve_options.h"
#include "store/retention.h"
#include "store/timer_store.h"
#include "tickwheel/internal/periodic_thread.h"
#include "transfer/backup.h"
#include "transfer/export_sessions.h"

namespace tickwheel::server {

// Thread safety: Start, Drain and the destructor from one thread.
class Server {
 public:
  // Opens the store, connects to NATS, binds the listening socket and starts
  // every thread. Fails (kInvalidArgument or kUnavailable) with a message
  // that says what to do.
  static Result<std::unique_ptr<Server>> Start(const ServeOptions& options,
                                               ServerClock& clock = SystemServerClock::Instance());
  ~Server();

  // Stops taking work and finishes what is in flight, for up to
  // options.drain_timeout or until `cut_short()` is true; then stops
  // everything and closes the store. Idempotent.
  void Drain(const std::function<bool()>& cut_short);

  // The first HTTP thread's (for signal handling).
  boost::asio::io_context& io_context() { return *http_contexts_.front(); }
  unsigned short port() const { return http_->port(); }

 private:
  explicit Server(const ServeOptions& options, ServerClock& clock);
  void AppendGauges(std::string& out) const;
  std::string HealthDetail() const;
  // Cluster mode: leases decide which shards this node fires.
  void StartCluster(const std::string& node_id, const std::string& owner);
  // Every second: the flows' settings from the store; every fifth, how
  // many timers deferred flows have due in the store (their backlog metric).
  void RefreshFlows();
  // What this node does with each flow (the API's numbers, embedded mode).
  std::map<std::string, FlowActivity> LocalFlowActivity() const;

  const ServeOptions options_;
  ServerClock& clock_;
  std::string node_id_;  // cluster mode
  Metrics metrics_;
  std::unique_ptr<MetricsSeries> series_;  // the console's charts: the last hour
  std::unique_ptr<internal::PeriodicThread> series_sampler_;
  std::shared_ptr<const TargetPolicy> policy_;  // shared with the webhook client
  std::unique_ptr<LeaseManager> leases_;  // cluster mode
  std::unique_ptr<TimerStore> store_;
  std::unique_ptr<StoreCalls> store_calls_;  // how the API reaches store_
  std::unique_ptr<NatsPublisher> nats_;
  std::unique_ptr<WebhookClient> webhook_;
  std::unique_ptr<FlowRegistry> flows_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<FlowService> flow_service_;
  std::unique_ptr<FlowHandlers> flow_handlers_;
  std::unique_ptr<internal::PeriodicThread> flow_refresher_;
  std::unique_ptr<FlowShares> flow_shares_;  // cluster mode
  mutable internal::Mutex flow_backlog_mutex_;
  std::map<std::string, std::int64_t> flow_backlog_ TW_GUARDED_BY(flow_backlog_mutex_);
  int flow_refreshes_ = 0;  // the refresher's
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<TimerHandlers> handlers_;
  std::unique_ptr<ScheduleHandlers> schedules_;
  std::unique_ptr<DeadLetterHandlers> dead_letters_;
  std::unique_ptr<StatsHandlers> stats_;
  // The admin routes': exports in progress, backups, and the threads they
  // run on (joined before the others go).
  std::unique_ptr<ExportSessions> exports_;
  std::unique_ptr<BackupTaker> backups_;
  std::unique_ptr<boost::asio::thread_pool> admin_pool_;
  std::unique_ptr<AdminHandlers> admin_;
  std::atomic<bool> writes_paused_{false};
  std::unique_ptr<Api> api_;
  // One per HTTP thread (--threads), each run by its thread alone: a
  // connection stays on the thread that accepted it (HttpServer).
  std::vector<std::unique_ptr<boost::asio::io_context>> http_contexts_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Retention> retention_;
  std::unique_ptr<NotificationListener> notifications_;  // cluster mode
  std::vector<std::thread> http_threads_;
  bool drained_ = false;
  bool started_ = false;  // Start got to the end: Drain has something to stop
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SERVE_SERVER_H_
