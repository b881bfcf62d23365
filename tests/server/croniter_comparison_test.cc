// SPDX-License-Identifier: Apache-2.0
// Recurrence against python3-croniter (Debian's, 1.3.5): a few thousand
// expressions generated from a fixed seed, each in a zone of its own, with
// start instants at random and near DST changes; for each start, the next
// few fire times from Recurrence::NextAfter and from croniter_reference.py
// (which asks croniter, see its comment) are compared.
//
// Two references, two claims:
//  - "wall" (croniter's next wall-clock readings, made instants with
//    zoneinfo by the documented DST policies): every answer must be equal,
//    except the documented differences of croniter's day matching below.
//  - "croniter" (croniter asked with a zoned start, its own DST handling):
//    every answer must be equal, except the documented differences below,
//    and those where DST makes croniter answer what the policies do not.
// The documented differences (docs/schedules.md, "Differences from croniter
// and Vixie cron") are exactly the excluded cases, each with its reason:
//  kNthWithDayOfMonth: both day fields restricted and day-of-week using #
//    or L: croniter then computes the day-of-month half with the # still
//    applied (an AND), which fails or answers only the day-of-week half.
//  kImpossibleHalf: both day fields restricted (a day matches either) and
//    one half alone can never match (0 0 31 2 MON: February 31 or Mondays
//    of February): croniter raises "failed to find next date" for the
//    impossible half; tickwheel fires on the other.
//  kSixFieldSunday: six fields and a day-of-week of 7 (7, 5-7, FRI-SUN):
//    croniter maps 7 to Sunday only with five fields; with six, 7 matches
//    no day: it misses the Sunday tickwheel fires on, or, when 7 is the
//    only day of the week (and day-of-month restricted), finds no time at
//    all. (Likewise, with six fields croniter reads a day-of-month 0 as 1
//    where tickwheel refuses it.)
//  kCroniterDst (own DST handling only): the zone's offset at the start and
//    at croniter's or tickwheel's answer differ, or tickwheel's answer is
//    a DST-shifted or repeated local time: croniter moves on the wall clock
//    and then subtracts the offset change since its start under rules of
//    its own (0 9 1 7 * from January in Berlin: 08:00 CEST).
#include <date/date.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "schedule/cron_search.h"
#include "schedule/recurrence.h"
#include "schedule/zone.h"

namespace tickwheel::server {
namespace {

// Debian's interpreter: python3-croniter is installed for it (the pyenv
// python3 on PATH, if any, has no croniter).
constexpr const char* kPython = "/usr/bin/python3";
constexpr int kExpressions = 2500;
constexpr int kNextTimes = 4;  // per start instant
constexpr std::uint64_t kSeed = 20260329;

const char* const kZones[] = {"UTC",
                              "Europe/Berlin",
                              "America/New_York",
                              "Australia/Lord_Howe",
                              "Asia/Tokyo",
                              "Europe/London",
                              "Europe/Dublin",
                              "America/Los_Angeles",
                              "America/St_Johns",
                              "America/Havana",
                              "America/Santiago",
                              "America/Sao_Paulo",
                              "Asia/Kolkata",
                              "Asia/Kathmandu",
                              "Asia/Tehran",
                              "Asia/Beirut",
                              "Asia/Gaza",
                              "Africa/Casablanca",
                              "Australia/Sydney",
                              "Australia/Adelaide",
                              "Pacific/Chatham",
                              "Pacific/Auckland",
                              "Pacific/Kiritimati",
                              "Pacific/Apia",
                              "Antarctica/Troll",
                              "Europe/Moscow",
                              "America/Asuncion",
                              "Atlantic/Azores",
                              "America/Godthab",
                              "America/Mexico_City"};

struct Field {
  const char* name;
  int min, max;
};
constexpr Field kSecond{"second", 0, 59}, kMinute{"minute", 0, 59}, kHour{"hour", 0, 23},
    kDayOfMonth{"day-of-month", 1, 31}, kMonth{"month", 1, 12}, kDayOfWeek{"day-of-week", 0, 7};

const char* const kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const char* const kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"};

// An expression in both syntaxes (croniter puts the seconds last and
// writes the last Friday L5, not 5L).
struct Expression {
  std::string ours;
  std::string croniter;
  bool valid = true;  // false: both must refuse it
  // Six fields and a day-of-month 0, which croniter takes for 1.
  bool croniter_takes_day_zero = false;
};

// Written by hand, before the generated ones: the docs' examples and one of
// each documented difference, so that every class is seen.
const Expression kCurated[] = {
    {"0 9 * * MON-FRI", "0 9 * * MON-FRI"},
    {"30 2 * * *", "30 2 * * *"},
    {"*/15 * * * *", "*/15 * * * *"},
    {"0 * * * *", "0 * * * *"},
    {"0 0 29 2 *", "0 0 29 2 *"},
    {"0 0 L * *", "0 0 L * *"},
    {"0 0 * * FRIL", "0 0 * * L5"},
    {"0 0 * * MON#2", "0 0 * * MON#2"},
    {"0 0 * 2 MON#5", "0 0 * 2 MON#5"},
    {"0 0 13 * FRI", "0 0 13 * FRI"},
    {"0 0 31 * FRI", "0 0 31 * FRI"},
    {"0 0 1 1 *", "0 0 1 1 *"},
    {"@daily", "@daily"},
    {"*/20 * * * * *", "* * * * * */20"},
    {"0 9 1 7 *", "0 9 1 7 *"},
    {"0 0 31 2 MON", "0 0 31 2 MON"},      // impossible half
    {"0 0 1 * MON#2", "0 0 1 * MON#2"},    // nth with day-of-month
    {"0 0 12 * * 5-7", "0 12 * * 5-7 0"},  // six fields and 7
    {"0 0 30 2 *", "0 0 30 2 *"},
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  int Uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
  bool Chance(int percent) { return Uniform(1, 100) <= percent; }
  std::int64_t Uniform64(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(rng_);
  }

  std::string Case(std::string name) {
    int mode = Uniform(0, 2);  // upper, lower, capitalized
    for (std::size_t i = 0; i < name.size(); ++i) {
      if (mode == 1 || (mode == 2 && i > 0)) name[i] = static_cast<char>(name[i] - 'A' + 'a');
    }
    return name;
  }

  std::string Value(const Field& f, int v) {
    if (&f == &kMonth && Chance(30)) return Case(kMonthNames[v - 1]);
    if (&f == &kDayOfWeek && Chance(30)) return Case(kDayNames[v]);
    return std::to_string(v);
  }

  // One list item of plain cron syntax (the same in both).
  std::string Item(const Field& f) {
    int form = Uniform(0, 99);
    int max = &f == &kDayOfWeek ? 6 : f.max;
    if (form < 45) return Value(f, Uniform(f.min, f.max));
    if (form < 70) {
      int a = Uniform(f.min, max), b = Uniform(a, f.max);
      if (&f == &kDayOfWeek && b == 7 && Chance(50)) return Value(f, a) + "-" + Case("SUN");
      return Value(f, a) + "-" + Value(f, b);
    }
    if (form < 85) return "*/" + std::to_string(Uniform(2, (f.max - f.min + 1) / 2 + 1));
    if (form < 95) {
      int a = Uniform(f.min, max), b = Uniform(a, f.max);
      return std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(Uniform(1, 9));
    }
    return std::to_string(Uniform(f.min, max)) + "/" + std::to_string(Uniform(2, 9));
  }

  std::string Plain(const Field& f, int star_percent) {
    if (Chance(star_percent)) return "*";
    std::string out = Item(f);
    while (Chance(25)) {
      out += ',';
      out += Item(f);
    }
    return out;
  }

  Expression Next() {
    Expression e;
    bool seconds = Chance(20);
    std::string second = seconds ? Plain(kSecond, 10) : "";
    std::string minute = Plain(kMinute, 25);
    std::string hour = Plain(kHour, 45);
    std::string dom = Plain(kDayOfMonth, 70);
    if (Chance(4)) dom = "L";
    if (Chance(2)) dom = std::to_string(Uniform(1, 28)) + ",L";
    std::string month = Plain(kMonth, 75);
    std::string dow_ours = Plain(kDayOfWeek, 65), dow_croniter = dow_ours;
    if (Chance(5)) {
      int day = Uniform(0, 7), n = Uniform(1, 5);
      dow_ours = dow_croniter = Value(kDayOfWeek, day) + "#" + std::to_string(n);
    } else if (Chance(4)) {
      int day = Uniform(0, 7);
      dow_ours = (Chance(50) ? Case(kDayNames[day]) : std::to_string(day)) + "L";
      dow_croniter = "L" + std::to_string(day);
    }
    std::string common = minute + " " + hour + " " + dom + " " + month + " ";
    e.ours = (seconds ? second + " " : "") + common + dow_ours;
    e.croniter = common + dow_croniter + (seconds ? " " + second : "");
    if (Chance(8)) Spoil(e, seconds);
    return e;
  }

  // Makes `e` invalid in a way both parsers must refuse.
  void Spoil(Expression& e, bool seconds) {
    static const std::vector<std::pair<int, std::string>> kBad = {
        {0, "60"}, {0, "5-3"},  {0, "*/0"},   {0, "1,,2"},  {0, "abc"},  {1, "24"},
        {1, "-1"}, {2, "0"},    {2, "32"},    {3, "0"},     {3, "13"},   {3, "foo"},
        {4, "8"},  {4, "9-10"}, {4, "MON#6"}, {4, "mon#0"}, {2, "1-32"}, {3, "DEC-JAN"}};
    const auto& [field, token] = kBad[static_cast<std::size_t>(Uniform(0, 17))];
    std::istringstream ours(e.ours);
    std::vector<std::string> f;
    for (std::string s; ours >> s;) f.push_back(s);
    std::size_t offset = seconds ? 1 : 0;
    f[static_cast<std::size_t>(field) + offset] = token;
    e.croniter_takes_day_zero = seconds && field == 2 && token == "0";
    if (!seconds && Chance(10)) f.pop_back();  // four fields
    e.valid = false;
    e.ours.clear();
    e.croniter.clear();
    for (std::size_t i = 0; i < f.size(); ++i) e.ours += (i ? " " : "") + f[i];
    // croniter: the same fields, seconds moved last.
    std::vector<std::string> c(f.begin() + static_cast<std::ptrdiff_t>(offset), f.end());
    if (seconds) c.push_back(f[0]);
    for (std::size_t i = 0; i < c.size(); ++i) e.croniter += (i ? " " : "") + c[i];
  }

 private:
  std::mt19937_64 rng_;
};

std::int64_t UtcS(int y, unsigned mo, unsigned d) {
  return date::sys_days(date::year(y) / date::month(mo) / date::day(d)).time_since_epoch().count() *
         86400LL;
}

enum class Verdict {
  kEqual,
  kNthWithDayOfMonth,
  kImpossibleHalf,
  kSixFieldSunday,
  kCroniterDst,
  kUnexplained
};

struct Query {
  Expression expression;
  std::string zone;
  DstGap gap;
  DstOverlap overlap;
  std::vector<std::int64_t> starts;
};

// Whether the two day fields are both restricted and one half alone can
// never match within the expression's months.
bool HasImpossibleHalf(const recurrence_internal::CronExpression& e) {
  if (!e.day_of_month_restricted || !e.day_of_week_restricted) return false;
  recurrence_internal::CronExpression dom_only = e, dow_only = e;
  dom_only.day_of_week_restricted = false;
  dow_only.day_of_month_restricted = false;
  return !recurrence_internal::CronSearch(dom_only).can_match() || !recurrence_internal::CronSearch(dow_only).can_match();
}

bool IsSunday(std::int64_t local_s) {
  std::int64_t days = local_s / 86400 - (local_s % 86400 < 0 ? 1 : 0);
  return ((days % 7) + 11) % 7 == 0;  // 1970-01-01 was a Thursday
}

bool HasNthWithDayOfMonth(const recurrence_internal::CronExpression& e) {
  bool special = e.last_weekday != 0;
  for (std::uint8_t n : e.nth_weekday) special = special || n != 0;
  return special && e.day_of_month_restricted && e.day_of_week_restricted;
}

TEST(CroniterComparisonTest, NextTimesAgreeWithCroniterSaveTheDocumentedDifferences) {
  ASSERT_EQ(std::system((std::string(kPython) + " -c 'import croniter' 2>/dev/null").c_str()), 0)
      << kPython << " has no croniter: install python3-croniter (scripts/install-deps.sh)";
  Generator gen(kSeed);
  std::vector<Query> queries;
  std::set<std::string> zones_used;
  for (int i = 0; i < kExpressions; ++i) {
    Query q;
    q.expression = i < static_cast<int>(std::size(kCurated)) ? kCurated[i] : gen.Next();
    q.zone = kZones[gen.Uniform(0, static_cast<int>(std::size(kZones)) - 1)];
    zones_used.insert(q.zone);
    q.gap = gen.Chance(50) ? DstGap::kShift : DstGap::kSkip;
    q.overlap = gen.Chance(50) ? DstOverlap::kFirst : DstOverlap::kBoth;
    // One start at random in 1990-2060, one near a change of the zone's
    // offset (when it has one then): up to 36 hours before, or within the
    // hours around it.
    q.starts.push_back(gen.Uniform64(UtcS(1990, 1, 1), UtcS(2060, 1, 1)));
    std::int64_t t = gen.Uniform64(UtcS(1995, 1, 1), UtcS(2055, 1, 1));
    std::shared_ptr<const recurrence_internal::Zone> zone = *recurrence_internal::Zone::Find(q.zone);
    std::int64_t change = zone->At(t).end;
    std::int64_t near = gen.Chance(50) ? change - gen.Uniform64(0, 36 * 3600)
                                       : change + gen.Uniform64(-4 * 3600, 2 * 3600);
    q.starts.push_back(change < UtcS(2100, 1, 1) ? near : t);
    queries.push_back(std::move(q));
  }

  // Ask croniter.
  char dir_template[] = "/tmp/croniter_comparison_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::filesystem::path dir(dir_template);
  struct RemoveDir {
    std::filesystem::path dir;
    // CRONITER_COMPARISON_KEEP=1 keeps the queries and answers, to rerun
    // croniter_reference.py by hand.
    ~RemoveDir() {
      if (std::getenv("CRONITER_COMPARISON_KEEP") == nullptr) std::filesystem::remove_all(dir);
    }
  } remove_dir{dir};
  {
    std::ofstream out(dir / "queries.tsv");
    for (const Query& q : queries) {
      out << q.expression.croniter << '\t' << q.zone << '\t' << ToString(q.gap) << '\t'
          << ToString(q.overlap) << '\t';
      for (std::size_t i = 0; i < q.starts.size(); ++i) out << (i ? "," : "") << q.starts[i];
      out << '\t' << kNextTimes << '\n';
    }
  }
  std::string command = std::string(kPython) + " " + TICKWHEEL_SOURCE_DIR +
                        "/tests/server/croniter_reference.py " + (dir / "queries.tsv").string() +
                        " " + (dir / "answers.jsonl").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream answers(dir / "answers.jsonl");
  std::vector<boost::json::value> replies;
  for (std::string line; std::getline(answers, line);) replies.push_back(boost::json::parse(line));
  ASSERT_EQ(replies.size(), queries.size());

  std::map<Verdict, int> own_verdicts, wall_verdicts;
  int valid = 0, refused = 0, day_zero = 0, instants = 0, unexplained = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const Query& q = queries[i];
    const boost::json::object& reply = replies[i].as_object();
    RecurrenceSpec spec;
    spec.cron = q.expression.ours;
    spec.time_zone = q.zone;
    spec.dst_gap = q.gap;
    spec.dst_overlap = q.overlap;
    Result<Recurrence> ours = Recurrence::Compile(spec);
    bool croniter_valid = reply.at("valid").as_bool();
    ASSERT_EQ(ours.ok(), q.expression.valid) << q.expression.ours;
    if (!ours.ok() && croniter_valid && q.expression.croniter_takes_day_zero) {
      ++day_zero;
      continue;
    }
    ASSERT_EQ(ours.ok(), croniter_valid)
        << q.expression.ours << " (croniter: " << q.expression.croniter
        << "): " << (ours.ok() ? "accepted" : ours.status().message());
    if (!ours.ok()) {
      ++refused;
      continue;
    }
    bool dow_has_7 = reply.at("dow_has_7").as_bool();
    ++valid;
    recurrence_internal::CronExpression parsed = *recurrence_internal::ParseCronExpression(q.expression.ours);
    std::shared_ptr<const recurrence_internal::Zone> zone = *recurrence_internal::Zone::Find(q.zone);
    bool nth_with_dom = HasNthWithDayOfMonth(parsed);
    bool impossible_half = HasImpossibleHalf(parsed);

    for (const char* side : {"croniter", "wall"}) {
      bool own = std::string(side) == "croniter";
      const boost::json::array& per_start = reply.at(side).as_array();
      ASSERT_EQ(per_start.size(), q.starts.size());
      for (std::size_t s = 0; s < q.starts.size(); ++s) {
        std::int64_t start = q.starts[s];
        for (const boost::json::value& v : per_start[s].as_array()) {
          std::optional<std::int64_t> mine = ours->NextAfter(start * 1000);
          std::optional<std::int64_t> theirs;
          if (v.is_int64()) theirs = v.as_int64() * 1000;
          ++instants;
          Verdict verdict = Verdict::kUnexplained;
          if (mine == theirs) {
            verdict = Verdict::kEqual;
          } else if (nth_with_dom) {
            verdict = Verdict::kNthWithDayOfMonth;
          } else if (impossible_half && !theirs) {
            verdict = Verdict::kImpossibleHalf;
          } else if (dow_has_7 && mine &&
                     (!theirs || (*theirs > *mine &&
                                  IsSunday(*mine / 1000 + zone->At(*mine / 1000).utc_offset_s)))) {
            verdict = Verdict::kSixFieldSunday;
          } else if (own && mine && theirs) {
            std::int32_t at_start = zone->At(start).utc_offset_s;
            bool offsets_differ = zone->At(*mine / 1000).utc_offset_s != at_start ||
                                  zone->At(*theirs / 1000).utc_offset_s != at_start;
            std::int64_t local = *mine / 1000 + zone->At(*mine / 1000).utc_offset_s;
            recurrence_internal::Zone::Resolved r = zone->Resolve(local);
            bool moved = r.kind != recurrence_internal::Zone::Resolved::Kind::kUnique ||
                         !recurrence_internal::CronSearch(parsed).Matches(local);
            if (offsets_differ || moved) verdict = Verdict::kCroniterDst;
          }
          (own ? own_verdicts : wall_verdicts)[verdict]++;
          if (verdict == Verdict::kUnexplained && ++unexplained <= 20) {
            ADD_FAILURE() << side << ": " << q.expression.ours
                          << " (croniter: " << q.expression.croniter << ") in " << q.zone << " "
                          << ToString(q.gap) << "/" << ToString(q.overlap) << " after " << start
                          << " (" << ours->Describe(start * 1000).local << "): tickwheel "
                          << (mine ? ours->Describe(*mine).local : "none") << ", croniter "
                          << (theirs ? ours->Describe(*theirs).local : boost::json::serialize(v));
          }
          if (!theirs) break;
          start = *theirs / 1000;  // the next step starts where croniter's did
        }
      }
    }
  }
  auto count = [](std::map<Verdict, int>& m, Verdict v) { return m[v]; };
  std::printf(
      "croniter comparison: %d expressions (%d valid, %d refused by both, %d day-of-month 0 "
      "with six fields) in %zu zones, %d answers compared, %d unexplained\n"
      "  wall-clock reference: %d equal, %d nth-with-day-of-month, %d impossible-half, "
      "%d six-field-Sunday\n"
      "  croniter's own:       %d equal, %d nth-with-day-of-month, %d impossible-half, "
      "%d six-field-Sunday, %d DST\n",
      kExpressions, valid, refused, day_zero, zones_used.size(), instants, unexplained,
      count(wall_verdicts, Verdict::kEqual), count(wall_verdicts, Verdict::kNthWithDayOfMonth),
      count(wall_verdicts, Verdict::kImpossibleHalf),
      count(wall_verdicts, Verdict::kSixFieldSunday), count(own_verdicts, Verdict::kEqual),
      count(own_verdicts, Verdict::kNthWithDayOfMonth),
      count(own_verdicts, Verdict::kImpossibleHalf), count(own_verdicts, Verdict::kSixFieldSunday),
      count(own_verdicts, Verdict::kCroniterDst));
  EXPECT_EQ(unexplained, 0);
  // Each documented difference was met (kCurated has one of each).
  EXPECT_GT(count(wall_verdicts, Verdict::kNthWithDayOfMonth), 0);
  EXPECT_GT(count(wall_verdicts, Verdict::kImpossibleHalf), 0);
  EXPECT_GT(count(wall_verdicts, Verdict::kSixFieldSunday), 0);
  EXPECT_GT(count(own_verdicts, Verdict::kCroniterDst), 0);
  // The wall-clock reference agrees on everything croniter matches alike.
  EXPECT_EQ(count(wall_verdicts, Verdict::kCroniterDst), 0);
  EXPECT_GT(valid, kExpressions * 8 / 10);
  EXPECT_GT(refused, kExpressions / 20);
}

}  // namespace
}  // namespace tickwheel::server
