// SPDX-License-Identifier: Apache-2.0
// IdempotencyStore: the idempotency store in a SQLite file (library
// babelqueue::sqlite, with babelqueue::idempotency) — one file shared by the
// worker processes of a host, safe under concurrent writers (WAL mode, short
// BEGIN IMMEDIATE transactions, the busy timeout), surviving restarts.
//
// URL: sqlite://PATH[?ttl=DURATION&busy_timeout=DURATION]
//   sqlite:///var/lib/app/seen.db?ttl=168h
// The file may be the SQLite transport's own: the store keeps to its table,
// bq_idempotency (message_id TEXT PRIMARY KEY, done, token, expires_at in
// Unix epoch milliseconds; NULL = never).
//
// Time to live: a remembered id expires ttl after it was remembered (zero =
// never); a claim, its lease after it was taken or renewed. Expired rows
// are ignored at once and removed in bounded batches (cleanup_batch rows
// every cleanup_batch writes, and purge_expired()). Expiry reads the wall
// clock, which the processes of one host share.
#pragma once

#include <babelqueue/idempotency/store.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace babelqueue::sqlite {

/// An idempotency store in a SQLite file, shared by the processes of one host
/// (this header's opening comment gives the table and the URL).
class IdempotencyStore final : public idempotency::Store {
 public:
  /// The file and how ids are kept.
  struct Options {
    std::string path;                  ///< created when missing; the directory must exist
    std::chrono::milliseconds ttl{0};  ///< how long a remembered id is kept; zero = for ever
    std::chrono::milliseconds busy_timeout{std::chrono::seconds(5)};  ///< waiting for another connection's lock
    std::size_t cleanup_batch = 256;                                  ///< expired rows removed per clean-up, at most
  };

  /// Opens (and creates) the file and its table. Errors as
  /// sqlite::Transport::open's.
  static Result<std::unique_ptr<IdempotencyStore>> open(Options options);
  /// Options from a sqlite:// store URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~IdempotencyStore() override;  ///< closes the file

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

/// Registers sqlite:// with babelqueue::idempotency::open_store(). Harmless to
/// call again.
void register_idempotency_store();

}  // namespace babelqueue::sqlite
