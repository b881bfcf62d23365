// SPDX-License-Identifier: Apache-2.0
// GroupWriter: which thread runs a write (store/group_writer.h,
// Limits::run_on_caller and WriteOptions::may_run_on_caller), and writes
// submitted together written as one group.
#include "store/group_writer.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

namespace tickwheel::server {
namespace {

struct Ran {
  std::thread::id thread;
  std::size_t group_size = 0;
};

QueuedWrite Write(std::string id, bool may_run_on_caller, std::function<void(Status)> done) {
  return {{std::move(id)},
          [](StoreTxn&) { return Status::Ok(); },
          std::move(done),
          WriteOptions{.sync = true, .may_run_on_caller = may_run_on_caller}};
}

TEST(GroupWriterTest, ALoneWriteThatMayRunsOnItsCallerBeforeSubmitReturns) {
  Ran ran;
  GroupWriter writer(1, GroupWriter::Limits{.run_on_caller = true},
                     [&](std::vector<QueuedWrite>& group) {
                       ran = {std::this_thread::get_id(), group.size()};
                       for (QueuedWrite& w : group) w.done(Status::Ok());
                     });
  bool done = false;
  writer.Submit(Write("a", true, [&](Status s) { done = s.ok(); }));
  EXPECT_TRUE(done);
  EXPECT_EQ(ran.thread, std::this_thread::get_id());
  EXPECT_EQ(ran.group_size, 1u);
}

TEST(GroupWriterTest, WritesThatMayNotOrAWriterThatMayNotGoToTheWriterThread) {
  for (const bool limits_allow : {false, true}) {
    std::promise<std::thread::id> ran;
    GroupWriter writer(1, GroupWriter::Limits{.run_on_caller = limits_allow},
                       [&](std::vector<QueuedWrite>& group) {
                         ran.set_value(std::this_thread::get_id());
                         for (QueuedWrite& w : group) w.done(Status::Ok());
                       });
    // Allowed by the write only when the writer does not allow it, and the
    // other way round: neither runs on the caller.
    writer.Submit(Write("a", !limits_allow, [](Status) {}));
    EXPECT_NE(ran.get_future().get(), std::this_thread::get_id()) << limits_allow;
  }
}

TEST(GroupWriterTest, AWriteThatMayIsQueuedWhileAnotherIsBeingWritten) {
  std::promise<void> first_entered, release_first;
  std::shared_future<void> released = release_first.get_future().share();
  std::promise<std::thread::id> second_ran;
  GroupWriter writer(1, GroupWriter::Limits{.run_on_caller = true},
                     [&](std::vector<QueuedWrite>& group) {
                       if (group.front().ids.front() == "first") {
                         first_entered.set_value();
                         released.wait();
                       } else {
                         second_ran.set_value(std::this_thread::get_id());
                       }
                       for (QueuedWrite& w : group) w.done(Status::Ok());
                     });
  writer.Submit(Write("first", false, [](Status) {}));  // on the writer thread
  first_entered.get_future().wait();
  bool second_done = false;
  writer.Submit(Write("second", true, [&](Status) { second_done = true; }));
  EXPECT_FALSE(second_done);  // queued, not run here: a write is in progress
  release_first.set_value();
  EXPECT_NE(second_ran.get_future().get(), std::this_thread::get_id());
}

TEST(GroupWriterTest, AfterCloseAWriteIsRefusedOnItsCaller) {
  GroupWriter writer(1, GroupWriter::Limits{.run_on_caller = true},
                     [](std::vector<QueuedWrite>&) { ADD_FAILURE() << "written after Close"; });
  writer.Close();
  Status status;
  writer.Submit(Write("a", true, [&](Status s) { status = s; }));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

// Several idle writer threads, as the PostgreSQL store has: writes queued
// by SubmitAll are taken as one group (one transaction), each with its own
// `done`; after Close each is refused.
TEST(GroupWriterTest, WritesSubmittedTogetherAreWrittenAsOneGroup) {
  std::mutex mutex;
  std::vector<std::size_t> groups;
  std::promise<void> all_done;
  int remaining = 5;
  GroupWriter writer(8, GroupWriter::Limits{}, [&](std::vector<QueuedWrite>& group) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      groups.push_back(group.size());
    }
    for (QueuedWrite& w : group) w.done(Status::Ok());
  });
  std::vector<QueuedWrite> writes;
  for (std::string id : {"a", "b", "c", "d", "e"}) {
    writes.push_back(Write(id, false, [&](Status s) {
      EXPECT_TRUE(s.ok());
      if (--remaining == 0) all_done.set_value();
    }));
  }
  writer.SubmitAll(std::move(writes));
  all_done.get_future().get();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(groups, std::vector<std::size_t>{5});

  writer.Close();
  std::vector<QueuedWrite> late;
  int refused = 0;
  for (std::string id : {"f", "g"}) {
    late.push_back(Write(id, false, [&](Status s) { refused += s.code() == StatusCode::kUnavailable; }));
  }
  writer.SubmitAll(std::move(late));
  EXPECT_EQ(refused, 2);
}

}  // namespace
}  // namespace tickwheel::server
