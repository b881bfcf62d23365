// SPDX-License-Identifier: Apache-2.0
// ConnectionBudget: how many webhook connections may be open at once, over
// every host and every thread of the client, so that timers aimed at many
// distinct receivers cannot take every file descriptor of the process.
#ifndef TICKWHEEL_SERVER_DELIVERY_CONNECTION_BUDGET_H_
#define TICKWHEEL_SERVER_DELIVERY_CONNECTION_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// A slot is taken before a connection is made and given back when it is
// closed for good. When none is free, a taker waits in line (first come,
// first served) and is called when a slot is released for it; the budget
// then also asks (`reclaim`) for an idle connection to be closed, so that
// waiting attempts are not held up by connections nobody uses.
//
// Thread safety: every method from any thread; `granted` and `reclaim`
// run on the thread that releases or waits, outside the budget's lock, and
// must only hand the news on (post it).
//
//   if (budget.Acquire([&] { Post(Connect); })) Connect();  // else: waits
//   ... budget.Release();                                   // when closed
class ConnectionBudget {
 public:
  explicit ConnectionBudget(std::size_t limit) : limit_(limit == 0 ? 1 : limit) {}

  // Called, once per waiter that joins the line, to have an idle
  // connection closed somewhere.
  void SetReclaim(std::function<void()> reclaim);

  // True: a slot is the caller's now. False: the caller waits; `granted`
  // will be called when a slot has become its own.
  bool Acquire(std::function<void()> granted);
  // Gives a slot back (to the first in line, if any).
  void Release();
  // Forgets the line (the client is stopping; nobody will be granted).
  void Clear();

  std::size_t limit() const { return limit_; }
  std::size_t in_use() const;
  std::size_t waiting() const;
  // Takers that had to wait, since the start.
  std::uint64_t waited() const;

 private:
  const std::size_t limit_;
  mutable internal::Mutex mutex_;
  std::size_t in_use_ TW_GUARDED_BY(mutex_) = 0;
  std::deque<std::function<void()>> line_ TW_GUARDED_BY(mutex_);
  std::uint64_t waited_ TW_GUARDED_BY(mutex_) = 0;
  std::function<void()> reclaim_;  // set before use
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_CONNECTION_BUDGET_H_
