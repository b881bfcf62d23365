// SPDX-License-Identifier: Apache-2.0
// ChunkExecutor: executes tasks in batches of about N bytes, or whatever has
// accumulated after an interval.
#ifndef TICKWHEEL_EXECUTORS_CHUNK_EXECUTOR_H_
#define TICKWHEEL_EXECUTORS_CHUNK_EXECUTOR_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/executors/periodical_executor.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/time.h"

namespace tickwheel {

struct ChunkExecutorOptions {
  // A batch is executed as soon as its tasks' sizes add up to this (> 0).
  std::size_t max_bytes = 1024 * 1024;
  // ... or at the latest this long (> 0) after the flusher's previous tick.
  Duration interval = std::chrono::seconds(1);
  // As in PeriodicalExecutorOptions.
  Clock* clock = nullptr;
  std::function<void(std::exception_ptr)> on_error = nullptr;
  bool concurrent_batches = false;
};

// ChunkExecutor is go-zero's ChunkExecutor: each Add says how many bytes its
// task weighs, and `execute` receives a batch as soon as the sizes add up to
// `max_bytes`, so a batch overshoots by at most its last task. Interval
// ticks, Flush, Wait and the destructor take smaller batches. The guarantees
// are PeriodicalExecutor's: every task executed exactly once, in the order
// added; Wait covers every earlier Add; a throwing batch is reported and the
// executor goes on; the destructor executes what is left. Its lock and
// out-of-memory guarantees are BulkExecutor's.
//
// Thread safety: every method may be called from any thread; Add also from
// inside `execute`.
// Cost: Add is an amortized O(1) vector append under a mutex.
//
//   ChunkExecutor<std::string> sender(
//       [&](std::vector<std::string> msgs) { socket.SendAll(msgs); },
//       {.max_bytes = 64 * 1024});
//   sender.Add(msg, msg.size());
template <typename T>
class ChunkExecutor {
 public:
  using Execute = std::function<void(std::vector<T>)>;

  // Throws std::invalid_argument naming the argument if `execute` is empty,
  // max_bytes is 0 or interval is not positive.
  explicit ChunkExecutor(Execute execute, ChunkExecutorOptions options = {})
      : executor_(options.interval,
                  Container(internal::RequireCallable(std::move(execute), kName,
                                                      "execute"),
                            internal::RequirePositive(options.max_bytes, kName,
                                                      "max_bytes")),
                  {.clock = options.clock,
                   .on_error = std::move(options.on_error),
                   .concurrent_batches = options.concurrent_batches},
                  kName) {}

  // Adds a task that weighs `bytes` (any count; 0 is allowed). Otherwise as
  // BulkExecutor's Add, Flush and Wait.
  void Add(T task, std::size_t bytes) {
    executor_.Add(Chunk{std::move(task), bytes});
  }
  bool Flush() { return executor_.Flush(); }
  void Wait() { executor_.Wait(); }

  bool flusher_running() const { return executor_.flusher_running(); }
  // Calls of `execute` that threw (each reported to on_error), since
  // construction.
  std::uint64_t callback_errors() const { return executor_.callback_errors(); }

 private:
  static constexpr const char* kName = "ChunkExecutor";

  struct Chunk {
    T task;
    std::size_t bytes;
  };

  class Container {
   public:
    using Task = Chunk;
    using Batch = std::vector<T>;

    Container(ChunkExecutor::Execute execute, std::size_t max_bytes)
        : execute_(std::move(execute)), max_bytes_(max_bytes) {}

    // By rvalue reference: a task that push_back could not store stays in
    // Add's frame and is destroyed after the executor's lock.
    bool AddTask(Chunk&& chunk) {
      tasks_.push_back(std::move(chunk.task));
      // Saturates instead of wrapping around on absurd sizes.
      bytes_ += std::min(chunk.bytes, SIZE_MAX - bytes_);
      return bytes_ >= max_bytes_;
    }
    Batch RemoveAll() noexcept {
      bytes_ = 0;
      return std::exchange(tasks_, {});
    }
    void Execute(Batch batch) const { execute_(std::move(batch)); }

   private:
    const ChunkExecutor::Execute execute_;
    const std::size_t max_bytes_;
    std::vector<T> tasks_;
    std::size_t bytes_ = 0;  // of tasks_
  };

  PeriodicalExecutor<Container> executor_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_EXECUTORS_CHUNK_EXECUTOR_H_
