// SPDX-License-Identifier: Apache-2.0
#include "store/group_writer.h"

#include <algorithm>

namespace tickwheel::server {
namespace {

Status Closed() { return Status::Unavailable("the store is closed (the server is shutting down)"); }

}  // namespace

GroupWriter::GroupWriter(unsigned threads, Limits limits, WriteGroup write)
    : limits_(limits), write_(std::move(write)) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

GroupWriter::~GroupWriter() { Close(); }

void GroupWriter::Submit(QueuedWrite write) {
  {
    internal::MutexLock lock(mutex_);
    if (closing_) {
      lock.Unlock();
      write.done(Closed());
      return;
    }
    // Only while writes come one at a time (the last group had one): under
    // concurrent load a blocked HTTP thread delays the requests behind it
    // and the groups get smaller (measured: 8 clients 10 k/s instead of 12).
    if (!limits_.run_on_caller || !write.options.may_run_on_caller || !queue_.empty() ||
        writing_ > 0 || last_group_ > 1) {
      queue_.push_back(std::move(write));
      cv_.Signal();
      return;
    }
    ++writing_;  // the writer threads queue behind it
  }
  std::vector<QueuedWrite> group;
  group.push_back(std::move(write));
  Run(group);
  internal::MutexLock lock(mutex_);
  if (--writing_ == 0 && closing_) cv_.SignalAll();  // Close waits for it
}

void GroupWriter::SubmitAll(std::vector<QueuedWrite> writes) {
  if (writes.empty()) return;
  {
    internal::MutexLock lock(mutex_);
    if (!closing_) {
      for (QueuedWrite& w : writes) queue_.push_back(std::move(w));
      cv_.Signal();
      return;
    }
  }
  for (QueuedWrite& w : writes) {
    w.done(Closed());
  }
}

void GroupWriter::Close() {
  {
    internal::MutexLock lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
  internal::MutexLock lock(mutex_);
  while (writing_ > 0) cv_.Wait(mutex_);  // a write running on its caller
}

void GroupWriter::Loop() {
  std::vector<QueuedWrite> group;
  for (;;) {
    Kinds kinds;
    {
      internal::MutexLock lock(mutex_);
      while (!(closing_ && queue_.empty()) && !TakeableLocked()) cv_.Wait(mutex_);
      if (queue_.empty()) return;  // closing, and everything written
      kinds = TakeLocked(group);
      if (TakeableLocked()) cv_.Signal();  // another writer takes the rest
      ++writing_;
      last_group_ = group.size();
    }
    Run(group);
    group.clear();
    internal::MutexLock lock(mutex_);
    --writing_;
    // The writes that gathered meanwhile, if a full limit held them.
    const bool held = (kinds.fenced && KindFullLocked(true)) ||
                      (kinds.unfenced && KindFullLocked(false));
    if (kinds.fenced) --fenced_writing_;
    if (kinds.unfenced) --unfenced_writing_;
    if (held) cv_.SignalAll();
  }
}

bool GroupWriter::KindFullLocked(bool fenced) const {
  const std::size_t limit = fenced ? limits_.max_fenced_groups : limits_.max_unfenced_groups;
  return limit > 0 && (fenced ? fenced_writing_ : unfenced_writing_) >= limit;
}

bool GroupWriter::TakeableLocked() const {
  const bool fenced_full = KindFullLocked(true);
  const bool unfenced_full = KindFullLocked(false);
  if (!fenced_full && !unfenced_full) return !queue_.empty();
  return std::any_of(queue_.begin(), queue_.end(), [&](const QueuedWrite& w) {
    return !(w.options.fenced ? fenced_full : unfenced_full);
  });
}

GroupWriter::Kinds GroupWriter::TakeLocked(std::vector<QueuedWrite>& group) {
  // One write, one wake-up, one fsync for what is queued (bounded).
  const bool skip_fenced = KindFullLocked(true);
  const bool skip_unfenced = KindFullLocked(false);
  Kinds kinds;
  std::size_t ids = 0;
  for (auto it = queue_.begin();
       it != queue_.end() && group.size() < limits_.max_writes && ids < limits_.max_ids;) {
    if (it->options.fenced ? skip_fenced : skip_unfenced) {
      ++it;
      continue;
    }
    (it->options.fenced ? kinds.fenced : kinds.unfenced) = true;
    ids += it->ids.size();
    group.push_back(std::move(*it));
    it = queue_.erase(it);
  }
  if (kinds.fenced) ++fenced_writing_;
  if (kinds.unfenced) ++unfenced_writing_;
  return kinds;
}

void GroupWriter::Run(std::vector<QueuedWrite>& group) {
  std::vector<std::string> ids;
  for (const QueuedWrite& w : group) ids.insert(ids.end(), w.ids.begin(), w.ids.end());
  IdLocks::Held held = locks_.Lock(std::move(ids));
  write_(group);
  locks_.Unlock(held);
}

}  // namespace tickwheel::server
