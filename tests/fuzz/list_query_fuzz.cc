// Fuzzes the parsing of GET /v1/timers's query (list_query.h: the interface
// server/api is expected to offer; see the TODO there).
//
// Oracle: any bytes give a query or an ApiError (CheckError: a known code,
// a message, 400, an error body that is valid JSON). What is accepted has
// a state given as one of the five names, a limit of 1..1000 (100 when not
// given) and an `after` that is a valid id or empty, and every parameter of
// the query is state, limit or after.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "decoder_checks.h"
#include "list_query.h"

namespace tickwheel::testing {
namespace {

void Require(bool ok, const std::string& what, std::string_view query) {
  if (!ok) FuzzFail("ParseListQuery(\"" + std::string(query) + "\"): " + what);
}

void FuzzOne(std::string_view query) {
  auto parsed = server::ParseListQuery(query);
  if (auto* e = std::get_if<server::ApiError>(&parsed)) {
    return CheckError(*e, "ParseListQuery");
  }
  const server::ListQuery& q = std::get<server::ListQuery>(parsed);
  Require(q.limit >= 1 && q.limit <= 1000, "limit " + std::to_string(q.limit), query);
  Require(q.after.empty() || IsValidId(q.after), "after \"" + q.after + "\"", query);
  bool has_state = false;
  bool has_limit = false;
  std::size_t start = 0;
  while (start < query.size()) {
    std::size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view pair = query.substr(start, amp - start);
    start = amp + 1;
    const std::size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    Require(key == "state" || key == "limit" || key == "after",
            "accepted parameter \"" + std::string(key) + "\"", query);
    has_state = has_state || key == "state";
    has_limit = has_limit || key == "limit";
  }
  Require(has_state, "accepted without a state", query);
  Require(has_limit || q.limit == 100, "default limit is not 100", query);
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
