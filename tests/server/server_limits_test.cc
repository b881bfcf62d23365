// SPDX-License-Identifier: Apache-2.0
// The real `tickwheel serve` under a flood: connections, request memory,
// bodies that would explode, and running out of file descriptors. It
// answers 503 (or 413) when over a limit, keeps /healthz answering, and
// serves again once the flood is gone.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <fstream>
#include <sstream>

#include "server_test_util.h"
#include "support/raw_connection.h"

namespace tickwheel::testing {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using server::BlockingHttpClient;

std::string Request(const std::string& method, const std::string& target,
                    const std::string& body = "") {
  return RawRequest(method, target, body);
}

// User + system CPU seconds the process `pid` has used.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST(ServerLimitsTest, ConnectionsOverTheLimitAre503ButHealthzAnswers) {
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data", {"--max-connections", "20"});
  ASSERT_TRUE(server.Start());
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<RawConnection>(server.port()));
    held.back()->Send(Request("GET", "/healthz"));
    ASSERT_EQ(RawConnection::StatusOf(held.back()->ReadResponse()), 200) << i;
  }
  RawConnection over(server.port());
  over.Send(Request("POST", "/v1/timers", TimerBody("over", 1000, receiver.url())));
  const std::string refused = over.ReadResponse();
  EXPECT_EQ(RawConnection::StatusOf(refused), 503) << refused;
  EXPECT_NE(refused.find("overloaded"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After"), std::string::npos) << refused;
  RawConnection health(server.port());
  health.Send(Request("GET", "/healthz"));
  EXPECT_EQ(RawConnection::StatusOf(health.ReadResponse()), 200);
  held.resize(10);  // half of them go away
  BlockingHttpClient client(server.address());
  bool created = false;
  for (int i = 0; i < 500 && !created; ++i) {
    created = Call(client, "POST", "/v1/timers", TimerBody("after", 1000, receiver.url())).status == 201;
    if (!created) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(created);
  EXPECT_GE(Metric(client, "tickwheel_http_overloaded_total"), 1);
  held.clear();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// Each HTTP thread serves the connections placed on it (one io_context per
// thread), from the first: three kept-alive connections on three threads
// are each answered, again and again.
TEST(ServerLimitsTest, EveryHttpThreadServesTheConnectionsPlacedOnIt) {
  TempDir dir;
  ServerProcess server(Binary(), dir.path() + "/data", {"--threads", "3"});
  ASSERT_TRUE(server.Start());
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawConnection>(server.port()));
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < held.size(); ++i) {
      held[i]->Send(Request("GET", "/healthz"));
      const std::string answer = held[i]->ReadResponse(std::chrono::seconds(10));
      ASSERT_EQ(RawConnection::StatusOf(answer), 200) << "connection " << i << ": " << answer;
    }
  }
  held.clear();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// Request bodies hold memory from their Content-Length on: a request that
// does not fit is answered 503 before its body is read, /healthz answers
// meanwhile, and it fits again once the first one is done.
TEST(ServerLimitsTest, RequestMemoryIsBoundedAndHealthzAnswersMeanwhile) {
  TempDir dir;
  WebhookReceiver receiver;
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--body-limit", "1048576", "--max-request-memory", "8388608",
                        "--payload-limit", "2097152"});
  ASSERT_TRUE(server.Start());
  const std::string prefix = "{\"id\":\"big\",\"delay_ms\":60000,\"target\":{\"url\":\"" +
                             receiver.url() + "\"},\"payload\":\"";
  std::string body = prefix + std::string(1'000'000 - prefix.size() - 2, 'x') + "\"}";
  const std::string head =
      "POST /v1/timers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n";
  RawConnection slow(server.port());
  slow.Send(head + body.substr(0, 100));  // holds its reservation
  BlockingHttpClient client(server.address());
  bool reserved = false;
  for (int i = 0; i < 500 && !reserved; ++i) {
    reserved = Metric(client, "tickwheel_http_request_memory_bytes") >= 7'000'000;
    if (!reserved) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(reserved);
  RawConnection second(server.port());
  second.Send(head);
  const std::string refused = second.ReadResponse();
  EXPECT_EQ(RawConnection::StatusOf(refused), 503) << refused;
  EXPECT_EQ(Call(client, "GET", "/healthz").status, 200);
  slow.Send(body.substr(100));
  EXPECT_EQ(RawConnection::StatusOf(slow.ReadResponse()), 201);
  // Fits again.
  std::string other = body;
  other.replace(other.find("\"big\""), 5, "\"bi2\"");
  EXPECT_EQ(Call(client, "POST", "/v1/timers", other).status, 201);
  EXPECT_EQ(Metric(client, "tickwheel_http_request_memory_bytes"), 0);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// A body of tiny values would build a JSON tree many times its size.
TEST(ServerLimitsTest, ABodyThatWouldExplodeIsRefusedWithA413) {
  TempDir dir;
  ServerProcess server(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server.Start());
  std::string body = R"({"timers":1,"x":[)";
  for (int i = 0; i < 1'000'000; ++i) body += i ? ",0" : "0";
  body += "]}";
  BlockingHttpClient client(server.address());
  JsonCall c = Call(client, "POST", "/v1/timers:batch", body);
  EXPECT_EQ(c.status, 413) << c.raw;
  EXPECT_EQ(ErrorCode(c), "body_too_complex");
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

// Out of file descriptors, the server pauses accepting instead of spinning
// on the error, and serves again once connections are gone.
TEST(ServerLimitsTest, OutOfFileDescriptorsPausesAcceptingAndRecovers) {
  TempDir dir;
  ServerProcess server(Binary(), dir.path() + "/data");
  server.set_max_open_files(200);
  ASSERT_TRUE(server.Start());
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 400; ++i) flood.push_back(std::make_unique<RawConnection>(server.port()));
  for (int i = 0; i < 1000 && server.log().find("cannot accept connections") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double before = CpuSeconds(server.pid());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = CpuSeconds(server.pid()) - before;
  EXPECT_LT(used, 0.3) << "the accept loop spins on EMFILE";
  EXPECT_NE(server.log().find("cannot accept connections"), std::string::npos) << server.log();
  flood.clear();
  bool healthy = false;
  for (int i = 0; i < 1000 && !healthy; ++i) {
    BlockingHttpClient client(server.address(), std::chrono::seconds(2));
    healthy = client.Call("GET", "/healthz").status == 200;
    if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(healthy);
  EXPECT_EQ(server.Terminate(), 0) << server.log();
}

}  // namespace
}  // namespace tickwheel::testing
