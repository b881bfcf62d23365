// SPDX-License-Identifier: Apache-2.0
// A test-only allocation-failure injector, and the sweep built on it. A
// test binary that includes this header must define the replacement
// operator new in exactly one of its sources with
// TICKWHEEL_DEFINE_ALLOC_INJECTOR (as alloc/injector_and_wheel_test.cc does).
//
// How it works: the binary replaces operator new (every form: plain,
// aligned, nothrow, array) with one that asks ShouldFail() first and then
// allocates with malloc (aligned_alloc). Failures are injected two ways:
// - FailNth(n): the n-th allocation (0-based) that the calling thread makes
//   while the FailNth lives throws std::bad_alloc. The count is per thread,
//   so the library's own threads, allocating at the same time, do not shift
//   it: sweeping n over a public call fails each of its allocations in turn.
// - FailOthers(k): the next k allocations made by any thread but the
//   calling one fail: the library's timer threads, workers and flushers.
//
// Under ASan: ASan's runtime defines operator new as well, and the
// executable's definitions take precedence over it; the memory still comes
// from ASan's malloc, so overflows, use-after-free and leaks are caught as
// before (only the new/delete mismatch check is lost). InjectorIsInUse
// (alloc/injector_and_wheel_test.cc) checks that the replacement is the one
// called, in whichever build runs it. Not built under TSan, whose runtime defines the
// aligned operator new too (as for wheel_fault_test).
#ifndef TICKWHEEL_TESTS_ALLOC_INJECTOR_H_
#define TICKWHEEL_TESTS_ALLOC_INJECTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace tickwheel::testing::alloc {

struct ThreadState {
  long fail_at = -1;       // allocations left before one fails; -1: never
  bool failed = false;     // FailNth made one fail
  bool exempt = false;     // FailOthers spares this thread (it armed it)
};
ThreadState& This();
std::atomic<long>& OthersToFail();  // the next allocations of other threads
std::atomic<long>& OthersFailed();  // failures injected on other threads

// Whether the allocation being made now must fail.
inline bool ShouldFail() {
  ThreadState& t = This();
  if (t.fail_at >= 0 && t.fail_at-- == 0) {
    t.failed = true;
    return true;
  }
  if (!t.exempt && OthersToFail().load(std::memory_order_relaxed) > 0 &&
      OthersToFail().fetch_sub(1) > 0) {
    OthersFailed().fetch_add(1);
    return true;
  }
  return false;
}

// While it lives, this thread's n-th allocation from now (0-based) fails.
class FailNth {
 public:
  explicit FailNth(long n) {
    This().failed = false;
    This().fail_at = n;
  }
  ~FailNth() { This().fail_at = -1; }
  FailNth(const FailNth&) = delete;
  FailNth& operator=(const FailNth&) = delete;
  // Whether the n-th allocation came (and failed).
  bool failed() const { return This().failed; }
};

// While it lives, the next k allocations of the other threads fail.
class FailOthers {
 public:
  explicit FailOthers(long k) {
    This().exempt = true;
    OthersFailed().store(0);
    OthersToFail().store(k);
  }
  ~FailOthers() {
    OthersToFail().store(0);
    This().exempt = false;
  }
  FailOthers(const FailOthers&) = delete;
  FailOthers& operator=(const FailOthers&) = delete;
  // How many of the k have failed so far.
  long failed() const { return OthersFailed().load(); }
};

}  // namespace tickwheel::testing::alloc

#ifdef TICKWHEEL_DEFINE_ALLOC_INJECTOR

namespace tickwheel::testing::alloc {
ThreadState& This() {
  thread_local ThreadState state;
  return state;
}
std::atomic<long>& OthersToFail() {
  static std::atomic<long> n{0};
  return n;
}
std::atomic<long>& OthersFailed() {
  static std::atomic<long> n{0};
  return n;
}
}  // namespace tickwheel::testing::alloc

namespace {
void* Allocate(std::size_t n) {
  if (tickwheel::testing::alloc::ShouldFail()) throw std::bad_alloc();
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* AllocateAligned(std::size_t n, std::align_val_t alignment) {
  if (tickwheel::testing::alloc::ShouldFail()) throw std::bad_alloc();
  std::size_t align = static_cast<std::size_t>(alignment);
  if (align < sizeof(void*)) align = sizeof(void*);
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return Allocate(n); }
void* operator new[](std::size_t n) { return Allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return Allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return Allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a) {
  return AllocateAligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return AllocateAligned(n, a);
}
void* operator new(std::size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(n, a);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

#endif  // TICKWHEEL_DEFINE_ALLOC_INJECTOR

#endif  // TICKWHEEL_TESTS_ALLOC_INJECTOR_H_
