// SPDX-License-Identifier: Apache-2.0
// A move-only `void()` callable: one batch of an executor, ready to run.
#ifndef TICKWHEEL_INTERNAL_BATCH_JOB_H_
#define TICKWHEEL_INTERNAL_BATCH_JOB_H_

#include <memory>
#include <type_traits>
#include <utility>

namespace tickwheel::internal {

// BatchJob owns a callable that may be move-only (a batch of move-only
// tasks), which std::function cannot hold before C++23. An empty BatchJob
// means "nothing to run".
//
// Cost: one allocation per job (per batch, never per task).
class BatchJob {
 public:
  BatchJob() = default;

  template <typename F>
  requires(!std::is_same_v<std::decay_t<F>, BatchJob> &&
           std::is_invocable_v<std::decay_t<F>&>) explicit BatchJob(F&& f)
      : impl_(std::make_unique<Impl<std::decay_t<F>>>(std::forward<F>(f))) {}

  // Makes this job own an F built from `args`, and returns it, for the
  // caller to fill in before the job runs: the job's allocation can come
  // before what it will own is taken from where it was. Throws
  // std::bad_alloc with this job unchanged.
  template <typename F, typename... Args>
  requires std::is_invocable_v<F&> F& Emplace(Args&&... args) {
    auto impl = std::make_unique<Impl<F>>(std::forward<Args>(args)...);
    F& f = impl->f;
    impl_ = std::move(impl);
    return f;
  }

  explicit operator bool() const { return impl_ != nullptr; }

  // REQUIRES: not empty. Runs the callable (which may throw).
  void operator()() { impl_->Run(); }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual void Run() = 0;
  };
  template <typename F>
  struct Impl final : Base {
    template <typename... G>
    explicit Impl(G&&... g) : f(std::forward<G>(g)...) {}
    void Run() override { f(); }
    F f;
  };

  std::unique_ptr<Base> impl_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_BATCH_JOB_H_
