// Dispatcher: turns fired timers into webhook attempts and their outcomes
// into state transitions (delivered, retry with backoff, failed).
#ifndef TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_
#define TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "delivery/nats_publisher.h"
#include "delivery/webhook_client.h"
#include "metrics.h"
#include "scheduler/scheduler.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// Per attempt:
//   claim    (a store writer) the record is still scheduled at the fired due
//            time and the wall clock has reached it -> state delivering,
//            attempts + 1. Otherwise the fired entry was stale: dropped.
//   POST     {"id", "payload", "fire_at_ms", "attempt"} with
//            Idempotency-Key: <id> (or, for a NATS target, publish that body
//            to JetStream with Nats-Msg-Id: <id>).
//   outcome  2xx -> delivered. Otherwise, if attempts < max_attempts ->
//            pending at now + backoff * 2^(attempts-1) * U[0.5, 1.5);
//            else failed (a dead letter).
// A claim that finds the record already `delivering` means a previous
// process died (or drained) with that attempt in flight: the attempt is
// counted in duplicates_after_recovery.
//
// Thread safety: OnFired from any thread (the scheduler's).
class Dispatcher {
 public:
  // `nats` may be null (no NATS targets are accepted then).
  Dispatcher(TimerStore& store, Scheduler& scheduler, WebhookClient& client,
             NatsPublisher* nats, Metrics& metrics);

  // The scheduler's `fire` callback.
  void OnFired(std::vector<DueEntry> due);

  // Attempts claimed and not yet written back.
  std::int64_t in_flight() const { return in_flight_.load(); }

 private:
  void ClaimChunk(std::shared_ptr<std::vector<DueEntry>> entries);
  void Deliver(TimerRecord record);
  // Queues the outcome of an attempt; outcomes queued together are written
  // in one store write (FlushOutcomes, deferred on the client's thread).
  void Complete(const std::string& id, std::uint32_t attempt,
                WebhookResult result);
  void FlushOutcomes();
  std::int64_t Backoff(const TimerRecord& record);

  TimerStore& store_;
  Scheduler& scheduler_;
  WebhookClient& client_;
  NatsPublisher* const nats_;
  Metrics& metrics_;
  std::atomic<std::int64_t> in_flight_{0};
  struct Outcome {
    std::string id;
    std::uint32_t attempt;
    WebhookResult result;
  };
  std::mutex outcomes_mutex_;
  std::vector<Outcome> outcomes_;  // GUARDED_BY(outcomes_mutex_)
  bool flush_posted_ = false;      // GUARDED_BY(outcomes_mutex_)
  std::mutex rng_mutex_;
  std::mt19937_64 rng_{std::random_device{}()};  // GUARDED_BY(rng_mutex_)
};

// The JSON body of a delivery.
std::string DeliveryBody(const TimerRecord& record);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_
