// Allocation failures inside the wheel: this binary replaces the aligned
// operator new (which the wheel's slot vectors use) with one that can be
// told to fail, so it has its own executable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <vector>

#include "tickwheel/wheel.h"

namespace {
int fail_after = -1;  // allocations left before one fails; -1: never
}  // namespace

void* operator new(std::size_t n, std::align_val_t alignment) {
  if (fail_after >= 0 && fail_after-- == 0) throw std::bad_alloc();
  const std::size_t align = std::max<std::size_t>(
      static_cast<std::size_t>(alignment), sizeof(void*));
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace tickwheel {
namespace {

using std::chrono::nanoseconds;

// A callback throws, and re-filing the slot's other timers then runs out of
// memory at some allocation: nothing is lost, the structure stays sound, and
// the next Advance fires every timer that is left.
TEST(WheelFaultTest, OutOfMemoryWhileRefilingAfterAThrowLosesNoTimer) {
  for (int failing = 0; failing < 6; ++failing) {
    SCOPED_TRACE("allocation " + std::to_string(failing) + " fails");
    const TimePoint origin{};
    Wheel<int> wheel(nanoseconds(1), origin);
    for (int d : {128, 130, 131, 132}) wheel.Schedule(origin + nanoseconds(d), d);
    wheel.Advance(origin + nanoseconds(64), [](int) {});
    std::vector<int> fired;
    try {
      wheel.Advance(origin + nanoseconds(200), [&](int d) {
        fail_after = failing;
        throw std::runtime_error("boom " + std::to_string(d));
      });
    } catch (const std::exception&) {
    }
    fail_after = -1;
    ASSERT_NO_THROW(wheel.CheckInvariants());
    EXPECT_EQ(wheel.size(), 3u);
    wheel.Advance(origin + nanoseconds(1000),
                  [&](int d) { fired.push_back(d); });
    EXPECT_EQ(fired.size(), 3u);
    EXPECT_TRUE(wheel.empty());
    ASSERT_NO_THROW(wheel.CheckInvariants());
  }
}

}  // namespace
}  // namespace tickwheel
