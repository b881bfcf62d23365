// SPDX-License-Identifier: Apache-2.0
// Running a call that blocks (on the store, on the database) from an HTTP
// handler coroutine, off the I/O threads.
#ifndef TICKWHEEL_SERVER_API_BLOCKING_CALL_H_
#define TICKWHEEL_SERVER_API_BLOCKING_CALL_H_

#include <atomic>
#include <boost/asio.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "common/status.h"

namespace tickwheel::server {

// A few threads for the handlers' blocking calls, with a bounded queue: a
// call beyond kMaxQueued is refused (503 overloaded) rather than queued.
// Thread safety: Run from any thread.
class BlockingCalls {
 public:
  static constexpr int kMaxQueued = 64;
  explicit BlockingCalls(std::size_t threads = 2) : pool_(threads) {}
  ~BlockingCalls() { pool_.join(); }

  // Runs `fn` (returning a Result<T>) on the pool and resumes the awaiting
  // coroutine on its own executor with the result. A plain function, not a
  // coroutine (GCC 12 mishandles lambdas passed by value to coroutines).
  //
  //   auto call = calls.Run([&] { return service.Get(key); });
  //   Result<FlowView> v = co_await std::move(call);   // its own statement
  template <typename Fn>
  auto Run(Fn fn) {
    using R = decltype(fn());
    return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(std::optional<R>)>(
        [this, fn = std::move(fn)](auto handler) mutable {
          auto executor = boost::asio::get_associated_executor(handler);
          auto h = std::make_shared<decltype(handler)>(std::move(handler));
          if (queued_.fetch_add(1) >= kMaxQueued) {
            queued_.fetch_sub(1);
            boost::asio::post(executor, [h]() mutable {
              std::move(*h)(std::optional<R>(R(Status(StatusCode::kUnavailable, "overloaded",
                                                      "too many calls waiting for the store; "
                                                      "try again"))));
            });
            return;
          }
          boost::asio::post(pool_, [this, h, executor, fn = std::move(fn)]() mutable {
            queued_.fetch_sub(1);
            std::optional<R> r(fn());
            boost::asio::post(executor, [h, r = std::move(r)]() mutable {
              std::move(*h)(std::move(r));
            });
          });
        },
        boost::asio::use_awaitable);
  }

 private:
  boost::asio::thread_pool pool_;
  std::atomic<int> queued_{0};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_BLOCKING_CALL_H_
