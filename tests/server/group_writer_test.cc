// SPDX-License-Identifier: Apache-2.0
// GroupWriter: which thread runs a write (store/group_writer.h,
// Limits::run_on_caller and WriteOptions::may_run_on_caller), writes
// submitted together written as one group, and which groups run together
// (those that share no id, within each kind's limit of groups).
#include "store/group_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

namespace tickwheel::server {
namespace {

struct Ran {
  std::thread::id thread;
  std::size_t group_size = 0;
};

QueuedWrite Write(std::vector<std::string> ids, bool may_run_on_caller,
                  std::function<void(Status)> done) {
  return {std::move(ids),
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
  writer.Submit(Write({"a"}, true, [&](Status s) { done = s.ok(); }));
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
    writer.Submit(Write({"a"}, !limits_allow, [](Status) {}));
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
  writer.Submit(Write({"first"}, false, [](Status) {}));  // on the writer thread
  first_entered.get_future().wait();
  bool second_done = false;
  writer.Submit(Write({"second"}, true, [&](Status) { second_done = true; }));
  EXPECT_FALSE(second_done);  // queued, not run here: a write is in progress
  release_first.set_value();
  EXPECT_NE(second_ran.get_future().get(), std::this_thread::get_id());
}

TEST(GroupWriterTest, AfterCloseAWriteIsRefusedOnItsCaller) {
  GroupWriter writer(1, GroupWriter::Limits{.run_on_caller = true},
                     [](std::vector<QueuedWrite>&) { ADD_FAILURE() << "written after Close"; });
  writer.Close();
  Status status;
  writer.Submit(Write({"a"}, true, [&](Status s) { status = s; }));
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
    writes.push_back(Write({id}, false, [&](Status s) {
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
    late.push_back(Write({id}, false, [&](Status s) { refused += s.code() == StatusCode::kUnavailable; }));
  }
  writer.SubmitAll(std::move(late));
  EXPECT_EQ(refused, 2);
}

// Fenced writes and others are queued apart (so that a writer finds a kind
// it may take at once), and a group still holds them in the order they were
// submitted: two writes of one id in one group apply in that order.
TEST(GroupWriterTest, AGroupKeepsTheOrderOfSubmissionAcrossKinds) {
  std::mutex mutex;
  std::vector<std::vector<std::string>> groups;
  std::promise<void> all_done;
  int remaining = 5;
  GroupWriter writer(2, GroupWriter::Limits{.max_fenced_groups = 2, .max_unfenced_groups = 2},
                     [&](std::vector<QueuedWrite>& group) {
                       std::vector<std::string> ids;
                       for (const QueuedWrite& w : group) {
                         ids.push_back(w.ids.front() + (w.options.fenced ? "!" : ""));
                       }
                       {
                         std::lock_guard<std::mutex> lock(mutex);
                         groups.push_back(ids);
                       }
                       for (QueuedWrite& w : group) w.done(Status::Ok());
                     });
  std::vector<QueuedWrite> writes;
  for (auto [id, fenced] : std::initializer_list<std::pair<const char*, bool>>{
           {"a", false}, {"b", true}, {"c", true}, {"d", false}, {"e", true}}) {
    writes.push_back(Write({id}, false, [&](Status) {
      if (--remaining == 0) all_done.set_value();
    }));
    writes.back().options.fenced = fenced;
  }
  writer.SubmitAll(std::move(writes));
  all_done.get_future().get();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (std::vector<std::string>{"a", "b!", "c!", "d", "e!"}));
}

std::vector<std::string> Ids(const std::string& prefix, int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

// Two batches of 2,000 timers with nothing in common (the PostgreSQL
// store's batch creates): the second is written while the first is, which
// locks over a fixed set of stripes did not allow (4,096 stripes: two such
// batches always shared one).
TEST(GroupWriterTest, GroupsThatShareNoIdAreWrittenAtOnceHoweverLarge) {
  std::promise<void> second_entered;
  std::shared_future<void> entered = second_entered.get_future().share();
  std::atomic<bool> overlapped{false};
  std::promise<void> both_done;
  std::atomic<int> remaining{2};
  GroupWriter writer(2, GroupWriter::Limits{.max_writes = 1},
                     [&](std::vector<QueuedWrite>& group) {
                       if (group.front().ids.front().starts_with("a")) {
                         overlapped = entered.wait_for(std::chrono::seconds(30)) ==
                                      std::future_status::ready;
                       } else {
                         second_entered.set_value();
                       }
                       for (QueuedWrite& w : group) w.done(Status::Ok());
                     });
  auto done = [&](Status) {
    if (--remaining == 0) both_done.set_value();
  };
  writer.Submit(Write(Ids("a", 2000), false, done));
  writer.Submit(Write(Ids("b", 2000), false, done));
  both_done.get_future().get();
  EXPECT_TRUE(overlapped) << "the second batch waited for the first";
}

// Groups that share one id run one after the other (whichever first), and
// an id named twice in a group does not lock the group out.
TEST(GroupWriterTest, GroupsThatShareAnIdAreWrittenOneAfterTheOther) {
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<int> remaining{3};
  std::promise<void> all_done;
  GroupWriter writer(3, GroupWriter::Limits{.max_writes = 1},
                     [&](std::vector<QueuedWrite>& group) {
                       const int now = ++inside;
                       int seen = most_inside.load();
                       while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
                       }
                       std::this_thread::sleep_for(std::chrono::milliseconds(50));
                       --inside;
                       for (QueuedWrite& w : group) w.done(Status::Ok());
                     });
  auto done = [&](Status s) {
    EXPECT_TRUE(s.ok());
    if (--remaining == 0) all_done.set_value();
  };
  writer.Submit(Write({"x", "a1", "x"}, false, done));
  writer.Submit(Write({"b1", "x"}, false, done));
  writer.Submit(Write({"c1", "c2", "x"}, false, done));
  all_done.get_future().get();
  EXPECT_EQ(most_inside.load(), 1);
}

// With a limit of one group for a kind of write (fenced or not): while a
// group of that kind is written, other writes of the kind wait and are then
// taken as one group, and a write of the other kind goes on beside it.
class OneGroupOfAKindTest : public ::testing::TestWithParam<bool> {};

TEST_P(OneGroupOfAKindTest, WritesOfTheKindGoOneGroupAtATimeAndOthersBesideThem) {
  const bool limited_fenced = GetParam();
  std::promise<void> first_entered, other_ran, release_first;
  std::shared_future<void> released = release_first.get_future().share();
  std::mutex mutex;
  std::vector<std::vector<std::string>> groups;  // the ids of each group, in order
  std::promise<void> all_done;
  std::atomic<int> remaining{4};
  const GroupWriter::Limits limits =
      limited_fenced ? GroupWriter::Limits{.max_fenced_groups = 1}
                     : GroupWriter::Limits{.max_unfenced_groups = 1};
  GroupWriter writer(3, limits, [&](std::vector<QueuedWrite>& group) {
    std::vector<std::string> ids;
    for (const QueuedWrite& w : group) ids.push_back(w.ids.front());
    {
      std::lock_guard<std::mutex> lock(mutex);
      groups.push_back(ids);
    }
    if (ids.front() == "limited1") {
      first_entered.set_value();
      released.wait();
    } else if (ids.front() == "other") {
      other_ran.set_value();
    }
    for (QueuedWrite& w : group) w.done(Status::Ok());
  });
  auto done = [&](Status) {
    if (--remaining == 0) all_done.set_value();
  };
  auto write = [&](std::string id, bool fenced) {
    QueuedWrite w = Write({std::move(id)}, false, done);
    w.options.fenced = fenced;
    return w;
  };
  writer.Submit(write("limited1", limited_fenced));
  first_entered.get_future().wait();
  writer.Submit(write("limited2", limited_fenced));
  writer.Submit(write("limited3", limited_fenced));
  writer.Submit(write("other", !limited_fenced));
  // The other write is written while limited1 is (with 3 threads, if
  // limited2 and limited3 did not wait, they would have been taken before
  // it, one of them with it).
  EXPECT_EQ(other_ran.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  release_first.set_value();
  all_done.get_future().get();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0], std::vector<std::string>{"limited1"});
  EXPECT_EQ(groups[1], std::vector<std::string>{"other"});
  EXPECT_EQ(groups[2], (std::vector<std::string>{"limited2", "limited3"}));
}

INSTANTIATE_TEST_SUITE_P(GroupWriterTest, OneGroupOfAKindTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "Fenced" : "Unfenced";
                         });

}  // namespace
}  // namespace tickwheel::server
