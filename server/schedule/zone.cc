// SPDX-License-Identifier: Apache-2.0
#include "schedule/zone.h"

#include <date/tz.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <unordered_map>

#include "schedule/cron_search.h"  // kMinLocalSeconds, kMaxLocalSeconds
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server::recurrence_internal {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  }
  return out;
}

Status ZoneError(const std::string& message) {
  return Status::Invalid("invalid_value", message, "time_zone");
}

}  // namespace

Result<std::shared_ptr<const Zone>> Zone::Find(std::string_view name) {
  static tickwheel::internal::Mutex mutex;
  static auto* zones = new std::unordered_map<std::string, std::shared_ptr<const Zone>>();
  std::string key(name);
  {
    tickwheel::internal::MutexLock lock(mutex);
    auto it = zones->find(key);
    if (it != zones->end()) return it->second;
  }
  Result<std::shared_ptr<const Zone>> zone = Load(key);
  if (!zone.ok()) return zone;  // unknown names are not kept
  tickwheel::internal::MutexLock lock(mutex);
  return zones->emplace(key, *zone).first->second;
}

Result<std::shared_ptr<const Zone>> Zone::Load(const std::string& name) {
  if (name == "localtime") {
    return ZoneError(
        "time_zone \"localtime\" is the server's own zone; name the zone the "
        "schedule "
        "runs in (e.g. Europe/Berlin, or UTC)");
  }
  const date::time_zone* tz = nullptr;
  try {
    tz = date::locate_zone(name);
  } catch (const std::exception&) {
    std::string message = "time_zone \"" + Printable(name) +
                          "\" is not in the tz database (IANA names such as Europe/Berlin, "
                          "America/New_York, UTC)";
    try {
      for (const date::time_zone& z : date::get_tzdb().zones) {
        if (EqualsIgnoringCase(z.name(), name)) {
          message = "time_zone \"" + Printable(name) +
                    "\" is not in the tz database; did you "
                    "mean \"" +
                    std::string(z.name()) + "\"? (names are case-sensitive)";
          break;
        }
      }
    } catch (const std::exception&) {
    }
    return ZoneError(message);
  }
  auto zone = std::shared_ptr<Zone>(new Zone());
  zone->name_ = name;
  zone->tz_ = tz;
  // date/tz's last period (its end is "forever") begins at the file's last
  // transition; from there the footer knows better.
  using std::chrono::seconds;
  date::sys_info last = tz->get_info(date::sys_days(date::year(9999) / 1 / 1));
  std::optional<PosixTimeZone> footer = PosixTimeZone::Parse(ReadTzifFooter(kZoneDirectory + name));
  if (footer && footer->has_dst()) {
    zone->footer_ = std::move(footer);
    zone->footer_from_ = last.begin.time_since_epoch().count();
  }
  return std::shared_ptr<const Zone>(std::move(zone));
}

Zone::Period Zone::At(std::int64_t utc_s) const {
  // Outside the years 0001-9999 (give or take a day), the offset at the end.
  utc_s = std::clamp(utc_s, kMinLocalSeconds - 2 * 86400, kMaxLocalSeconds + 2 * 86400);
  if (footer_ && utc_s >= footer_from_) {
    PosixTimeZone::Period p = footer_->At(utc_s);
    return {std::max(p.begin, footer_from_), p.end, p.utc_offset_s,
            footer_->abbreviation(p.is_dst)};
  }
  date::sys_info info = tz_->get_info(date::sys_seconds(std::chrono::seconds(utc_s)));
  std::int64_t end = info.end.time_since_epoch().count();
  if (footer_ && end > footer_from_) end = footer_from_;
  return {info.begin.time_since_epoch().count(), end,
          static_cast<std::int32_t>(info.offset.count()), info.abbrev};
}

Zone::Resolved Zone::Resolve(std::int64_t local_s) const {
  // An instant that reads `local_s` lies within kMaxOffsetSpan of it; try
  // the offset of each period of that window.
  std::int64_t valid[2];
  int n = 0;
  std::optional<std::int64_t> gap_end;
  Period p = At(local_s - kMaxOffsetSpan);
  while (true) {
    std::int64_t u = local_s - p.utc_offset_s;
    if (u >= p.begin && u < p.end) {
      if (n == 0 || valid[n - 1] != u) {  // equal offsets across a boundary: one instant
        if (n < 2) valid[n++] = u;
      }
    } else if (u < p.begin && !gap_end && n == 0) {
      gap_end = p.begin;  // the local time comes before this period starts
    }
    if (p.end >= local_s + kMaxOffsetSpan || p.end == std::numeric_limits<std::int64_t>::max()) {
      break;
    }
    p = At(p.end);
  }
  if (n == 2) return {Resolved::Kind::kOverlap, valid[0], valid[1]};
  if (n == 1) return {Resolved::Kind::kUnique, valid[0], valid[0]};
  // No period claims it: a gap, which ends where the period after it begins.
  std::int64_t end = gap_end.value_or(local_s);
  return {Resolved::Kind::kGap, end, end};
}

}  // namespace tickwheel::server::recurrence_internal
