// The one shape of every API error: {"error": {"code", "message", "field"}}.
#ifndef TICKWHEEL_SERVER_API_API_ERROR_H_
#define TICKWHEEL_SERVER_API_API_ERROR_H_

#include <string>
#include <variant>

namespace tickwheel::server {

struct ApiError {
  int http_status = 400;
  std::string code;     // stable, machine-readable: "invalid_type", ...
  std::string message;  // for people: what was wrong and what to do
  std::string field;    // the offending field ("timers[3].delay_ms"), if any
};

template <typename T>
using ApiResult = std::variant<T, ApiError>;

std::string ErrorBody(const ApiError& error);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_API_ERROR_H_
