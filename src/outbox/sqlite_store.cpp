// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>

#include <sqlite3.h>

#include <thread>

namespace babelqueue::outbox {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Finalizer {
  void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalizer>;

bool busy(int code) noexcept { return (code & 0xFF) == SQLITE_BUSY || (code & 0xFF) == SQLITE_LOCKED; }

// A SQLite failure as the SDK's error: lock contention is retriable
// (Errc::timeout), the rest an I/O failure of the database.
ErrorInfo failure(sqlite3* db, int code, std::string_view doing) {
  std::string text = "outbox: " + std::string(doing) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  return busy(code) ? ErrorInfo(Errc::timeout, std::move(text)) : ErrorInfo(Errc::io, std::move(text));
}

Result<Statement> prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr);
  if (rc != SQLITE_OK) return unexpected(failure(db, rc, "preparing a statement"));
  return Statement(raw);
}

Result<void> exec(sqlite3* db, const std::string& sql, std::string_view doing) {
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return unexpected(failure(db, rc, doing));
  return {};
}

Result<void> check_table(std::string_view table) {
  if (!valid_table_name(table)) {
    return unexpected(Errc::invalid_argument,
                      "outbox: '" + std::string(table) + "' is not a table name ([A-Za-z_][A-Za-z0-9_]*, at most 63)");
  }
  return {};
}

}  // namespace

Result<void> migrate(sqlite3* db, std::string_view table) {
  if (auto ok = check_table(table); !ok) return ok;
  const std::string t(table);
  return exec(db,
              "CREATE TABLE IF NOT EXISTS " + t +
                  " (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, body BLOB NOT NULL,"
                  " created_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
                  " available_at INTEGER NOT NULL DEFAULT 0, claimed_until INTEGER NOT NULL DEFAULT 0,"
                  " published_at INTEGER);"
                  " CREATE INDEX IF NOT EXISTS " +
                  t + "_pending ON " + t + " (id) WHERE published_at IS NULL;",
              "creating the table " + t);
}

Result<std::int64_t> write(sqlite3* db, const Envelope& envelope, std::string_view queue, std::string_view table) {
  if (auto ok = check_table(table); !ok) return unexpected(ok.error());
  if (db == nullptr) return unexpected(Errc::invalid_argument, "outbox: write needs a database connection");
  if (sqlite3_get_autocommit(db) != 0) {
    return unexpected(Errc::invalid_argument,
                      "outbox: write needs the caller's open transaction (BEGIN first): in autocommit the message "
                      "would stay even if the business rows are rolled back");
  }
  auto body = envelope.encode();
  if (!body) return unexpected(body.error());
  std::string target(queue.empty() ? envelope.queue() : queue);
  if (target.empty()) target = "default";
  auto statement = prepare(db, "INSERT INTO " + std::string(table) + " (queue, body, created_at) VALUES (?1, ?2, ?3)");
  if (!statement) return unexpected(statement.error());
  sqlite3_stmt* s = statement->get();
  sqlite3_bind_text64(s, 1, target.data(), target.size(), SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_blob64(s, 2, body->data(), body->size(), SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, now_ms());
  if (const int rc = sqlite3_step(s); rc != SQLITE_DONE) return unexpected(failure(db, rc, "writing a message"));
  return sqlite3_last_insert_rowid(db);
}

Result<std::string> write(sqlite3* db, std::string_view urn, const Value& data, const PublishParams& params,
                          std::string_view table) {
  MakeOptions make;
  make.queue = params.queue.empty() ? "default" : params.queue;
  make.trace_id = params.trace_id;
  auto envelope = Envelope::make(urn, data, make);
  if (!envelope) return unexpected(envelope.error());
  if (auto row = write(db, *envelope, make.queue, table); !row) return unexpected(row.error());
  return std::string(envelope->id());
}

class SqliteStore::State {
 public:
  ~State() {
    claim_.reset();
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }
  sqlite3* db_ = nullptr;
  std::string table_;
  std::string file_;
  Statement claim_;
};

SqliteStore::SqliteStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::filesystem::path& file, std::string_view table,
                                                       std::chrono::milliseconds busy_timeout) {
  if (auto ok = check_table(table); !ok) return unexpected(ok.error());
  auto state = std::make_unique<State>();
  state->table_ = std::string(table);
  state->file_ = file.string();
  const int rc = sqlite3_open_v2(state->file_.c_str(), &state->db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    return unexpected(Errc::io, "outbox: cannot open " + state->file_ + ": " +
                                    (state->db_ ? sqlite3_errmsg(state->db_) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(state->db_, static_cast<int>(busy_timeout.count()));
  if (auto ok = exec(state->db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "setting WAL mode"); !ok) {
    return unexpected(ok.error());
  }
  if (auto ok = migrate(state->db_, table); !ok) return unexpected(ok.error());
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(state)));
}

Result<std::vector<Record>> SqliteStore::claim(std::size_t limit, std::chrono::milliseconds lease) {
  sqlite3* db = state_->db_;
  // IMMEDIATE: the write lock first, so two relays never read the same
  // unclaimed rows (the second waits, then sees them claimed).
  if (auto begun = exec(db, "BEGIN IMMEDIATE", "claiming rows"); !begun) return unexpected(begun.error());
  auto rollback = [db] { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); };
  const std::string& t = state_->table_;
  const std::int64_t now = now_ms();
  auto select = prepare(db, "SELECT id, queue, body, attempts FROM " + t +
                                " WHERE published_at IS NULL AND available_at <= ?1 AND claimed_until <= ?1"
                                " ORDER BY id LIMIT ?2");
  if (!select) {
    rollback();
    return unexpected(select.error());
  }
  sqlite3_bind_int64(select->get(), 1, now);
  sqlite3_bind_int64(select->get(), 2, static_cast<std::int64_t>(limit));
  std::vector<Record> rows;
  int rc = 0;
  while ((rc = sqlite3_step(select->get())) == SQLITE_ROW) {
    Record r;
    r.id = sqlite3_column_int64(select->get(), 0);
    r.queue = reinterpret_cast<const char*>(sqlite3_column_text(select->get(), 1));
    const void* body = sqlite3_column_blob(select->get(), 2);
    r.body.assign(static_cast<const char*>(body), static_cast<std::size_t>(sqlite3_column_bytes(select->get(), 2)));
    r.attempts = sqlite3_column_int64(select->get(), 3);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) {
    auto error = failure(db, rc, "claiming rows");
    select->reset();
    rollback();
    return unexpected(std::move(error));
  }
  select->reset();
  if (!rows.empty()) {
    auto update = prepare(db, "UPDATE " + t +
                                  " SET claimed_until = ?1 WHERE id BETWEEN ?2 AND ?3 AND id IN "
                                  "(SELECT id FROM " +
                                  t +
                                  " WHERE published_at IS NULL AND available_at <= ?4 AND claimed_until <= ?4"
                                  " ORDER BY id LIMIT ?5)");
    if (!update) {
      rollback();
      return unexpected(update.error());
    }
    sqlite3_bind_int64(update->get(), 1, now + lease.count());
    sqlite3_bind_int64(update->get(), 2, rows.front().id);
    sqlite3_bind_int64(update->get(), 3, rows.back().id);
    sqlite3_bind_int64(update->get(), 4, now);
    sqlite3_bind_int64(update->get(), 5, static_cast<std::int64_t>(limit));
    if (rc = sqlite3_step(update->get()); rc != SQLITE_DONE) {
      auto error = failure(db, rc, "claiming rows");
      update->reset();
      rollback();
      return unexpected(std::move(error));
    }
  }
  if (auto committed = exec(db, "COMMIT", "claiming rows"); !committed) {
    rollback();
    return unexpected(committed.error());
  }
  return rows;
}

Result<void> SqliteStore::mark_published(const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return {};
  sqlite3* db = state_->db_;
  if (auto begun = exec(db, "BEGIN IMMEDIATE", "marking rows published"); !begun) return begun;
  auto update = prepare(db, "UPDATE " + state_->table_ + " SET published_at = ?1, last_error = NULL WHERE id = ?2");
  if (!update) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return unexpected(update.error());
  }
  const std::int64_t now = now_ms();
  for (const std::int64_t id : ids) {
    sqlite3_bind_int64(update->get(), 1, now);
    sqlite3_bind_int64(update->get(), 2, id);
    const int rc = sqlite3_step(update->get());
    sqlite3_reset(update->get());
    if (rc != SQLITE_DONE) {
      auto error = failure(db, rc, "marking rows published");
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return unexpected(std::move(error));
    }
  }
  update->reset();
  if (auto committed = exec(db, "COMMIT", "marking rows published"); !committed) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return committed;
  }
  return {};
}

Result<void> SqliteStore::mark_failed(std::int64_t id, std::string_view error, std::chrono::milliseconds retry_after) {
  sqlite3* db = state_->db_;
  auto update = prepare(db, "UPDATE " + state_->table_ +
                                " SET attempts = attempts + 1, last_error = ?1, available_at = ?2, claimed_until = 0"
                                " WHERE id = ?3");
  if (!update) return unexpected(update.error());
  sqlite3_bind_text64(update->get(), 1, error.data(), error.size(), SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_int64(update->get(), 2, now_ms() + retry_after.count());
  sqlite3_bind_int64(update->get(), 3, id);
  if (const int rc = sqlite3_step(update->get()); rc != SQLITE_DONE) {
    return unexpected(failure(db, rc, "marking a row failed"));
  }
  return {};
}

std::string SqliteStore::describe() const { return "sqlite://" + state_->file_ + "?table=" + state_->table_; }

Result<std::int64_t> SqliteStore::pending() {
  auto count = prepare(state_->db_, "SELECT count(*) FROM " + state_->table_ + " WHERE published_at IS NULL");
  if (!count) return unexpected(count.error());
  if (const int rc = sqlite3_step(count->get()); rc != SQLITE_ROW) {
    return unexpected(failure(state_->db_, rc, "counting pending rows"));
  }
  return sqlite3_column_int64(count->get(), 0);
}

}  // namespace babelqueue::outbox
