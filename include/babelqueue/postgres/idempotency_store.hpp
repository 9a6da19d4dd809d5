// SPDX-License-Identifier: Apache-2.0
// IdempotencyStore: the idempotency store in a PostgreSQL database (library
// babelqueue::postgres, on libpq; docs/idempotency.md), shared by every
// worker that reaches the database — and by the Go SDK's consumers, whose
// store has the same table (the family's ADR-0022):
//
//   CREATE TABLE babelqueue_idempotency (
//     message_id TEXT PRIMARY KEY,                      -- meta.id, once handled
//     created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
//     expires_at TIMESTAMPTZ NULL                       -- NULL: kept for ever
//   );
//   CREATE INDEX ... ON babelqueue_idempotency (expires_at);
//
//   CREATE TABLE babelqueue_idempotency_claims (       -- in-flight claims (C++ only)
//     message_id TEXT PRIMARY KEY, token TEXT NOT NULL, claimed_until TIMESTAMPTZ NOT NULL
//   );
//
// seen() is a live row of the first table (expires_at NULL or in the
// future); remember() inserts one, or re-takes an expired one (Go's claim);
// forget() deletes the id from both tables. Claims live in a table of their
// own, so a Go consumer never mistakes one for a handled id; a claim past
// its lease is taken over in the same statement that looks for it.
// purge_expired() deletes expired rows of both (Go's optional GC).
//
// URL: postgresql://[user[:password]@]host[:port]/database[?table=NAME&ttl=DURATION
//      &...libpq parameters (sslmode, connect_timeout, application_name...)]
//
// Thread-safety: every method may be called from several threads at once
// (one connection, used by one call at a time; re-established after a
// failure).
#pragma once

#include <babelqueue/idempotency/store.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <memory>
#include <string>

/// PostgreSQL stores: idempotency (library babelqueue::postgres).
namespace babelqueue::postgres {

/// An idempotency store in a PostgreSQL database, in the Go SDK's table
/// layout (this header's opening comment gives the tables and the URL).
class IdempotencyStore final : public idempotency::Store {
 public:
  /// The database and the table.
  struct Options {
    /// A libpq connection string or URI (postgresql://...), without the
    /// store's own parameters.
    std::string conninfo;
    /// The handled ids' table ([A-Za-z_][A-Za-z0-9_]*, at most 63); the
    /// claims' table is its name + "_claims".
    std::string table = "babelqueue_idempotency";
    /// How long a remembered id is kept; zero = for ever (Go's default).
    std::chrono::milliseconds ttl{0};
  };

  /// Connects at once and creates the tables when missing (migrate), so a
  /// wrong address, password or table name is an error here:
  /// Errc::connection, Errc::auth, Errc::invalid_argument.
  static Result<std::unique_ptr<IdempotencyStore>> open(Options options);
  /// Options from a postgresql:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~IdempotencyStore() override;  ///< closes its connection

  Result<bool> seen(std::string_view id) override;
  Result<void> remember(std::string_view id) override;
  Result<void> forget(std::string_view id) override;
  Result<idempotency::Claim> claim(std::string_view id, std::chrono::milliseconds lease) override;
  Result<bool> renew(std::string_view id, std::string_view token, std::chrono::milliseconds lease) override;
  Result<void> complete(std::string_view id, std::string_view token) override;
  Result<void> abandon(std::string_view id, std::string_view token) override;
  Result<std::size_t> purge_expired(std::size_t max) override;

 private:
  class State;
  explicit IdempotencyStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers postgresql:// with babelqueue::idempotency::open_store().
void register_idempotency_store();

}  // namespace babelqueue::postgres
