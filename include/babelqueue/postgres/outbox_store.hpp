// SPDX-License-Identifier: Apache-2.0
// The outbox in a PostgreSQL database (library babelqueue::postgres, with
// babelqueue::outbox; docs/outbox.md): write() stores a message through the
// caller's own PGconn* inside the caller's open transaction and notifies
// the relays (pg_notify, delivered when that transaction commits);
// OutboxStore is the relay's side, on connections of its own. Relays on
// several hosts share one table: rows are claimed with FOR UPDATE SKIP
// LOCKED and a lease, and a relay with nothing to do waits on LISTEN, so a
// committed row is relayed within milliseconds instead of at the next poll.
//
// The table (migrate() creates it; any name of [A-Za-z_][A-Za-z0-9_]*, at
// most 63 characters; the notification channel has the table's name):
//
//   CREATE TABLE babelqueue_outbox (
//     id            BIGSERIAL   PRIMARY KEY,
//     queue         TEXT        NOT NULL,
//     body          TEXT        NOT NULL,                    -- the envelope's bytes (UTF-8 JSON)
//     created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
//     attempts      INTEGER     NOT NULL DEFAULT 0,
//     last_error    TEXT,
//     available_at  TIMESTAMPTZ NOT NULL DEFAULT now(),      -- no try before (backoff)
//     claimed_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity', -- a relay's lease
//     published_at  TIMESTAMPTZ                              -- NULL while pending
//   );
//   CREATE INDEX babelqueue_outbox_pending ON babelqueue_outbox (id) WHERE published_at IS NULL;
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/outbox/store.hpp>
#include <babelqueue/publish_params.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/value.hpp>

#include <memory>
#include <string>
#include <string_view>

struct pg_conn;

namespace babelqueue::postgres {

/// Creates the outbox table and its index through conn when they do not
/// exist. Errc::invalid_argument for a bad table name.
Result<void> migrate_outbox(pg_conn* conn, std::string_view table = outbox::kDefaultTable);

/// Stores envelope as a pending row for queue (empty: its meta.queue, else
/// "default") through conn inside the transaction the caller began, and
/// notifies the relays when it commits. Neither begins nor commits;
/// Errc::invalid_argument when conn is not inside a transaction. The bytes
/// stored are envelope.encode(). Returns the row's id.
Result<std::int64_t> write_outbox(pg_conn* conn, const Envelope& envelope, std::string_view queue = {},
                                  std::string_view table = outbox::kDefaultTable);

/// Makes the envelope for urn and data (meta.queue = params.queue, else
/// "default") and writes it as above. Returns its meta.id.
Result<std::string> write_outbox(pg_conn* conn, std::string_view urn, const Value& data,
                                 const PublishParams& params = {}, std::string_view table = outbox::kDefaultTable);

/// The relay's side of a PostgreSQL outbox.
class OutboxStore final : public outbox::Store {
 public:
  /// Where, and how a relay learns of new rows.
  struct Options {
    std::string conninfo;                                    ///< a libpq connection string or URI
    std::string table = std::string(outbox::kDefaultTable);  ///< the outbox table
    /// LISTEN on the table's channel: wait_for_rows() returns when a
    /// write commits. Off: it sleeps (the relay polls).
    bool listen = true;
  };

  /// Connects (twice when listening), creating the table when missing.
  /// Errc::connection, Errc::auth, Errc::invalid_argument.
  static Result<std::unique_ptr<OutboxStore>> open(Options options);
  /// Options from a postgresql:// URL: ?table=NAME&listen=false, every other
  /// parameter passed to libpq.
  static Result<Options> options_from_url(const Url& url);

  ~OutboxStore() override;

  Result<std::vector<outbox::Record>> claim(std::size_t limit, std::chrono::milliseconds lease) override;
  Result<void> mark_published(const std::vector<std::int64_t>& ids) override;
  Result<void> mark_failed(std::int64_t id, std::string_view error, std::chrono::milliseconds retry_after) override;
  /// Waits for a notification of the table's channel, at most timeout.
  Result<void> wait_for_rows(std::chrono::milliseconds timeout) override;
  std::string describe() const override;

  /// Rows still pending, for monitoring and tests.
  Result<std::int64_t> pending();

 private:
  class State;
  explicit OutboxStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace babelqueue::postgres
