// SPDX-License-Identifier: Apache-2.0
// A thin RAII layer over the SQLite C API for the SQLite transport: an owned
// connection, prepared statements, error translation into ErrorInfo, and write
// transactions that retry when another connection holds the lock.
//
// Thread-safety: none. The transport guards its Database with a mutex.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace babelqueue::sqlite_detail {

struct ConnectionCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using ConnectionHandle = std::unique_ptr<sqlite3, ConnectionCloser>;
using StatementHandle = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

// Turns a SQLite result code into the SDK's error: lock contention is
// Errc::timeout (retriable), file trouble is Errc::io, the rest is a bug.
ErrorInfo translate_error(sqlite3* db, int code, std::string_view doing, std::string_view path);

// The file a sqlite:// URL names (sqlite://rel/path.db, sqlite:///abs/path.db).
Result<std::string> path_from_url(const Url& url);

// True for the codes a retry may cure: another connection holds the lock.
inline bool is_busy(int code) noexcept {
  const int primary = code & 0xFF;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

// A prepared statement kept for the connection's lifetime. Bind, step, read
// columns, then let a Statement::Use reset it for the next call.
class Statement {
 public:
  Statement() = default;
  explicit Statement(StatementHandle handle) : handle_(std::move(handle)) {}

  // Resets the statement and clears its bindings when the use ends, so a
  // statement is never left holding a read transaction open.
  class Use {
   public:
    explicit Use(Statement& statement) noexcept : statement_(statement) {}
    ~Use() {
      sqlite3_reset(statement_.get());
      sqlite3_clear_bindings(statement_.get());
      statement_.bind_error_ = SQLITE_OK;
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    Statement& statement_;
  };

  sqlite3_stmt* get() const noexcept { return handle_.get(); }

  void bind(int index, std::int64_t value) noexcept { record(sqlite3_bind_int64(get(), index, value)); }
  void bind_null(int index) noexcept { record(sqlite3_bind_null(get(), index)); }
  // The bytes must outlive the step (SQLITE_STATIC): callers bind and step in
  // one expression's scope.
  void bind_text(int index, std::string_view text) noexcept {
    record(sqlite3_bind_text64(get(), index, text.empty() ? "" : text.data(), text.size(), sqlite3_destructor_type{},
                               SQLITE_UTF8));
  }
  void bind_blob(int index, std::string_view bytes) noexcept {
    // A null pointer would bind SQL NULL; an empty body is a zero-length blob.
    if (bytes.empty()) {
      record(sqlite3_bind_zeroblob(get(), index, 0));
    } else {
      record(sqlite3_bind_blob64(get(), index, bytes.data(), bytes.size(), sqlite3_destructor_type{}));
    }
  }

  // SQLITE_ROW, SQLITE_DONE, or the error code (including a failed bind).
  int step() noexcept { return bind_error_ != SQLITE_OK ? bind_error_ : sqlite3_step(get()); }

  std::int64_t column_int64(int index) const noexcept { return sqlite3_column_int64(get(), index); }
  bool column_is_null(int index) const noexcept { return sqlite3_column_type(get(), index) == SQLITE_NULL; }
  std::string column_bytes(int index) const {
    const void* data = sqlite3_column_blob(get(), index);
    const int size = sqlite3_column_bytes(get(), index);
    if (data == nullptr || size <= 0) return {};
    return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
  }

 private:
  void record(int code) noexcept {
    if (code != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = code;
  }

  StatementHandle handle_;
  int bind_error_ = SQLITE_OK;
};

// One connection to one database file.
class Database {
 public:
  // Opens path read-write (creating it) with the busy timeout set.
  static Result<Database> open(const std::string& path, std::chrono::milliseconds busy_timeout);

  Database() = default;

  sqlite3* get() const noexcept { return db_.get(); }
  const std::string& path() const noexcept { return path_; }
  bool is_open() const noexcept { return db_ != nullptr; }
  void close() noexcept {
    transaction_ = {};  // finalized before the connection they belong to
    db_.reset();
  }

  Result<Statement> prepare(std::string_view sql);
  // Runs SQL without results (or ignoring them).
  Result<void> exec(const char* sql, std::string_view doing);
  // A single-value query, e.g. PRAGMA journal_mode.
  Result<std::string> query_text(const char* sql, std::string_view doing);

  ErrorInfo error(int code, std::string_view doing) const { return translate_error(get(), code, doing, path_); }

  // Runs body inside BEGIN IMMEDIATE ... COMMIT (rolled back when body or the
  // commit fails). When another connection holds the write lock beyond the
  // busy timeout, or SQLite answers BUSY without waiting (WAL recovery), the
  // whole transaction is tried again a few times with a growing pause.
  template <class Body>
  auto write_transaction(std::string_view doing, Body&& body) -> decltype(body());

 private:
  // BEGIN IMMEDIATE, COMMIT and ROLLBACK, prepared once: every operation of
  // the transport is a transaction, and parsing them anew each time is a
  // visible share of a small one.
  struct TransactionStatements {
    Statement begin;
    Statement commit;
    Statement rollback;
  };

  Database(ConnectionHandle db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  // SQLITE_OK, or the statement's error code.
  static int run(Statement& statement) noexcept {
    const Statement::Use use(statement);
    const int rc = statement.step();
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  void rollback() noexcept { run(transaction_.rollback); }

  ConnectionHandle db_;  // declared before the statements: they are finalized first
  TransactionStatements transaction_;
  std::string path_;
};

// Switches the connection to WAL mode, retrying while other processes
// opening the same file at once keep it busy.
Result<void> use_wal(Database& db);

template <class Body>
auto Database::write_transaction(std::string_view doing, Body&& body) -> decltype(body()) {
  // On top of the busy timeout SQLite already waited: 10 + 20 + 40 + 80 + 160 ms.
  constexpr int kAttempts = 6;
  std::chrono::milliseconds pause{10};
  for (int attempt = 1;; ++attempt) {
    const bool last = attempt == kAttempts;
    const int begin = run(transaction_.begin);
    if (begin != SQLITE_OK) {
      if (is_busy(begin) && !last) {
        std::this_thread::sleep_for(pause);
        pause *= 2;
        continue;
      }
      return unexpected(error(begin, doing));
    }
    auto result = body();
    if (!result) {
      rollback();
      if (result.error().code() == Errc::timeout && !last) {
        std::this_thread::sleep_for(pause);
        pause *= 2;
        continue;
      }
      return result;
    }
    const int commit = run(transaction_.commit);
    if (commit != SQLITE_OK) {
      ErrorInfo failure = error(commit, doing);
      rollback();
      if (is_busy(commit) && !last) {
        std::this_thread::sleep_for(pause);
        pause *= 2;
        continue;
      }
      return unexpected(std::move(failure));
    }
    return result;
  }
}

}  // namespace babelqueue::sqlite_detail
