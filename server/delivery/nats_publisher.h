// SPDX-License-Identifier: Apache-2.0
// NatsPublisher: delivers to NATS JetStream subjects, one message per
// attempt, de-duplicated by JetStream on the message id (Nats-Msg-Id: the
// timer id and its creation time, delivery/dispatcher.h's MessageIdOf).
#ifndef TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_
#define TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "delivery/attempt_result.h"
#include "delivery/webhook_signer.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// An attempt succeeds when JetStream acknowledges the message (it is stored
// in a stream); "no responders" (no stream for the subject), a timeout or a
// lost connection are failed attempts, retried like webhooks.
//
// Thread safety: Publish from any thread; `done` runs on one of the
// publisher's threads.
class NatsPublisher {
 public:
  using Callback = std::function<void(AttemptResult)>;

  // Connects to `url` (nats://host:port); kUnavailable, saying what to
  // check, if it cannot. With a `signer`, every message carries the
  // Standard Webhooks headers (webhook-id, -timestamp, -signature) as NATS
  // headers, signed as a webhook's body is.
  static Result<std::unique_ptr<NatsPublisher>> Connect(
      const std::string& url, std::chrono::milliseconds timeout, unsigned threads,
      std::shared_ptr<const WebhookSigner> signer = nullptr);
  ~NatsPublisher();

  // `headers` (the trace context's) go with the message as NATS headers.
  void Publish(std::string subject, std::string body, std::string msg_id,
               std::vector<std::pair<std::string, std::string>> headers, Callback done);

  // Aborts what is queued (kAborted), lets publishes in progress finish,
  // stops the threads and closes the connection. Idempotent.
  void Stop();

 private:
  struct Job {
    std::string subject, body, msg_id;
    std::vector<std::pair<std::string, std::string>> headers;
    Callback done;
  };
  struct Handles;

  NatsPublisher() = default;
  void Loop();

  std::unique_ptr<Handles> handles_;
  std::chrono::milliseconds timeout_{0};
  std::shared_ptr<const WebhookSigner> signer_;
  internal::Mutex mutex_;
  internal::CondVar cv_;
  std::deque<Job> queue_ TW_GUARDED_BY(mutex_);
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_
