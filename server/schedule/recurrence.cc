// SPDX-License-Identifier: Apache-2.0
#include "schedule/recurrence.h"

#include <limits>

#include "schedule/cron_recurrence.h"
#include "schedule/rfc3339.h"

namespace tickwheel::server {
namespace {

constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

}  // namespace

Result<Recurrence> Recurrence::Compile(const RecurrenceSpec& spec) {
  bool has_every = spec.every_ms.has_value();
  bool has_cron = !spec.cron.empty();
  if (has_every == has_cron) {
    return Status::Invalid(
        has_every ? "invalid_value" : "missing_field",
        has_every ? "give either every_ms or cron, not both" : "a schedule needs every_ms or cron",
        has_every ? "cron" : "every_ms");
  }
  Recurrence r;
  r.spec_ = spec;
  if (has_every) {
    if (*spec.every_ms <= 0) {
      return Status::Invalid("out_of_range",
                             "every_ms must be at least 1, not " + std::to_string(*spec.every_ms),
                             "every_ms");
    }
    if (!spec.time_zone.empty()) {
      return Status::Invalid("invalid_value",
                             "time_zone is only for cron schedules (every_ms counts UTC "
                             "milliseconds from anchor_ms)",
                             "time_zone");
    }
    return r;
  }
  if (spec.anchor_ms != 0) {
    return Status::Invalid("invalid_value", "anchor_ms is only for every_ms schedules",
                           "anchor_ms");
  }
  Result<std::shared_ptr<const recurrence_internal::CronRecurrence>> cron =
      recurrence_internal::CronRecurrence::Compile(spec);
  if (!cron.ok()) return cron.status();
  r.cron_ = *std::move(cron);
  return r;
}

std::optional<std::int64_t> Recurrence::NextAfter(std::int64_t after_ms) const {
  if (cron_) return cron_->NextAfter(after_ms);
  // every_ms: the smallest anchor + k * every > after, for any integer k.
  // In unsigned 64-bit arithmetic: the distance between two int64 values
  // always fits, and the sums wrap back to the right int64.
  const std::uint64_t every = static_cast<std::uint64_t>(*spec_.every_ms);
  const std::uint64_t anchor = static_cast<std::uint64_t>(spec_.anchor_ms);
  const std::uint64_t after = static_cast<std::uint64_t>(after_ms);
  if (after_ms < spec_.anchor_ms) {
    // Points anchor - j * every; the largest j with j * every < anchor - after.
    std::uint64_t j = (anchor - after - 1) / every;
    return static_cast<std::int64_t>(anchor - j * every);
  }
  std::uint64_t distance = after - anchor;
  std::uint64_t base = distance - distance % every;  // the last point <= after
  std::uint64_t room = static_cast<std::uint64_t>(kMaxInt64) - anchor;
  if (base > room || every > room - base) return std::nullopt;
  return static_cast<std::int64_t>(anchor + base + every);
}

LocalTime Recurrence::Describe(std::int64_t ms) const {
  if (cron_) return cron_->Describe(ms);
  return LocalTime{recurrence_internal::FormatRfc3339(ms, 0), 0, "UTC"};
}

std::string_view Recurrence::zone_name() const {
  return spec_.time_zone.empty() ? std::string_view("UTC") : std::string_view(spec_.time_zone);
}

Result<DstGap> ParseDstGap(std::string_view s) {
  if (s == "shift") return DstGap::kShift;
  if (s == "skip") return DstGap::kSkip;
  return Status::Invalid("invalid_value",
                         "dst_gap must be \"shift\" or \"skip\", not \"" + std::string(s) + "\"",
                         "dst_gap");
}

Result<DstOverlap> ParseDstOverlap(std::string_view s) {
  if (s == "first") return DstOverlap::kFirst;
  if (s == "both") return DstOverlap::kBoth;
  return Status::Invalid(
      "invalid_value", "dst_overlap must be \"first\" or \"both\", not \"" + std::string(s) + "\"",
      "dst_overlap");
}

std::string_view ToString(DstGap gap) { return gap == DstGap::kSkip ? "skip" : "shift"; }
std::string_view ToString(DstOverlap overlap) {
  return overlap == DstOverlap::kBoth ? "both" : "first";
}

}  // namespace tickwheel::server
