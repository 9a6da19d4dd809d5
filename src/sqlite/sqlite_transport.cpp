// SPDX-License-Identifier: Apache-2.0
#include "sqlite_database.hpp"

#include <babelqueue/clock.hpp>
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace babelqueue {
namespace {

using sqlite_detail::Database;
using sqlite_detail::Statement;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The schema this SDK writes, recorded in PRAGMA user_version. A newer SDK
// that changes the layout raises it, and this one then refuses the file
// instead of misreading it.
constexpr int kSchemaVersion = 1;

// available_at is the moment a row may next be claimed: its publish time, the
// end of its delay, or — while it is reserved — the end of its reservation
// (equal to reserved_until). So "claimable" is the one index range
// (queue, available_at <= now), and an expired reservation needs no sweeper:
// it is claimable again by construction.
constexpr const char* kCreateSchema = R"sql(
CREATE TABLE IF NOT EXISTS bq_messages (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  queue          TEXT    NOT NULL,
  body           BLOB    NOT NULL,
  headers        TEXT,
  available_at   INTEGER NOT NULL,
  reserved_until INTEGER,
  lease          TEXT,
  deliveries     INTEGER NOT NULL DEFAULT 0,
  created_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS bq_messages_by_queue ON bq_messages (queue, available_at);
)sql";

// The batches a worker uses on this transport (Capabilities::ack_batch_size,
// default_prefetch); see capabilities().
constexpr std::size_t kAckBatchSize = 256;
constexpr std::size_t kDefaultPrefetch = 256;

constexpr milliseconds kFirstPollPause{5};
// wait values are clamped to this so that adding one to a clock cannot overflow.
constexpr milliseconds kLongestWait{std::chrono::hours(24 * 365)};

Unexpected<ErrorInfo> closed_error() { return unexpected(Errc::closed, "the SQLite transport is closed"); }

Result<void> check_queue_name(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

Unexpected<ErrorInfo> lease_lost(const Delivery& delivery, std::string_view path) {
  return unexpected(Errc::not_found, "message " + std::to_string(delivery.token.id) + " of queue '" + delivery.queue +
                                         "' in '" + std::string(path) +
                                         "' is not held by this delivery any more (already settled, or its "
                                         "visibility timeout passed and it was received again)");
}

// The row id and lease a delivery token carries; nullopt for a token this
// transport cannot have made.
std::optional<std::int64_t> row_id_of(const Delivery& delivery) {
  if (delivery.token.text.empty() || delivery.token.id == 0 ||
      delivery.token.id > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(delivery.token.id);
}

// Headers are stored as a JSON object of strings; NULL when there are none.
Result<std::optional<std::string>> encode_headers(const Headers& headers) {
  if (headers.empty()) return std::optional<std::string>{};
  Object object;
  object.reserve(headers.size());
  for (const auto& [name, value] : headers) object.set(name, Value(value));
  auto text = to_json(Value(std::move(object)));
  if (!text) return unexpected(Errc::invalid_argument, "headers cannot be stored: " + text.error().message());
  return std::optional<std::string>(std::move(*text));
}

// The column was written by encode_headers; anything else (a hand-edited
// file) yields no headers rather than a message that can never be received.
Headers decode_headers(const std::string& text) {
  Headers headers;
  auto value = parse_json(text);
  if (!value || !value->is_object()) return headers;
  for (const auto& [name, item] : value->as_object()) {
    if (const std::string* string = item.if_string()) headers.emplace(name, *string);
  }
  return headers;
}

std::int64_t to_ms(milliseconds duration) noexcept { return static_cast<std::int64_t>(duration.count()); }

}  // namespace

// Everything behind the transport: the connection (guarded by db_mutex) and
// the wake-up channel of waiting receivers (guarded by wake_mutex).
class sqlite::Transport::State {
 public:
  struct Statements {
    Statement insert;
    Statement next_available;
    Statement select_ready;
    Statement claim;
    Statement remove;
    Statement release;
    Statement extend;
    Statement stats;
  };

  explicit State(Options opts) : options(std::move(opts)) {}

  const Options options;
  std::mutex db_mutex;
  Database db;            // declared before the statements: they are finalized first
  Statements statements;  // guarded by db_mutex
  std::atomic<bool> closed{false};
  // The last claim returned as many messages as it was asked for (any queue:
  // a hint for receive(), never a correctness matter).
  std::atomic<bool> last_claim_full{false};

  std::mutex wake_mutex;
  std::condition_variable wake;
  std::uint64_t generation = 0;  // bumped (under wake_mutex) when this transport made a message ready

  Result<void> connect();
  void notify_ready() {
    {
      const std::lock_guard lock(wake_mutex);
      ++generation;
    }
    wake.notify_all();
  }
  std::uint64_t current_generation() {
    const std::lock_guard lock(wake_mutex);
    return generation;
  }

  // Inserts one message; the caller holds db_mutex and a transaction.
  Result<void> insert(std::string_view queue, std::string_view body, const std::optional<std::string>& headers,
                      milliseconds delay, std::int64_t now);
  // The earliest available_at of queue (nullopt: the queue is empty).
  Result<std::optional<std::int64_t>> next_available(std::string_view queue);
  // Reserves up to max claimable messages of queue in one transaction.
  Result<std::vector<Delivery>> claim(std::string_view queue, std::size_t max);
  // Runs a single-row settle statement (remove, release, extend) bound to
  // the delivery's row id (1) and lease (2) plus extra bindings; not_found
  // when no row matched.
  template <class BindExtra>
  Result<void> settle(Statement& statement, const Delivery& delivery, std::string_view doing, BindExtra bind_extra);
  // Deletes every delivery's row in one transaction, appending to failures
  // each one whose lease was lost; false with the error when the
  // transaction itself failed (then nothing was settled).
  Result<void> remove_all(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures);
};

Result<void> sqlite::Transport::State::connect() {
  auto opened = Database::open(options.path, options.busy_timeout);
  if (!opened) return unexpected(opened.error());
  db = std::move(*opened);

  if (auto wal = sqlite_detail::use_wal(db); !wal) return wal;

  const char* synchronous =
      options.synchronous == Synchronous::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
  if (auto set = db.exec(synchronous, "set synchronous"); !set) return set;
  // A queue's rows are read back (claimed, deleted) soon after they were
  // written: pages mapped from the file and a page cache that holds a busy
  // queue's working set spare a read system call and a copy per page. The
  // checkpoint (an fsync of the log and of the file under synchronous=normal,
  // made by whichever commit crosses the mark, under the write lock) runs
  // every 16384 pages of log (64 MiB) rather than SQLite's 1000: a
  // sixteenth of the fsyncs for the same bytes, for a log file that grows to
  // that size and stays there (SQLite reuses it).
  if (auto tuned = db.exec("PRAGMA mmap_size=268435456; PRAGMA cache_size=-16384; PRAGMA wal_autocheckpoint=16384",
                           "tune the page cache");
      !tuned) {
    return tuned;
  }

  auto schema = db.write_transaction("create the schema", [&]() -> Result<void> {
    auto version_text = db.query_text("PRAGMA user_version", "read the schema version");
    if (!version_text) return unexpected(version_text.error());
    const long version = std::strtol(version_text->c_str(), nullptr, 10);
    if (version > kSchemaVersion) {
      return unexpected(Errc::unsupported, "'" + options.path + "' holds a BabelQueue schema of version " +
                                               std::to_string(version) + "; this SDK reads version " +
                                               std::to_string(kSchemaVersion) + " (upgrade the SDK)");
    }
    if (version == kSchemaVersion) return {};
    if (auto created = db.exec(kCreateSchema, "create the schema"); !created) return created;
    return db.exec("PRAGMA user_version = 1", "record the schema version");
  });
  if (!schema) return schema;

  struct Prepared {
    Statement* target;
    const char* sql;
  };
  const Prepared all[] = {
      {&statements.insert,
       "INSERT INTO bq_messages (queue, body, headers, available_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&statements.next_available, "SELECT MIN(available_at) FROM bq_messages WHERE queue = ?1"},
      {&statements.select_ready,
       "SELECT id, body, headers, deliveries FROM bq_messages WHERE queue = ?1 AND available_at <= ?2 "
       "ORDER BY available_at, id LIMIT ?3"},
      {&statements.claim,
       "UPDATE bq_messages SET reserved_until = ?2, available_at = ?2, lease = ?3, deliveries = deliveries + 1 "
       "WHERE id = ?1"},
      {&statements.remove, "DELETE FROM bq_messages WHERE id = ?1 AND lease = ?2"},
      {&statements.release,
       "UPDATE bq_messages SET reserved_until = NULL, lease = NULL, available_at = ?3 WHERE id = ?1 AND lease = ?2"},
      {&statements.extend,
       "UPDATE bq_messages SET reserved_until = ?3, available_at = ?3 WHERE id = ?1 AND lease = ?2"},
      {&statements.stats,
       "SELECT COALESCE(SUM(available_at <= ?2), 0), COALESCE(SUM(reserved_until > ?2), 0), "
       "COALESCE(SUM(reserved_until IS NULL AND available_at > ?2), 0) FROM bq_messages WHERE queue = ?1"},
  };
  for (const Prepared& item : all) {
    auto statement = db.prepare(item.sql);
    if (!statement) return unexpected(statement.error());
    *item.target = std::move(*statement);
  }
  return {};
}

Result<void> sqlite::Transport::State::insert(std::string_view queue, std::string_view body,
                                              const std::optional<std::string>& headers, milliseconds delay,
                                              std::int64_t now) {
  Statement& statement = statements.insert;
  const Statement::Use use(statement);
  statement.bind_text(1, queue);
  statement.bind_blob(2, body);
  if (headers) {
    statement.bind_text(3, *headers);
  } else {
    statement.bind_null(3);
  }
  statement.bind(4, babelqueue::detail::saturating_add(now, to_ms(delay)));  // a delay of "never" stays never
  statement.bind(5, now);
  const int rc = statement.step();
  if (rc != SQLITE_DONE) return unexpected(db.error(rc, "publish"));
  return {};
}

Result<std::optional<std::int64_t>> sqlite::Transport::State::next_available(std::string_view queue) {
  const std::lock_guard lock(db_mutex);
  if (!db.is_open()) return closed_error();
  Statement& statement = statements.next_available;
  const Statement::Use use(statement);
  statement.bind_text(1, queue);
  const int rc = statement.step();
  if (rc != SQLITE_ROW) return unexpected(db.error(rc, "receive"));
  if (statement.column_is_null(0)) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>(statement.column_int64(0));
}

Result<std::vector<Delivery>> sqlite::Transport::State::claim(std::string_view queue, std::size_t max) {
  const std::lock_guard lock(db_mutex);
  if (!db.is_open()) return closed_error();
  return db.write_transaction("receive", [&]() -> Result<std::vector<Delivery>> {
    const std::int64_t now = now_epoch_ms();
    const std::int64_t reserved_until = now + to_ms(options.visibility_timeout);
    // The same lease on this process's steady clock, for the runtime.
    const auto lease_deadline = std::chrono::steady_clock::now() + options.visibility_timeout;
    // One lease for the whole claim: a token is the row id and the lease, so
    // the pair stays unique, and a redelivery is a new claim with a new lease.
    const std::string lease = uuid_v4();
    std::vector<Delivery> deliveries;
    // Read the rows first, update them after: updating available_at moves a
    // row inside the index the SELECT is walking.
    {
      Statement& select = statements.select_ready;
      const Statement::Use use(select);
      select.bind_text(1, queue);
      select.bind(2, now);
      select.bind(3, static_cast<std::int64_t>(std::min<std::size_t>(max, 1U << 20U)));
      for (;;) {
        const int rc = select.step();
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) return unexpected(db.error(rc, "receive"));
        Delivery delivery;
        delivery.queue = std::string(queue);
        delivery.token.id = static_cast<std::uint64_t>(select.column_int64(0));
        delivery.body = select.column_bytes(1);
        if (!select.column_is_null(2)) delivery.headers = decode_headers(select.column_bytes(2));
        // deliveries counts the earlier receives: this one is number deliveries + 1.
        delivery.native_attempts = select.column_int64(3);
        delivery.token.text = lease;
        delivery.lease_deadline = lease_deadline;
        deliveries.push_back(std::move(delivery));
      }
    }
    Statement& claim = statements.claim;
    for (const Delivery& delivery : deliveries) {
      const Statement::Use use(claim);
      claim.bind(1, static_cast<std::int64_t>(delivery.token.id));
      claim.bind(2, reserved_until);
      claim.bind_text(3, lease);
      const int rc = claim.step();
      if (rc != SQLITE_DONE) return unexpected(db.error(rc, "receive"));
    }
    return deliveries;
  });
}

template <class BindExtra>
Result<void> sqlite::Transport::State::settle(Statement& statement, const Delivery& delivery, std::string_view doing,
                                              BindExtra bind_extra) {
  const auto row_id = row_id_of(delivery);
  if (!row_id) return lease_lost(delivery, options.path);
  const std::lock_guard lock(db_mutex);
  if (!db.is_open()) return closed_error();
  return db.write_transaction(doing, [&]() -> Result<void> {
    const Statement::Use use(statement);
    statement.bind(1, *row_id);
    statement.bind_text(2, delivery.token.text);
    bind_extra(statement);
    const int rc = statement.step();
    if (rc != SQLITE_DONE) return unexpected(db.error(rc, doing));
    if (sqlite3_changes(db.get()) == 0) return lease_lost(delivery, options.path);
    return {};
  });
}

Result<void> sqlite::Transport::State::remove_all(std::span<const Delivery> deliveries,
                                                  std::vector<AckFailure>& failures) {
  const std::size_t before = failures.size();
  const std::lock_guard lock(db_mutex);
  if (!db.is_open()) return closed_error();
  return db.write_transaction("ack", [&]() -> Result<void> {
    // A retried transaction starts again from an empty list of failures.
    failures.erase(failures.begin() + static_cast<std::ptrdiff_t>(before), failures.end());
    Statement& remove = statements.remove;
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
      const Delivery& delivery = deliveries[i];
      const auto row_id = row_id_of(delivery);
      if (!row_id) {
        failures.push_back(AckFailure{i, lease_lost(delivery, options.path).error});
        continue;
      }
      const Statement::Use use(remove);
      remove.bind(1, *row_id);
      remove.bind_text(2, delivery.token.text);
      const int rc = remove.step();
      if (rc != SQLITE_DONE) return unexpected(db.error(rc, "ack"));
      if (sqlite3_changes(db.get()) == 0) failures.push_back(AckFailure{i, lease_lost(delivery, options.path).error});
    }
    return {};
  });
}

sqlite::Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

sqlite::Transport::~Transport() { close(); }

Result<std::unique_ptr<sqlite::Transport>> sqlite::Transport::open(Options options) {
  if (options.path.empty()) return unexpected(Errc::invalid_argument, "sqlite::Transport needs a database path");
  if (options.visibility_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "sqlite::Transport visibility_timeout must be positive");
  }
  if (options.busy_timeout.count() < 0) {
    return unexpected(Errc::invalid_argument, "sqlite::Transport busy_timeout must not be negative");
  }
  if (options.poll_interval.count() <= 0) {
    return unexpected(Errc::invalid_argument, "sqlite::Transport poll_interval must be positive");
  }
  auto state = std::make_unique<State>(std::move(options));
  if (auto connected = state->connect(); !connected) return unexpected(connected.error());
  return std::unique_ptr<sqlite::Transport>(new sqlite::Transport(std::move(state)));
}

Result<sqlite::Transport::Options> sqlite::Transport::options_from_url(const Url& url) {
  auto path = sqlite_detail::path_from_url(url);
  if (!path) return unexpected(path.error());
  Options options;
  options.path = std::move(*path);
  UrlOptionReader read(url);
  read.duration("visibility_timeout", options.visibility_timeout, {.min = milliseconds(1)});
  read.duration("busy_timeout", options.busy_timeout, {.max = std::chrono::hours(24)});
  read.duration("poll_interval", options.poll_interval, {.min = milliseconds(1), .max = std::chrono::hours(1)});
  read.choice("synchronous", options.synchronous, {{"normal", Synchronous::normal}, {"full", Synchronous::full}});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return options;
}

const sqlite::Transport::Options& sqlite::Transport::options() const noexcept { return state_->options; }

Capabilities sqlite::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;
  caps.native_release = true;
  caps.delivery_count = true;
  caps.redelivers_unsettled = true;
  caps.lease = state_->options.visibility_timeout;
  caps.extendable_lease = true;
  caps.batch_publish = true;
  caps.batch_ack = true;
  // Every receive and every ack_batch is a write transaction, whose cost
  // (the WAL frames of the pages it touched, the locks) hardly grows with
  // its rows: a worker claims and settles in batches this big.
  caps.ack_batch_size = kAckBatchSize;
  caps.default_prefetch = kDefaultPrefetch;
  caps.ordered = true;
  caps.peek = true;
  return caps;
}

Result<void> sqlite::Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  const OutgoingMessage message{std::string(queue), std::string(body), options};
  return publish_batch(std::span<const OutgoingMessage>(&message, 1));
}

Result<void> sqlite::Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  // Everything that can be refused is checked before the transaction, so a
  // batch is all or nothing.
  std::vector<std::optional<std::string>> headers;
  headers.reserve(messages.size());
  for (const OutgoingMessage& message : messages) {
    if (auto valid = check_queue_name(message.queue); !valid) return valid;
    if (message.options.delay.count() < 0) return unexpected(Errc::invalid_argument, "the publish delay is negative");
    auto encoded = encode_headers(message.options.headers);
    if (!encoded) return unexpected(encoded.error());
    headers.push_back(std::move(*encoded));
  }
  if (messages.empty()) return {};
  if (state_->closed) return closed_error();
  {
    const std::lock_guard lock(state_->db_mutex);
    if (!state_->db.is_open()) return closed_error();
    auto written = state_->db.write_transaction("publish", [&]() -> Result<void> {
      const std::int64_t now = now_epoch_ms();
      for (std::size_t i = 0; i < messages.size(); ++i) {
        const OutgoingMessage& message = messages[i];
        auto inserted = state_->insert(message.queue, message.body, headers[i], message.options.delay, now);
        if (!inserted) return inserted;
      }
      return {};
    });
    if (!written) {
      if (messages.size() == 1) return written;
      return unexpected(written.error().code(),
                        "none of the " + std::to_string(messages.size()) +
                            " messages of the batch was published: " + written.error().message());
    }
  }
  state_->notify_ready();
  return {};
}

Result<std::vector<Delivery>> sqlite::Transport::receive(std::string_view queue, std::size_t max, milliseconds wait) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
  const Clock::time_point deadline = Clock::now() + std::clamp(wait, milliseconds(0), kLongestWait);
  milliseconds pause = kFirstPollPause;
  // While the last claim filled its batch, the queue most likely holds more:
  // claim at once, without the look below (a read and a lock of its own).
  if (state_->last_claim_full.load(std::memory_order_relaxed)) {
    auto claimed = state_->claim(queue, max);
    if (!claimed) return claimed;
    state_->last_claim_full.store(claimed->size() == max, std::memory_order_relaxed);
    if (!claimed->empty()) return claimed;
  }
  for (;;) {
    if (state_->closed) return closed_error();
    // Read before looking, so a publish that commits after the look still
    // cuts the pause short.
    const std::uint64_t seen = state_->current_generation();
    // A cheap read first: idle consumers polling an empty queue never take
    // the write lock that publishers and other consumers need.
    auto next = state_->next_available(queue);
    if (!next) return unexpected(next.error());
    const std::int64_t now = now_epoch_ms();
    if (*next && **next <= now) {
      auto claimed = state_->claim(queue, max);
      if (claimed) state_->last_claim_full.store(claimed->size() == max, std::memory_order_relaxed);
      if (!claimed || !claimed->empty()) return claimed;
      // Another consumer took them between the look and the claim.
    }
    const Clock::time_point steady_now = Clock::now();
    if (steady_now >= deadline) return std::vector<Delivery>{};
    auto sleep = std::min<Clock::duration>(pause, deadline - steady_now);
    if (*next && **next > now) {
      // Held before converting to the clock's unit: a message delayed for
      // ever is due at the largest time there is.
      sleep =
          std::min<Clock::duration>(sleep, milliseconds(std::min<std::int64_t>(**next - now, kLongestWait.count())));
    }
    {
      std::unique_lock lock(state_->wake_mutex);
      state_->wake.wait_for(lock, sleep, [&] { return state_->closed.load() || state_->generation != seen; });
    }
    pause = std::min(pause * 2, state_->options.poll_interval);
  }
}

Result<void> sqlite::Transport::ack(const Delivery& delivery) {
  if (state_->closed) return closed_error();
  return state_->settle(state_->statements.remove, delivery, "ack", [](Statement&) {});
}

Result<void> sqlite::Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  if (deliveries.empty()) return {};
  const std::size_t before = failures.size();
  auto removed = state_->closed ? Result<void>(closed_error()) : state_->remove_all(deliveries, failures);
  if (!removed) {
    // The transaction was rolled back: none of them is settled.
    failures.erase(failures.begin() + static_cast<std::ptrdiff_t>(before), failures.end());
    for (std::size_t i = 0; i < deliveries.size(); ++i) failures.push_back(AckFailure{i, removed.error()});
  }
  if (failures.size() == before) return {};
  const ErrorInfo& first = failures[before].error;
  return unexpected(first.code(), std::to_string(failures.size() - before) + " of " +
                                      std::to_string(deliveries.size()) +
                                      " deliveries were not settled; the first: " + first.message());
}

Result<void> sqlite::Transport::release(const Delivery& delivery, milliseconds delay) {
  if (delay.count() < 0) return unexpected(Errc::invalid_argument, "the release delay is negative");
  if (state_->closed) return closed_error();
  auto released = state_->settle(state_->statements.release, delivery, "release", [&](Statement& statement) {
    statement.bind(3, babelqueue::detail::saturating_add(now_epoch_ms(), to_ms(delay)));
  });
  if (released) state_->notify_ready();
  return released;
}

Result<void> sqlite::Transport::extend(const Delivery& delivery, milliseconds lease) {
  if (lease.count() < 0) return unexpected(Errc::invalid_argument, "the lease is negative");
  if (state_->closed) return closed_error();
  return state_->settle(state_->statements.extend, delivery, "extend", [&](Statement& statement) {
    statement.bind(3, babelqueue::detail::saturating_add(now_epoch_ms(), to_ms(lease)));
  });
}

Result<QueueStats> sqlite::Transport::stats(std::string_view queue) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (state_->closed) return closed_error();
  const std::lock_guard lock(state_->db_mutex);
  if (!state_->db.is_open()) return closed_error();
  Statement& statement = state_->statements.stats;
  const Statement::Use use(statement);
  statement.bind_text(1, queue);
  statement.bind(2, now_epoch_ms());
  const int rc = statement.step();
  if (rc != SQLITE_ROW) return unexpected(state_->db.error(rc, "stats"));
  return QueueStats{statement.column_int64(0), statement.column_int64(1), statement.column_int64(2)};
}

Result<std::vector<PeekedMessage>> sqlite::Transport::peek(std::string_view queue, std::size_t max) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "peek needs max >= 1");
  if (state_->closed) return closed_error();
  const std::lock_guard lock(state_->db_mutex);
  if (!state_->db.is_open()) return closed_error();
  // The rows a receive would claim, in its order; a plain read, no
  // transaction needed.
  Statement& select = state_->statements.select_ready;
  const Statement::Use use(select);
  select.bind_text(1, queue);
  select.bind(2, now_epoch_ms());
  select.bind(3, static_cast<std::int64_t>(std::min<std::size_t>(max, 1U << 20U)));
  std::vector<PeekedMessage> shown;
  for (;;) {
    const int rc = select.step();
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return unexpected(state_->db.error(rc, "peek"));
    PeekedMessage message;
    message.body = select.column_bytes(1);
    if (!select.column_is_null(2)) message.headers = decode_headers(select.column_bytes(2));
    message.native_attempts = select.column_int64(3);
    shown.push_back(std::move(message));
  }
  return shown;
}

void sqlite::Transport::close(milliseconds deadline) {
  if (!state_) return;
  if (!state_->closed.exchange(true)) {
    { const std::lock_guard lock(state_->wake_mutex); }
    state_->wake.notify_all();
  }
  // Waits for an operation in progress; past the deadline the connection is
  // left to the destructor (which the caller must not race).
  // A try_lock loop rather than std::timed_mutex: GCC 12's ThreadSanitizer
  // does not see timed locks (pthread_mutex_clocklock) and reports their
  // unlock as wrong, which would hide real reports.
  const auto until = babelqueue::detail::saturating_after(std::chrono::steady_clock::now(), deadline);
  std::unique_lock lock(state_->db_mutex, std::defer_lock);
  while (!lock.try_lock()) {
    if (std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(milliseconds(1));
  }
  state_->statements = State::Statements{};
  state_->db.close();
}

namespace sqlite {

void register_transport() { babelqueue::register_transport("sqlite", url_factory<sqlite::Transport>()); }

}  // namespace sqlite
}  // namespace babelqueue
