// SPDX-License-Identifier: Apache-2.0
// Awaiting blocking work from an HTTP handler coroutine, off the HTTP
// threads: the admin routes' backups and export pages, which take seconds
// or read a page of the store.
#ifndef TICKWHEEL_SERVER_API_BACKGROUND_CALL_H_
#define TICKWHEEL_SERVER_API_BACKGROUND_CALL_H_

#include <boost/asio.hpp>
#include <memory>
#include <type_traits>
#include <utility>

namespace tickwheel::server {

// Runs `fn()` on `pool`; the awaiting coroutine resumes on its own executor
// with what it returned. A plain function, not a coroutine: GCC 12
// mishandles lambdas passed by value to coroutines. REQUIRES: `fn` captures
// by value, or objects that outlive the pool's work (the pool is joined
// before the server's parts are destroyed).
//
//   auto call = BackgroundCall(pool, [&backups, dir] { return backups.Take(dir); });
//   Result<BackupResult> r = co_await std::move(call);  // its own statement (GCC 12)
template <typename Fn>
auto BackgroundCall(boost::asio::thread_pool& pool, Fn fn) {
  using R = std::invoke_result_t<Fn&>;
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
      [&pool, fn = std::move(fn)](auto handler) mutable {
        auto executor = boost::asio::get_associated_executor(handler);
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        boost::asio::post(pool, [h, executor, fn = std::move(fn)]() mutable {
          auto result = std::make_shared<R>(fn());
          boost::asio::post(executor, [h, result]() mutable { std::move(*h)(std::move(*result)); });
        });
      },
      boost::asio::use_awaitable);
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_BACKGROUND_CALL_H_
