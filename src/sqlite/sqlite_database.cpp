// SPDX-License-Identifier: Apache-2.0
#include "sqlite_database.hpp"

#include <string>
#include <thread>

namespace babelqueue::sqlite_detail {
namespace {

Errc classify(int code) noexcept {
  switch (code & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Errc::timeout;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS:
    case SQLITE_AUTH: return Errc::io;
    default: return Errc::internal;
  }
}

// Whether the same call may succeed later, by what happened rather than by
// the Errc: a lock held too long, a transient read or write error or a full
// disk may pass; a file that is not a database (or is damaged), a path that
// cannot be opened (a missing directory, a directory, no permission) or a
// read-only file stays so until someone fixes it.
bool retriable(int code) noexcept {
  switch (code & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_PROTOCOL: return true;
    default: return false;
  }
}

// SQLite's name for the primary result code, kept as the error's native code.
std::string native_name(int code) {
  switch (code & 0xFF) {
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL";
    case SQLITE_NOLFS: return "SQLITE_NOLFS";
    case SQLITE_AUTH: return "SQLITE_AUTH";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    default: return "SQLITE_ERROR (" + std::to_string(code) + ")";
  }
}

}  // namespace

ErrorInfo translate_error(sqlite3* db, int code, std::string_view doing, std::string_view path) {
  std::string message = "SQLite " + std::string(doing) + " on '" + std::string(path) + "' failed: ";
  // errmsg describes the connection's last error, which is this one unless
  // the code came from a failed bind (then errstr is the better text).
  const char* text = db != nullptr && sqlite3_extended_errcode(db) == code ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  const std::string detail = text != nullptr ? text : "unknown error";
  message += detail;
  const Errc kind = classify(code);
  if (kind == Errc::timeout) message += " (another connection held the lock longer than busy_timeout)";
  if ((code & 0xFF) == SQLITE_NOTADB || (code & 0xFF) == SQLITE_CORRUPT) {
    message += " (the file is not a SQLite database, or it is damaged)";
  }
  return ErrorInfo(kind, std::move(message), retriable(code)).with_native(native_name(code), detail);
}

Result<Database> Database::open(const std::string& path, std::chrono::milliseconds busy_timeout) {
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  ConnectionHandle db(raw);  // owned even on failure: SQLite allocates a handle to carry the message
  if (rc != SQLITE_OK) {
    // Whatever SQLite says (cannot open, permission, out of memory), the
    // caller's fix is about the file, so it is an I/O error naming the path;
    // retrying does not create a missing directory or grant a permission.
    std::string detail = db ? sqlite3_errmsg(db.get()) : sqlite3_errstr(rc);
    std::string message = "cannot open SQLite database '" + path + "': " + detail +
                          " (does its directory exist, and may this process write there?)";
    return unexpected(ErrorInfo(Errc::io, std::move(message), retriable(rc)).with_native(native_name(rc), detail));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  const auto busy_ms = busy_timeout.count() > INT32_MAX ? INT32_MAX : static_cast<int>(busy_timeout.count());
  sqlite3_busy_timeout(db.get(), busy_ms);
  Database database(std::move(db), path);
  for (auto [target, sql] :
       {std::pair{&database.transaction_.begin, "BEGIN IMMEDIATE"}, std::pair{&database.transaction_.commit, "COMMIT"},
        std::pair{&database.transaction_.rollback, "ROLLBACK"}}) {
    auto statement = database.prepare(sql);
    if (!statement) return unexpected(statement.error());
    *target = std::move(*statement);
  }
  return database;
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc =
      sqlite3_prepare_v3(get(), sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  StatementHandle handle(raw);
  if (rc != SQLITE_OK) return unexpected(error(rc, "prepare"));
  return Statement(std::move(handle));
}

Result<void> Database::exec(const char* sql, std::string_view doing) {
  const int rc = sqlite3_exec(get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return unexpected(error(rc, doing));
  return {};
}

Result<std::string> Database::query_text(const char* sql, std::string_view doing) {
  auto statement = prepare(sql);
  if (!statement) return unexpected(statement.error());
  const Statement::Use use(*statement);
  const int rc = statement->step();
  if (rc == SQLITE_ROW) return statement->column_bytes(0);
  if (rc == SQLITE_DONE) return std::string{};
  return unexpected(error(rc, doing));
}

Result<std::string> path_from_url(const Url& url) {
  if (url.scheme != "sqlite") return unexpected(Errc::invalid_argument, "not a sqlite:// URL: " + url.redacted());
  if (!url.user.empty() || !url.password.empty() || url.port) {
    return unexpected(
        Errc::invalid_argument,
        "sqlite:// takes a file path (sqlite://relative/path.db or sqlite:///absolute/path.db), not " + url.redacted());
  }
  if (url.host.empty()) {
    if (url.path.empty())
      return unexpected(Errc::invalid_argument, "sqlite:// needs a file path, e.g. sqlite://queue.db");
    return "/" + url.path;  // sqlite:///var/q.db
  }
  return url.path.empty() ? url.host : url.host + "/" + url.path;  // sqlite://data/q.db
}

Result<void> use_wal(Database& db) {
  // WAL: readers never block the writer and the writer never blocks readers,
  // and a commit is one append to the log. Switching needs a moment of
  // exclusive access, so a file being opened by several processes at once may
  // answer BUSY; that is retried like any write.
  Result<std::string> mode = unexpected(Errc::internal, "unreachable");
  for (int attempt = 0; attempt < 20; ++attempt) {
    mode = db.query_text("PRAGMA journal_mode=WAL", "switch to WAL mode");
    if (mode || mode.error().code() != Errc::timeout) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * (attempt + 1)));
  }
  if (!mode) return unexpected(mode.error());
  // A file system without shared memory (some network mounts) keeps the
  // rollback journal: still correct, only slower under load.
  return {};
}

}  // namespace babelqueue::sqlite_detail
