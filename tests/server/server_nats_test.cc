// SPDX-License-Identifier: Apache-2.0
// NATS JetStream targets: the real `tickwheel serve --nats` publishing to a
// real nats-server (-js) started by the test on a free port.
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "server_test_util.h"
#include "support/standard_webhooks.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;

// nats-server with JetStream in a temporary directory.
class NatsServer {
 public:
  explicit NatsServer(const std::string& dir) : port_(FreePort()) {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // do not outlive the test
      const std::string port = std::to_string(port_);
      const std::string log = dir + "/nats.log";
      // Debian puts it in /usr/sbin, which is not on every user's PATH.
      for (const char* path : {"/usr/sbin/nats-server", "/usr/bin/nats-server"}) {
        execl(path, "nats-server", "-js", "-a", "127.0.0.1", "-p", port.c_str(), "-sd",
              dir.c_str(), "-l", log.c_str(), nullptr);
      }
      execlp("nats-server", "nats-server", "-js", "-a", "127.0.0.1", "-p", port.c_str(),
             "-sd", dir.c_str(), "-l", log.c_str(), nullptr);
      _exit(127);
    }
  }
  ~NatsServer() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_;
};

// A client connection that creates the stream and reads what arrives.
class NatsReader {
 public:
  bool Connect(const std::string& url) {
    for (int i = 0; i < 500; ++i) {  // nats-server starts in a few ms
      if (natsConnection_ConnectTo(&nc_, url.c_str()) == NATS_OK) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (nc_ == nullptr) return false;
    if (natsConnection_JetStream(&js_, nc_, nullptr) != NATS_OK) return false;
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = "TIMERS";
    const char* subjects[] = {"timers.>"};
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    jsStreamInfo* info = nullptr;
    jsErrCode code;
    if (js_AddStream(&info, js_, &config, nullptr, &code) != NATS_OK) return false;
    jsStreamInfo_Destroy(info);
    return natsConnection_Subscribe(&sub_, nc_, "timers.>", &NatsReader::OnMessage, this) ==
           NATS_OK;
  }
  ~NatsReader() {
    // No callback may run once this is gone: drain, and wait for it.
    if (sub_ != nullptr && natsSubscription_Drain(sub_) == NATS_OK) {
      natsSubscription_WaitForDrainCompletion(sub_, 10'000);
    }
    natsSubscription_Destroy(sub_);
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  // The next message's (subject, body, Nats-Msg-Id) and its webhook-*
  // headers, and when it arrived (wall clock, stamped by the subscription's
  // callback as it arrives, not when the test gets to it); empty subject
  // after `patience`.
  std::tuple<std::string, std::string, std::string> Next(
      std::chrono::milliseconds patience, std::map<std::string, std::string>* headers = nullptr,
      std::int64_t* arrived_ms = nullptr) {
    std::unique_lock lock(mutex_);
    if (!arrived_.wait_for(lock, patience, [&] { return !queue_.empty(); })) return {};
    Message m = std::move(queue_.front());
    queue_.pop_front();
    if (headers != nullptr) *headers = m.headers;
    if (arrived_ms != nullptr) *arrived_ms = m.arrived_ms;
    return {m.subject, m.body, m.msg_id};
  }
  // Messages the TIMERS stream holds (a publish JetStream dropped as a
  // duplicate of its Nats-Msg-Id is not among them); -1 on error.
  long long Stored() {
    jsStreamInfo* info = nullptr;
    jsErrCode code;
    if (js_GetStreamInfo(&info, js_, "TIMERS", nullptr, &code) != NATS_OK) return -1;
    const long long n = static_cast<long long>(info->State.Msgs);
    jsStreamInfo_Destroy(info);
    return n;
  }
  // Messages that arrived and were not taken by Next.
  std::size_t untaken() {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }

 private:
  struct Message {
    std::string subject, body, msg_id;
    std::map<std::string, std::string> headers;
    std::int64_t arrived_ms = 0;
  };

  static void OnMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    Message m;
    m.arrived_ms = WallMs();
    m.subject = natsMsg_GetSubject(msg);
    m.body.assign(natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
    const char* id = nullptr;
    natsMsgHeader_Get(msg, "Nats-Msg-Id", &id);
    m.msg_id = id ? id : "";
    for (const char* name : {"webhook-id", "webhook-timestamp", "webhook-signature", "traceparent",
                             "tracestate"}) {
      const char* value = nullptr;
      if (natsMsgHeader_Get(msg, name, &value) == NATS_OK && value) m.headers[name] = value;
    }
    natsMsg_Destroy(msg);
    auto* self = static_cast<NatsReader*>(closure);
    std::lock_guard lock(self->mutex_);
    self->queue_.push_back(std::move(m));
    self->arrived_.notify_all();
  }

 public:

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  natsSubscription* sub_ = nullptr;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Message> queue_;
};

// The trace context half of the timers are created in (docs/operations.md).
const std::vector<std::pair<std::string, std::string>> kTrace = {
    {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"tracestate", "rojo=00f067aa0ba902b7"}};

TEST(ServerNatsTest, PublishesSignedMessagesToJetStreamOnTimeWithTheMessageIdAsMsgId) {
  TempDir dir;
  NatsServer nats(dir.path());
  NatsReader reader;
  ASSERT_TRUE(reader.Connect(nats.url()));
  const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  WriteFile(dir.path() + "/secrets", secret + "\n");
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--nats", nats.url(), "--backoff", "50ms", "--webhook-secret-file",
                        dir.path() + "/secrets"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  constexpr int kTimers = 50;
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < kTimers; ++i) {
    const std::string id = "n" + std::to_string(i);
    JsonCall c = Call(client, "POST", "/v1/timers",
                      "{\"id\":\"" + id + "\",\"delay_ms\":" + std::to_string(100 + 10 * i) +
                          ",\"target\":{\"nats\":\"timers.orders\"},\"payload\":{\"i\":" +
                          std::to_string(i) + "}}",
                      i % 2 == 0 ? kTrace : std::vector<std::pair<std::string, std::string>>{});
    ASSERT_EQ(c.status, 201) << c.raw;
    EXPECT_EQ(c.body.at("target").at("nats").as_string(), "timers.orders");
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  std::set<std::string> seen;
  for (int i = 0; i < kTimers; ++i) {
    std::map<std::string, std::string> headers;
    std::int64_t received = 0;
    auto [subject, body, msg_id] = reader.Next(std::chrono::seconds(30), &headers, &received);
    ASSERT_EQ(subject, "timers.orders");
    std::string why;
    EXPECT_TRUE(VerifyStandardWebhook(secret, headers, body, &why)) << why;
    EXPECT_EQ(headers["webhook-id"], msg_id);
    boost::json::value v = boost::json::parse(body);
    const std::string id(v.at("id").as_string());
    EXPECT_TRUE(IsMessageIdOf(msg_id, id)) << msg_id;
    EXPECT_TRUE(seen.insert(id).second) << id << " twice";
    EXPECT_GE(received, fire_at[id]) << id << " early";
    EXPECT_EQ(v.at("payload").at("i").as_int64(), std::stoi(id.substr(1)));
    // Even ones were created in a trace: the message is a new span of it.
    if (std::stoi(id.substr(1)) % 2 == 0) {
      const std::string& sent = headers["traceparent"];
      EXPECT_EQ(sent.substr(0, 36), kTrace[0].second.substr(0, 36)) << sent;
      EXPECT_EQ(sent.size(), 55u) << sent;
      EXPECT_NE(sent.substr(36, 16), kTrace[0].second.substr(36, 16)) << sent;
      EXPECT_EQ(headers["tracestate"], kTrace[1].second);
    } else {
      EXPECT_FALSE(headers.contains("traceparent")) << id;
    }
  }
  // No stream takes "nowhere.x": every attempt fails, then a dead letter.
  ASSERT_EQ(Call(client, "POST", "/v1/timers",
                 R"({"id":"lost","delay_ms":0,"target":{"nats":"nowhere.x"},"retry":{"max_attempts":2,"backoff_ms":20}})")
                .status,
            201);
  JsonCall lost;
  for (int i = 0; i < 3000 && State(lost = Call(client, "GET", "/v1/timers/lost")) != "failed"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(State(lost), "failed") << lost.raw;
  // Nothing more arrived on timers.> meanwhile: no timer was published twice
  // (JetStream would drop a repeat within its window; the subscription sees
  // every publish).
  EXPECT_EQ(reader.untaken(), 0u);
  EXPECT_NE(std::string(lost.body.at("last_error").as_string()).find("nowhere.x"), std::string::npos);
  // Bad subjects are refused.
  JsonCall wild = Call(client, "POST", "/v1/timers",
                       R"({"delay_ms":0,"target":{"nats":"timers.*"}})");
  EXPECT_EQ(wild.status, 400);
  EXPECT_EQ(ErrorField(wild), "target.nats");
  JsonCall system = Call(client, "POST", "/v1/timers",
                         R"({"delay_ms":0,"target":{"nats":"$JS.API.STREAM.DELETE.TIMERS"}})");
  EXPECT_EQ(system.status, 400) << system.raw;
  EXPECT_EQ(server.Terminate(), 0);
}

// A NATS timer due while the server runs without --nats is not attempted
// (which would burn its attempts): it stays pending, and a server with
// --nats delivers it.
TEST(ServerNatsTest, NatsTimersWaitForAServerWithNats) {
  TempDir dir;
  NatsServer nats(dir.path());
  NatsReader reader;
  ASSERT_TRUE(reader.Connect(nats.url()));
  auto with_nats = std::make_unique<ServerProcess>(
      Binary(), dir.path() + "/data", std::vector<std::string>{"--nats", nats.url()});
  ASSERT_TRUE(with_nats->Start());
  {
    BlockingHttpClient client(with_nats->address());
    ASSERT_EQ(Call(client, "POST", "/v1/timers",
                   R"({"id":"waits","delay_ms":500,"target":{"nats":"timers.waits"}})").status,
              201);
  }
  EXPECT_EQ(with_nats->Terminate(), 0);
  ServerProcess without(Binary(), dir.path() + "/data");
  ASSERT_TRUE(without.Start());
  BlockingHttpClient client(without.address());
  double waiting = 0;
  for (int i = 0; i < 3000 && waiting < 1; ++i) {
    waiting = Metric(client, "tickwheel_timers_waiting_for_nats_total");
    if (waiting < 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(waiting, 1);
  JsonCall g = Call(client, "GET", "/v1/timers/waits");
  EXPECT_EQ(State(g), "pending") << g.raw;
  EXPECT_EQ(g.body.at("attempts").as_int64(), 0);
  EXPECT_NE(without.log().find("without --nats"), std::string::npos);
  EXPECT_EQ(without.Terminate(), 0);
  ASSERT_TRUE(with_nats->Start());
  auto [subject, body, msg_id] = reader.Next(std::chrono::seconds(30));
  EXPECT_EQ(subject, "timers.waits");
  EXPECT_TRUE(IsMessageIdOf(msg_id, "waits")) << msg_id;
  EXPECT_EQ(with_nats->Terminate(), 0);
}


// A NATS timer deleted by --retention and created again with its id is a
// new message: a new Nats-Msg-Id, so JetStream (which drops a repeat of a
// Nats-Msg-Id within its two-minute window) stores it.
TEST(ServerNatsTest, ATimerCreatedAgainAfterRetentionIsStoredByJetStream) {
  TempDir dir;
  NatsServer nats(dir.path());
  NatsReader reader;
  ASSERT_TRUE(reader.Connect(nats.url()));
  ServerProcess server(Binary(), dir.path() + "/data", {"--nats", nats.url(), "--retention", "300ms"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address());
  const std::string body = R"({"id":"again","delay_ms":0,"target":{"nats":"timers.again"}})";
  ASSERT_EQ(Call(client, "POST", "/v1/timers", body).status, 201);
  auto [subject1, body1, id1] = reader.Next(std::chrono::seconds(30));
  ASSERT_EQ(subject1, "timers.again");
  int status = 0;
  for (int i = 0; i < 3000 && (status = Call(client, "GET", "/v1/timers/again").status) != 404; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(status, 404) << "retention never deleted the delivered timer";
  ASSERT_EQ(Call(client, "POST", "/v1/timers", body).status, 201);
  auto [subject2, body2, id2] = reader.Next(std::chrono::seconds(30));
  ASSERT_EQ(subject2, "timers.again");
  EXPECT_TRUE(IsMessageIdOf(id1, "again")) << id1;
  EXPECT_TRUE(IsMessageIdOf(id2, "again")) << id2;
  EXPECT_NE(id1, id2) << "the new timer reused the old Nats-Msg-Id";
  // Both are in the stream: the second was not dropped as a duplicate.
  long long stored = -1;
  for (int i = 0; i < 500 && (stored = reader.Stored()) < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stored, 2);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
