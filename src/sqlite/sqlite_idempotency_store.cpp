// SPDX-License-Identifier: Apache-2.0
#include "sqlite_database.hpp"

#include <babelqueue/clock.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/sqlite/idempotency_store.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>

#include <mutex>
#include <utility>

namespace babelqueue::sqlite {

using idempotency::Claim;
using idempotency::ClaimState;
using sqlite_detail::Database;
using sqlite_detail::Statement;
using std::chrono::milliseconds;

namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS bq_idempotency ("
    " message_id TEXT PRIMARY KEY NOT NULL,"
    " done INTEGER NOT NULL,"  // 1 remembered, 0 claimed
    " token TEXT,"             // the claim's, while claimed
    " expires_at INTEGER"      // Unix epoch ms; NULL = never
    ") WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS bq_idempotency_expiry ON bq_idempotency (expires_at) WHERE expires_at IS NOT NULL;";

std::int64_t to_ms(milliseconds d) { return static_cast<std::int64_t>(d.count()); }

}  // namespace

class IdempotencyStore::State {
 public:
  explicit State(Options o) : options(std::move(o)) {}

  Result<void> connect() {
    auto opened = Database::open(options.path, options.busy_timeout);
    if (!opened) return unexpected(opened.error());
    db = std::move(*opened);
    if (auto wal = sqlite_detail::use_wal(db); !wal) return wal;
    if (auto sync = db.exec("PRAGMA synchronous=NORMAL", "set synchronous"); !sync) return sync;
    auto created =
        db.write_transaction("create the idempotency table", [&] { return db.exec(kCreateTable, "create the table"); });
    if (!created) return created;
    struct Prepared {
      Statement* target;
      const char* sql;
    };
    const Prepared all[] = {
        {&seen,
         "SELECT 1 FROM bq_idempotency WHERE message_id = ?1 AND done = 1 AND (expires_at IS NULL OR expires_at > ?2)"},
        {&remember,
         "INSERT OR REPLACE INTO bq_idempotency (message_id, done, token, expires_at) VALUES (?1, 1, NULL, ?2)"},
        {&forget, "DELETE FROM bq_idempotency WHERE message_id = ?1"},
        {&lookup, "SELECT done, expires_at FROM bq_idempotency WHERE message_id = ?1"},
        {&take, "INSERT OR REPLACE INTO bq_idempotency (message_id, done, token, expires_at) VALUES (?1, 0, ?2, ?3)"},
        {&renew,
         "UPDATE bq_idempotency SET expires_at = ?3 WHERE message_id = ?1 AND done = 0 AND token = ?2 AND expires_at > "
         "?4"},
        {&abandon, "DELETE FROM bq_idempotency WHERE message_id = ?1 AND done = 0 AND token = ?2"},
        {&purge,
         "DELETE FROM bq_idempotency WHERE message_id IN (SELECT message_id FROM bq_idempotency WHERE expires_at <= ?1 "
         "LIMIT ?2)"},
    };
    for (const Prepared& item : all) {
      auto statement = db.prepare(item.sql);
      if (!statement) return unexpected(statement.error());
      *item.target = std::move(*statement);
    }
    return {};
  }

  // Runs a statement that returns no rows, in a write transaction of its
  // own; the number of rows it changed.
  template <class Bind>
  Result<int> write(Statement& statement, std::string_view doing, Bind bind) {
    return db.write_transaction(doing, [&]() -> Result<int> {
      const Statement::Use use(statement);
      bind(statement);
      const int rc = statement.step();
      if (rc != SQLITE_DONE) return unexpected(db.error(rc, doing));
      return sqlite3_changes(db.get());
    });
  }

  // Called under mutex after a write: a bounded clean-up now and then.
  void after_write() {
    if (options.cleanup_batch == 0 || ++writes % options.cleanup_batch != 0) return;
    (void)purge_locked(options.cleanup_batch);  // a failed clean-up is retried at the next one
  }

  Result<std::size_t> purge_locked(std::size_t max) {
    auto removed = write(purge, "remove expired ids", [&](Statement& s) {
      s.bind(1, now_epoch_ms());
      s.bind(2, static_cast<std::int64_t>(max));
    });
    if (!removed) return unexpected(removed.error());
    return static_cast<std::size_t>(*removed);
  }

  std::int64_t done_expiry() const { return options.ttl.count() > 0 ? now_epoch_ms() + to_ms(options.ttl) : -1; }

  Options options;
  std::mutex mutex;
  Database db;
  Statement seen, remember, forget, lookup, take, renew, abandon, purge;
  std::size_t writes = 0;
};

IdempotencyStore::IdempotencyStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
IdempotencyStore::~IdempotencyStore() = default;

Result<std::unique_ptr<IdempotencyStore>> IdempotencyStore::open(Options options) {
  if (options.path.empty()) return unexpected(Errc::invalid_argument, "the SQLite idempotency store needs a path");
  if (options.ttl.count() < 0 || options.busy_timeout.count() < 0) {
    return unexpected(Errc::invalid_argument,
                      "the SQLite idempotency store's ttl and busy_timeout must not be negative");
  }
  auto state = std::make_unique<State>(std::move(options));
  if (auto connected = state->connect(); !connected) return unexpected(connected.error());
  return std::unique_ptr<IdempotencyStore>(new IdempotencyStore(std::move(state)));
}

Result<IdempotencyStore::Options> IdempotencyStore::options_from_url(const Url& url) {
  auto path = sqlite_detail::path_from_url(url);
  if (!path) return unexpected(path.error());
  Options options;
  options.path = std::move(*path);
  UrlOptionReader read(url);
  read.duration("ttl", options.ttl, {});
  read.duration("busy_timeout", options.busy_timeout, {.max = std::chrono::hours(24)});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return options;
}

Result<bool> IdempotencyStore::seen(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  Statement& s = state_->seen;
  const Statement::Use use(s);
  s.bind_text(1, id);
  s.bind(2, now_epoch_ms());
  const int rc = s.step();
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return unexpected(state_->db.error(rc, "look up an id"));
}

Result<void> IdempotencyStore::remember(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  const std::int64_t expires = state_->done_expiry();
  auto written = state_->write(state_->remember, "remember an id", [&](Statement& s) {
    s.bind_text(1, id);
    if (expires < 0) {
      s.bind_null(2);
    } else {
      s.bind(2, expires);
    }
  });
  if (!written) return unexpected(written.error());
  state_->after_write();
  return {};
}

Result<void> IdempotencyStore::forget(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  auto written = state_->write(state_->forget, "forget an id", [&](Statement& s) { s.bind_text(1, id); });
  if (!written) return unexpected(written.error());
  return {};
}

Result<Claim> IdempotencyStore::claim(std::string_view id, milliseconds lease) {
  std::lock_guard lock(state_->mutex);
  State& st = *state_;
  std::string token = uuid_v4();
  // The look-up and the take in one write transaction: two processes
  // claiming one id serialise on the write lock, and the second sees the
  // first's claim.
  auto claimed = st.db.write_transaction("claim an id", [&]() -> Result<Claim> {
    const std::int64_t now = now_epoch_ms();
    {
      const Statement::Use use(st.lookup);
      st.lookup.bind_text(1, id);
      const int rc = st.lookup.step();
      if (rc == SQLITE_ROW) {
        const bool done = st.lookup.column_int64(0) == 1;
        const bool never = st.lookup.column_is_null(1);
        const std::int64_t expires = never ? 0 : st.lookup.column_int64(1);
        if (never || expires > now) {
          if (done) return Claim{ClaimState::done, {}, {}};
          return Claim{ClaimState::in_flight, {}, milliseconds(never ? 0 : expires - now)};
        }
      } else if (rc != SQLITE_DONE) {
        return unexpected(st.db.error(rc, "claim an id"));
      }
    }
    const Statement::Use use(st.take);
    st.take.bind_text(1, id);
    st.take.bind_text(2, token);
    st.take.bind(3, now + to_ms(lease));
    const int rc = st.take.step();
    if (rc != SQLITE_DONE) return unexpected(st.db.error(rc, "claim an id"));
    return Claim{ClaimState::acquired, token, {}};
  });
  if (claimed && claimed->state == ClaimState::acquired) st.after_write();
  return claimed;
}

Result<bool> IdempotencyStore::renew(std::string_view id, std::string_view token, milliseconds lease) {
  std::lock_guard lock(state_->mutex);
  const std::int64_t now = now_epoch_ms();
  auto changed = state_->write(state_->renew, "renew a claim", [&](Statement& s) {
    s.bind_text(1, id);
    s.bind_text(2, token);
    s.bind(3, now + to_ms(lease));
    s.bind(4, now);
  });
  if (!changed) return unexpected(changed.error());
  return *changed > 0;
}

Result<void> IdempotencyStore::complete(std::string_view id, std::string_view /*token*/) {
  // The claim's row becomes the remembered one: one write.
  return remember(id);
}

Result<void> IdempotencyStore::abandon(std::string_view id, std::string_view token) {
  std::lock_guard lock(state_->mutex);
  auto changed = state_->write(state_->abandon, "abandon a claim", [&](Statement& s) {
    s.bind_text(1, id);
    s.bind_text(2, token);
  });
  if (!changed) return unexpected(changed.error());
  return {};
}

Result<std::size_t> IdempotencyStore::purge_expired(std::size_t max) {
  std::lock_guard lock(state_->mutex);
  return state_->purge_locked(max);
}

void register_idempotency_store() {
  idempotency::register_store_scheme("sqlite", [](const Url& url) -> Result<std::unique_ptr<idempotency::Store>> {
    auto options = IdempotencyStore::options_from_url(url);
    if (!options) return unexpected(options.error());
    auto store = IdempotencyStore::open(std::move(*options));
    if (!store) return unexpected(store.error());
    return std::unique_ptr<idempotency::Store>(std::move(*store));
  });
}

}  // namespace babelqueue::sqlite
