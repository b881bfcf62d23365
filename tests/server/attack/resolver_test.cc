// SPDX-License-Identifier: Apache-2.0
// A name server that stops answering (docs/server.md's "Threat model"):
// the HTTP threads never wait on DNS, and the resolver stays bounded.
// Each test failed on the build before its fix.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "attack/attack_util.h"
#include "delivery/webhook_client.h"
#include "timer/http_url.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// The HTTP threads never wait on DNS, and the resolver stays bounded.

// A name server that stops answering: lookups of the names it hangs never
// return until the test lets them. Create-time checks (the resolver's
// check lane) cannot take the threads deliveries need; a name answered
// before is still delivered to once its answer expired (the old answer is
// used while it is looked up again); the lanes' queues and the cache stay
// within their limits; lookups that time out are counted.
TEST(ResolverTest, ANameServerThatStopsAnsweringDoesNotDelayDeliveriesToKnownHosts) {
  using server::AttemptResult;
  using server::DnsResolver;
  using server::WebhookClient;
  using server::WebhookClientOptions;
  using server::WebhookRequest;
  WebhookReceiver receiver;
  struct Dns {
    std::mutex mutex;
    std::condition_variable cv;
    bool hang_all = false;
    bool released = false;
  } dns;
  WebhookClientOptions options;
  options.timeout = seconds(2);
  options.dns.ttl = seconds(1);
  options.dns.failure_ttl = seconds(1);
  options.dns.max_entries = 100;
  options.dns.max_queued = 64;
  options.dns.stale_grace = milliseconds(200);
  options.dns.lookup = [&dns](const std::string& host, const std::string& port)
      -> server::Result<DnsResolver::Endpoints> {
    std::unique_lock lock(dns.mutex);
    if (dns.hang_all || host.rfind("check-", 0) == 0 || host.rfind("blackhole-", 0) == 0) {
      dns.cv.wait(lock, [&] { return dns.released; });
      return server::Status::Unavailable("the test's name server gave up");
    }
    return DnsResolver::Endpoints{boost::asio::ip::tcp::endpoint(
        boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::stoi(port)))};
  };
  auto release = [&dns] {
    std::lock_guard lock(dns.mutex);
    dns.released = true;
    dns.cv.notify_all();
  };
  struct Release {
    std::function<void()> f;
    ~Release() { f(); }
  } release_at_end{release};
  WebhookClient client(options);
  auto request = [&](const std::string& host) {
    WebhookRequest r;
    r.url = *server::ParseHttpUrl("http://" + host + ":" + std::to_string(receiver.port()) + "/h");
    r.body = "{}";
    return r;
  };
  auto post_and_wait = [&](const std::string& host) {
    std::promise<AttemptResult> done;
    client.Post(request(host), [&](AttemptResult r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  };
  const std::string port = std::to_string(receiver.port());
  ASSERT_EQ(post_and_wait("good.test").kind, AttemptResult::Kind::kDelivered);

  // A batch of creates names 500 hosts under a zone that never answers.
  std::atomic<int> check_answers{0};
  for (int i = 0; i < 500; ++i) {
    client.resolver().Resolve("check-" + std::to_string(i) + ".test", port,
                              [&](const server::Result<DnsResolver::Endpoints>&) { ++check_answers; },
                              DnsResolver::Lane::kCheck);
  }
  // The check lane's queue is bounded: what does not fit is answered at once.
  EXPECT_GE(check_answers.load(), 500 - 64 - 4);
  EXPECT_GT(client.resolver().refused(), 0u);
  // A delivery to a name never looked up before is not stuck behind them.
  auto start = SteadyClock::now();
  AttemptResult fresh = post_and_wait("fresh.test");
  EXPECT_EQ(fresh.kind, AttemptResult::Kind::kDelivered) << fresh.error;
  EXPECT_LT(MsSince(start), 1000);

  // Now the name server answers nothing at all, and deliveries to names it
  // never answered fill the delivery lane.
  {
    std::lock_guard lock(dns.mutex);
    dns.hang_all = true;
  }
  std::atomic<int> blackholed{0};
  std::vector<std::string> blackhole_errors;
  std::mutex errors_mutex;
  for (int i = 0; i < 20; ++i) {
    client.Post(request("blackhole-" + std::to_string(i) + ".test"), [&](AttemptResult r) {
      std::lock_guard lock(errors_mutex);
      blackhole_errors.push_back(r.error);
      ++blackholed;
    });
  }
  std::this_thread::sleep_for(milliseconds(1200));  // good.test's answer expires (ttl 1 s)
  start = SteadyClock::now();
  AttemptResult known = post_and_wait("good.test");
  EXPECT_EQ(known.kind, AttemptResult::Kind::kDelivered) << known.error;
  AttemptResult literal = post_and_wait("127.0.0.1");
  EXPECT_EQ(literal.kind, AttemptResult::Kind::kDelivered) << literal.error;
  EXPECT_LT(MsSince(start), 1000) << "deliveries to known hosts waited for the name server";
  EXPECT_GT(client.resolver().stale_answers(), 0u);
  // The black-holed deliveries end at their timeout, counted.
  for (int i = 0; i < 500 && blackholed.load() < 20; ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(blackholed.load(), 20);
  EXPECT_GE(client.resolver().timeouts(), 20u);

  // The name server is back. The cache holds at most max_entries names,
  // however many are looked up.
  {
    std::lock_guard lock(dns.mutex);
    dns.hang_all = false;
  }
  release();
  for (int i = 0; i < 300; ++i) {
    std::promise<void> answered;
    client.resolver().Resolve("n-" + std::to_string(i) + ".test", port,
                              [&](const server::Result<DnsResolver::Endpoints>&) { answered.set_value(); });
    answered.get_future().wait();
  }
  EXPECT_LE(client.resolver().cached_names(), 100u);
  client.Stop();
}

// A name server that receives queries and answers none (a black-holed
// zone) until Release: then it answers each held query, and every later
// one, SERVFAIL. It listens on UDP port 53 of a loopback address of its
// own (127.53.x.y: glibc's resolv.conf takes no port).
class BlackHoleNameServer {
 public:
  BlackHoleNameServer() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    std::random_device rd;
    for (int i = 0; i < 50 && address_.empty(); ++i) {
      const std::string a = "127.53." + std::to_string(rd() % 250 + 1) + "." + std::to_string(rd() % 250 + 1);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(53);
      inet_pton(AF_INET, a.c_str(), &sa.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) address_ = a;
    }
    if (!address_.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~BlackHoleNameServer() {
    Release();
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  const std::string& address() const { return address_; }  // empty: could not bind
  // Queries received for names containing `part`.
  int QueriesFor(const std::string& part) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const Query& q : queries_) n += q.name.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
  void Release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    for (const Query& q : queries_) Refuse(q);
  }

 private:
  struct Query {
    std::string packet, name;
    sockaddr_in from{};
  };
  void Refuse(const Query& q) {
    std::string answer = q.packet;
    answer[2] = static_cast<char>(answer[2] | 0x80);         // a response
    answer[3] = static_cast<char>((answer[3] & 0xF0) | 2);   // SERVFAIL
    sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<const sockaddr*>(&q.from), sizeof q.from);
  }
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[512];
      Query q;
      socklen_t len = sizeof q.from;
      const ssize_t n = recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&q.from), &len);
      if (n < 12) continue;
      q.packet.assign(buf, static_cast<std::size_t>(n));
      for (std::size_t i = 12; i < q.packet.size() && q.packet[i] != 0; i += 1 + static_cast<unsigned char>(q.packet[i])) {
        q.name += q.packet.substr(i + 1, static_cast<unsigned char>(q.packet[i])) + ".";
      }
      std::lock_guard lock(mutex_);
      if (released_) Refuse(q);
      queries_.push_back(std::move(q));
    }
  }

  int fd_ = -1;
  std::string address_;
  std::mutex mutex_;
  std::vector<Query> queries_;
  bool released_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The real server, its name server black-holed (its own /etc/resolv.conf,
// bind-mounted in a mount namespace of its own, names the server above):
// every lookup that an attempt or a create gave up on is counted in
// tickwheel_dns_lookup_timeouts_total, one each; deliveries to a literal
// address are not delayed and count nothing.
TEST(ResolverTest, LookupsThatTimeOutAreCountedInMetrics) {
  ASSERT_EQ(geteuid(), 0u) << "needs root: a mount namespace for the server's own resolv.conf";
  BlackHoleNameServer dns;
  ASSERT_FALSE(dns.address().empty()) << "no 127.53.x.y:53 to listen on";
  TempDir dir;
  WebhookReceiver receiver;
  WriteFile(dir.path() + "/resolv.conf", "nameserver " + dns.address() + "\noptions timeout:30 attempts:1\n");
  WriteFile(dir.path() + "/tickwheel",
            "#!/bin/sh\nexec unshare --mount sh -c 'mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"' " +
                dir.path() + "/resolv.conf " + Binary() + " \"$@\"\n");
  std::filesystem::permissions(dir.path() + "/tickwheel", std::filesystem::perms::owner_all);
  ServerProcess server(dir.path() + "/tickwheel", dir.path() + "/data", {"--delivery-timeout", "1s"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient client(server.address(), seconds(30));
  EXPECT_EQ(Metric(client, "tickwheel_dns_lookup_timeouts_total"), 0);
  // Two timers to names the name server never answers (two: the check
  // lane has two threads, so each name's lookup is sent; a third would wait
  // in the lane's queue): each create's check gives up on its lookup (2 s),
  // then each one's only attempt (--delivery-timeout 1 s): four lookups
  // timed out.
  constexpr int kNames = 2;
  for (int i = 0; i < kNames; ++i) {
    const std::string url = "http://bh-" + std::to_string(i) + ".blackhole.test:" +
                            std::to_string(receiver.port()) + "/h";
    const JsonCall c = Call(client, "POST", "/v1/timers",
                            TimerBody("bh-" + std::to_string(i), 0, url, R"("retry":{"max_attempts":1})"));
    ASSERT_EQ(c.status, 201) << c.raw;
  }
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("literal", 0, receiver.url())).status, 201);
  ASSERT_TRUE(receiver.WaitFor(1, seconds(10)));
  for (int i = 0; i < kNames; ++i) {
    const std::string id = "bh-" + std::to_string(i);
    JsonCall t;
    for (int j = 0; j < 1500 && State(t = Call(client, "GET", "/v1/timers/" + id)) != "failed"; ++j) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_EQ(State(t), "failed") << t.raw;
    EXPECT_NE(std::string(t.body.at("last_error").as_string()).find("name lookup of " + id + ".blackhole.test timed out"),
              std::string::npos) << t.raw;
    EXPECT_GT(dns.QueriesFor(id + ".blackhole.test"), 0) << "the lookup never reached the test's name server";
  }
  EXPECT_EQ(Metric(client, "tickwheel_dns_lookup_timeouts_total"), 2 * kNames);
  EXPECT_EQ(receiver.count(), 1u);
  // The name server answers again (SERVFAIL), so that no lookup holds the
  // server's stop.
  dns.Release();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
