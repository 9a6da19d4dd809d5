// SPDX-License-Identifier: Apache-2.0
// Store: where the idempotency middleware keeps the ids of handled messages
// (library babelqueue::idempotency; docs/idempotency.md).
//
// The family's contract (its ADR-0022) is the seen-set: seen, remember, forget,
// keyed on meta.id verbatim. A Store here also holds in-flight claims with a
// lease, which the siblings' helpers lack: while one worker runs a message,
// a second delivery of the same id (a lease that expired under a long
// handler, a Kafka rebalance) is told the id is in flight instead of running
// it; a claim whose holder died expires with its lease and can be taken over.
//
// Stores: MemoryStore (memory_store.hpp, one process), the SQLite store
// (babelqueue/sqlite/idempotency_store.hpp, the processes of one host), the
// Redis store (babelqueue/redis/idempotency_store.hpp, shared with the Go
// SDK's key layout), and by URL through open_store() (store_registry.hpp).
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <babelqueue/result.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

/// The idempotency middleware and its stores (library babelqueue::idempotency).
namespace babelqueue::idempotency {

/// What claim() found.
enum class ClaimState {
  acquired,   ///< the caller holds the claim now (the id was unknown, or its claim had expired)
  in_flight,  ///< another holder's claim is live: the id is being handled elsewhere
  done,       ///< the id is remembered: handled already
};

/// The answer of Store::claim().
struct Claim {
  ClaimState state = ClaimState::acquired;  ///< acquired, in flight elsewhere, or done
  /// acquired: names this claim for renew(), complete() and abandon().
  std::string token;
  /// in_flight: how long the holder's lease still runs, when the store
  /// knows (zero otherwise).
  std::chrono::milliseconds remaining{0};
};

/// Where the idempotency middleware keeps the ids of handled messages and the
/// claims in flight (this header's opening comment gives the contract).
class Store {
 public:
  virtual ~Store() = default;

  // ---- the family's seen-set ----

  /// True when id is remembered (and its time to live has not passed).
  virtual Result<bool> seen(std::string_view id) = 0;
  /// Remembers id as handled, for the store's time to live.
  virtual Result<void> remember(std::string_view id) = 0;
  /// Forgets id (remembered or claimed): its next delivery runs again.
  virtual Result<void> forget(std::string_view id) = 0;

  // ---- in-flight claims ----

  /// Claims id for lease, unless it is remembered or another live claim
  /// holds it. A claim past its lease is taken over.
  virtual Result<Claim> claim(std::string_view id, std::chrono::milliseconds lease) = 0;
  /// Extends a claim held under token to lease from now; false when the
  /// claim is no longer the caller's (it expired and was taken over, or the
  /// id was forgotten or remembered meanwhile).
  virtual Result<bool> renew(std::string_view id, std::string_view token, std::chrono::milliseconds lease) = 0;
  /// The handler succeeded: remembers id and ends the claim (whoever holds it
  /// by now: the effect happened).
  virtual Result<void> complete(std::string_view id, std::string_view token) = 0;
  /// The handler failed: ends the claim if token still holds it, leaving id
  /// unmarked so a redelivery runs it again.
  virtual Result<void> abandon(std::string_view id, std::string_view token) = 0;

  // ---- expiry ----

  /// Removes at most max entries whose time to live or lease has passed, and
  /// says how many. Stores whose server expires keys itself (Redis) remove
  /// none. Stores that need it also call this themselves, a bounded batch
  /// every so many writes.
  virtual Result<std::size_t> purge_expired(std::size_t max) = 0;
};

}  // namespace babelqueue::idempotency
