// SPDX-License-Identifier: Apache-2.0
// Awaiting a store write from an HTTP handler coroutine.
#ifndef TICKWHEEL_SERVER_API_STORE_WRITE_H_
#define TICKWHEEL_SERVER_API_STORE_WRITE_H_

#include <boost/asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "store/timer_store.h"

namespace tickwheel::server {

// Submits `mutation` over `ids` and resumes the awaiting coroutine, on its
// own executor (never inside Submit), with the write's status once it is
// written. A plain
// function, not a coroutine: GCC 12 mishandles lambdas passed by value to
// coroutines.
//
//   auto write = StoreWrite(store, {id}, mutation, {.sync = true});
//   Status s = co_await std::move(write);   // its own statement (GCC 12)
template <typename Mutation>
auto StoreWrite(TimerStore& store, std::vector<std::string> ids, Mutation mutation,
                WriteOptions options) {
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(Status)>(
      [&store, ids = std::move(ids), mutation = std::move(mutation),
       options](auto handler) mutable {
        auto executor = boost::asio::get_associated_executor(handler);
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        store.Submit(
            std::move(ids), std::move(mutation),
            [h, executor](const Status& s) {
              // defer, not post: when the write ran on this HTTP thread
              // (WriteOptions::may_run_on_caller) the coroutine resumes on
              // it without waking another thread; from a writer thread it
              // is a post.
              boost::asio::defer(executor, [h, s]() mutable { std::move(*h)(s); });
            },
            options);
      },
      boost::asio::use_awaitable);
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_STORE_WRITE_H_
