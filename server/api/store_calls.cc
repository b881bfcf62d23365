// SPDX-License-Identifier: Apache-2.0
#include "api/store_calls.h"

#include <spdlog/spdlog.h>

#include "tickwheel/clock.h"

namespace tickwheel::server {

namespace {

std::int64_t Ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

StoreCalls::StoreCalls(TimerStore& store, StoreCallOptions options)
    : store_(store),
      options_(options),
      pool_({.threads = options.read_threads, .max_queued = options.max_queued_reads}) {
  if (options_.probe_every.count() > 0) {
    prober_ = std::make_unique<internal::PeriodicThread>(SystemClock::Instance(),
                                                         options_.probe_every, [this] { Probe(); });
  }
}

StoreCalls::~StoreCalls() { Stop(); }

void StoreCalls::Stop() {
  prober_.reset();
  pool_.Stop();
}

void StoreCalls::Probe() {
  const std::int64_t now = Ns(std::chrono::steady_clock::now());
  const std::int64_t last =
      std::max(last_ok_ns_.load(std::memory_order_relaxed), last_failure_ns_.load(std::memory_order_relaxed));
  if (now - last < std::chrono::nanoseconds(options_.probe_every).count()) return;
  // Through the pool, as a read: if the store hangs, the probe hangs there
  // too, and available() sees a call running too long.
  (void)pool_.Submit(std::chrono::steady_clock::now() + options_.timeout, [this] {
    Result<std::uint64_t> r = store_.ApproximateBytes();
    (void)Finish(r.status());
  });
}

void StoreCalls::NoteOutcome(bool ok) {
  const std::int64_t now = Ns(std::chrono::steady_clock::now());
  (ok ? last_ok_ns_ : last_failure_ns_).store(now, std::memory_order_relaxed);
}

bool StoreCalls::available() const {
  if (last_failure_ns_.load(std::memory_order_relaxed) > last_ok_ns_.load(std::memory_order_relaxed)) {
    return false;
  }
  const SteadyTime stalled = std::chrono::steady_clock::now() - options_.stall;
  if (std::optional<SteadyTime> read = pool_.oldest_running(); read && *read < stalled) return false;
  internal::MutexLock lock(mutex_);
  return writes_.empty() || *writes_.begin() >= stalled;
}

bool StoreCalls::BeginWrite(SteadyTime started) {
  internal::MutexLock lock(mutex_);
  if (writes_.size() >= options_.max_writes) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  writes_.insert(started);
  return true;
}

void StoreCalls::EndWrite(SteadyTime started) {
  internal::MutexLock lock(mutex_);
  if (auto it = writes_.find(started); it != writes_.end()) writes_.erase(it);
}

Status StoreCalls::Finish(Status status) {
  const bool store_error =
      status.code() == StatusCode::kUnavailable || status.reason() == "postgres_error";
  NoteOutcome(status.code() != StatusCode::kUnavailable);
  if (!store_error) return status;
  // The details (a database's host and user, SQL) are for the log only.
  const std::int64_t now = Ns(std::chrono::steady_clock::now());
  std::int64_t last = last_log_ns_.load(std::memory_order_relaxed);
  if (now - last >= 1'000'000'000 &&
      last_log_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    spdlog::warn("store: {}", status.message());
  }
  if (status.code() == StatusCode::kUnavailable) {
    return Status::Unavailable(
        "the store cannot be read or written now (the server's log says why); try again "
        "later. A write's outcome is unknown: retry it with the same id");
  }
  return Status(StatusCode::kCorrupt, "store_error",
                "the store answered with an error (the server's log says which); this is a "
                "bug of tickwheel: please report it");
}

Status StoreCalls::ReadLate() const {
  late_.fetch_add(1, std::memory_order_relaxed);
  return Status::Unavailable("the store did not answer within " + Ms(options_.timeout) +
                             "; try again later");
}

Status StoreCalls::ReadsFull() const {
  refused_.fetch_add(1, std::memory_order_relaxed);
  return Status(StatusCode::kUnavailable, "overloaded",
                "the server has " + std::to_string(options_.max_queued_reads) +
                    " store calls waiting for a thread, its limit (the store is slow or "
                    "unreachable); nothing was done: try again later");
}

Status StoreCalls::WriteLate() const {
  late_.fetch_add(1, std::memory_order_relaxed);
  return Status::Unavailable("the store did not answer within " + Ms(options_.timeout) +
                             "; the write may still happen: retry it with the same id");
}

Status StoreCalls::WritesFull() const {
  return Status(StatusCode::kUnavailable, "overloaded",
                "the server has " + std::to_string(options_.max_writes) +
                    " writes waiting for the store, its limit; nothing was written: try again "
                    "later");
}

}  // namespace tickwheel::server
