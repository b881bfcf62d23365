// SPDX-License-Identifier: Apache-2.0
// IdLocks (store/id_locks.h): a set is held whole, an id repeated in it
// included, and released whole.
#include "store/id_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace tickwheel::server {
namespace {

using std::chrono_literals::operator""s;

TEST(IdLocksTest, AnIdRepeatedInASetIsHeldUntilTheSetIsReleased) {
  IdLocks locks;
  IdLocks::Held held = locks.Lock({"a", "b", "a"});
  std::atomic<bool> released{false};
  std::atomic<bool> got_it_while_held{false};
  std::thread other([&] {
    IdLocks::Held mine = locks.Lock({"a"});
    if (!released.load()) got_it_while_held = true;
    locks.Unlock(mine);
  });
  released = true;
  locks.Unlock(held);
  other.join();
  EXPECT_FALSE(got_it_while_held);
}

TEST(IdLocksTest, ReleasingASetWithARepeatedIdFreesEveryIdOfIt) {
  IdLocks locks;
  IdLocks::Held held = locks.Lock({"x", "x", "y", "x"});
  locks.Unlock(held);
  auto again = std::async(std::launch::async, [&] {
    IdLocks::Held h = locks.Lock({"y", "x"});
    locks.Unlock(h);
  });
  ASSERT_EQ(again.wait_for(30s), std::future_status::ready);
}

}  // namespace
}  // namespace tickwheel::server
