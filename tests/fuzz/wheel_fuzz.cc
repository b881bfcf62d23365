// SPDX-License-Identifier: Apache-2.0
// Fuzzes Wheel<T> with operation sequences decoded from the input, checked
// against the reference model of tests/wheel_model.h (the one the
// randomized model test uses) and CheckInvariants() after every step.
//
// The input chooses the tick (1 ns to hours, or any positive count), the
// origin (zero, a typical steady_clock reading, near the end of the range,
// or any value), the payload type (int, or a move-only box so ASan sees
// every payload copied, leaked or destroyed twice), the model's mode (spread
// or dense), then every operation: Schedule, Cancel, Reschedule (with stale
// and forged ids), Advance by any jump or to NextDeadline(), callbacks that
// act on the wheel or throw. Deadlines range from the far past to the end
// of the representable time. See wheel_model.h for the oracle.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include "fuzz_source.h"
#include "wheel_model.h"

namespace tickwheel::testing {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr int kMaxSteps = 4000;

template <typename Payload>
void RunModel(FuzzSource source, std::int64_t tick_ns, std::int64_t origin_ns,
              const WheelModelOptions& options) {
  WheelModel<FuzzSource, Payload> model(std::move(source), tick_ns, origin_ns,
                                        options);
  model.Run(kMaxSteps);
  if (model.failed()) FuzzFail("Wheel model: " + model.failure());
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace tickwheel::testing;
  FuzzSource source(data, size);
  static constexpr std::int64_t kTicks[] = {
      1, 7, 1000, 1'000'000, 7'000'000, 1'000'000'000, 3'600'000'000'000};
  const std::int64_t tick_ns =
      source.Uniform(0, 7) == 0 ? source.Uniform(1, kMax) : source.Pick(kTicks);
  std::int64_t origin_ns = 0;
  switch (source.Uniform(0, 3)) {
    case 0:
      origin_ns = 0;
      break;
    case 1:
      origin_ns = 3'600'000'000'000 + source.Uniform(0, 999);
      break;
    case 2:  // near the end of the range, so clamping is exercised
      origin_ns = kMax - source.Uniform(0, std::int64_t{1} << 50);
      break;
    default:
      origin_ns = source.Uniform(std::numeric_limits<std::int64_t>::min(), kMax);
      break;
  }
  const WheelModelOptions options{.dense = source.Bool(),
                                  .check_every_step = true,
                                  .throwing_callbacks = true,
                                  .forged_ids = true,
                                  .raw_deadlines = true};
  if (source.Bool()) {
    RunModel<std::unique_ptr<int>>(std::move(source), tick_ns, origin_ns,
                                   options);
  } else {
    RunModel<int>(std::move(source), tick_ns, origin_ns, options);
  }
  return 0;
}
