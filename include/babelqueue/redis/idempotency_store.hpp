// SPDX-License-Identifier: Apache-2.0
// IdempotencyStore: the idempotency store on a Redis server (library
// babelqueue::redis, with babelqueue::idempotency), shared by every worker
// that reaches the server — and by the Go SDK's consumers, whose store has
// the same key layout:
//
//   prefix + meta.id        "1" once handled: SET NX, with PX ttl when a
//                           time to live is set (Go: SETNX / SET EX|PX NX)
//   claim_prefix + meta.id  an in-flight claim: the claim's token, PX lease
//
// seen() is EXISTS of the first key, forget() deletes both. Claims live
// under a prefix of their own, so a Go consumer never mistakes one for a
// handled id. Each claim operation is one server-side script (atomic);
// Redis expires both kinds of key itself, so purge_expired() removes none.
//
// URL: redis://[user:password@]host[:port][/db][?prefix=P&claim_prefix=P
//      &ttl=DURATION&connect_timeout=DURATION&command_timeout=DURATION], and
// rediss:// with the TLS parameters of the Redis transport.
#pragma once

#include <babelqueue/idempotency/store.hpp>
#include <babelqueue/redis/transport.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace babelqueue::redis {

/// An idempotency store on a Redis server, in the Go SDK's key layout (this
/// header's opening comment gives the keys and the URL).
class IdempotencyStore final : public idempotency::Store {
 public:
  /// The server and the keys.
  struct Options {
    /// The server, credentials, TLS and timeouts, as for the transport (its
    /// queue settings are not used).
    Transport::Options server;
    std::string prefix = "bq:idemp:";              ///< the key of a remembered id: prefix + id
    std::string claim_prefix = "bq:idemp-claim:";  ///< the key of a claim: claim_prefix + id
    /// How long a remembered id is kept; zero = for ever.
    std::chrono::milliseconds ttl{0};
  };

  /// Connects at once, so a wrong address or password is an error here.
  static Result<std::unique_ptr<IdempotencyStore>> open(Options options);
  /// Options from a redis:// or rediss:// store URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~IdempotencyStore() override;  ///< closes its connections

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

/// Registers redis:// and rediss:// with babelqueue::idempotency::open_store().
void register_idempotency_store();

}  // namespace babelqueue::redis
