// SPDX-License-Identifier: Apache-2.0
// WebhookReceiver: a real HTTP (or HTTPS) server on loopback that records
// every delivery it receives and answers with a status chosen by the test.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_WEBHOOK_RECEIVER_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_WEBHOOK_RECEIVER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tickwheel::testing {

struct Delivery {
  std::string id;               // from the body
  std::string idempotency_key;  // the header
  std::string path;
  int attempt = 0;
  std::int64_t fire_at_ms = 0;
  std::int64_t received_ms = 0;  // wall clock when the request was read
  std::string payload;           // serialized JSON
  std::string body;              // as received
  std::map<std::string, std::string> headers;  // names in lower case
  std::string sni;               // the TLS server name the client sent, if any
};

struct ReceiverOptions {
  unsigned threads = 1;
  bool record = true;
  // HTTPS with this PEM certificate and key when both are set.
  std::string tls_cert, tls_key;
  // The address to listen on: "0.0.0.0" takes every 127.x.y.z (many
  // distinct receivers on one port).
  std::string address = "127.0.0.1";
};

// How the receiver answers one delivery.
struct Reply {
  enum class Mode {
    kAnswer,            // `status`, keep-alive as asked
    kCloseAfterAnswer,  // `status` with keep-alive, then close the idle connection
    kReset,             // read it, then reset the connection: no answer
    kNeverAnswer,       // read it and hold the connection, silent, until the client closes it
    kGarbage,           // answer bytes that are not HTTP, then close
  };
  int status = 200;
  Mode mode = Mode::kAnswer;
  std::chrono::milliseconds delay{0};  // before answering
  std::string retry_after;             // a Retry-After header, if not empty
};

// Thread safety: all methods may be called from any thread.
class WebhookReceiver {
 public:
  // Answer for a delivery: an HTTP status (200 by default).
  using Policy = std::function<int(const Delivery&)>;
  // How to answer a delivery; called on a receiver thread, may not block.
  using Responder = std::function<Reply(const Delivery&)>;

  explicit WebhookReceiver(unsigned threads = 1, bool record = true);
  explicit WebhookReceiver(ReceiverOptions options);
  ~WebhookReceiver();

  int port() const { return port_; }
  bool tls() const { return tls_; }
  // http(s)://127.0.0.1:PORT/path, or with another host name for it.
  std::string url(const std::string& path = "/hook") const { return url_for("127.0.0.1", path); }
  std::string url_for(const std::string& host, const std::string& path = "/hook") const {
    return std::string(tls_ ? "https://" : "http://") + host + ":" + std::to_string(port_) + path;
  }
  void SetPolicy(Policy policy);
  void SetResponder(Responder responder);

  // Waits until at least `n` deliveries arrived; false after `patience`.
  bool WaitFor(std::size_t n, std::chrono::milliseconds patience);
  std::vector<Delivery> deliveries() const;
  std::size_t count() const;
  // Requests being handled now (read, their answer not yet begun), and the
  // most ever at once: the concurrency the receiver sees.
  std::size_t in_progress() const;
  std::size_t max_in_progress() const;
  // Connections open now, and the most ever open at once.
  std::size_t connections() const;
  std::size_t max_connections() const;
  // Connections accepted, and TLS handshakes completed, since the start.
  std::size_t accepted() const;
  std::size_t handshakes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  bool tls_ = false;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_WEBHOOK_RECEIVER_H_
