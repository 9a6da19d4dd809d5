// SPDX-License-Identifier: Apache-2.0
// The outbox in a SQLite database (docs/outbox.md): write() stores a message
// through the caller's own sqlite3* inside the caller's open transaction,
// next to the business rows it belongs to; SqliteStore is the relay's side,
// on a connection of its own to the same file. Several relays (threads or
// processes) may share one file: each claim is one IMMEDIATE transaction.
//
// The table (migrate() creates it; any name valid_table_name() accepts):
//
//   CREATE TABLE babelqueue_outbox (
//     id            INTEGER PRIMARY KEY,
//     queue         TEXT    NOT NULL,
//     body          BLOB    NOT NULL,            -- the envelope's bytes
//     created_at    INTEGER NOT NULL,            -- Unix ms, when written
//     attempts      INTEGER NOT NULL DEFAULT 0,  -- failed publishes
//     last_error    TEXT,                        -- the last failure's text
//     available_at  INTEGER NOT NULL DEFAULT 0,  -- Unix ms, no try before (backoff)
//     claimed_until INTEGER NOT NULL DEFAULT 0,  -- Unix ms, a relay's lease
//     published_at  INTEGER                      -- Unix ms; NULL while pending
//   );
//   CREATE INDEX babelqueue_outbox_pending ON babelqueue_outbox (id) WHERE published_at IS NULL;
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/outbox/store.hpp>
#include <babelqueue/publish_params.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/value.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;

namespace babelqueue::outbox {

/// Creates the outbox table and its index in db when they do not exist.
/// Errc::invalid_argument for a table name valid_table_name() refuses.
Result<void> migrate(sqlite3* db, std::string_view table = kDefaultTable);

/// Stores envelope as a pending row for queue (empty: its meta.queue, else
/// "default"), through db inside the transaction the caller opened: it is
/// published if and only if that transaction commits. It neither begins
/// nor commits; Errc::invalid_argument when db has no open transaction
/// (autocommit would publish what a rollback should have taken back).
/// The bytes stored are envelope.encode(): canonical, sent verbatim.
/// Returns the row's id.
Result<std::int64_t> write(sqlite3* db, const Envelope& envelope, std::string_view queue = {},
                           std::string_view table = kDefaultTable);

/// Makes the envelope for urn and data (meta.queue = params.queue, else
/// "default"; params.trace_id continues a trace) and writes it as above.
/// Returns its meta.id. Headers, delay and keys of params are not stored.
Result<std::string> write(sqlite3* db, std::string_view urn, const Value& data, const PublishParams& params = {},
                          std::string_view table = kDefaultTable);

/// The relay's side of a SQLite outbox: a connection of its own to the file.
class SqliteStore final : public Store {
 public:
  /// Opens file (creating the table when missing) in WAL mode, waiting up
  /// to busy_timeout for another connection's lock. Errc::io when it cannot
  /// be opened, Errc::invalid_argument for a bad table name.
  static Result<std::unique_ptr<SqliteStore>> open(const std::filesystem::path& file,
                                                   std::string_view table = kDefaultTable,
                                                   std::chrono::milliseconds busy_timeout = std::chrono::seconds(5));
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;             ///< one connection, not shared
  SqliteStore& operator=(const SqliteStore&) = delete;  ///< one connection, not shared

  Result<std::vector<Record>> claim(std::size_t limit, std::chrono::milliseconds lease) override;
  Result<void> mark_published(const std::vector<std::int64_t>& ids) override;
  Result<void> mark_failed(std::int64_t id, std::string_view error, std::chrono::milliseconds retry_after) override;
  std::string describe() const override;

  /// Rows still pending (published_at NULL), for monitoring and tests.
  Result<std::int64_t> pending();

 private:
  class State;
  explicit SqliteStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace babelqueue::outbox
