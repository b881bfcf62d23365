// A libpq connection and its results, with errors as Status: the one place
// the PostgreSQL store and the cluster talk to libpq.
#ifndef TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_
#define TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

// Statement parameters, as text (nullopt is NULL).
using PgParams = std::vector<std::optional<std::string>>;

// One connection. Thread safety: one thread at a time.
class PgConnection {
 public:
  // Connects to `conninfo` (a postgresql:// URL or key=value string).
  // kUnavailable with libpq's reason (credentials redacted) if it cannot.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo);
  ~PgConnection();

  // Runs one statement. Errors: kUnavailable when the connection is lost or
  // the server cannot now (the caller reconnects or retries), kConflict for
  // a unique violation, deadlock or serialization failure (retry the
  // transaction), kInvalidArgument for anything else (a bug); the message
  // has PostgreSQL's text and SQLSTATE.
  Result<PgResult> Exec(const std::string& sql, const PgParams& params = {});

  // Runs `sql`, which may be several statements, without parameters.
  Status ExecScript(const std::string& sql);

  Status Begin() { return ExecScript("BEGIN"); }
  Status Commit() { return Exec("COMMIT").status(); }
  void Rollback();

  // False once the connection is broken.
  bool healthy() const;
  pg_conn* raw() { return conn_; }

 private:
  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  Status ErrorOf(pg_result* raw);
  pg_conn* conn_;
};

// Parameter encodings for arrays (unnest) and bytea.
std::string PgTextArray(const std::vector<std::string>& values);
std::string PgBigintArray(const std::vector<std::int64_t>& values);
std::string PgByteaArray(const std::vector<std::string>& values);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_CONNECTION_H_
