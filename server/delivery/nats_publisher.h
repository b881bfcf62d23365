// NatsPublisher: delivers to NATS JetStream subjects, one message per
// attempt, de-duplicated by JetStream on the timer id (Nats-Msg-Id).
#ifndef TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_
#define TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "delivery/webhook_client.h"

namespace tickwheel::server {

// An attempt succeeds when JetStream acknowledges the message (it is stored
// in a stream); "no responders" (no stream for the subject), a timeout or a
// lost connection are failed attempts, retried like webhooks.
//
// Thread safety: Publish from any thread; `done` runs on one of the
// publisher's threads.
class NatsPublisher {
 public:
  using Callback = std::function<void(WebhookResult)>;

  // Connects to `url` (nats://host:port). On failure returns null and sets
  // `error`.
  static std::unique_ptr<NatsPublisher> Connect(const std::string& url,
                                                std::chrono::milliseconds timeout,
                                                unsigned threads,
                                                std::string* error);
  ~NatsPublisher();

  void Publish(std::string subject, std::string body, std::string msg_id,
               Callback done);

  // Fails what is queued, stops the threads and closes the connection.
  void Stop();

 private:
  struct Job {
    std::string subject, body, msg_id;
    Callback done;
  };
  struct Handles;

  NatsPublisher() = default;
  void Loop();

  std::unique_ptr<Handles> handles_;
  std::chrono::milliseconds timeout_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // GUARDED_BY(mutex_)
  bool stopping_ = false;  // GUARDED_BY(mutex_)
  std::vector<std::thread> threads_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_NATS_PUBLISHER_H_
