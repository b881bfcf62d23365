// SPDX-License-Identifier: Apache-2.0
// TimingWheel's batch calls (SetTimers, MoveTimers, RemoveTimers), checked
// against a plain reference (key -> value and due tick) on manual time:
// random sequences of single and batch calls over a few dozen keys, keys
// repeated within a batch, with the clock moved a tick at a time. Every
// call's result must match the reference, and at every tick exactly the
// keys due then must fire, with their latest values.
#include "tickwheel/timing_wheel.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime_test_util.h"

namespace tickwheel {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;
using testing::EventLog;

constexpr Duration I = seconds(1);  // the wheel's interval
constexpr int kSentinel = -1;
constexpr int kKeys = 48;

class TimingWheelBatchTest : public ::testing::Test {
 protected:
  void Make(std::size_t shards) {
    wheel_ = std::make_unique<TimingWheel<int, int>>(
        I, [this](const int& key, const int& value) { log_.Record({key, value}); },
        TimingWheelOptions{.shards = shards, .clock = &clock_});
  }

  // Everything handed to the worker so far has run once this returns: a
  // sentinel due at once runs after it.
  void Settle() {
    const int mark = ++sentinels_;
    ASSERT_TRUE(wheel_->SetTimer(kSentinel, mark, nanoseconds(0)));
    ASSERT_TRUE(log_.WaitFor(std::pair{kSentinel, mark})) << "sentinel never ran";
  }

  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  // Keys for a batch: some repeated.
  std::vector<int> RandomKeys() {
    std::vector<int> keys(static_cast<std::size_t>(Uniform(0, 40)));
    for (int& k : keys) k = Uniform(0, kKeys - 1);
    return keys;
  }
  std::vector<Duration> RandomDelays(std::size_t n) {
    std::vector<Duration> delays(n);
    for (Duration& d : delays) d = Uniform(1, 12) * I;
    return delays;
  }

  // One random call, single or batch, checked against the reference.
  void RandomCall() {
    switch (Uniform(0, 6)) {
      case 0: {
        const int k = Uniform(0, kKeys - 1), v = Uniform(0, 1000);
        const int d = Uniform(1, 12);
        ASSERT_TRUE(wheel_->SetTimer(k, v, d * I));
        ref_[k] = {v, now_ + d};
        break;
      }
      case 1: {
        const int k = Uniform(0, kKeys - 1), d = Uniform(1, 12);
        ASSERT_EQ(wheel_->MoveTimer(k, d * I), ref_.count(k) == 1);
        if (ref_.count(k)) ref_[k].second = now_ + d;
        break;
      }
      case 2: {
        const int k = Uniform(0, kKeys - 1);
        ASSERT_EQ(wheel_->RemoveTimer(k), ref_.erase(k) == 1);
        break;
      }
      case 3: {
        const std::vector<int> keys = RandomKeys();
        std::vector<int> values(keys.size());
        for (int& v : values) v = Uniform(0, 1000);
        const std::vector<Duration> delays = RandomDelays(keys.size());
        std::vector<int> moved_values = values;
        ASSERT_EQ(wheel_->SetTimers(keys, std::span<int>(moved_values), delays),
                  keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
          ref_[keys[i]] = {values[i], now_ + static_cast<int>(delays[i] / I)};
        }
        break;
      }
      case 4: {
        const std::vector<int> keys = RandomKeys();
        const std::vector<Duration> delays = RandomDelays(keys.size());
        std::unique_ptr<bool[]> results(new bool[keys.size() + 1]);
        const std::size_t moved = wheel_->MoveTimers(
            keys, delays, std::span<bool>(results.get(), keys.size()));
        std::size_t expected = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) {
          const bool present = ref_.count(keys[i]) == 1;
          ASSERT_EQ(results[i], present) << "MoveTimers result " << i;
          if (!present) continue;
          ++expected;
          ref_[keys[i]].second = now_ + static_cast<int>(delays[i] / I);
        }
        ASSERT_EQ(moved, expected);
        break;
      }
      case 5: {
        const std::vector<int> keys = RandomKeys();
        const int d = Uniform(1, 12);
        std::size_t expected = 0;
        for (int k : keys) {
          if (ref_.count(k) == 0) continue;
          ++expected;
          ref_[k].second = now_ + d;
        }
        ASSERT_EQ(wheel_->MoveTimers(keys, d * I), expected);
        break;
      }
      default: {
        const std::vector<int> keys = RandomKeys();
        std::unique_ptr<bool[]> results(new bool[keys.size() + 1]);
        const std::size_t removed = wheel_->RemoveTimers(
            keys, std::span<bool>(results.get(), keys.size()));
        std::size_t expected = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) {
          const bool present = ref_.erase(keys[i]) == 1;
          ASSERT_EQ(results[i], present) << "RemoveTimers result " << i;
          expected += present ? 1 : 0;
        }
        ASSERT_EQ(removed, expected);
        break;
      }
    }
    ASSERT_EQ(wheel_->size(), ref_.size());
  }

  // One interval on; exactly the keys due now fire, with their values.
  void Tick() {
    clock_.Advance(I);
    ++now_;
    Settle();
    std::map<int, int> fired;
    const auto events = log_.events();
    for (; seen_ < events.size(); ++seen_) {
      const auto& [key, value] = events[seen_].event;
      if (key == kSentinel) continue;
      ASSERT_EQ(fired.count(key), 0u) << "key " << key << " fired twice";
      fired[key] = value;
    }
    std::map<int, int> due;
    for (auto it = ref_.begin(); it != ref_.end();) {
      if (it->second.second == now_) {
        due[it->first] = it->second.first;
        it = ref_.erase(it);
      } else {
        ++it;
      }
    }
    ASSERT_EQ(fired, due) << "at tick " << now_;
  }

  ManualClock clock_;
  EventLog<std::pair<int, int>> log_{clock_};
  std::mt19937 rng_{7};
  std::map<int, std::pair<int, int>> ref_;  // key -> (value, due tick)
  int now_ = 0;
  std::size_t seen_ = 0;  // events of log_ checked so far
  int sentinels_ = 0;
  std::unique_ptr<TimingWheel<int, int>> wheel_;  // destroyed first
};

TEST_F(TimingWheelBatchTest, RandomSingleAndBatchCallsMatchTheReference) {
  for (std::size_t shards : {1u, 3u, 8u}) {
    SCOPED_TRACE("shards " + std::to_string(shards));
    Make(shards);
    for (int tick = 0; tick < 150; ++tick) {
      SCOPED_TRACE("tick " + std::to_string(tick));
      for (int call = Uniform(0, 6); call > 0; --call) {
        RandomCall();
        if (HasFatalFailure()) return;
      }
      Tick();
      if (HasFatalFailure()) return;
    }
    wheel_.reset();
    ref_.clear();
    seen_ = log_.size();
  }
}

TEST_F(TimingWheelBatchTest, SpansOfDifferentSizesAreRefused) {
  Make(4);
  const std::vector<int> keys = {1, 2, 3};
  std::vector<int> values = {1, 2};
  const std::vector<Duration> delays = {I, I, I};
  EXPECT_THROW(wheel_->SetTimers(keys, std::span<int>(values), delays),
               std::invalid_argument);
  EXPECT_THROW(wheel_->MoveTimers(keys, std::span<const Duration>(delays).first(2)),
               std::invalid_argument);
  bool results[2];
  EXPECT_THROW(wheel_->RemoveTimers(keys, results), std::invalid_argument);
  EXPECT_EQ(wheel_->size(), 0u);
}

TEST_F(TimingWheelBatchTest, BatchCallsAfterStopChangeNothing) {
  Make(4);
  std::vector<int> keys = {1, 2, 3}, values = {4, 5, 6};
  const std::vector<Duration> delays = {I, I, I};
  ASSERT_EQ(wheel_->SetTimers(keys, std::span<int>(values), delays), 3u);
  wheel_->Stop();
  values = {7, 8, 9};
  EXPECT_EQ(wheel_->SetTimers(keys, std::span<int>(values), delays), 0u);
  bool results[3] = {true, true, true};
  EXPECT_EQ(wheel_->MoveTimers(keys, I, results), 0u);
  EXPECT_FALSE(results[0] || results[1] || results[2]);
  EXPECT_EQ(wheel_->RemoveTimers(keys), 0u);
  EXPECT_EQ(wheel_->size(), 0u);
}

}  // namespace
}  // namespace tickwheel
