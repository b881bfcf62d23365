// SPDX-License-Identifier: Apache-2.0
// Large, long-lived arrays backed by transparent huge pages where possible.
#ifndef TICKWHEEL_INTERNAL_HUGE_PAGES_H_
#define TICKWHEEL_INTERNAL_HUGE_PAGES_H_

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tickwheel::internal {

inline constexpr std::size_t kHugePageSize = std::size_t{2} << 20;

// Allocates `bytes` aligned to `alignment`. Blocks of at least one huge
// page are aligned to huge pages and, on Linux, if `huge`, advised to use
// them: random access into tens of megabytes of 4 KiB pages misses the TLB
// on nearly every access, and a TLB miss inside a virtual machine walks two
// sets of page tables. The price: when memory is fragmented, the fault of a
// huge page waits for the kernel to compact memory, so callers ask for it
// where the memory is touched up front or the accesses are random enough
// to pay for it. Free with FreeLarge(p, bytes).
inline void* AllocateLarge(std::size_t bytes, std::size_t alignment,
                           bool huge = true) {
  if (bytes < kHugePageSize) {
    return ::operator new(bytes, std::align_val_t{alignment});
  }
  const std::size_t rounded = (bytes + kHugePageSize - 1) & ~(kHugePageSize - 1);
  void* p = std::aligned_alloc(kHugePageSize, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  return p;
}

inline void FreeLarge(void* p, std::size_t bytes, std::size_t alignment) {
  if (bytes < kHugePageSize) {
    ::operator delete(p, std::align_val_t{alignment});
  } else {
    std::free(p);
  }
}

// A std::allocator replacement that puts large arrays on huge pages.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(AllocateLarge(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    FreeLarge(p, n * sizeof(T), alignof(T));
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_HUGE_PAGES_H_
