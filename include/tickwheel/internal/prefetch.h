// SPDX-License-Identifier: Apache-2.0
// A software prefetch the compiler cannot drop.
#ifndef TICKWHEEL_INTERNAL_PREFETCH_H_
#define TICKWHEEL_INTERNAL_PREFETCH_H_

namespace tickwheel::internal {

// Starts loading the cache line at `p` into every level of cache; never
// faults, whatever `p` is. __builtin_prefetch is not enough: GCC 12 counts
// it as having no effect and deletes a loop that does nothing else, which
// silently removed whole prefetch passes (FlatMap's, and the head of
// Wheel's slot walks) until this measured it. An asm statement is kept.
inline void Prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_PREFETCH_H_
