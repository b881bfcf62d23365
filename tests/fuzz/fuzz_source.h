// SPDX-License-Identifier: Apache-2.0
// Choices decoded from a fuzzer's input, for the operation-sequence fuzzers.
#ifndef TICKWHEEL_TESTS_FUZZ_FUZZ_SOURCE_H_
#define TICKWHEEL_TESTS_FUZZ_FUZZ_SOURCE_H_

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace tickwheel::testing {

// FuzzSource hands out integers in a range, decoded from the input; once the
// input is used up every choice is the range's low end and done() is true.
// It has the interface of RandomSource (wheel_model.h), so one model serves
// the randomized tests and the fuzzers.
class FuzzSource {
 public:
  FuzzSource(const std::uint8_t* data, std::size_t size)
      : input_(std::make_unique<FuzzedDataProvider>(data, size)) {}

  // With TICKWHEEL_FUZZ_TRACE=1 every choice is printed (lo, hi, value):
  // to check what an input decodes to, e.g. a seed of make_seeds.py.
  std::int64_t Uniform(std::int64_t lo, std::int64_t hi) {
    const auto v = input_->ConsumeIntegralInRange<std::int64_t>(lo, hi);
    if (Trace()) {
      std::fprintf(stderr, "choice [%lld, %lld] -> %lld\n", static_cast<long long>(lo),
                   static_cast<long long>(hi), static_cast<long long>(v));
    }
    return v;
  }
  bool Bool() { return Uniform(0, 255) & 1; }  // as ConsumeBool
  // One of `values`, by index.
  template <typename T, std::size_t N>
  T Pick(const T (&values)[N]) {
    return values[Uniform(0, static_cast<std::int64_t>(N) - 1)];
  }
  bool done() const { return input_->remaining_bytes() == 0; }
  // For the provider's other decoders (strings, remaining bytes).
  FuzzedDataProvider& input() { return *input_; }

 private:
  static bool Trace() {
    static const bool trace = [] {
      const char* t = std::getenv("TICKWHEEL_FUZZ_TRACE");
      return t != nullptr && t[0] == '1';
    }();
    return trace;
  }

  std::unique_ptr<FuzzedDataProvider> input_;  // movable, unlike the provider
};

// Reports an oracle's failure so that libFuzzer keeps the input: prints
// `what` and aborts.
[[noreturn]] inline void FuzzFail(const std::string& what) {
  std::fprintf(stderr, "FUZZ ORACLE FAILED: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_FUZZ_FUZZ_SOURCE_H_
