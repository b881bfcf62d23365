// SPDX-License-Identifier: Apache-2.0
// Uses each layer once through the installed headers and library.
#include <tickwheel/timer_service.h>
#include <tickwheel/timing_wheel.h>
#include <tickwheel/wheel.h>

#include <atomic>
#include <chrono>
#include <cstdio>

int main() {
  using namespace std::chrono_literals;
  tickwheel::ManualClock clock;
  tickwheel::Wheel<int> wheel(1ms, clock.Now());
  wheel.Schedule(clock.Now() + 5ms, 42);
  int fired = 0;
  wheel.Advance(clock.Now() + 5ms, [&](int v) { fired += v; });

  std::atomic<int> keyed{0};
  tickwheel::TimingWheel<int, int> timing(
      1ms, [&](const int&, const int& v) { keyed += v; },
      tickwheel::TimingWheelOptions{.clock = &clock});
  timing.SetTimer(1, 1, 0ms);
  tickwheel::TimerService service(
      tickwheel::TimerServiceOptions{.clock = &clock});
  std::atomic<int> ran{0};
  service.After(0ms, [&] { ++ran; });
  for (int i = 0; i < 10000 && (keyed == 0 || ran == 0); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  std::printf("wheel %d, timing wheel %d, service %d\n", fired, keyed.load(),
              ran.load());
  return fired == 42 && keyed == 1 && ran == 1 ? 0 : 1;
}
