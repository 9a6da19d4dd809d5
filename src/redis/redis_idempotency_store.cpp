// SPDX-License-Identifier: Apache-2.0
#include "redis_connection.hpp"

#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/redis/idempotency_store.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>

#include <mutex>
#include <string_view>
#include <utility>

namespace babelqueue::redis {

using idempotency::Claim;
using idempotency::ClaimState;
using redis_detail::Command;
using redis_detail::Connection;
using redis_detail::Reply;
using std::chrono::milliseconds;

namespace {

// KEYS: handled key, claim key. ARGV: token, lease ms.
// Returns {state, ms}: 0 acquired, 1 in flight (ms = the holder's PTTL), 2 done.
constexpr std::string_view kClaimScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return {2, 0} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {0, 0} end
return {1, redis.call('PTTL', KEYS[2])}
)lua";

// KEYS: claim key. ARGV: token, lease ms. 1 when renewed.
constexpr std::string_view kRenewScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
)lua";

// KEYS: handled key, claim key. ARGV: token, ttl ms (0 = none). Remembers
// the id as the Go store does (SET NX), then ends the claim if it is ours.
constexpr std::string_view kCompleteScript = R"lua(
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[2])
else
  redis.call('SET', KEYS[1], '1', 'NX')
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
)lua";

// KEYS: claim key. ARGV: token.
constexpr std::string_view kAbandonScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

// The store's own parameters, taken off the URL before the rest is read
// as the transport's.
constexpr std::string_view kStoreParameters[] = {"prefix", "claim_prefix", "ttl"};

}  // namespace

class IdempotencyStore::State {
 public:
  explicit State(Options o) : options(std::move(o)) {}

  Result<void> connect() {
    auto endpoint = redis_detail::endpoint_of(options.server);
    if (!endpoint) return unexpected(endpoint.error());
    endpoint_ = std::move(*endpoint);
    auto opened = Connection::open(endpoint_, options.server.connect_timeout);
    if (!opened) return unexpected(opened.error());
    connection_ = std::move(*opened);
    return {};
  }

  // One command on the connection, reconnecting once when it broke (a
  // server restart): a store call fails only when the server stays away.
  Result<Reply> execute(const Command& command) {
    std::lock_guard lock(mutex_);
    for (int attempt = 0;; ++attempt) {
      if (!connection_ || connection_->broken()) {
        connection_.reset();
        auto opened = Connection::open(endpoint_, options.server.connect_timeout);
        if (!opened) return unexpected(opened.error());
        connection_ = std::move(*opened);
      }
      auto reply = connection_->execute(command, options.server.command_timeout);
      if (reply) {
        if (reply->is_error()) return unexpected(Errc::broker, "Redis answered: " + reply->text);
        return reply;
      }
      if (attempt == 1 || !connection_->broken()) return unexpected(reply.error());
    }
  }

  Result<Reply> eval(std::string_view script, std::initializer_list<std::string_view> keys,
                     std::initializer_list<std::string_view> args) {
    const std::string key_count = std::to_string(keys.size());
    Command command{"EVAL", script, key_count};
    command.insert(command.end(), keys.begin(), keys.end());
    command.insert(command.end(), args.begin(), args.end());
    return execute(command);
  }

  std::string handled_key(std::string_view id) const { return options.prefix + std::string(id); }
  std::string claim_key(std::string_view id) const { return options.claim_prefix + std::string(id); }

  Options options;

 private:
  std::mutex mutex_;
  redis_detail::Endpoint endpoint_;
  std::unique_ptr<Connection> connection_;
};

IdempotencyStore::IdempotencyStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
IdempotencyStore::~IdempotencyStore() = default;

Result<std::unique_ptr<IdempotencyStore>> IdempotencyStore::open(Options options) {
  if (options.prefix.empty() || options.claim_prefix.empty() || options.prefix == options.claim_prefix) {
    return unexpected(Errc::invalid_argument,
                      "the Redis idempotency store needs two distinct, non-empty prefixes (prefix, claim_prefix)");
  }
  if (options.ttl.count() < 0) return unexpected(Errc::invalid_argument, "the idempotency ttl must not be negative");
  auto state = std::make_unique<State>(std::move(options));
  if (auto connected = state->connect(); !connected) return unexpected(connected.error());
  return std::unique_ptr<IdempotencyStore>(new IdempotencyStore(std::move(state)));
}

Result<IdempotencyStore::Options> IdempotencyStore::options_from_url(const Url& url) {
  Options options;
  Url server = url;
  for (std::string_view name : kStoreParameters) server.query.erase(std::string(name));
  auto transport_options = Transport::options_from_url(server);
  if (!transport_options) return unexpected(transport_options.error());
  options.server = std::move(*transport_options);
  Url own;
  for (std::string_view name : kStoreParameters) {
    if (auto it = url.query.find(name); it != url.query.end()) own.query.emplace(it->first, it->second);
  }
  UrlOptionReader read(own);
  read.text("prefix", options.prefix);
  read.text("claim_prefix", options.claim_prefix);
  read.duration("ttl", options.ttl, {});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return options;
}

Result<bool> IdempotencyStore::seen(std::string_view id) {
  const std::string key = state_->handled_key(id);
  auto reply = state_->execute({"EXISTS", key});
  if (!reply) return unexpected(reply.error());
  return reply->integer > 0;
}

Result<void> IdempotencyStore::remember(std::string_view id) {
  const std::string key = state_->handled_key(id);
  const auto ttl = state_->options.ttl;
  const std::string ttl_ms = std::to_string(ttl.count());
  auto reply = ttl.count() > 0 ? state_->execute({"SET", key, "1", "NX", "PX", ttl_ms})
                               : state_->execute({"SET", key, "1", "NX"});
  if (!reply) return unexpected(reply.error());
  return {};
}

Result<void> IdempotencyStore::forget(std::string_view id) {
  const std::string handled = state_->handled_key(id);
  const std::string claim = state_->claim_key(id);
  auto reply = state_->execute({"DEL", handled, claim});
  if (!reply) return unexpected(reply.error());
  return {};
}

Result<Claim> IdempotencyStore::claim(std::string_view id, milliseconds lease) {
  const std::string token = uuid_v4();
  const std::string lease_ms = std::to_string(std::max<std::int64_t>(1, lease.count()));
  auto reply = state_->eval(kClaimScript, {state_->handled_key(id), state_->claim_key(id)}, {token, lease_ms});
  if (!reply) return unexpected(reply.error());
  if (reply->type != Reply::Type::array || reply->elements.size() != 2) {
    return unexpected(Errc::broker, "unexpected answer to the idempotency claim script");
  }
  switch (reply->elements[0].integer) {
    case 0: return Claim{ClaimState::acquired, token, {}};
    case 1: return Claim{ClaimState::in_flight, {}, milliseconds(std::max<long long>(0, reply->elements[1].integer))};
    default: return Claim{ClaimState::done, {}, {}};
  }
}

Result<bool> IdempotencyStore::renew(std::string_view id, std::string_view token, milliseconds lease) {
  const std::string lease_ms = std::to_string(std::max<std::int64_t>(1, lease.count()));
  auto reply = state_->eval(kRenewScript, {state_->claim_key(id)}, {token, lease_ms});
  if (!reply) return unexpected(reply.error());
  return reply->integer == 1;
}

Result<void> IdempotencyStore::complete(std::string_view id, std::string_view token) {
  const std::string ttl_ms = std::to_string(state_->options.ttl.count());
  auto reply = state_->eval(kCompleteScript, {state_->handled_key(id), state_->claim_key(id)}, {token, ttl_ms});
  if (!reply) return unexpected(reply.error());
  return {};
}

Result<void> IdempotencyStore::abandon(std::string_view id, std::string_view token) {
  auto reply = state_->eval(kAbandonScript, {state_->claim_key(id)}, {token});
  if (!reply) return unexpected(reply.error());
  return {};
}

Result<std::size_t> IdempotencyStore::purge_expired(std::size_t /*max*/) { return std::size_t{0}; }

void register_idempotency_store() {
  const idempotency::StoreFactory factory = [](const Url& url) -> Result<std::unique_ptr<idempotency::Store>> {
    auto options = IdempotencyStore::options_from_url(url);
    if (!options) return unexpected(options.error());
    auto store = IdempotencyStore::open(std::move(*options));
    if (!store) return unexpected(store.error());
    return std::unique_ptr<idempotency::Store>(std::move(*store));
  };
  idempotency::register_store_scheme("redis", factory);
  idempotency::register_store_scheme("rediss", factory);
}

}  // namespace babelqueue::redis
