// SPDX-License-Identifier: Apache-2.0
#include "api/flow_handlers.h"

#include <boost/json.hpp>
#include <charconv>

#include "api/json_body.h"
#include "api/list_query.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

json::value Limit(double v) {
  if (v == kNoRateLimit) return nullptr;
  if (v == std::floor(v) && v < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

json::value Cap(std::int64_t v) {
  if (v == kNoCap) return nullptr;
  return v;
}

// GET /v1/flows's query: after=KEY, limit=1..100.
Status ParseFlowListQuery(std::string_view query, std::string& after, std::size_t& limit) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const std::optional<std::string> key = PercentDecode(pair.substr(0, eq));
    const std::optional<std::string> value =
        PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!key || !value) return Status::Invalid("invalid_value", "malformed %-escape in the query");
    if (*key == "after") {
      after = *value;
    } else if (*key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
      if (ec != std::errc() || end != value->data() + value->size() || n < 1 ||
          n > FlowService::kMaxPage) {
        return Status::Invalid("invalid_value", "limit must be 1..100", "limit");
      }
      limit = n;
    } else {
      return Status::Invalid("unknown_field",
                             "unknown query parameter \"" + key->substr(0, 64) +
                                 "\"; known: after, limit",
                             key->substr(0, 64));
    }
  }
  return Status::Ok();
}

HttpResponse Answer(const Result<FlowView>& v) {
  if (!v.ok()) return ErrorResponse(v.status());
  return JsonResponse(200, FlowJson(*v));
}

}  // namespace

std::string FlowJson(const FlowView& v) {
  json::object o;
  o["key"] = v.key;
  o["configured"] = v.settings.has_value();
  if (v.settings) {
    json::object stored = FlowSettingsJson(*v.settings);
    stored["updated_ms"] = v.settings->updated_ms;
    o["settings"] = std::move(stored);
  }
  o["rate_per_s"] = Limit(v.limits.rate_per_s);
  o["burst"] = v.limits.rate_limited() ? Limit(v.limits.burst) : json::value(nullptr);
  o["max_in_flight"] = Cap(v.limits.max_in_flight);
  o["paused"] = v.limits.paused;
  o["due"] = v.due;
  o["due_capped"] = v.due_capped;
  o["in_flight"] = v.activity.in_flight;
  o["sent_last_minute"] = v.activity.sent_last_minute;
  o["delivered_last_minute"] = v.activity.delivered_last_minute;
  o["throttled_last_minute"] = v.activity.throttled_last_minute;
  o["lowered_rate_per_s"] =
      v.activity.lowered_rate > 0 ? json::value(v.activity.lowered_rate) : json::value(nullptr);
  o["held_until_ms"] =
      v.activity.held_until_ms > 0 ? json::value(v.activity.held_until_ms) : json::value(nullptr);
  return json::serialize(o);
}

asio::awaitable<HttpResponse> FlowHandlers::List(std::string_view query) {
  std::string after;
  std::size_t limit = FlowService::kMaxPage;
  if (Status s = ParseFlowListQuery(query, after, limit); !s.ok()) co_return ErrorResponse(s);
  auto call = StoreRead(calls_, [&service = service_, after, limit] { return service.List(after, limit); });
  Result<FlowPage> page = co_await std::move(call);  // its own statement (GCC 12)
  if (!page.ok()) co_return ErrorResponse(page.status());
  std::string out = "{\"flows\":[";
  for (std::size_t i = 0; i < page->flows.size(); ++i) {
    if (i) out += ',';
    out += FlowJson(page->flows[i]);
  }
  out += ']';
  if (page->next_after) {
    out += ",\"next_after\":";
    AppendJsonString(out, *page->next_after);
  }
  co_return JsonResponse(200, out + "}");
}

asio::awaitable<HttpResponse> FlowHandlers::Get(const std::string& key) {
  auto call = StoreRead(calls_, [&service = service_, key] { return service.Get(key); });
  Result<FlowView> v = co_await std::move(call);  // its own statement (GCC 12)
  co_return Answer(v);
}

asio::awaitable<HttpResponse> FlowHandlers::Put(const HttpRequest& req, const std::string& key) {
  Result<json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<FlowSettings> settings = ParseFlowSettings(*body);
  if (!settings.ok()) co_return ErrorResponse(settings.status());
  auto call = StoreBlockingWrite(calls_, [&service = service_, key, s = *settings] { return service.Put(key, s); });
  Result<FlowView> v = co_await std::move(call);  // its own statement (GCC 12)
  co_return Answer(v);
}

asio::awaitable<HttpResponse> FlowHandlers::Delete(const std::string& key) {
  auto call = StoreBlockingWrite(calls_, [&service = service_, key] { return service.Delete(key); });
  Result<FlowView> v = co_await std::move(call);  // its own statement (GCC 12)
  co_return Answer(v);
}

asio::awaitable<HttpResponse> FlowHandlers::SetPaused(const std::string& key, bool paused) {
  auto call = StoreBlockingWrite(calls_, [&service = service_, key, paused] {
    return service.SetPaused(key, paused);
  });
  Result<FlowView> v = co_await std::move(call);  // its own statement (GCC 12)
  co_return Answer(v);
}

}  // namespace tickwheel::server
