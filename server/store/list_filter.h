// SPDX-License-Identifier: Apache-2.0
// ListFilter: which timers a listing keeps of those it looks at (the
// console's search by id prefix and by target host).
#ifndef TICKWHEEL_SERVER_STORE_LIST_FILTER_H_
#define TICKWHEEL_SERVER_STORE_LIST_FILTER_H_

#include <string>
#include <string_view>

#include "timer/timer_record.h"

namespace tickwheel::server {

// Thread safety: a value type.
//
//   ListFilter f{.id_prefix = "order-", .host = "hooks.example.com"};
//   if (f.MatchesId(id) && f.Matches(record)) Keep(record);
struct ListFilter {
  std::string id_prefix;  // "": any id
  std::string host;       // "": any target; else a URL target whose host is this (lower case)

  bool empty() const { return id_prefix.empty() && host.empty(); }
  // The id part alone: stores check it before reading the record.
  bool MatchesId(std::string_view id) const;
  // Id and target. NATS targets never match a host.
  bool Matches(const TimerRecord& record) const;
};

// The host of a timer's URL target (lower case, IPv6 without brackets), or
// "" for a NATS target or a URL that does not parse.
std::string TargetHost(std::string_view target);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_LIST_FILTER_H_
