// SPDX-License-Identifier: Apache-2.0
// Status and Result<T>: how every part of the server reports what went
// wrong, as leveldb's and abseil's Status. Errors of RocksDB, libpq, NATS,
// the network and the request parser are turned into a Status where they
// happen; the HTTP edge turns a Status into a 4xx/5xx JSON answer
// ({"error": {"code", "message", "field"}}).
#ifndef TICKWHEEL_SERVER_COMMON_STATUS_H_
#define TICKWHEEL_SERVER_COMMON_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tickwheel::server {

enum class StatusCode {
  kOk,
  kInvalidArgument,   // the request is wrong (400)
  kTooLarge,          // a body, payload or batch over a limit (413)
  kNotFound,          // no such timer or route (404)
  kConflict,          // the timer's state or body forbids it (409)
  kUnauthenticated,   // no or a wrong token (401)
  kPermissionDenied,  // the token may not do this (403)
  kUnavailable,       // the store, the network or the server cannot now (503)
  kFenced,            // this node no longer owns the timer's shard
  kCorrupt,           // stored bytes that this server cannot read
};

// Thread safety: a value type.
//
//   Status s = Status::Conflict("not_pending", "the timer was delivered", "id");
//   if (!s.ok()) return s;
class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }

  // `reason` is the stable, machine-readable code the API answers
  // ("negative_delay", "store_unavailable"); `message` says, for people,
  // what was wrong and what to do; `field` names the offending field, if any.
  Status(StatusCode code, std::string reason, std::string message,
         std::string field = "")
      : code_(code),
        reason_(std::move(reason)),
        message_(std::move(message)),
        field_(std::move(field)) {}

  static Status Invalid(std::string reason, std::string message, std::string field = "") {
    return {StatusCode::kInvalidArgument, std::move(reason), std::move(message), std::move(field)};
  }
  static Status TooLarge(std::string reason, std::string message, std::string field = "") {
    return {StatusCode::kTooLarge, std::move(reason), std::move(message), std::move(field)};
  }
  static Status NotFound(std::string message, std::string field = "") {
    return {StatusCode::kNotFound, "not_found", std::move(message), std::move(field)};
  }
  static Status Conflict(std::string reason, std::string message, std::string field = "") {
    return {StatusCode::kConflict, std::move(reason), std::move(message), std::move(field)};
  }
  static Status Unavailable(std::string message) {
    return {StatusCode::kUnavailable, "store_unavailable", std::move(message)};
  }
  static Status Fenced(std::string message) {
    return {StatusCode::kFenced, "fenced", std::move(message)};
  }
  static Status Corrupt(std::string message) {
    return {StatusCode::kCorrupt, "store_corrupt", std::move(message)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }

  // "conflict not_pending: the timer was delivered (field id)", for logs.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string reason_;
  std::string message_;
  std::string field_;
};

// A T, or the Status that says why there is none.
//
//   Result<TimerSpec> spec = ParseTimerSpec(body, limits, now_ms);
//   if (!spec.ok()) return spec.status();
//   Use(*spec);
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // REQUIRES: !status.ok().
  Result(Status status) : value_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(value_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  // Ok when there is a value.
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }

  // REQUIRES: ok().
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_STATUS_H_
