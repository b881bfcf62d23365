// SPDX-License-Identifier: Apache-2.0
// A libpq connection and its results, with errors as Status: the one place
// the PostgreSQL store and the cluster talk to libpq.
#ifndef TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_
#define TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

struct pg_conn;
struct pg_result;

namespace tickwheel::server {

// The rows of a statement. Thread safety: a value owned by one thread.
class PgResult {
 public:
  explicit PgResult(pg_result* result);
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;

  int rows() const;
  bool IsNull(int row, int column) const;
  std::string_view Text(int row, int column) const;
  std::int64_t Int(int row, int column) const;
  // A bytea column (hex text form) as bytes.
  std::string Bytes(int row, int column) const;
  // Rows changed by an INSERT, UPDATE or DELETE.
  std::int64_t affected() const;

 private:
  pg_result* result_;
};

// One statement parameter: in PostgreSQL's text input form (a string
// converts to one), or in its binary form (the PgBinary* arrays below, for
// the write path's many-row statements: nothing to quote, escape or hex,
// and nothing for PostgreSQL to parse), or NULL (nullopt).
struct PgParam {
  PgParam(std::string text) : value(std::move(text)) {}
  PgParam(const char* text) : value(text) {}
  PgParam(std::optional<std::string> text) : value(std::move(text)) {}
  PgParam(std::nullopt_t) {}
  static PgParam Binary(std::string bytes) {
    PgParam p(std::move(bytes));
    p.binary = true;
    return p;
  }
  std::optional<std::string> value;
  bool binary = false;
};
using PgParams = std::vector<PgParam>;

// One connection, and the statements prepared on it.
//
// Thread safety: one thread at a time.
// Statements: Exec prepares each distinct SQL text once per connection
// (PQprepare, under a name of its own) and runs it with PQexecPrepared, so
// PostgreSQL parses it once and may reuse its plan. The cache lives and dies
// with the connection: a reconnect is a new PgConnection, which prepares
// again. It holds at most kMaxPrepared texts; others run unprepared
// (PQexecParams), so SQL built from data cannot grow it without bound.
//
//   auto c = PgConnection::Connect(url);                  // Result<unique_ptr>
//   auto r = (*c)->Exec("SELECT record FROM t WHERE id = $1", {id});
//   if (r.ok() && r->rows() == 1) Use(r->Bytes(0, 0));     // prepared, then reused
class PgConnection {
 public:
  static constexpr std::size_t kMaxPrepared = 64;

  // Connects to `conninfo` (a postgresql:// URL or key=value string).
  // kUnavailable with libpq's reason (credentials redacted) if it cannot.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo);
  ~PgConnection();

  // Runs one statement (prepared on first use, see the class comment).
  // Errors: kUnavailable when the connection is lost or the server cannot
  // now (the caller reconnects or retries), kConflict for a unique
  // violation, deadlock or serialization failure, or a prepared plan whose
  // result type a schema change altered (retry the transaction: the
  // statement is prepared again), kInvalidArgument for anything else (a
  // bug); the message has PostgreSQL's text and SQLSTATE.
  Result<PgResult> Exec(const std::string& sql, const PgParams& params = {});
  // The same, with the results in binary form: a bytea column's Text() is
  // its bytes (no hex text twice their size), an integer's is big-endian.
  Result<PgResult> ExecBinary(const std::string& sql, const PgParams& params = {});

  // Runs `sql`, which may be several statements, without parameters and
  // unprepared (the simple query protocol).
  Status ExecScript(const std::string& sql);

  // Runs `sql`, a `COPY ... FROM STDIN`, sending `data` as its whole input
  // (in the format the COPY names). Errors as Exec's (a unique violation
  // is kConflict); nothing is copied if it fails.
  Status CopyIn(const std::string& sql, std::string_view data);

  Status Begin() { return ExecScript("BEGIN"); }
  Status Commit() { return Exec("COMMIT").status(); }
  void Rollback();

  // False once the connection is broken.
  bool healthy() const;
  // Statements prepared on this connection (for tests).
  std::size_t prepared() const { return prepared_.size(); }
  pg_conn* raw() { return conn_; }

 private:
  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  // The prepared statement's name for `sql`, preparing it if new; "" to run
  // it unprepared (the cache is full).
  Result<std::string> Prepared(const std::string& sql, int params);
  Result<PgResult> Run(const std::string& sql, const PgParams& params, int result_format);
  Status ErrorOf(pg_result* raw);
  pg_conn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> name
  std::uint64_t statements_ = 0;  // names given so far ("tw1", "tw2", ...)
};

// Parameter encodings for arrays (unnest) and bytea, in text form.
std::string PgTextArray(const std::vector<std::string>& values);
std::string PgBigintArray(const std::vector<std::int64_t>& values);
std::string PgByteaArray(const std::vector<std::string>& values);

// The same in binary form (array_recv's: one dimension, no NULLs). The
// element type must be the one the statement casts the parameter to
// ($1::int[] takes PgBinaryIntArray, $1::smallint[] PgBinarySmallintArray):
// PostgreSQL refuses another. A value outside int or smallint is a bug
// (the caller's to check); it is cut to the width.
PgParam PgBinaryTextArray(const std::vector<std::string>& values);
PgParam PgBinaryByteaArray(const std::vector<std::string>& values);
PgParam PgBinaryBigintArray(const std::vector<std::int64_t>& values);
PgParam PgBinaryIntArray(const std::vector<std::int64_t>& values);
PgParam PgBinarySmallintArray(const std::vector<std::int64_t>& values);

// A stream in COPY's binary format (`COPY ... FROM STDIN (FORMAT binary)`):
// for each row, Row(its number of fields), then each field in the COPY's
// column order, in its type's binary form: an integer at the column's
// width (2, 4 or 8), text and bytea as they are.
// Thread safety: a value owned by one thread.
class PgCopyStream {
 public:
  PgCopyStream();
  void Row(int fields);
  void Bytes(std::string_view value);
  void Integer(std::int64_t value, int width);
  // The stream, trailer added. Call once.
  std::string Finish();

 private:
  std::string out_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_
