// SPDX-License-Identifier: Apache-2.0
#include "store/list_filter.h"

#include "timer/http_url.h"
#include "timer/target.h"

namespace tickwheel::server {

bool ListFilter::MatchesId(std::string_view id) const {
  return id.substr(0, id_prefix.size()) == id_prefix;
}

bool ListFilter::Matches(const TimerRecord& record) const {
  if (!MatchesId(record.id)) return false;
  return host.empty() || TargetHost(record.target) == host;
}

std::string TargetHost(std::string_view target) {
  if (IsNatsTarget(target)) return "";
  Result<HttpUrl> url = ParseHttpUrl(target);
  return url.ok() ? url->host : "";
}

}  // namespace tickwheel::server
