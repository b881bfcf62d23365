// SPDX-License-Identifier: Apache-2.0
#include "store/pg_connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstring>

#include "common/redact.h"

namespace tickwheel::server {

PgResult::PgResult(pg_result* result) : result_(result) {}
PgResult::~PgResult() {
  if (result_ != nullptr) PQclear(result_);
}
PgResult::PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

int PgResult::rows() const { return PQntuples(result_); }
bool PgResult::IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
std::string_view PgResult::Text(int row, int column) const {
  return {PQgetvalue(result_, row, column),
          static_cast<std::size_t>(PQgetlength(result_, row, column))};
}
std::int64_t PgResult::Int(int row, int column) const {
  return std::stoll(std::string(Text(row, column)));
}
std::string PgResult::Bytes(int row, int column) const {
  std::size_t length = 0;
  unsigned char* bytes =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column)),
                      &length);
  std::string out(reinterpret_cast<const char*>(bytes), length);
  PQfreemem(bytes);
  return out;
}
std::int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(result_);
  return n[0] == '\0' ? 0 : std::stoll(n);
}

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& conninfo) {
  // A dead peer or a cut network is noticed within seconds (TCP keepalives,
  // a limit on unacknowledged data) instead of blocking a thread for minutes.
  // The URL's own settings win over these.
  const char* keywords[] = {"connect_timeout", "keepalives", "keepalives_idle",
                            "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                            "dbname", nullptr};
  const char* values[] = {"5", "1", "5", "2", "3", "10000", conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    PQfinish(conn);
    return Status::Unavailable("cannot connect to PostgreSQL at " + RedactUrl(conninfo) + ": " + why);
  }
  // PostgreSQL's notices ("relation already exists, skipping") are not
  // errors: keep them off stderr.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  std::unique_ptr<PgConnection> c(new PgConnection(conn));
  // No lock is waited for long, and a transaction left open by a paused
  // node releases its locks (its lease rows among them) by itself.
  Status set = c->ExecScript(
      "SET lock_timeout = '2s'; SET idle_in_transaction_session_timeout = '5s'; "
      "SET statement_timeout = '30s'");
  if (!set.ok()) return set;
  return c;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::healthy() const { return PQstatus(conn_) == CONNECTION_OK; }

Result<std::string> PgConnection::Prepared(const std::string& sql, int params) {
  if (auto it = prepared_.find(sql); it != prepared_.end()) return it->second;
  if (prepared_.size() >= kMaxPrepared) return std::string();
  // A name is never reused on this connection: one forgotten after a plan
  // change (below) may still exist on the server.
  std::string name = "tw" + std::to_string(++statements_);
  pg_result* raw = PQprepare(conn_, name.c_str(), sql.c_str(), params, nullptr);
  if (raw == nullptr || PQresultStatus(raw) != PGRES_COMMAND_OK) return ErrorOf(raw);
  PQclear(raw);
  prepared_.emplace(sql, name);
  return name;
}

Result<PgResult> PgConnection::Exec(const std::string& sql, const PgParams& params) {
  return Run(sql, params, 0);
}

Result<PgResult> PgConnection::ExecBinary(const std::string& sql, const PgParams& params) {
  return Run(sql, params, 1);
}

Result<PgResult> PgConnection::Run(const std::string& sql, const PgParams& params,
                                   int result_format) {
  const bool any_binary =
      std::any_of(params.begin(), params.end(), [](const PgParam& p) { return p.binary; });
  std::vector<const char*> values;
  std::vector<int> lengths, formats;  // only when a parameter is binary (libpq: all text)
  values.reserve(params.size());
  for (const PgParam& p : params) {
    values.push_back(p.value ? p.value->data() : nullptr);
    if (!any_binary) continue;
    lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
    formats.push_back(p.binary ? 1 : 0);
  }
  const int* length_of = any_binary ? lengths.data() : nullptr;
  const int* format_of = any_binary ? formats.data() : nullptr;
  const int n = static_cast<int>(values.size());
  Result<std::string> name = Prepared(sql, n);
  if (!name.ok()) return name.status();
  pg_result* raw =
      name->empty()
          ? PQexecParams(conn_, sql.c_str(), n, nullptr, values.data(), length_of, format_of,
                         result_format)
          : PQexecPrepared(conn_, name->c_str(), n, values.data(), length_of, format_of,
                           result_format);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return PgResult(raw);
  const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = raw ? PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  if (!name->empty() && state != nullptr && std::strcmp(state, "0A000") == 0 &&
      primary != nullptr && std::strstr(primary, "cached plan") != nullptr) {
    // "cached plan must not change result type": a migration altered a table
    // under the prepared statement. Forget it (it is prepared again under a
    // new name next time) and have the caller run its transaction again.
    prepared_.erase(sql);
    const Status why = ErrorOf(raw);
    return Status::Conflict("retry_transaction", why.message());
  }
  return ErrorOf(raw);
}

Status PgConnection::ExecScript(const std::string& sql) {
  pg_result* raw = PQexec(conn_, sql.c_str());
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    PQclear(raw);
    return Status::Ok();
  }
  return ErrorOf(raw);
}

Status PgConnection::CopyIn(const std::string& sql, std::string_view data) {
  pg_result* raw = PQexec(conn_, sql.c_str());
  if (raw == nullptr || PQresultStatus(raw) != PGRES_COPY_IN) return ErrorOf(raw);
  PQclear(raw);
  const bool sent = PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) == 1;
  // Ending with an error message aborts the COPY: nothing is copied.
  const bool ended = PQputCopyEnd(conn_, sent ? nullptr : "tickwheel: sending failed") == 1;
  Status status = Status::Ok();
  bool first = true;
  while ((raw = PQgetResult(conn_)) != nullptr) {
    if (first && (!ended || PQresultStatus(raw) != PGRES_COMMAND_OK)) {
      status = ErrorOf(raw);  // clears it
    } else {
      PQclear(raw);
    }
    first = false;
  }
  if (first) status = ErrorOf(nullptr);  // no result: the connection is gone
  return status;
}

Status PgConnection::ErrorOf(pg_result* raw) {
  std::string why = raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_);
  const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state ? state : "";
  if (raw) PQclear(raw);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  const std::string message = "PostgreSQL: " + why + (sqlstate.empty() ? "" : " [" + sqlstate + "]");
  // 23505 unique violation, 40001 serialization failure, 40P01 deadlock,
  // 55P03 lock not available (lock_timeout).
  if (sqlstate == "23505" || sqlstate == "40001" || sqlstate == "40P01" || sqlstate == "55P03") {
    return Status::Conflict("retry_transaction", message);
  }
  // Class 08: connection exceptions; 57P: operator intervention (shutdown);
  // 53: insufficient resources; 25P02: a transaction already aborted; no
  // SQLSTATE: the connection is gone.
  if (!healthy() || sqlstate.empty() || sqlstate.rfind("08", 0) == 0 ||
      sqlstate.rfind("57P", 0) == 0 || sqlstate.rfind("53", 0) == 0) {
    return Status::Unavailable(message);
  }
  return Status::Invalid("postgres_error", message);
}

void PgConnection::Rollback() {
  if (healthy()) (void)ExecScript("ROLLBACK");
}

namespace {

void AppendQuoted(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace

std::string PgTextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    AppendQuoted(out, values[i]);
  }
  return out + '}';
}

std::string PgBigintArray(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out + '}';
}

std::string PgByteaArray(const std::vector<std::string>& values) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    // "\\x..." : the array quoting's backslash, then bytea's hex form.
    out += "\"\\\\x";
    for (unsigned char c : values[i]) {
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    out += '"';
  }
  return out + '}';
}

namespace {

// PostgreSQL's type OIDs (pg_type.dat) of the elements.
constexpr std::uint32_t kInt2Oid = 21, kInt4Oid = 23, kInt8Oid = 20, kTextOid = 25,
                        kByteaOid = 17;

void AppendBigEndian(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// array_recv's header: one dimension (none when empty), no NULLs, the
// element type, then the dimension's length and lower bound (1).
std::string BinaryArrayHeader(std::uint32_t element_oid, std::size_t count,
                              std::size_t payload_bytes) {
  std::string out;
  out.reserve(20 + payload_bytes);
  AppendBigEndian(out, count == 0 ? 0 : 1, 4);
  AppendBigEndian(out, 0, 4);
  AppendBigEndian(out, element_oid, 4);
  if (count > 0) {
    AppendBigEndian(out, count, 4);
    AppendBigEndian(out, 1, 4);
  }
  return out;
}

PgParam BinaryBytesArray(std::uint32_t element_oid, const std::vector<std::string>& values) {
  std::size_t payload = 0;
  for (const std::string& v : values) payload += 4 + v.size();
  std::string out = BinaryArrayHeader(element_oid, values.size(), payload);
  for (const std::string& v : values) {
    AppendBigEndian(out, v.size(), 4);
    out += v;
  }
  return PgParam::Binary(std::move(out));
}

PgParam BinaryIntegerArray(std::uint32_t element_oid, int width,
                           const std::vector<std::int64_t>& values) {
  std::string out = BinaryArrayHeader(element_oid, values.size(), values.size() * (4 + width));
  for (std::int64_t v : values) {
    AppendBigEndian(out, static_cast<std::uint64_t>(width), 4);
    AppendBigEndian(out, static_cast<std::uint64_t>(v), width);
  }
  return PgParam::Binary(std::move(out));
}

}  // namespace

PgCopyStream::PgCopyStream() {
  static constexpr char kSignature[] = "PGCOPY\n\377\r\n";  // and its trailing NUL
  out_.append(kSignature, sizeof kSignature);
  AppendBigEndian(out_, 0, 4);  // flags: no OIDs
  AppendBigEndian(out_, 0, 4);  // no header extension
}

void PgCopyStream::Row(int fields) { AppendBigEndian(out_, static_cast<std::uint64_t>(fields), 2); }

void PgCopyStream::Bytes(std::string_view value) {
  AppendBigEndian(out_, value.size(), 4);
  out_ += value;
}

void PgCopyStream::Integer(std::int64_t value, int width) {
  AppendBigEndian(out_, static_cast<std::uint64_t>(width), 4);
  AppendBigEndian(out_, static_cast<std::uint64_t>(value), width);
}

std::string PgCopyStream::Finish() {
  AppendBigEndian(out_, 0xffff, 2);  // -1: no more rows
  return std::move(out_);
}

PgParam PgBinaryTextArray(const std::vector<std::string>& values) {
  return BinaryBytesArray(kTextOid, values);
}
PgParam PgBinaryByteaArray(const std::vector<std::string>& values) {
  return BinaryBytesArray(kByteaOid, values);
}
PgParam PgBinaryBigintArray(const std::vector<std::int64_t>& values) {
  return BinaryIntegerArray(kInt8Oid, 8, values);
}
PgParam PgBinaryIntArray(const std::vector<std::int64_t>& values) {
  return BinaryIntegerArray(kInt4Oid, 4, values);
}
PgParam PgBinarySmallintArray(const std::vector<std::int64_t>& values) {
  return BinaryIntegerArray(kInt2Oid, 2, values);
}

}  // namespace tickwheel::server
