// SPDX-License-Identifier: Apache-2.0
// The cron parser (server/schedule/cron_expression.h): every construct of
// the syntax and the set it becomes, and every error with the field it
// names.
#include "schedule/cron_expression.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace tickwheel::server::recurrence_internal {
namespace {

std::uint64_t Bits(std::initializer_list<int> values) {
  std::uint64_t bits = 0;
  for (int v : values) bits |= std::uint64_t{1} << v;
  return bits;
}

std::uint64_t Range(int low, int high, int step = 1) {
  std::uint64_t bits = 0;
  for (int v = low; v <= high; v += step) bits |= std::uint64_t{1} << v;
  return bits;
}

CronExpression Parse(const std::string& text) {
  Result<CronExpression> e = ParseCronExpression(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().ToString();
  return e.ok() ? *e : CronExpression{};
}

std::string Error(const std::string& text) {
  Result<CronExpression> e = ParseCronExpression(text);
  EXPECT_FALSE(e.ok()) << text << " was accepted";
  if (e.ok()) return "";
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().field(), "cron");
  return e.status().message();
}

TEST(CronExpressionTest, FiveFieldsFireOnSecondZero) {
  CronExpression e = Parse("5 4 3 2 1");
  EXPECT_FALSE(e.has_seconds);
  EXPECT_EQ(e.seconds, Bits({0}));
  EXPECT_EQ(e.minutes, Bits({5}));
  EXPECT_EQ(e.hours, Bits({4}));
  EXPECT_EQ(e.days_of_month, Bits({3}));
  EXPECT_EQ(e.months, Bits({2}));
  EXPECT_EQ(e.days_of_week, Bits({1}));
  EXPECT_TRUE(e.day_of_month_restricted);
  EXPECT_TRUE(e.day_of_week_restricted);
}

TEST(CronExpressionTest, SixFieldsPutTheSecondsFirst) {
  CronExpression e = Parse("30 5 4 3 2 1");
  EXPECT_TRUE(e.has_seconds);
  EXPECT_EQ(e.seconds, Bits({30}));
  EXPECT_EQ(e.minutes, Bits({5}));
  EXPECT_EQ(e.hours, Bits({4}));
  EXPECT_EQ(e.days_of_month, Bits({3}));
  EXPECT_EQ(e.months, Bits({2}));
  EXPECT_EQ(e.days_of_week, Bits({1}));
}

TEST(CronExpressionTest, StarMatchesTheWholeRangeOfEachField) {
  CronExpression e = Parse("* * * * * *");
  EXPECT_EQ(e.seconds, Range(0, 59));
  EXPECT_EQ(e.minutes, Range(0, 59));
  EXPECT_EQ(e.hours, Range(0, 23));
  EXPECT_EQ(e.days_of_month, Range(1, 31));
  EXPECT_EQ(e.months, Range(1, 12));
  EXPECT_EQ(e.days_of_week, Range(0, 6));
  EXPECT_FALSE(e.day_of_month_restricted);
  EXPECT_FALSE(e.day_of_week_restricted);
}

TEST(CronExpressionTest, RangesStepsAndListsCombine) {
  CronExpression e = Parse("*/15 10-50/7 1,2,5-7 1-31/10 */5 1-5");
  EXPECT_EQ(e.seconds, Range(0, 59, 15));
  EXPECT_EQ(e.minutes, Bits({10, 17, 24, 31, 38, 45}));
  EXPECT_EQ(e.hours, Bits({1, 2, 5, 6, 7}));
  EXPECT_EQ(e.days_of_month, Bits({1, 11, 21, 31}));
  EXPECT_EQ(e.months, Bits({1, 6, 11}));
  EXPECT_EQ(e.days_of_week, Range(1, 5));
}

TEST(CronExpressionTest, AValueWithAStepRunsToTheFieldsMaximum) {
  CronExpression e = Parse("50/3 20/2 10/5 * *");
  EXPECT_EQ(e.minutes, Bits({50, 53, 56, 59}));
  EXPECT_EQ(e.hours, Range(20, 23, 2));
  EXPECT_EQ(e.days_of_month, Range(10, 31, 5));
  EXPECT_EQ(Parse("0 0 * * 1/2").days_of_week, Bits({0, 1, 3, 5}));  // 7 is Sunday
  EXPECT_EQ(Parse("0 0 * * */2").days_of_week, Bits({0, 2, 4, 6}));
}

TEST(CronExpressionTest, AStepLargerThanTheRangeKeepsItsFirstValue) {
  EXPECT_EQ(Parse("*/100 * * * *").minutes, Bits({0}));
  EXPECT_EQ(Parse("5-10/60 * * * *").minutes, Bits({5}));
}

TEST(CronExpressionTest, NamesInAnyCaseForMonthsAndDaysOfWeek) {
  CronExpression e = Parse("0 0 * jan,Mar-MAY,dec Mon-fri");
  EXPECT_EQ(e.months, Bits({1, 3, 4, 5, 12}));
  EXPECT_EQ(e.days_of_week, Range(1, 5));
  EXPECT_EQ(Parse("0 0 * * SUN,sat").days_of_week, Bits({0, 6}));
  EXPECT_EQ(Parse("0 0 * FEB-APR/2 *").months, Bits({2, 4}));
}

TEST(CronExpressionTest, SundayIsZeroAndSevenAndMayEndARange) {
  EXPECT_EQ(Parse("0 0 * * 7").days_of_week, Bits({0}));
  EXPECT_EQ(Parse("0 0 * * 0").days_of_week, Bits({0}));
  EXPECT_EQ(Parse("0 0 * * 5-7").days_of_week, Bits({0, 5, 6}));
  EXPECT_EQ(Parse("0 0 * * FRI-SUN").days_of_week, Bits({0, 5, 6}));
  EXPECT_EQ(Parse("0 0 * * 5-0").days_of_week, Bits({0, 5, 6}));
  EXPECT_EQ(Parse("0 0 * * 0-7").days_of_week, Range(0, 6));
  EXPECT_FALSE(Parse("0 0 * * 0-7").day_of_week_restricted);
}

TEST(CronExpressionTest, RestrictedIsAboutTheSetNotTheSpelling) {
  EXPECT_FALSE(Parse("0 0 1-31 * MON").day_of_month_restricted);
  EXPECT_FALSE(Parse("0 0 */1 * MON").day_of_month_restricted);
  EXPECT_TRUE(Parse("0 0 */2 * MON").day_of_month_restricted);
  EXPECT_FALSE(Parse("0 0 1 * 0-6").day_of_week_restricted);
  EXPECT_FALSE(Parse("0 0 1 * SUN,1-6").day_of_week_restricted);
  EXPECT_TRUE(Parse("0 0 1 * 1-6").day_of_week_restricted);
  EXPECT_TRUE(Parse("0 0 L * *").day_of_month_restricted);
  EXPECT_TRUE(Parse("0 0 * * MON#1").day_of_week_restricted);
}

TEST(CronExpressionTest, QuestionMarkIsAStarInTheDayFields) {
  CronExpression e = Parse("0 9 ? * MON-FRI");
  EXPECT_FALSE(e.day_of_month_restricted);
  EXPECT_TRUE(e.day_of_week_restricted);
  EXPECT_FALSE(Parse("0 9 1 * ?").day_of_week_restricted);
  EXPECT_NE(Error("? * * * *").find("minute: \"?\""), std::string::npos);
}

TEST(CronExpressionTest, LastDayAndNearestWeekdayInDayOfMonth) {
  CronExpression e = Parse("0 0 L * *");
  EXPECT_TRUE(e.last_day_of_month);
  EXPECT_EQ(e.days_of_month, 0u);
  EXPECT_TRUE(Parse("0 0 l * *").last_day_of_month);
  EXPECT_TRUE(Parse("0 0 LW * *").last_weekday_of_month);
  CronExpression w = Parse("0 0 1W,15w * *");
  EXPECT_EQ(w.nearest_weekday, Bits({1, 15}));
  CronExpression mixed = Parse("0 0 1,15,L * *");
  EXPECT_EQ(mixed.days_of_month, Bits({1, 15}));
  EXPECT_TRUE(mixed.last_day_of_month);
}

TEST(CronExpressionTest, NthAndLastWeekdayInDayOfWeek) {
  CronExpression e = Parse("0 0 * * MON#2,fri#5,0#1,7#3");
  EXPECT_EQ(e.days_of_week, 0u);
  EXPECT_EQ(e.nth_weekday[1], 0b00010);
  EXPECT_EQ(e.nth_weekday[5], 0b10000);
  EXPECT_EQ(e.nth_weekday[0], 0b00101);
  CronExpression last = Parse("0 0 * * FRIL,1l,7L");
  EXPECT_EQ(last.last_weekday, Bits({5, 1, 0}));
  CronExpression mixed = Parse("0 0 * * SAT,MON#1");
  EXPECT_EQ(mixed.days_of_week, Bits({6}));
  EXPECT_EQ(mixed.nth_weekday[1], 0b1);
}

TEST(CronExpressionTest, MacrosExpandToTheirFiveFields) {
  struct Case {
    const char* macro;
    const char* fields;
  };
  for (Case c :
       {Case{"@yearly", "0 0 1 1 *"}, Case{"@ANNUALLY", "0 0 1 1 *"}, Case{"@monthly", "0 0 1 * *"},
        Case{"@weekly", "0 0 * * 0"}, Case{"@daily", "0 0 * * *"}, Case{"@Midnight", "0 0 * * *"},
        Case{"@hourly", "0 * * * *"}}) {
    CronExpression m = Parse(c.macro), f = Parse(c.fields);
    EXPECT_EQ(m.minutes, f.minutes) << c.macro;
    EXPECT_EQ(m.hours, f.hours) << c.macro;
    EXPECT_EQ(m.days_of_month, f.days_of_month) << c.macro;
    EXPECT_EQ(m.months, f.months) << c.macro;
    EXPECT_EQ(m.days_of_week, f.days_of_week) << c.macro;
  }
  EXPECT_NE(Error("@reboot").find("\"@reboot\" is not a known macro"), std::string::npos);
}

TEST(CronExpressionTest, SpacesAndTabsSeparateFields) {
  CronExpression e = Parse("  0\t9 \t * *   MON ");
  EXPECT_EQ(e.hours, Bits({9}));
  EXPECT_EQ(e.days_of_week, Bits({1}));
}

TEST(CronExpressionTest, ErrorsNameTheFieldAndWhatIsWrong) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (Case c : {
           Case{"", "the expression has 0 fields; cron takes 5"},
           Case{"* * * *", "the expression has 4 fields"},
           Case{"* * * * * * *", "the expression has 7 fields"},
           Case{"60 * * * *", "minute: 60 is not 0-59"},
           Case{"0 60 * * * *", "minute: 60 is not 0-59"},
           Case{"60 0 * * * *", "second: 60 is not 0-59"},
           Case{"0 24 * * *", "hour: 24 is not 0-23"},
           Case{"0 0 0 * *", "day-of-month: 0 is not 1-31"},
           Case{"0 0 32 * *", "day-of-month: 32 is not 1-31"},
           Case{"0 0 * 0 *", "month: 0 is not 1-12 or JAN-DEC"},
           Case{"0 0 * 13 *", "month: 13 is not 1-12 or JAN-DEC"},
           Case{"0 0 * * 8", "day-of-week: 8 is not 0-7 or SUN-SAT"},
           Case{"0 0 * FOO *", "month: \"FOO\" is not 1-12 or JAN-DEC"},
           Case{"0 0 * * MONDAY", "day-of-week: \"MONDAY\" is not 0-7 or SUN-SAT"},
           Case{"0 0 * MON *", "month: \"MON\" is not 1-12 or JAN-DEC"},
           Case{"0 0 * * JAN", "day-of-week: \"JAN\" is not 0-7 or SUN-SAT"},
           Case{"MON * * * *", "minute: \"MON\" is not 0-59"},
           Case{"1a * * * *", "minute: \"1a\" is not a number (0-59)"},
           Case{"99999999999 * * * *", "minute: 99999999999 is not 0-59"},
           Case{"-5 * * * *", "minute: a value is missing"},
           Case{"5- * * * *", "minute: a value is missing"},
           Case{"1,,2 * * * *", "minute: empty item in the list \"1,,2\""},
           Case{"1, * * * *", "minute: empty item in the list \"1,\""},
           Case{"*/0 * * * *", "minute: the step must be at least 1, not 0"},
           Case{"*/ * * * *", "minute: a step is missing after \"/\""},
           Case{"*/x * * * *", "minute: the step \"x\" is not a number"},
           Case{"*/99999999 * * * *", "minute: the step 99999999 is too large"},
           Case{"0 20-5 * * *",
                "hour: the range \"20-5\" runs backwards (ranges do not wrap "
                "around: write 20-23,0-5)"},
           Case{"0 0 * * SAT-MON", "day-of-week: the range \"SAT-MON\" runs backwards"},
           Case{"0 0 * DEC-JAN *", "month: the range \"DEC-JAN\" runs backwards"},
           Case{"L * * * *", "minute: \"L\" is not allowed here (0-59)"},
           Case{"0 0 * L *", "month: \"L\" is not allowed here"},
           Case{"0 0 * * L", "day-of-week: \"L\" needs a day: FRIL or 5L is the last Friday"},
           Case{"0 0 * * MON#6", "day-of-week: \"MON#6\": the week after \"#\" must be 1-5"},
           Case{"0 0 * * MON#0", "the week after \"#\" must be 1-5"},
           Case{"0 0 * * MON#", "the week after \"#\" must be 1-5"},
           Case{"0 0 * * #2", "day-of-week: a value is missing"},
           Case{"0 0 * * 8#2", "day-of-week: 8 is not 0-7 or SUN-SAT"},
           Case{"0 0 * * 9L", "day-of-week: 9 is not 0-7 or SUN-SAT"},
           Case{"0 0 32W * *", "day-of-month: 32 is not 1-31"},
           Case{"0 0 W * *", "day-of-month: \"W\" is not allowed here"},
           Case{"0 0 * * 1W", "day-of-week: \"1W\" is not a number"},
           Case{"0 0 1L * *", "day-of-month: \"1L\" is not a number"},
           Case{"H * * * *", "minute: \"H\" (a hashed value) is not supported"},
           Case{"0\n0 * * * *", "control or non-ASCII character"},
           Case{"0 0 * * MÖN", "control or non-ASCII character"},
       }) {
    std::string message = Error(c.text);
    EXPECT_EQ(message.rfind(c.message, 0) == 0 || message.find(c.message) != std::string::npos,
              true)
        << "for \"" << c.text << "\": " << message;
  }
}

TEST(CronExpressionTest, ASixthFieldIsTheSecondsNotAYear) {
  // Quartz and EventBridge put a year last; here six fields start with the
  // seconds, so the fields shift and the error says where.
  EXPECT_NE(Error("0 9 * * MON 2026").find("month: \"MON\" is not 1-12 or JAN-DEC"),
            std::string::npos);
  EXPECT_NE(Error("0 0 9 * * 2026").find("day-of-week: 2026 is not 0-7 or SUN-SAT"),
            std::string::npos);
}

TEST(CronExpressionTest, ErrorMessagesQuoteInputBoundedAndPrintable) {
  std::string long_item(200, 'x');
  std::string message = Error("0 0 * " + long_item + " *");
  EXPECT_LT(message.size(), 120u) << message;
  EXPECT_NE(message.find("..."), std::string::npos);
}

}  // namespace
}  // namespace tickwheel::server::recurrence_internal
