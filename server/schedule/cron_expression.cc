// SPDX-License-Identifier: Apache-2.0
#include "schedule/cron_expression.h"

#include <optional>
#include <string>
#include <vector>

#include "schedule/civil_days.h"

namespace tickwheel::server::recurrence_internal {
namespace {

enum class Field { kSecond, kMinute, kHour, kDayOfMonth, kMonth, kDayOfWeek };

struct FieldInfo {
  const char* name;
  int min;
  int max;               // day-of-week: 7 (Sunday again)
  const char* accepted;  // how the error message says what is allowed
};

constexpr FieldInfo kFields[] = {
    {"second", 0, 59, "0-59"},
    {"minute", 0, 59, "0-59"},
    {"hour", 0, 23, "0-23"},
    {"day-of-month", 1, 31, "1-31"},
    {"month", 1, 12, "1-12 or JAN-DEC"},
    {"day-of-week", 0, 7, "0-7 or SUN-SAT"},
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

const FieldInfo& Info(Field f) { return kFields[static_cast<int>(f)]; }

char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool EqualsUpper(std::string_view s, std::string_view upper) {
  if (s.size() != upper.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (Upper(s[i]) != upper[i]) return false;
  }
  return true;
}

// Printable excerpt of user input for messages (bounded, no control bytes).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  }
  if (s.size() > 40) out += "...";
  return out + "\"";
}

// One cron field being parsed: collects the matching values and the
// day-of-month / day-of-week specials into the expression.
class FieldParser {
 public:
  FieldParser(Field field, CronExpression& out) : field_(field), info_(Info(field)), out_(out) {}

  // Parses the whole field text (a comma-separated list).
  Status Parse(std::string_view text) {
    std::size_t start = 0;
    while (true) {
      std::size_t comma = text.find(',', start);
      std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (item.empty()) {
        return Error("empty item in the list " + Quote(text));
      }
      if (Status s = ParseItem(item); !s.ok()) return s;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return Status();
  }

  std::uint64_t values() const { return values_; }

 private:
  Status Error(const std::string& what) const {
    return Status::Invalid("invalid_value", std::string(info_.name) + ": " + what, "cron");
  }

  bool IsDayOfMonth() const { return field_ == Field::kDayOfMonth; }
  bool IsDayOfWeek() const { return field_ == Field::kDayOfWeek; }

  // A number or a name of this field, in [min, max].
  Result<int> Value(std::string_view s) const {
    if (s.empty()) return Error("a value is missing");
    if (IsAsciiDigit(s[0])) {
      int v = 0;
      for (char c : s) {
        if (!IsAsciiDigit(c)) return Error(Quote(s) + " is not a number (" + info_.accepted + ")");
        if (v > 9999) return Error(std::string(s) + " is not " + info_.accepted);
        v = v * 10 + (c - '0');
      }
      if (v < info_.min || v > info_.max) {
        return Error(std::to_string(v) + " is not " + info_.accepted);
      }
      return v;
    }
    if (field_ == Field::kMonth) {
      for (int m = 0; m < 12; ++m) {
        if (EqualsUpper(s, kMonthNames[m])) return m + 1;
      }
    } else if (IsDayOfWeek()) {
      for (int d = 0; d < 7; ++d) {
        if (EqualsUpper(s, kDayNames[d])) return d;
      }
    }
    if (s == "L" || s == "l" || s == "W" || s == "w" || s == "#") {
      return Error(Quote(s) + " is not allowed here (" + info_.accepted + ")");
    }
    if (EqualsUpper(s, "H")) {
      return Error("\"H\" (a hashed value) is not supported; write a number (" +
                   std::string(info_.accepted) + ")");
    }
    return Error(Quote(s) + " is not " + info_.accepted);
  }

  Result<int> Step(std::string_view s) const {
    if (s.empty()) return Error("a step is missing after \"/\"");
    int v = 0;
    for (char c : s) {
      if (!IsAsciiDigit(c)) return Error("the step " + Quote(s) + " is not a number");
      if (v > 9999) return Error("the step " + std::string(s) + " is too large");
      v = v * 10 + (c - '0');
    }
    if (v == 0) return Error("the step must be at least 1, not 0");
    return v;
  }

  void Add(int v) {
    if (IsDayOfWeek() && v == 7) v = 0;
    values_ |= std::uint64_t{1} << v;
  }

  Status ParseItem(std::string_view item) {
    // The specials of the day fields.
    if (IsDayOfMonth() || IsDayOfWeek()) {
      if (item == "?") {
        for (int v = info_.min; v <= info_.max; ++v) Add(v);
        return Status();
      }
    }
    if (IsDayOfMonth()) {
      if (EqualsUpper(item, "L")) {
        out_.last_day_of_month = true;
        return Status();
      }
      if (EqualsUpper(item, "LW")) {
        out_.last_weekday_of_month = true;
        return Status();
      }
      if (item.size() > 1 && Upper(item.back()) == 'W' && IsAsciiDigit(item[0])) {
        Result<int> day = Value(item.substr(0, item.size() - 1));
        if (!day.ok()) return day.status();
        out_.nearest_weekday |= std::uint32_t{1} << *day;
        return Status();
      }
    }
    if (IsDayOfWeek()) {
      std::size_t hash = item.find('#');
      if (hash != std::string_view::npos) {
        Result<int> day = Value(item.substr(0, hash));
        if (!day.ok()) return day.status();
        std::string_view n = item.substr(hash + 1);
        if (n.size() != 1 || n[0] < '1' || n[0] > '5') {
          return Error(Quote(item) + ": the week after \"#\" must be 1-5");
        }
        out_.nth_weekday[static_cast<std::size_t>(*day % 7)] |=
            static_cast<std::uint8_t>(1u << (n[0] - '1'));
        return Status();
      }
      if (item.size() > 1 && Upper(item.back()) == 'L') {
        Result<int> day = Value(item.substr(0, item.size() - 1));
        if (!day.ok()) return day.status();
        out_.last_weekday |= static_cast<std::uint8_t>(1u << (*day % 7));
        return Status();
      }
      if (EqualsUpper(item, "L")) {
        return Error("\"L\" needs a day: FRIL or 5L is the last Friday of the month");
      }
    }

    // [range | * | value] [/ step]
    std::string_view range = item;
    std::optional<int> step;
    if (std::size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      Result<int> s = Step(item.substr(slash + 1));
      if (!s.ok()) return s.status();
      step = *s;
    }
    int low, high;
    if (range == "*") {
      low = info_.min;
      high = info_.max;
    } else {
      std::size_t dash = range.find('-');
      Result<int> first = Value(range.substr(0, dash));
      if (!first.ok()) return first.status();
      low = *first;
      if (dash != std::string_view::npos) {
        Result<int> last = Value(range.substr(dash + 1));
        if (!last.ok()) return last.status();
        high = *last;
        if (IsDayOfWeek() && high == 0 && low > 0) high = 7;  // FRI-SUN
        if (low > high) {
          return Error("the range " + Quote(range) +
                       " runs backwards (ranges do not wrap "
                       "around: write " +
                       std::to_string(low) + "-" + std::to_string(info_.max) + "," +
                       std::to_string(info_.min) + "-" + std::to_string(high) + ")");
        }
      } else {
        // "a/s" runs to the field's maximum; a lone value is itself.
        high = step ? info_.max : low;
      }
    }
    for (int v = low; v <= high; v += step.value_or(1)) Add(v);
    return Status();
  }

  Field field_;
  const FieldInfo& info_;
  CronExpression& out_;
  std::uint64_t values_ = 0;
};

std::vector<std::string_view> SplitFields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

std::optional<std::string_view> Macro(std::string_view text) {
  struct Entry {
    const char* name;
    const char* expansion;
  };
  static constexpr Entry kMacros[] = {
      {"@YEARLY", "0 0 1 1 *"}, {"@ANNUALLY", "0 0 1 1 *"}, {"@MONTHLY", "0 0 1 * *"},
      {"@WEEKLY", "0 0 * * 0"}, {"@DAILY", "0 0 * * *"},    {"@MIDNIGHT", "0 0 * * *"},
      {"@HOURLY", "0 * * * *"},
  };
  for (const Entry& e : kMacros) {
    if (EqualsUpper(text, e.name)) return std::string_view(e.expansion);
  }
  return std::nullopt;
}

}  // namespace

Result<CronExpression> ParseCronExpression(std::string_view text) {
  std::vector<std::string_view> fields = SplitFields(text);
  if (fields.size() == 1 && !fields[0].empty() && fields[0][0] == '@') {
    std::optional<std::string_view> expansion = Macro(fields[0]);
    if (!expansion) {
      return Status::Invalid("invalid_value",
                             Quote(fields[0]) +
                                 " is not a known macro (@yearly, @annually, @monthly, "
                                 "@weekly, @daily, @midnight, @hourly)",
                             "cron");
    }
    fields = SplitFields(*expansion);
  }
  for (char c : text) {
    if (c != ' ' && c != '\t' &&
        (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)) {
      return Status::Invalid("invalid_value", "the expression has a control or non-ASCII character",
                             "cron");
    }
  }
  if (fields.size() != 5 && fields.size() != 6) {
    return Status::Invalid("invalid_value",
                           "the expression has " + std::to_string(fields.size()) +
                               " fields; cron takes 5 (minute hour day-of-month month "
                               "day-of-week) or 6 "
                               "(second minute hour day-of-month month day-of-week)",
                           "cron");
  }
  CronExpression out;
  out.has_seconds = fields.size() == 6;
  std::size_t first = out.has_seconds ? 0 : 1;
  std::uint64_t sets[6] = {1, 0, 0, 0, 0, 0};  // 5 fields: second 0
  for (std::size_t i = 0; i < fields.size(); ++i) {
    Field f = static_cast<Field>(first + i);
    FieldParser parser(f, out);
    if (Status s = parser.Parse(fields[i]); !s.ok()) return s;
    sets[first + i] = parser.values();
  }
  out.seconds = sets[0];
  out.minutes = sets[1];
  out.hours = static_cast<std::uint32_t>(sets[2]);
  out.days_of_month = static_cast<std::uint32_t>(sets[3]);
  out.months = static_cast<std::uint16_t>(sets[4]);
  out.days_of_week = static_cast<std::uint8_t>(sets[5]);

  constexpr std::uint32_t kEveryDayOfMonth = 0xfffffffeu;  // bits 1-31
  out.day_of_month_restricted = out.days_of_month != kEveryDayOfMonth;
  out.day_of_week_restricted = out.days_of_week != 0x7f;
  return out;
}

}  // namespace tickwheel::server::recurrence_internal
