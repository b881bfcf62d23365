// SPDX-License-Identifier: Apache-2.0
#include "timer/flow_key.h"

#include "timer/http_url.h"
#include "timer/target.h"

namespace tickwheel::server {
namespace {

bool AllowedInKey(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 0x20 || u >= 0x7f) return false;
  return std::string_view("/?#%\"\\").find(c) == std::string_view::npos;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// `key` made a valid flow key: characters a key may not have become '_'.
std::string FlowKeyOf(std::string key) {
  for (char& c : key) {
    if (!AllowedInKey(c)) c = '_';
  }
  if (key.empty()) return "invalid";
  if (key.size() > kMaxFlowKeyLength) key.resize(kMaxFlowKeyLength);
  if (!CheckFlowKey(key, "").ok()) key.back() = '_';  // a subject token "x:pause"
  return key;
}

}  // namespace

Status CheckFlowKey(std::string_view key, std::string_view field) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("invalid_flow", std::string(field) + " " + why, std::string(field));
  };
  if (key.empty() || key.size() > kMaxFlowKeyLength) {
    return bad("must be 1.." + std::to_string(kMaxFlowKeyLength) + " characters long, not " +
               std::to_string(key.size()));
  }
  for (char c : key) {
    if (!AllowedInKey(c)) {
      return bad("may only contain printable ASCII other than space, / ? # % \" and \\");
    }
  }
  if (EndsWith(key, ":pause") || EndsWith(key, ":resume")) {
    return bad("may not end in :pause or :resume (the actions of /v1/flows/{key})");
  }
  return Status::Ok();
}

std::string DefaultFlowKey(std::string_view target) {
  if (IsNatsTarget(target)) {
    const std::string_view subject = NatsSubject(target);
    return FlowKeyOf(std::string(subject.substr(0, subject.find('.'))));
  }
  Result<HttpUrl> url = ParseHttpUrl(target);
  return url.ok() ? DefaultFlowKey(*url) : "invalid";
}

std::string DefaultFlowKey(const HttpUrl& url) { return FlowKeyOf(url.HostHeader()); }

}  // namespace tickwheel::server
