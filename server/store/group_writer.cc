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
    if (!limits_.run_on_caller || !write.options.may_run_on_caller || !QueueEmptyLocked() ||
        writing_ > 0 || last_group_ > 1) {
      PushLocked(std::move(write));
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
      for (QueuedWrite& w : writes) PushLocked(std::move(w));
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
      while (!(closing_ && QueueEmptyLocked()) && !TakeableLocked()) cv_.Wait(mutex_);
      if (QueueEmptyLocked()) return;  // closing, and everything written
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

void GroupWriter::PushLocked(QueuedWrite write) {
  const bool fenced = write.options.fenced;
  queues_[fenced].push_back({next_seq_++, std::move(write)});
}

bool GroupWriter::QueueEmptyLocked() const { return queues_[0].empty() && queues_[1].empty(); }

bool GroupWriter::TakeableLocked() const {
  return (!queues_[1].empty() && !KindFullLocked(true)) ||
         (!queues_[0].empty() && !KindFullLocked(false));
}

GroupWriter::Kinds GroupWriter::TakeLocked(std::vector<QueuedWrite>& group) {
  // One write, one wake-up, one fsync for what is queued (bounded).
  std::deque<Queued>* fenced = KindFullLocked(true) ? nullptr : &queues_[1];
  std::deque<Queued>* unfenced = KindFullLocked(false) ? nullptr : &queues_[0];
  if (fenced != nullptr && fenced->empty()) fenced = nullptr;
  if (unfenced != nullptr && unfenced->empty()) unfenced = nullptr;
  Kinds kinds;
  std::size_t ids = 0;
  while ((fenced != nullptr || unfenced != nullptr) && group.size() < limits_.max_writes &&
         ids < limits_.max_ids) {
    // The earlier submitted of the two queues' first writes.
    const bool take_fenced =
        unfenced == nullptr || (fenced != nullptr && fenced->front().seq < unfenced->front().seq);
    (take_fenced ? kinds.fenced : kinds.unfenced) = true;
    std::deque<Queued>*& from = take_fenced ? fenced : unfenced;
    ids += from->front().write.ids.size();
    group.push_back(std::move(from->front().write));
    from->pop_front();
    if (from->empty()) from = nullptr;
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
