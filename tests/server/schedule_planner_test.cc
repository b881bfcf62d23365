// SPDX-License-Identifier: Apache-2.0
// The planner (server/schedule/planner.h) on a manual clock: pure
// functions of a schedule's record and the time, so every policy is
// checked by giving the time.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "schedule/planner.h"
#include "schedule/schedule_record.h"
#include "timer/occurrence_id.h"

namespace tickwheel::server {
namespace {

constexpr std::int64_t kT0 = 1'800'000'000'000;  // a whole minute (2027-01-15)
constexpr std::int64_t kMinute = 60'000;

ScheduleRecord Every(std::int64_t period) {
  ScheduleRecord r;
  r.id = "s";
  r.spec.every_ms = period;
  return r;
}

Timeline TimelineOf(const ScheduleRecord& r) {
  Result<Timeline> t = Timeline::Of(r);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(*t);
}

// The store, as far as planning is concerned: which occurrences exist.
struct Occurrences {
  std::set<std::int64_t> times;
  OccurrenceExists exists() {
    return [this](std::int64_t t) { return times.count(t) > 0; };
  }
  void Apply(const PlanStep& step) {
    for (const NewOccurrence& o : step.create) times.insert(o.nominal_ms);
  }
};

// A schedule, its timeline and its occurrences, driven as the service does.
struct Harness {
  explicit Harness(ScheduleRecord r, std::int64_t now = kT0 + 1)
      : record(std::move(r)), timeline(TimelineOf(record)) {
    PlanStep step;
    StartPlanning(record, timeline, now, store.exists(), step);
    store.Apply(step);
    last = step;
  }
  // Claims the occurrence at `t` at `now` (owned since `owned_since`).
  Fate Claim(std::int64_t t, std::int64_t now, std::int64_t owned_since = kT0 - 3'600'000,
             bool previous_running = false) {
    PlanStep step;
    Fate f = OnClaim(record, timeline, t, now, owned_since, previous_running, store.exists(), step);
    store.Apply(step);
    last = step;
    return f;
  }
  ScheduleRecord record;
  Timeline timeline;
  Occurrences store;
  PlanStep last;
};

TEST(SchedulePlannerTest, ANewScheduleHasItsFirstTimeAfterNowPlanned) {
  Harness h(Every(kMinute), kT0 + 1);
  ASSERT_EQ(h.last.create.size(), 1u);
  EXPECT_EQ(h.last.create[0], (NewOccurrence{kT0 + kMinute, kT0 + kMinute}));
  EXPECT_EQ(h.record.next_ms, kT0 + kMinute);
  EXPECT_EQ(h.record.planned_until_ms, kT0 + kMinute);
  EXPECT_EQ(h.record.state, ScheduleState::kActive);
  // Exactly now is not "after now": a schedule created at a time of its
  // recurrence waits for the next one.
  Harness at(Every(kMinute), kT0);
  EXPECT_EQ(at.record.next_ms, kT0 + kMinute);
}

TEST(SchedulePlannerTest, TheAnchorShiftsTheGrid) {
  ScheduleRecord r = Every(kMinute);
  r.spec.anchor_ms = 15'000;
  Harness h(r, kT0 + 1);
  EXPECT_EQ(h.record.next_ms, kT0 + 15'000);
}

TEST(SchedulePlannerTest, StartMsInTheFutureIsTheFirstTimeAndOneInThePastIsIgnored) {
  ScheduleRecord r = Every(kMinute);
  r.start_ms = kT0 + 10 * kMinute;
  EXPECT_EQ(Harness(r, kT0 + 1).record.next_ms, kT0 + 10 * kMinute);
  r.start_ms = kT0 - 10 * kMinute;  // nothing of the past is planned
  EXPECT_EQ(Harness(r, kT0 + 1).record.next_ms, kT0 + kMinute);
}

TEST(SchedulePlannerTest, TheClaimThatFiresAnOccurrencePlansTheNextOne) {
  Harness h(Every(kMinute));
  for (int i = 1; i <= 5; ++i) {
    const std::int64_t t = kT0 + i * kMinute;
    EXPECT_EQ(h.Claim(t, t + 3), Fate::kFire);
    ASSERT_EQ(h.last.create.size(), 1u);
    EXPECT_EQ(h.last.create[0].nominal_ms, t + kMinute);
    EXPECT_EQ(h.last.fired, 1u);
    EXPECT_EQ(h.record.next_ms, t + kMinute);
    EXPECT_EQ(h.record.last_fired_ms, t);
  }
  EXPECT_EQ(h.record.counts.fired, 5u);
  EXPECT_EQ(h.record.counts.planned, 6u);
  EXPECT_EQ(h.record.occurrences, 5u);
}

// A busy server claims late, even past the next time: nothing was missed,
// every time fires, one after the other (the next one is planned due now).
TEST(SchedulePlannerTest, ALateClaimOnARunningServerFiresEveryTimeWhateverThePolicy) {
  for (CatchUpPolicy policy : {CatchUpPolicy::kNone, CatchUpPolicy::kLatest, CatchUpPolicy::kAll}) {
    ScheduleRecord r = Every(1000);
    r.catch_up = policy;
    Harness h(r, kT0);
    const std::int64_t now = kT0 + 3500;  // times at +1s, +2s, +3s are due
    for (std::int64_t t = kT0 + 1000; t <= kT0 + 3000; t += 1000) {
      EXPECT_EQ(h.Claim(t, now, /*owned_since=*/kT0 - 60'000), Fate::kFire) << PolicyName(policy);
    }
    EXPECT_EQ(h.record.next_ms, kT0 + 4000);
    EXPECT_EQ(h.record.counts.skipped_catch_up, 0u);
  }
}

// The server was down for 3 periods (owned since it came back): each
// policy picks what fires at once.
struct Outage {
  Fate x_fate;
  std::vector<std::int64_t> catch_ups;
  std::uint64_t skipped;
  std::optional<std::int64_t> next;
};
Outage AfterAnOutage(CatchUpPolicy policy, std::optional<std::int64_t> window = std::nullopt) {
  ScheduleRecord r = Every(kMinute);
  r.catch_up = policy;
  if (window) r.catch_up_window_ms = *window;
  Harness h(r, kT0);
  // Planned: kT0 + 1 min. Down from kT0 + 30 s to kT0 + 3 min 30 s: the
  // times at 1, 2 and 3 min were missed.
  const std::int64_t back = kT0 + 3 * kMinute + 30'000;
  Outage out;
  out.x_fate = h.Claim(kT0 + kMinute, back + 10, /*owned_since=*/back);
  for (const NewOccurrence& o : h.last.create) {
    if (o.nominal_ms <= back) out.catch_ups.push_back(o.nominal_ms);
  }
  out.skipped = h.record.counts.skipped_catch_up;
  out.next = h.record.next_ms;
  return out;
}

TEST(SchedulePlannerTest, AfterAnOutageNoneSkipsEveryMissedTime) {
  Outage o = AfterAnOutage(CatchUpPolicy::kNone);
  EXPECT_EQ(o.x_fate, Fate::kSkipCatchUp);
  EXPECT_TRUE(o.catch_ups.empty());
  EXPECT_EQ(o.skipped, 3u);
  EXPECT_EQ(o.next, kT0 + 4 * kMinute);
}

TEST(SchedulePlannerTest, AfterAnOutageLatestFiresOnlyTheLastMissedTime) {
  Outage o = AfterAnOutage(CatchUpPolicy::kLatest);
  EXPECT_EQ(o.x_fate, Fate::kSkipCatchUp);
  EXPECT_EQ(o.catch_ups, (std::vector<std::int64_t>{kT0 + 3 * kMinute}));
  EXPECT_EQ(o.skipped, 2u);
  EXPECT_EQ(o.next, kT0 + 4 * kMinute);
}

TEST(SchedulePlannerTest, AfterAnOutageAllFiresEachMissedTimeOnceInOrder) {
  Outage o = AfterAnOutage(CatchUpPolicy::kAll);
  EXPECT_EQ(o.x_fate, Fate::kFire);  // the first missed one is the one claimed
  EXPECT_EQ(o.catch_ups, (std::vector<std::int64_t>{kT0 + 2 * kMinute, kT0 + 3 * kMinute}));
  EXPECT_EQ(o.skipped, 0u);
  EXPECT_EQ(o.next, kT0 + 4 * kMinute);
}

TEST(SchedulePlannerTest, CatchUpNeverFiresWhatIsOlderThanTheWindow) {
  // A window of 80 s: of 1, 2 and 3 min (claimed at 3 min 30 s), only 3
  // min is within it.
  Outage all = AfterAnOutage(CatchUpPolicy::kAll, 80'000);
  EXPECT_EQ(all.x_fate, Fate::kSkipCatchUp);
  EXPECT_EQ(all.catch_ups, (std::vector<std::int64_t>{kT0 + 3 * kMinute}));
  EXPECT_EQ(all.skipped, 2u);
  // A window of 20 s: nothing.
  Outage latest = AfterAnOutage(CatchUpPolicy::kLatest, 20'000);
  EXPECT_TRUE(latest.catch_ups.empty());
  EXPECT_EQ(latest.skipped, 3u);
  EXPECT_EQ(latest.next, kT0 + 4 * kMinute);
}

TEST(SchedulePlannerTest, CatchUpAllIsBoundedByCatchUpMaxAndFiresTheOldestFirst) {
  ScheduleRecord r = Every(1000);
  r.catch_up = CatchUpPolicy::kAll;
  r.catch_up_max = 5;
  Harness h(r, kT0);
  // Back at 60.5 s: the times up to 55 s were missed (those after came due
  // within the grace before the restart, and fire as usual).
  const std::int64_t back = kT0 + 60'500;
  EXPECT_EQ(h.Claim(kT0 + 1000, back, back), Fate::kFire);
  EXPECT_EQ(h.record.catch_up_ms,
            (std::vector<std::int64_t>{kT0 + 2000, kT0 + 3000, kT0 + 4000, kT0 + 5000}));
  EXPECT_EQ(h.record.counts.skipped_catch_up, 50u);  // 6 s .. 55 s
  EXPECT_EQ(h.record.next_ms, kT0 + 56'000);
  // Their due times keep their order.
  for (std::size_t i = 1; i < h.last.create.size(); ++i) {
    EXPECT_LT(h.last.create[i - 1].due_ms, h.last.create[i].due_ms);
  }
}

TEST(SchedulePlannerTest, ATimeDueJustBeforeTheOwnerStartedIsNotMissed) {
  ScheduleRecord r = Every(kMinute);
  r.catch_up = CatchUpPolicy::kNone;
  Harness h(r, kT0);
  const std::int64_t t = kT0 + kMinute;
  // A restart that took 3 s: within the grace, it fires.
  EXPECT_EQ(h.Claim(t, t + 3100, t + 3000), Fate::kFire);
  // The next one, due 6 s before its new owner took over: missed.
  EXPECT_EQ(h.Claim(t + kMinute, t + kMinute + 6100, t + kMinute + 6000), Fate::kSkipCatchUp);
  EXPECT_EQ(h.record.next_ms, t + 2 * kMinute);
}

TEST(SchedulePlannerTest, AClaimLaterThanTheWindowOnARunningServerIsMissed) {
  ScheduleRecord r = Every(kMinute);
  r.catch_up_window_ms = 10'000;
  Harness h(r, kT0);
  EXPECT_EQ(h.Claim(kT0 + kMinute, kT0 + kMinute + 11'000, kT0 - 3'600'000), Fate::kSkipCatchUp);
  EXPECT_EQ(h.record.counts.skipped_catch_up, 1u);
  EXPECT_EQ(h.record.next_ms, kT0 + 2 * kMinute);
}

TEST(SchedulePlannerTest, OverlapSkipDropsAnOccurrenceWhileThePreviousOneRuns) {
  ScheduleRecord r = Every(kMinute);
  r.overlap = OverlapPolicy::kSkip;
  Harness h(r, kT0);
  EXPECT_EQ(h.Claim(kT0 + kMinute, kT0 + kMinute), Fate::kFire);
  EXPECT_TRUE(NeedsPrevious(h.record));
  EXPECT_EQ(h.Claim(kT0 + 2 * kMinute, kT0 + 2 * kMinute, kT0, /*previous_running=*/true),
            Fate::kSkipOverlap);
  EXPECT_EQ(h.record.counts.skipped_overlap, 1u);
  EXPECT_EQ(h.record.last_fired_ms, kT0 + kMinute);  // still the running one
  EXPECT_EQ(h.record.next_ms, kT0 + 3 * kMinute);    // planned on regardless
  EXPECT_EQ(h.Claim(kT0 + 3 * kMinute, kT0 + 3 * kMinute, kT0, false), Fate::kFire);
}

TEST(SchedulePlannerTest, OverlapBufferOneKeepsOneAndReleasesItWhenTheRunningOneFinishes) {
  ScheduleRecord r = Every(kMinute);
  r.overlap = OverlapPolicy::kBufferOne;
  Harness h(r, kT0);
  const std::int64_t t1 = kT0 + kMinute, t2 = t1 + kMinute, t3 = t2 + kMinute;
  EXPECT_EQ(h.Claim(t1, t1), Fate::kFire);
  EXPECT_EQ(h.Claim(t2, t2, kT0, true), Fate::kBuffer);
  EXPECT_EQ(h.record.buffered_ms, t2);
  h.store.times.erase(t2);  // the service erases a buffered occurrence's timer
  EXPECT_EQ(h.Claim(t3, t3, kT0, true), Fate::kSkipOverlap);  // one is buffered already
  // t1 finishes: t2 is re-created, due now, and fires at its claim.
  PlanStep step;
  ASSERT_TRUE(FinishMatters(h.record, t1, true));
  OnFinished(h.record, h.timeline, t1, /*fired=*/true, t3 + 500, h.store.exists(), step);
  h.store.Apply(step);
  ASSERT_EQ(step.create.size(), 1u);
  EXPECT_EQ(step.create[0], (NewOccurrence{t2, t3 + 500}));
  EXPECT_FALSE(h.record.buffered_ms);
  EXPECT_EQ(h.Claim(t2, t3 + 501, kT0, false), Fate::kFire);
  EXPECT_EQ(h.record.last_fired_ms, t2);
  EXPECT_EQ(h.record.next_ms, t3 + kMinute);  // the plan went on meanwhile
}

TEST(SchedulePlannerTest, TriggersAndBackfillsIgnoreOverlapAndDoNotCountTowardMax) {
  ScheduleRecord r = Every(kMinute);
  r.overlap = OverlapPolicy::kSkip;
  r.max_occurrences = 2;
  Harness h(r, kT0);
  EXPECT_EQ(h.Claim(kT0 + kMinute, kT0 + kMinute), Fate::kFire);
  // A trigger at kT0 + 70 s while the first one runs: fires.
  h.store.times.insert(kT0 + 70'000);
  EXPECT_EQ(h.Claim(kT0 + 70'000, kT0 + 70'000, kT0, true), Fate::kFire);
  EXPECT_EQ(h.record.occurrences, 1u);
  EXPECT_EQ(h.record.counts.fired, 2u);
  EXPECT_EQ(h.Claim(kT0 + 2 * kMinute, kT0 + 2 * kMinute, kT0, false), Fate::kFire);
  EXPECT_EQ(h.record.state, ScheduleState::kEnded);
  EXPECT_EQ(h.record.end_reason, EndReason::kMaxOccurrences);
}

TEST(SchedulePlannerTest, MaxOccurrencesEndsTheScheduleAfterItsLastOccurrence) {
  ScheduleRecord r = Every(kMinute);
  r.max_occurrences = 3;
  Harness h(r, kT0);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(h.record.state, ScheduleState::kActive);
    EXPECT_EQ(h.Claim(kT0 + i * kMinute, kT0 + i * kMinute), Fate::kFire);
  }
  EXPECT_EQ(h.record.state, ScheduleState::kEnded);
  EXPECT_EQ(h.record.end_reason, EndReason::kMaxOccurrences);
  EXPECT_FALSE(h.record.next_ms);
  EXPECT_EQ(h.record.counts.planned, 3u);
  EXPECT_TRUE(UpcomingTimes(h.record, h.timeline, kT0, 5).empty());
}

TEST(SchedulePlannerTest, AnOccurrenceSkippedByOverlapLeavesRoomForAnotherUnderMax) {
  ScheduleRecord r = Every(kMinute);
  r.overlap = OverlapPolicy::kSkip;
  r.max_occurrences = 2;
  Harness h(r, kT0);
  EXPECT_EQ(h.Claim(kT0 + kMinute, kT0 + kMinute), Fate::kFire);
  EXPECT_EQ(h.Claim(kT0 + 2 * kMinute, kT0 + 2 * kMinute, kT0, true), Fate::kSkipOverlap);
  EXPECT_EQ(h.record.state, ScheduleState::kActive);
  EXPECT_EQ(h.Claim(kT0 + 3 * kMinute, kT0 + 3 * kMinute, kT0, false), Fate::kFire);
  EXPECT_EQ(h.record.state, ScheduleState::kEnded);
  EXPECT_EQ(h.record.occurrences, 2u);
}

TEST(SchedulePlannerTest, EndMsIsExclusiveAndEndsTheSchedule) {
  ScheduleRecord r = Every(kMinute);
  r.end_ms = kT0 + 2 * kMinute;
  Harness h(r, kT0);
  EXPECT_EQ(h.Claim(kT0 + kMinute, kT0 + kMinute), Fate::kFire);
  EXPECT_EQ(h.record.state, ScheduleState::kEnded);
  EXPECT_EQ(h.record.end_reason, EndReason::kEndTime);
  EXPECT_TRUE(h.last.create.empty());
}

TEST(SchedulePlannerTest, ATimeWhoseOccurrenceExistsIsNotPlannedAgain) {
  ScheduleRecord r = Every(kMinute);
  Occurrences store;
  store.times = {kT0 + kMinute, kT0 + 2 * kMinute};  // a backfill, a trigger
  PlanStep step;
  Timeline t = TimelineOf(r);
  StartPlanning(r, t, kT0, store.exists(), step);
  EXPECT_EQ(r.next_ms, kT0 + 3 * kMinute);
  ASSERT_EQ(step.create.size(), 1u);
}

TEST(SchedulePlannerTest, JitterDelaysEachOccurrenceByAStableAmountWithinItsBound) {
  ScheduleRecord r = Every(kMinute);
  r.jitter_ms = 5000;
  Harness h(r, kT0);
  std::set<std::int64_t> offsets;
  for (int i = 1; i <= 50; ++i) {
    const std::int64_t t = kT0 + i * kMinute;
    ASSERT_EQ(h.record.next_ms, t);
    const std::int64_t due = h.last.create.back().due_ms;
    EXPECT_GE(due, t);
    EXPECT_LT(due, t + 5000);
    EXPECT_EQ(due - t, JitterMs("s", t, 5000));  // the same each time asked
    offsets.insert(due - t);
    h.Claim(t, due);
  }
  EXPECT_GT(offsets.size(), 40u);  // spread, not one value
}

TEST(SchedulePlannerTest, PauseUnplansAndResumeAppliesTheCatchUpPolicyToThePause) {
  ScheduleRecord r = Every(kMinute);
  Harness h(r, kT0);
  EXPECT_EQ(Pause(h.record, kT0 + 30'000), (std::vector<std::int64_t>{kT0 + kMinute}));
  h.store.times.erase(kT0 + kMinute);  // the service erases it
  EXPECT_EQ(h.record.state, ScheduleState::kPaused);
  EXPECT_FALSE(h.record.next_ms);
  EXPECT_EQ(UpcomingTimes(h.record, h.timeline, kT0 + 30'000, 2),
            (std::vector<std::int64_t>{kT0 + kMinute, kT0 + 2 * kMinute}));
  // Resumed after 3 times fell in the pause: the first is planned due
  // now, and its claim applies the policy (latest: the last of them).
  const std::int64_t back = kT0 + 3 * kMinute + 30'000;
  PlanStep step;
  Resume(h.record, h.timeline, back, false, h.store.exists(), step);
  h.store.Apply(step);
  EXPECT_EQ(h.record.next_ms, kT0 + kMinute);
  EXPECT_EQ(step.create[0].due_ms, back);
  EXPECT_EQ(h.Claim(kT0 + kMinute, back + 5, /*owned_since=*/kT0 - 3'600'000), Fate::kSkipCatchUp);
  EXPECT_EQ(h.last.create.front().nominal_ms, kT0 + 3 * kMinute);
  EXPECT_EQ(h.record.counts.skipped_catch_up, 2u);
  EXPECT_EQ(h.record.next_ms, kT0 + 4 * kMinute);
}

TEST(SchedulePlannerTest, ReplanStartsTheNewRecurrenceAfterNow) {
  Harness h(Every(kMinute), kT0);
  h.record.spec.every_ms = 10 * kMinute;
  Timeline t = TimelineOf(h.record);
  PlanStep step;
  Replan(h.record, t, kT0 + 30'000, h.store.exists(), step);
  EXPECT_EQ(h.record.next_ms, kT0 + 10 * kMinute);
  EXPECT_EQ(step.create.size(), 1u);
}

TEST(SchedulePlannerTest, CancellingThePlannedOccurrencePlansTheOneAfter) {
  Harness h(Every(kMinute), kT0);
  PlanStep step;
  ASSERT_TRUE(FinishMatters(h.record, kT0 + kMinute, false));
  OnFinished(h.record, h.timeline, kT0 + kMinute, /*fired=*/false, kT0 + 10, h.store.exists(),
             step);
  EXPECT_EQ(h.record.next_ms, kT0 + 2 * kMinute);
}

TEST(SchedulePlannerTest, CountBetweenCountsEveryMsTimesExactly) {
  ScheduleRecord r = Every(1000);
  r.spec.anchor_ms = 250;
  Timeline t = TimelineOf(r);
  EXPECT_EQ(t.CountBetween(kT0, kT0 + 10'000, 5), 10u);  // exact beyond the cap
  EXPECT_EQ(t.CountBetween(kT0 + 250, kT0 + 1250, 100), 0u);
  EXPECT_EQ(t.LastAtOrBefore(kT0 + 250, kT0 + 10'000), kT0 + 9250);
  EXPECT_EQ(t.LastAtOrBefore(kT0 + 250, kT0 + 9250), kT0 + 9250);
}

TEST(SchedulePlannerTest, TheRecordSurvivesItsEncoding) {
  Harness h(Every(kMinute), kT0);
  h.record.catch_up_ms = {kT0 + 1, kT0 + 2};
  h.record.buffered_ms = kT0 + 3;
  h.record.headers = {{"Authorization", "Bearer x"}};
  h.record.payload = R"({"a":[1,2]})";
  h.record.max_occurrences = 7;
  h.record.resumed_ms = kT0 + 4;
  h.record.counts.skipped_dst = 9;
  ScheduleRow row = EncodeSchedule(h.record);
  EXPECT_EQ(row.id, "s");
  Result<ScheduleRecord> back = DecodeSchedule(row);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h.record);
  row.record.pop_back();
  EXPECT_EQ(DecodeSchedule(row).status().code(), StatusCode::kCorrupt);
  row = EncodeSchedule(h.record);
  row.record[0] = 9;  // a newer format
  EXPECT_NE(DecodeSchedule(row).status().message().find("format 9"), std::string::npos);
}

// The stores keep the plan apart (format 4); an export line and the rows
// written before the split hold the whole schedule in one string (formats
// 2 and 3), and both read back the same.
TEST(SchedulePlannerTest, ThePlanIsEncodedApartAndTheWholeFormatsStillRead) {
  Harness h(Every(kMinute), kT0);
  h.record.next_ms = kT0 + kMinute;
  h.record.last_fired_ms = kT0;
  h.record.counts.fired = 3;
  const ScheduleRow row = EncodeSchedule(h.record);
  EXPECT_EQ(row.record[0], 4);
  EXPECT_FALSE(row.plan.empty());
  // A claim changes only the plan.
  ScheduleRecord claimed = h.record;
  claimed.next_ms = kT0 + 2 * kMinute;
  claimed.last_fired_ms = kT0 + kMinute;
  claimed.updated_ms = kT0 + kMinute;
  ++claimed.counts.fired;
  const ScheduleRow after = EncodeSchedule(claimed);
  EXPECT_EQ(after.record, row.record);
  EXPECT_NE(after.plan, row.plan);
  EXPECT_LT(after.plan.size(), 120u);
  // The whole formats, as exported and as stored before.
  const std::string whole = EncodeWholeSchedule(h.record);
  EXPECT_EQ(whole[0], 2);
  Result<ScheduleRecord> back = DecodeWholeSchedule("s", whole);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h.record);
  back = DecodeSchedule(ScheduleRow{"s", 0, whole, ""});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h.record);
  // A paused one: the state is read from the bytes.
  ScheduleRecord paused = h.record;
  paused.state = ScheduleState::kPaused;
  paused.paused_ms = kT0 + 1;
  back = DecodeWholeSchedule("s", EncodeWholeSchedule(paused));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, paused);
  // Damage: a split record without its plan, a whole one with a plan, a
  // plan cut short, format 4 in an export line.
  EXPECT_EQ(DecodeSchedule(ScheduleRow{"s", 0, row.record, ""}).status().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(DecodeSchedule(ScheduleRow{"s", 0, whole, row.plan}).status().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(DecodeSchedule(ScheduleRow{"s", 0, row.record, row.plan.substr(1)}).status().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(DecodeWholeSchedule("s", row.record).status().code(), StatusCode::kCorrupt);
}

TEST(OccurrenceIdTest, OnlyTheCanonicalFormIsAnOccurrence) {
  EXPECT_EQ(OccurrenceId("daily", 1795430400000), "daily@1795430400000");
  ASSERT_TRUE(ParseOccurrenceId("daily@1795430400000"));
  EXPECT_EQ(ParseOccurrenceId("daily@1795430400000")->schedule_id, "daily");
  EXPECT_EQ(ParseOccurrenceId("daily@1795430400000")->nominal_ms, 1795430400000);
  for (const char* id : {"daily", "@123", "daily@", "daily@0123", "daily@-5", "daily@+5",
                         "daily@12x", "daily@99999999999999999999"}) {
    EXPECT_FALSE(ParseOccurrenceId(id)) << id;
  }
  EXPECT_EQ(ShardKeyOf("daily@1795430400000"), "daily");
  EXPECT_EQ(ShardKeyOf("plain"), "plain");
}

}  // namespace
}  // namespace tickwheel::server

namespace tickwheel::server {
namespace {

// Unix ms of a UTC date and hour.
std::int64_t Utc(int y, int m, int d, int hour = 0) {
  // days_from_civil (H. Hinnant's algorithm)
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + static_cast<unsigned>(d) - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + static_cast<std::int64_t>(doe) - 719468;
  return (days * 24 + hour) * 3'600'000;
}

ScheduleRecord Cron(const std::string& cron, const std::string& zone,
                    DstGap gap = DstGap::kShift, DstOverlap overlap = DstOverlap::kFirst) {
  ScheduleRecord r;
  r.id = "c";
  r.spec.cron = cron;
  r.spec.time_zone = zone;
  r.spec.dst_gap = gap;
  r.spec.dst_overlap = overlap;
  return r;
}

// Runs a schedule from `from` (UTC ms), claiming each planned occurrence
// at its time, `n` times: the local times (in its zone) of what fired.
std::vector<std::string> Fired(ScheduleRecord r, std::int64_t from, int n,
                               std::uint64_t* dst_skips = nullptr) {
  Harness h(std::move(r), from);
  std::vector<std::string> out;
  for (int i = 0; i < n && h.record.next_ms; ++i) {
    const std::int64_t t = *h.record.next_ms;
    EXPECT_EQ(h.Claim(t, t), Fate::kFire);
    out.push_back(h.timeline.recurrence().Describe(t).local);
  }
  if (dst_skips) *dst_skips = h.record.counts.skipped_dst;
  return out;
}

using Locals = std::vector<std::string>;

TEST(SchedulePlannerDstTest, BerlinSpringGapShiftsOrSkipsAndTheAutumnOverlapFiresOnceOrTwice) {
  std::uint64_t skips = 0;
  EXPECT_EQ(Fired(Cron("30 2 * * *", "Europe/Berlin"), Utc(2027, 3, 27), 3, &skips),
            (Locals{"2027-03-27T02:30:00+01:00", "2027-03-28T03:00:00+02:00",
                    "2027-03-29T02:30:00+02:00"}));
  EXPECT_EQ(skips, 0u);
  EXPECT_EQ(Fired(Cron("30 2 * * *", "Europe/Berlin", DstGap::kSkip), Utc(2027, 3, 27), 2, &skips),
            (Locals{"2027-03-27T02:30:00+01:00", "2027-03-29T02:30:00+02:00"}));
  EXPECT_EQ(skips, 1u);
  EXPECT_EQ(Fired(Cron("30 2 * * *", "Europe/Berlin"), Utc(2027, 10, 30), 3),
            (Locals{"2027-10-30T02:30:00+02:00", "2027-10-31T02:30:00+02:00",
                    "2027-11-01T02:30:00+01:00"}));
  EXPECT_EQ(Fired(Cron("30 2 * * *", "Europe/Berlin", DstGap::kShift, DstOverlap::kBoth),
                  Utc(2027, 10, 30), 4),
            (Locals{"2027-10-30T02:30:00+02:00", "2027-10-31T02:30:00+02:00",
                    "2027-10-31T02:30:00+01:00", "2027-11-01T02:30:00+01:00"}));
}

TEST(SchedulePlannerDstTest, NewYorkAcrossBothChanges) {
  std::uint64_t skips = 0;
  EXPECT_EQ(Fired(Cron("30 2 * * *", "America/New_York"), Utc(2027, 3, 13, 12), 2),
            (Locals{"2027-03-14T03:00:00-04:00", "2027-03-15T02:30:00-04:00"}));
  EXPECT_EQ(Fired(Cron("30 2 * * *", "America/New_York", DstGap::kSkip), Utc(2027, 3, 13, 12), 1,
                  &skips),
            (Locals{"2027-03-15T02:30:00-04:00"}));
  EXPECT_EQ(skips, 1u);
  EXPECT_EQ(Fired(Cron("30 1 * * *", "America/New_York", DstGap::kShift, DstOverlap::kBoth),
                  Utc(2027, 11, 6, 12), 3),
            (Locals{"2027-11-07T01:30:00-04:00", "2027-11-07T01:30:00-05:00",
                    "2027-11-08T01:30:00-05:00"}));
  EXPECT_EQ(Fired(Cron("30 1 * * *", "America/New_York"), Utc(2027, 11, 6, 12), 2),
            (Locals{"2027-11-07T01:30:00-04:00", "2027-11-08T01:30:00-05:00"}));
}

TEST(SchedulePlannerDstTest, LordHoweShiftsByHalfAnHour) {
  std::uint64_t skips = 0;
  // October 3, 2027: 02:00 -> 02:30 (+10:30 -> +11:00).
  EXPECT_EQ(Fired(Cron("15 2 * * *", "Australia/Lord_Howe"), Utc(2027, 10, 1, 12), 3),
            (Locals{"2027-10-02T02:15:00+10:30", "2027-10-03T02:30:00+11:00",
                    "2027-10-04T02:15:00+11:00"}));
  EXPECT_EQ(Fired(Cron("15 2 * * *", "Australia/Lord_Howe", DstGap::kSkip), Utc(2027, 10, 1, 12),
                  2, &skips),
            (Locals{"2027-10-02T02:15:00+10:30", "2027-10-04T02:15:00+11:00"}));
  EXPECT_EQ(skips, 1u);
  // April 4, 2027: 02:00 -> 01:30: 01:45 happens twice, 30 minutes apart.
  EXPECT_EQ(Fired(Cron("45 1 * * *", "Australia/Lord_Howe", DstGap::kShift, DstOverlap::kBoth),
                  Utc(2027, 4, 2, 18), 3),
            (Locals{"2027-04-04T01:45:00+11:00", "2027-04-04T01:45:00+10:30",
                    "2027-04-05T01:45:00+10:30"}));
}

TEST(SchedulePlannerDstTest, AZoneWithoutDstFiresEveryDayAtTheSameOffset) {
  std::uint64_t skips = 0;
  const Locals fired = Fired(Cron("30 2 * * *", "Asia/Tokyo", DstGap::kSkip, DstOverlap::kBoth),
                             Utc(2027, 3, 1), 60, &skips);
  ASSERT_EQ(fired.size(), 60u);
  for (const std::string& t : fired) EXPECT_EQ(t.substr(10), "T02:30:00+09:00") << t;
  EXPECT_EQ(skips, 0u);
}

TEST(SchedulePlannerDstTest, ALeapDayScheduleWaitsForTheNextLeapYear) {
  EXPECT_EQ(Fired(Cron("0 12 29 2 *", "Europe/Berlin"), Utc(2027, 1, 1), 2),
            (Locals{"2028-02-29T12:00:00+01:00", "2032-02-29T12:00:00+01:00"}));
  // And one that never matches ends at once.
  Harness never(Cron("0 0 30 2 *", ""), Utc(2027, 1, 1));
  EXPECT_EQ(never.record.state, ScheduleState::kEnded);
  EXPECT_EQ(never.record.end_reason, EndReason::kNoMoreTimes);
}

TEST(SchedulePlannerDstTest, TheZoneIsTheSchedulesNotTheServers) {
  // Whatever TZ the process runs in, 09:00 Berlin is 08:00 UTC in winter.
  Harness h(Cron("0 9 * * MON-FRI", "Europe/Berlin"), Utc(2027, 1, 11));  // a Monday
  EXPECT_EQ(h.record.next_ms, Utc(2027, 1, 11, 8));
  EXPECT_EQ(UpcomingTimes(h.record, h.timeline, Utc(2027, 1, 11), 6).back(), Utc(2027, 1, 18, 8));
}

}  // namespace
}  // namespace tickwheel::server
