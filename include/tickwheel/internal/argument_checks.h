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
