// SPDX-License-Identifier: Apache-2.0
#include "delivery/nats_publisher.h"

#include <nats/nats.h>

#include <ctime>

#include "common/redact.h"

namespace tickwheel::server {

struct NatsPublisher::Handles {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  ~Handles() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (connection != nullptr) natsConnection_Destroy(connection);
  }
};

Result<std::unique_ptr<NatsPublisher>> NatsPublisher::Connect(
    const std::string& url, std::chrono::milliseconds timeout, unsigned threads,
    std::shared_ptr<const WebhookSigner> signer) {
  std::unique_ptr<NatsPublisher> p(new NatsPublisher());
  p->handles_ = std::make_unique<Handles>();
  p->timeout_ = timeout;
  p->signer_ = std::move(signer);
  natsOptions* options = nullptr;
  natsStatus s = natsOptions_Create(&options);
  if (s == NATS_OK) s = natsOptions_SetURL(options, url.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(options, 5000);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(options, -1);  // forever
  if (s == NATS_OK) s = natsConnection_Connect(&p->handles_->connection, options);
  natsOptions_Destroy(options);
  if (s == NATS_OK) s = natsConnection_JetStream(&p->handles_->js, p->handles_->connection, nullptr);
  if (s != NATS_OK) {
    return Status::Unavailable("--nats " + RedactUrl(url) + ": cannot connect: " +
                               natsStatus_GetText(s) +
                               " (is nats-server running there, with JetStream (-js)?)");
  }
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    p->threads_.emplace_back([raw = p.get()] { raw->Loop(); });
  }
  return p;
}

NatsPublisher::~NatsPublisher() { Stop(); }

void NatsPublisher::Publish(std::string subject, std::string body, std::string msg_id,
                            std::vector<std::pair<std::string, std::string>> headers,
                            Callback done) {
  {
    internal::MutexLock lock(mutex_);
    if (!stopping_) {
      queue_.push_back({std::move(subject), std::move(body), std::move(msg_id), std::move(headers),
                        std::move(done)});
      cv_.Signal();
      return;
    }
  }
  done(AttemptResult::Aborted("the server is stopping"));
}

void NatsPublisher::Loop() {
  for (;;) {
    Job job;
    {
      internal::MutexLock lock(mutex_);
      while (!stopping_ && queue_.empty()) cv_.Wait(mutex_);
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
    jsPubOptions options;
    jsPubOptions_Init(&options);
    options.MsgId = job.msg_id.c_str();
    options.MaxWait = timeout_.count();
    jsPubAck* ack = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, job.subject.c_str(), nullptr, job.body.data(),
                                  static_cast<int>(job.body.size()));
    if (s == NATS_OK && signer_) {
      const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
      s = natsMsgHeader_Set(msg, "webhook-id", job.msg_id.c_str());
      if (s == NATS_OK) s = natsMsgHeader_Set(msg, "webhook-timestamp", std::to_string(now).c_str());
      if (s == NATS_OK) {
        s = natsMsgHeader_Set(msg, "webhook-signature",
                              signer_->Sign(job.msg_id, now, job.body).c_str());
      }
    }
    for (const auto& [name, value] : job.headers) {
      if (s == NATS_OK) s = natsMsgHeader_Set(msg, name.c_str(), value.c_str());
    }
    if (s == NATS_OK) s = js_PublishMsg(&ack, handles_->js, msg, &options, &code);
    if (msg != nullptr) natsMsg_Destroy(msg);
    AttemptResult result;
    if (s == NATS_OK) {
      result.kind = AttemptResult::Kind::kDelivered;
    } else {
      // A timeout may have reached the stream: JetStream's duplicate window
      // (Nats-Msg-Id) drops the retry if it did.
      result.unanswered = s == NATS_TIMEOUT;
      result.error = std::string("NATS publish to ") + job.subject + ": " + natsStatus_GetText(s);
      if (s == NATS_NO_RESPONDERS) result.error += " (no JetStream stream takes this subject)";
    }
    if (ack != nullptr) jsPubAck_Destroy(ack);
    result.latency_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    job.done(std::move(result));
  }
}

void NatsPublisher::Stop() {
  std::deque<Job> left;
  {
    internal::MutexLock lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    left.swap(queue_);
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (Job& job : left) job.done(AttemptResult::Aborted("the server stopped before the attempt"));
  handles_.reset();
}

}  // namespace tickwheel::server
