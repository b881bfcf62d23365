// SPDX-License-Identifier: Apache-2.0
// Constructor argument checks that name what was wrong.
#ifndef TICKWHEEL_INTERNAL_ARGUMENT_CHECKS_H_
#define TICKWHEEL_INTERNAL_ARGUMENT_CHECKS_H_

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "tickwheel/time.h"

namespace tickwheel::internal {

// Each returns its argument, or throws std::invalid_argument with a message
// like "tickwheel::BulkExecutor: max_tasks must be positive, got 0".

inline Duration RequirePositive(Duration value, const char* who,
                                const char* name) {
  if (value <= Duration::zero()) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " + name +
                                " must be positive, got " +
                                std::to_string(value.count()) + "ns");
  }
  return value;
}

inline Duration RequireNotNegative(Duration value, const char* who,
                                   const char* name) {
  if (value < Duration::zero()) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " + name +
                                " must not be negative, got " +
                                std::to_string(value.count()) + "ns");
  }
  return value;
}

inline std::size_t RequirePositive(std::size_t value, const char* who,
                                   const char* name) {
  if (value == 0) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " + name +
                                " must be positive, got 0");
  }
  return value;
}

// In [low, high_excluded); `range` spells that interval for the message:
// "tickwheel::Cache: jitter must be in [0, 1), got 1.000000".
inline double RequireInRange(double value, double low, double high_excluded,
                             const char* range, const char* who,
                             const char* name) {
  if (!(value >= low && value < high_excluded)) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " + name +
                                " must be in " + range + ", got " +
                                std::to_string(value));
  }
  return value;
}

// For two spans that go together (a batch call's keys and delays).
inline void RequireSameSize(std::size_t a, std::size_t b, const char* who,
                            const char* name_a, const char* name_b) {
  if (a != b) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " +
                                name_a + " and " + name_b +
                                " must have the same size, got " +
                                std::to_string(a) + " and " + std::to_string(b));
  }
}

// For std::function and other callables that test false when empty.
template <typename F>
F RequireCallable(F fn, const char* who, const char* name) {
  if (!fn) {
    throw std::invalid_argument(std::string("tickwheel::") + who + ": " + name +
                                " must not be empty");
  }
  return fn;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_ARGUMENT_CHECKS_H_
