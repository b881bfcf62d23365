// SPDX-License-Identifier: Apache-2.0
// TimerId names one pending timer of a Wheel or a TimerService.
#ifndef TICKWHEEL_TIMER_ID_H_
#define TICKWHEEL_TIMER_ID_H_

#include <cstddef>
#include <cstdint>
#include <functional>

namespace tickwheel {

namespace internal {
struct TimerIdCodec;
}  // namespace internal

// TimerId is a small value type: a slot index and a generation. A
// default-constructed TimerId is invalid and names no timer. Once a timer has
// fired or been cancelled its id stays stale forever: the owner bumps the
// slot's generation, so Cancel/Reschedule with the old id are refused.
//
// Ids are only meaningful to the Wheel or TimerService that issued them.
class TimerId {
 public:
  constexpr TimerId() = default;

  // False for a default-constructed id. A valid id may still be stale.
  constexpr bool valid() const { return generation_ != 0; }

  // A 64-bit form for logs and hashing; distinct ids have distinct values.
  constexpr std::uint64_t value() const {
    return (std::uint64_t{generation_} << 32) | index_;
  }

  friend constexpr bool operator==(TimerId a, TimerId b) = default;

 private:
  friend struct internal::TimerIdCodec;
  constexpr TimerId(std::uint32_t index, std::uint32_t generation)
      : index_(index), generation_(generation) {}

  std::uint32_t index_ = 0;
  std::uint32_t generation_ = 0;  // 0 only in invalid ids
};

namespace internal {
// The only way to mint or take apart ids; used by the containers that issue
// them (Wheel, TimerService), not by users.
struct TimerIdCodec {
  static constexpr TimerId Make(std::uint32_t index, std::uint32_t generation) {
    return TimerId(index, generation);
  }
  static constexpr std::uint32_t Index(TimerId id) { return id.index_; }
  static constexpr std::uint32_t Generation(TimerId id) {
    return id.generation_;
  }
};
}  // namespace internal

}  // namespace tickwheel

template <>
struct std::hash<tickwheel::TimerId> {
  std::size_t operator()(tickwheel::TimerId id) const noexcept {
    // splitmix64 finalizer: indexes and generations are small and dense.
    std::uint64_t x = id.value() + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(x ^ (x >> 31));
  }
};

#endif  // TICKWHEEL_TIMER_ID_H_
