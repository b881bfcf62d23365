// SPDX-License-Identifier: Apache-2.0
// A mutex, a scoped lock and a condition variable that clang's thread-safety
// analysis understands (-Wthread-safety), as abseil's absl::Mutex and
// leveldb's port::Mutex: shared state says which mutex guards it, and a
// function says which mutex it needs, and the compiler checks both.
//
//   class Counter {
//    public:
//     void Add() TW_EXCLUDES(mutex_) { internal::MutexLock lock(mutex_); ++n_; }
//    private:
//     internal::Mutex mutex_;
//     int n_ TW_GUARDED_BY(mutex_) = 0;
//   };
//
// Under GCC the annotations compile to nothing; the types are thin wrappers
// over std::mutex and std::condition_variable with no extra cost.
#ifndef TICKWHEEL_INTERNAL_MUTEX_H_
#define TICKWHEEL_INTERNAL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define TW_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TW_THREAD_ANNOTATION(x)
#endif

// On a member: it may only be read or written with `mu` held.
#define TW_GUARDED_BY(mu) TW_THREAD_ANNOTATION(guarded_by(mu))
// On a pointer member: what it points to is guarded by `mu`.
#define TW_PT_GUARDED_BY(mu) TW_THREAD_ANNOTATION(pt_guarded_by(mu))
// On a function: the caller holds `mu` (exclusively).
#define TW_REQUIRES(...) TW_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// On a function: the caller does not hold `mu` (the function takes it).
#define TW_EXCLUDES(...) TW_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TW_REQUIRES_SHARED(...) TW_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define TW_ACQUIRE(...) TW_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TW_ACQUIRE_SHARED(...) TW_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define TW_RELEASE_SHARED(...) TW_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TW_RELEASE_GENERIC(...) TW_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TW_RELEASE(...) TW_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TW_TRY_ACQUIRE(...) TW_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TW_CAPABILITY(name) TW_THREAD_ANNOTATION(capability(name))
#define TW_SCOPED_CAPABILITY TW_THREAD_ANNOTATION(scoped_lockable)
#define TW_RETURN_CAPABILITY(x) TW_THREAD_ANNOTATION(lock_returned(x))
// Opts a function out of the analysis; say why next to it.
#define TW_NO_THREAD_SAFETY_ANALYSIS TW_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tickwheel::internal {

class TW_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() TW_ACQUIRE() { mu_.lock(); }
  void Unlock() TW_RELEASE() { mu_.unlock(); }
  bool TryLock() TW_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds this mutex (where it cannot
  // see it, e.g. in a callback run under the lock). Checks nothing.
  void AssertHeld() const TW_THREAD_ANNOTATION(assert_capability(this)) {}

  // BasicLockable, for std::scoped_lock over several mutexes.
  void lock() TW_ACQUIRE() { mu_.lock(); }
  void unlock() TW_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock/Lock release and retake it inside the
// scope (e.g. around a call to user code).
class TW_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TW_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() TW_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() TW_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() TW_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A reader-writer mutex: many readers, or one writer.
class TW_CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() TW_ACQUIRE() { mu_.lock(); }
  void Unlock() TW_RELEASE() { mu_.unlock(); }
  void LockShared() TW_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() TW_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` shared (as a reader) for its scope.
class TW_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) TW_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() TW_RELEASE() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds `mu` exclusively (as the writer) for its scope.
class TW_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) TW_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() TW_RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable used with a Mutex. Wait releases `mu` while it
// blocks and holds it again when it returns; it may return spuriously, so
// callers loop on their condition, which the analysis then checks:
//
//   while (queue_.empty() && !stop_) cv_.Wait(mutex_);
class CondVar {
 public:
  void Wait(Mutex& mu) TW_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False once `deadline` has passed.
  template <typename Clock, typename D>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<Clock, D> deadline)
      TW_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool timed_out = cv_.wait_until(lock, deadline) == std::cv_status::timeout;
    lock.release();
    return !timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_MUTEX_H_
