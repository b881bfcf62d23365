// SPDX-License-Identifier: Apache-2.0
#include "timer/timer_record.h"

namespace tickwheel::server {
namespace {
constexpr std::string_view kStateNames[kNumStates] = {
    "pending", "delivering", "delivered", "failed", "cancelled"};
}  // namespace

std::string_view StateName(TimerState state) {
  return kStateNames[static_cast<int>(state)];
}

std::optional<TimerState> ParseState(std::string_view name) {
  for (int i = 0; i < kNumStates; ++i) {
    if (kStateNames[i] == name) return static_cast<TimerState>(i);
  }
  return std::nullopt;
}

}  // namespace tickwheel::server
