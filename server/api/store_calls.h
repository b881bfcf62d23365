// SPDX-License-Identifier: Apache-2.0
// How API handlers reach the store: never on the HTTP I/O threads' time,
// and never for longer than a deadline.
//
// The pattern every handler follows (timers, dead letters, stats, flows,
// and the schedule handlers written after them; a blocking call that is
// not a TimerStore call goes through StoreRead if it reads, as
// FlowService's List and Get, and StoreBlockingWrite if it writes, as
// FlowService's Put, Delete and SetPaused):
//
//   // A read: runs on the StoreCalls' pool, never on the HTTP thread.
//   auto read = StoreRead(calls_, [&store = store_, id] { return store.Get(id); });
//   Result<std::optional<TimerRecord>> r = co_await std::move(read);  // its own statement (GCC 12)
//   if (!r.ok()) co_return ErrorResponse(r.status());   // 503 when full or late
//
//   // A write: one mutation on the store's writer threads.
//   auto write = StoreWrite(calls_, {id}, mutation, {.sync = true});
//   Status s = co_await std::move(write);  // its own statement (GCC 12)
//
//   // A write by a blocking call (not a mutation): on the pool, as a write.
//   auto put = StoreBlockingWrite(calls_, [&service = service_, key, s] { return service.Put(key, s); });
//   Result<FlowView> v = co_await std::move(put);  // its own statement (GCC 12)
//
// - A read's callable captures what it uses BY VALUE (or long-lived objects
//   such as the store): it may run after its handler has answered 503 and
//   gone. The same holds for a write's mutation.
// - StoreRead answers kUnavailable "store_unavailable" at once when the
//   read queue is full, and at the deadline (StoreCallOptions::timeout) when
//   the read has not finished; a read still queued then is never run.
// - StoreWrite and StoreBlockingWrite answer kUnavailable "overloaded" at
//   once when max_writes API writes are in flight (--max-writes: timers',
//   schedules' and flow settings' writes all count), and
//   "store_unavailable" at the deadline when the write has not been
//   answered (its outcome is then unknown: it may still be written, as
//   after a broken connection; the client retries with the same id). A
//   write counts until the store has answered it, also after its deadline.
// - Store errors reach the client without their details (database host,
//   user, SQL): those go to the log (api/store_calls.cc, at most one line a
//   second), the answer says what to do.
// - Never call the store directly from a handler: a store that hangs
//   (PostgreSQL paused, a disk that stalls) would stop the HTTP threads, and
//   with them /healthz and every 401. Counts() is the exception: it reads
//   atomics.
#ifndef TICKWHEEL_SERVER_API_STORE_CALLS_H_
#define TICKWHEEL_SERVER_API_STORE_CALLS_H_

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "common/blocking_pool.h"
#include "common/status.h"
#include "store/timer_store.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

struct StoreCallOptions {
  unsigned read_threads = 8;
  std::size_t max_queued_reads = 256;
  std::size_t max_writes = 4096;  // API writes in flight at once
  // A store call is answered within this, or 503.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // A call running longer than this (or a failed one) makes the store
  // "unavailable" in /healthz until one succeeds again.
  std::chrono::milliseconds stall{std::chrono::seconds(2)};
  // With no call finished for this long, the store is probed (a cheap
  // read), so /healthz knows without traffic. 0: no probe.
  std::chrono::milliseconds probe_every{std::chrono::seconds(1)};
};

// The API's way to the store (see the file comment): the read pool, the
// count of API writes in flight, and what they tell of the store's health.
//
// Thread safety: every method from any thread.
class StoreCalls {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // `store` must outlive this.
  StoreCalls(TimerStore& store, StoreCallOptions options = {});
  ~StoreCalls();  // Stop()

  TimerStore& store() { return store_; }
  const StoreCallOptions& options() const { return options_; }

  // False while the last store call failed with kUnavailable, or a call has
  // run longer than options.stall: what /healthz says. Never blocks.
  bool available() const;

  // Runs no more reads (queued ones are dropped); waits for running ones.
  void Stop();

  // For StoreRead and StoreWrite (below).
  bool SubmitRead(SteadyTime deadline, std::function<void()> call) {
    return pool_.Submit(deadline, std::move(call));
  }
  // Counts a write in; false (not counted) over max_writes.
  bool BeginWrite(SteadyTime started);
  void EndWrite(SteadyTime started);
  // Notes a call's outcome for available(), and turns a store error into
  // what the client sees (details logged, at most once a second).
  Status Finish(Status status);
  // The answers at the deadline and when full.
  Status ReadLate() const;
  Status ReadsFull() const;
  Status WriteLate() const;
  Status WritesFull() const;

  std::uint64_t late() const { return late_.load(std::memory_order_relaxed); }
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void Probe();
  void NoteOutcome(bool ok);

  TimerStore& store_;
  const StoreCallOptions options_;
  BlockingPool pool_;
  std::atomic<std::int64_t> last_ok_ns_{0};       // steady ns of the last success
  std::atomic<std::int64_t> last_failure_ns_{0};  // ... and failure (kUnavailable)
  std::atomic<std::int64_t> last_log_ns_{0};
  mutable std::atomic<std::uint64_t> late_{0};
  mutable std::atomic<std::uint64_t> refused_{0};
  mutable internal::Mutex mutex_;
  std::multiset<SteadyTime> writes_ TW_GUARDED_BY(mutex_);  // start times of writes in flight
  std::unique_ptr<internal::PeriodicThread> prober_;
};

namespace store_calls_internal {

// One call's completion, on the awaiting coroutine's executor: the first of
// the answer and the deadline wins.
template <typename Handler, typename R>
struct Op {
  Op(boost::asio::any_io_executor ex, Handler h) : executor(ex), timer(ex), handler(std::move(h)) {}
  void Finish(R r) {
    if (!handler) return;
    Handler h = std::move(*handler);
    handler.reset();
    timer.cancel();
    std::move(h)(std::move(r));
  }
  // Finish on the executor (from any thread).
  static void Post(const std::shared_ptr<Op>& op, R r) {
    boost::asio::post(op->executor, [op, r = std::move(r)]() mutable { op->Finish(std::move(r)); });
  }
  boost::asio::any_io_executor executor;
  boost::asio::steady_timer timer;
  std::optional<Handler> handler;
};

// Counts one write in flight until destroyed (StoreBlockingWrite's: the
// call that holds it may run, or be dropped unrun at its deadline).
struct CountedWrite {
  CountedWrite(StoreCalls& c, StoreCalls::SteadyTime t) : calls(c), started(t) {}
  ~CountedWrite() { calls.EndWrite(started); }
  CountedWrite(const CountedWrite&) = delete;
  CountedWrite& operator=(const CountedWrite&) = delete;
  StoreCalls& calls;
  const StoreCalls::SteadyTime started;
};

}  // namespace store_calls_internal

// Runs `read` (returning a Result<T>) on the read pool; the awaiting
// coroutine resumes on its own executor with its result, or with
// kUnavailable when the queue is full or the deadline passes. A plain
// function, not a coroutine (GCC 12 mishandles lambdas passed by value to
// coroutines). REQUIRES: `read` captures by value (see the file comment).
template <typename Read>
auto StoreRead(StoreCalls& calls, Read read) {
  using R = std::invoke_result_t<Read&>;
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
      [&calls, read = std::move(read)](auto handler) mutable {
        using Op = store_calls_internal::Op<decltype(handler), R>;
        auto op = std::make_shared<Op>(boost::asio::get_associated_executor(handler),
                                       std::move(handler));
        const auto deadline = std::chrono::steady_clock::now() + calls.options().timeout;
        op->timer.expires_at(deadline);
        op->timer.async_wait([op, &calls](const boost::system::error_code& ec) {
          if (!ec) op->Finish(R(calls.ReadLate()));
        });
        const bool queued = calls.SubmitRead(deadline, [op, &calls, read = std::move(read)]() mutable {
          R result = read();
          if (!result.ok()) result = R(calls.Finish(result.status()));
          else (void)calls.Finish(Status::Ok());
          Op::Post(op, std::move(result));
        });
        if (!queued) Op::Post(op, R(calls.ReadsFull()));
      },
      boost::asio::use_awaitable);
}

// Submits `mutation` over `ids` to the store's writers; the awaiting
// coroutine resumes on its own executor with the write's status, or with
// kUnavailable when max_writes are in flight or the deadline passes. A
// plain function, not a coroutine (GCC 12).
template <typename Mutation>
auto StoreWrite(StoreCalls& calls, std::vector<std::string> ids, Mutation mutation,
                WriteOptions options) {
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(Status)>(
      [&calls, ids = std::move(ids), mutation = std::move(mutation),
       options](auto handler) mutable {
        using Op = store_calls_internal::Op<decltype(handler), Status>;
        auto op = std::make_shared<Op>(boost::asio::get_associated_executor(handler),
                                       std::move(handler));
        const auto started = std::chrono::steady_clock::now();
        if (!calls.BeginWrite(started)) {
          Op::Post(op, calls.WritesFull());
          return;
        }
        op->timer.expires_at(started + calls.options().timeout);
        op->timer.async_wait([op, &calls](const boost::system::error_code& ec) {
          if (!ec) op->Finish(calls.WriteLate());
        });
        calls.store().Submit(
            std::move(ids), std::move(mutation),
            [op, &calls, started](const Status& s) {
              calls.EndWrite(started);
              Status answer = calls.Finish(s);
              // defer, not post: when the write ran on this HTTP thread
              // (WriteOptions::may_run_on_caller) the coroutine resumes on
              // it without waking another thread; from a writer thread it
              // is a post.
              boost::asio::defer(op->executor, [op, answer = std::move(answer)]() mutable {
                op->Finish(std::move(answer));
              });
            },
            options);
      },
      boost::asio::use_awaitable);
}

// Runs `write` (a blocking call returning a Result<T> that writes the
// store by other means than a mutation: FlowService's settings) as a
// write: counted against max_writes (kUnavailable "overloaded" at once over
// it) until it has run, on the read pool's threads ("overloaded" when their
// queue is full), answered at the deadline as StoreWrite's are (the
// outcome unknown). A plain function, not a coroutine (GCC 12).
// REQUIRES: `write` captures by value (see the file comment).
template <typename Write>
auto StoreBlockingWrite(StoreCalls& calls, Write write) {
  using R = std::invoke_result_t<Write&>;
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
      [&calls, write = std::move(write)](auto handler) mutable {
        using Op = store_calls_internal::Op<decltype(handler), R>;
        auto op = std::make_shared<Op>(boost::asio::get_associated_executor(handler),
                                       std::move(handler));
        const auto started = std::chrono::steady_clock::now();
        if (!calls.BeginWrite(started)) {
          Op::Post(op, R(calls.WritesFull()));
          return;
        }
        auto counted = std::make_shared<store_calls_internal::CountedWrite>(calls, started);
        const auto deadline = started + calls.options().timeout;
        op->timer.expires_at(deadline);
        op->timer.async_wait([op, &calls](const boost::system::error_code& ec) {
          if (!ec) op->Finish(R(calls.WriteLate()));
        });
        const bool queued = calls.SubmitRead(
            deadline, [op, &calls, counted = std::move(counted), write = std::move(write)]() mutable {
              R result = write();
              counted.reset();
              if (!result.ok()) result = R(calls.Finish(result.status()));
              else (void)calls.Finish(Status::Ok());
              Op::Post(op, std::move(result));
            });
        if (!queued) Op::Post(op, R(calls.ReadsFull()));
      },
      boost::asio::use_awaitable);
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_STORE_CALLS_H_
