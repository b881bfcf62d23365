// SPDX-License-Identifier: Apache-2.0
#include <boost/json/parse.hpp>

#include "tickwheel/client.h"

namespace tickwheel::client {

namespace {

std::string What(const std::string& code, const std::string& message, const std::string& field) {
  return code + ": " + message + (field.empty() ? "" : " (field " + field + ")");
}

std::string Text(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

Error::Error(int status, std::string code, std::string message, std::string field)
    : std::runtime_error(What(code, message, field)),
      status_(status),
      code_(std::move(code)),
      message_(std::move(message)),
      field_(std::move(field)) {}

void ThrowForAnswer(int status, std::string_view body) {
  std::string code = "http_" + std::to_string(status);
  std::string message(body.substr(0, 200));
  if (message.empty()) message = "HTTP " + std::to_string(status);
  std::string field;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const json::value* e = v.as_object().if_contains("error"); e && e->is_object()) {
      code = Text(e->as_object(), "code");
      message = Text(e->as_object(), "message");
      field = Text(e->as_object(), "field");
    }
  }
  switch (status) {
    case 400: throw BadRequestError(status, code, message, field);
    case 401: throw UnauthorizedError(status, code, message, field);
    case 403: throw ForbiddenError(status, code, message, field);
    case 404: throw NotFoundError(status, code, message, field);
    case 409: throw ConflictError(status, code, message, field);
    case 413: throw TooLargeError(status, code, message, field);
    case 503: throw UnavailableError(status, code, message, field);
    default: throw ServerError(status, code, message, field);
  }
}

}  // namespace tickwheel::client
