// SPDX-License-Identifier: Apache-2.0
// HttpServer over several io_contexts, each run by a thread of its own (as
// `tickwheel serve --threads N` runs it): a connection is served on one
// thread for its whole life, and new connections go to the context that
// holds the fewest.
#include "api/http_server.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/blocking_http_client.h"

namespace tickwheel::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// An io_context run by one thread until destroyed.
class ContextThread {
 public:
  ContextThread() : thread_([this] { context_.run(); }) {}
  ~ContextThread() {
    work_.reset();
    context_.stop();
    thread_.join();
  }
  asio::io_context& context() { return context_; }

 private:
  asio::io_context context_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_ =
      asio::make_work_guard(context_);
  std::thread thread_;
};

// Every request is answered with a number naming the thread that served it.
HttpAdmit AnswerWithTheThread() {
  return [](const HttpRequest&) {
    Admission admission;
    admission.handle = [](HttpRequest&) -> asio::awaitable<HttpResponse> {
      co_return JsonResponse(200,
                             std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    };
    return admission;
  };
}

TEST(HttpServerTest, EachConnectionStaysOnOneThreadAndNewOnesGoToTheLeastBusy) {
  ContextThread first;
  ContextThread second;
  HttpServer server({&first.context(), &second.context()},
                    {tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)}, HttpServerOptions{},
                    AnswerWithTheThread());
  server.Start();
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  // One after the other: each is accepted before the next connects, so the
  // counts the next one is placed by are known.
  std::vector<std::unique_ptr<BlockingHttpClient>> clients;
  std::vector<std::string> served_by;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<BlockingHttpClient>(address));
    const HttpCallResult r = clients.back()->Call("GET", "/which");
    ASSERT_EQ(r.status, 200) << r.body;
    served_by.push_back(r.body);
  }
  // 0 -> the first context; 1 -> the second (0 against 1 open); 2 -> the
  // first (1 each, the first wins a tie); 3 -> the second.
  EXPECT_NE(served_by[0], served_by[1]);
  EXPECT_EQ(served_by[2], served_by[0]);
  EXPECT_EQ(served_by[3], served_by[1]);
  // Requests over a kept-alive connection stay where it was placed, while
  // the other connections send theirs too.
  for (int round = 0; round < 20; ++round) {
    for (std::size_t c = 0; c < clients.size(); ++c) {
      const HttpCallResult r = clients[c]->Call("GET", "/which");
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.body, served_by[c]) << "connection " << c << ", round " << round;
    }
  }
  EXPECT_EQ(server.open_connections(), 4u);
  server.StopAccepting();
}

}  // namespace
}  // namespace tickwheel::server
