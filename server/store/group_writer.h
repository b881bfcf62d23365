// SPDX-License-Identifier: Apache-2.0
// GroupWriter: the store's writer threads. It queues mutations, takes what
// is queued as a group, locks the group's ids and hands the group to the
// store's write function: group commit, one atomic write (and one fsync) for
// many mutations. Both stores write through it.
#ifndef TICKWHEEL_SERVER_STORE_GROUP_WRITER_H_
#define TICKWHEEL_SERVER_STORE_GROUP_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "store/id_locks.h"
#include "store/timer_store.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

using QueuedWrite = TimerStore::Write;

// Thread safety: Submit and Close from any thread. `write` runs on the
// writer threads (or, with Limits::run_on_caller and a write that allows it,
// on the submitting thread when nothing else is queued or being written),
// several at once, on groups that share no id (IdLocks); it must call every
// write's `done` before it returns, so completions run while the timers are
// still locked.
// Cost: per group, one lock of the queue and one of the id locks, and a
// hash-set insert and erase per id.
class GroupWriter {
 public:
  using WriteGroup = std::function<void(std::vector<QueuedWrite>& group)>;

  struct Limits {
    std::size_t max_writes = 256;     // mutations per group
    std::size_t max_ids = 20'000;     // ids per group
    // Honour WriteOptions::may_run_on_caller: a write submitted while no
    // group is queued or being written, and the writer threads' last group
    // was a single write (no concurrent load), runs on the caller's thread.
    bool run_on_caller = false;
    // Groups with fenced writes (claims and outcomes of attempts) written
    // at once, at most (0: no limit): beyond it the others wait and
    // gather, so a herd's claims share transactions (other writes go on
    // beside them).
    std::size_t max_fenced_groups = 0;
    // The same for groups with writes that are not fenced (the clients'
    // creates, cancels and edits): beyond it they wait and gather into
    // larger groups while fenced writes go on beside them. A group with
    // both kinds counts against both limits.
    std::size_t max_unfenced_groups = 0;
  };

  GroupWriter(unsigned threads, Limits limits, WriteGroup write);
  ~GroupWriter();  // Close()

  // After Close, calls `done` at once with kUnavailable. May run the write
  // (and `done`) before it returns: see Limits::run_on_caller.
  void Submit(QueuedWrite write);
  // Queues `writes` together (never on the caller), with one wake-up: a
  // writer takes them as one group, up to the limits.
  void SubmitAll(std::vector<QueuedWrite> writes);

  // Writes what is queued, then stops the threads. Idempotent.
  void Close();

 private:
  void Loop();
  // Which kinds of write a group holds: what it counts against.
  struct Kinds {
    bool fenced = false;
    bool unfenced = false;
  };
  // A queued write and its place in the order of submission.
  struct Queued {
    std::uint64_t seq;
    QueuedWrite write;
  };
  void PushLocked(QueuedWrite write) TW_REQUIRES(mutex_);
  bool QueueEmptyLocked() const TW_REQUIRES(mutex_);
  // Moves what a writer may take now from the queues to `group`, in the
  // order of submission (bounded; a kind of write left queued while its
  // limit of groups is being written).
  Kinds TakeLocked(std::vector<QueuedWrite>& group) TW_REQUIRES(mutex_);
  bool TakeableLocked() const TW_REQUIRES(mutex_);
  // Whether a write of this kind must wait for a group of its kind.
  bool KindFullLocked(bool fenced) const TW_REQUIRES(mutex_);
  void Run(std::vector<QueuedWrite>& group);

  const Limits limits_;
  const WriteGroup write_;
  IdLocks locks_;
  internal::Mutex mutex_;
  internal::CondVar cv_;
  // Queued writes by kind ([1]: fenced), so that a writer finds what it
  // may take at once however many of the other kind wait (a herd's
  // claims: thousands).
  std::deque<Queued> queues_[2] TW_GUARDED_BY(mutex_);
  std::uint64_t next_seq_ TW_GUARDED_BY(mutex_) = 0;
  bool closing_ TW_GUARDED_BY(mutex_) = false;
  std::size_t writing_ TW_GUARDED_BY(mutex_) = 0;  // groups being written
  std::size_t last_group_ TW_GUARDED_BY(mutex_) = 0;  // writes in the last a writer took
  std::size_t fenced_writing_ TW_GUARDED_BY(mutex_) = 0;    // groups being written with
  std::size_t unfenced_writing_ TW_GUARDED_BY(mutex_) = 0;  // each kind of write
  std::vector<std::thread> threads_;  // only Close, after the start, touches it
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_GROUP_WRITER_H_
