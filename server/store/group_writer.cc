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
    {
      internal::MutexLock lock(mutex_);
      while (!closing_ && queue_.empty()) cv_.Wait(mutex_);
      if (queue_.empty()) return;  // closing, and everything written
      // Take what is queued (bounded): one write, one wake-up, one fsync.
      std::size_t ids = 0;
      while (!queue_.empty() && group.size() < limits_.max_writes && ids < limits_.max_ids) {
        ids += queue_.front().ids.size();
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (!queue_.empty()) cv_.Signal();  // another writer takes the rest
      ++writing_;
      last_group_ = group.size();
    }
    Run(group);
    group.clear();
    internal::MutexLock lock(mutex_);
    --writing_;
  }
}

// Locking an unknown set of stripes is beyond the analysis: the stripes are
// taken in index order (so groups never deadlock) and all released below.
void GroupWriter::Run(std::vector<QueuedWrite>& group) TW_NO_THREAD_SAFETY_ANALYSIS {
  std::vector<std::size_t> stripes;
  for (const QueuedWrite& w : group) {
    for (const std::string& id : w.ids) {
      stripes.push_back(std::hash<std::string>{}(id) % kStripes);
    }
  }
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  for (std::size_t i : stripes) stripes_[i].Lock();
  write_(group);
  for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) stripes_[*it].Unlock();
}

}  // namespace tickwheel::server
