// SPDX-License-Identifier: Apache-2.0
// Test helper: records the batches an executor runs, from any thread.
#ifndef TICKWHEEL_TESTS_EXECUTORS_BATCH_RECORDER_H_
#define TICKWHEEL_TESTS_EXECUTORS_BATCH_RECORDER_H_

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace tickwheel::test_support {

template <typename T>
class BatchRecorder {
 public:
  // An `execute` callback for BulkExecutor<T> / ChunkExecutor<T>.
  std::function<void(std::vector<T>)> Callback() {
    return [this](std::vector<T> batch) { Record(std::move(batch)); };
  }

  void Record(std::vector<T> batch) {
    std::lock_guard lock(mutex_);
    batches_.push_back(std::move(batch));
  }

  std::vector<std::size_t> sizes() const {
    std::lock_guard lock(mutex_);
    std::vector<std::size_t> sizes;
    for (const auto& batch : batches_) sizes.push_back(batch.size());
    return sizes;
  }

  // Every task of every batch, in execution order.
  std::vector<T> tasks() const {
    std::lock_guard lock(mutex_);
    std::vector<T> all;
    for (const auto& batch : batches_) {
      all.insert(all.end(), batch.begin(), batch.end());
    }
    return all;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::vector<T>> batches_;
};

// 0, 1, ..., n - 1.
inline std::vector<int> Iota(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace tickwheel::test_support

#endif  // TICKWHEEL_TESTS_EXECUTORS_BATCH_RECORDER_H_
