// SPDX-License-Identifier: Apache-2.0
// A bound on how long a test step may take, so that a deadlock (a user
// destructor calling back into a tickwheel object that still holds its
// lock) is a clean test failure, not a hung CI job.
#ifndef TICKWHEEL_TESTS_WATCHDOG_H_
#define TICKWHEEL_TESTS_WATCHDOG_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <thread>
#include <utility>

#include "runtime_test_util.h"

namespace tickwheel::testing {

// Runs `body` on a thread of its own and waits up to `limit` for it. If it
// has not returned by then, it is taken to be deadlocked: the failure is
// written to stderr and the test process exits with status 1 (a deadlocked
// thread cannot be joined, so the test cannot go on; the other tests of
// the binary run in processes of their own under ctest). Failed gtest
// assertions inside `body` count as usual; an exception it throws is
// rethrown here.
template <typename F>
void WithinDeadline(const char* what, F&& body,
                    std::chrono::seconds limit = kPatience) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread runner([&] {
    try {
      body();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr,
                 "DEADLOCK: %s did not return within %lld s (a thread waiting "
                 "for a lock it holds itself, or one that never blocks?)\n",
                 what, static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  finished.get();
}

// An object whose destructor runs `fn` (once: a moved-from one runs
// nothing). Owned by a value or a callback, it stands for a handle that
// calls back into the container that holds it when it goes away.
class OnDestroy {
 public:
  OnDestroy() = default;
  explicit OnDestroy(std::function<void()> fn) : fn_(std::move(fn)) {}
  OnDestroy(OnDestroy&& other) noexcept : fn_(std::exchange(other.fn_, {})) {}
  OnDestroy& operator=(OnDestroy&& other) noexcept {
    if (this != &other) {
      Run();
      fn_ = std::exchange(other.fn_, {});
    }
    return *this;
  }
  ~OnDestroy() { Run(); }

 private:
  void Run() {
    if (std::function<void()> fn = std::exchange(fn_, {})) fn();
  }
  std::function<void()> fn_;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_WATCHDOG_H_
