// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/postgres/idempotency_store.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>

#include <cstdlib>

namespace babelqueue::postgres {

namespace {

constexpr std::string_view kTable = "table";
constexpr std::string_view kTtl = "ttl";

std::string millis(std::chrono::milliseconds d) { return std::to_string(d.count()); }

}  // namespace

class IdempotencyStore::State {
 public:
  std::unique_ptr<postgres_detail::Connection> db;
  std::string handled;  // the Go SDK's table
  std::string claims;   // handled + "_claims"
  std::chrono::milliseconds ttl{0};
};

IdempotencyStore::IdempotencyStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
IdempotencyStore::~IdempotencyStore() = default;

Result<IdempotencyStore::Options> IdempotencyStore::options_from_url(const Url& url) {
  Options options;
  Url own;
  for (std::string_view name : {kTable, kTtl}) {
    if (auto it = url.query.find(name); it != url.query.end()) own.query.emplace(it->first, it->second);
  }
  UrlOptionReader read(own);
  read.text("table", options.table);
  read.duration("ttl", options.ttl, {});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  options.conninfo = postgres_detail::conninfo_of(url, {kTable, kTtl});
  return options;
}

Result<std::unique_ptr<IdempotencyStore>> IdempotencyStore::open(Options options) {
  // The claims' table name must fit too.
  if (!postgres_detail::valid_identifier(options.table + "_claims")) {
    return unexpected(Errc::invalid_argument, "postgresql idempotency store: '" + options.table +
                                                  "' is not a table name ([A-Za-z_][A-Za-z0-9_]*, at most 56)");
  }
  auto state = std::make_unique<State>();
  state->handled = options.table;
  state->claims = options.table + "_claims";
  state->ttl = options.ttl;
  auto db = postgres_detail::Connection::open(std::move(options.conninfo));
  if (!db) return unexpected(db.error());
  state->db = std::move(*db);
  // Go's schema.sql, and the claims' table beside it: create-if-not-exists,
  // so a table Go created is used as it is.
  const std::string& t = state->handled;
  const std::string& c = state->claims;
  for (const std::string& statement :
       {"CREATE TABLE IF NOT EXISTS " + t +
            " (message_id TEXT PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), expires_at TIMESTAMPTZ "
            "NULL)",
        "CREATE INDEX IF NOT EXISTS " + t + "_expires_at_idx ON " + t + " (expires_at)",
        "CREATE TABLE IF NOT EXISTS " + c +
            " (message_id TEXT PRIMARY KEY, token TEXT NOT NULL, claimed_until TIMESTAMPTZ NOT NULL)"}) {
    auto migrated = state->db->exec(statement);
    // Two stores creating one table at once may collide in the catalog:
    // the second attempt then finds it.
    if (!migrated) migrated = state->db->exec(statement);
    if (!migrated) return unexpected(migrated.error());
  }
  return std::unique_ptr<IdempotencyStore>(new IdempotencyStore(std::move(state)));
}

Result<bool> IdempotencyStore::seen(std::string_view id) {
  auto r = state_->db->exec(
      "SELECT 1 FROM " + state_->handled + " WHERE message_id = $1 AND (expires_at IS NULL OR expires_at > now())",
      {std::string(id)});
  if (!r) return unexpected(r.error());
  return PQntuples(r->get()) > 0;
}

Result<void> IdempotencyStore::remember(std::string_view id) {
  // Go's Remember: insert, or re-take a row whose time to live ended; and
  // the claim, if any, is over.
  const std::string expires =
      state_->ttl.count() > 0 ? "now() + $2::double precision * interval '1 millisecond'" : "NULL";
  std::vector<std::string> params{std::string(id)};
  if (state_->ttl.count() > 0) params.push_back(millis(state_->ttl));
  auto r = state_->db->exec(
      "WITH gone AS (DELETE FROM " + state_->claims + " WHERE message_id = $1) INSERT INTO " + state_->handled +
          " (message_id, created_at, expires_at) VALUES ($1, now(), " + expires +
          ") ON CONFLICT (message_id) DO UPDATE SET created_at = now(), expires_at = EXCLUDED.expires_at"
          " WHERE " +
          state_->handled + ".expires_at IS NOT NULL AND " + state_->handled + ".expires_at <= now()",
      params);
  if (!r) return unexpected(r.error());
  return {};
}

Result<void> IdempotencyStore::forget(std::string_view id) {
  auto r = state_->db->exec("WITH gone AS (DELETE FROM " + state_->claims + " WHERE message_id = $1) DELETE FROM " +
                                state_->handled + " WHERE message_id = $1",
                            {std::string(id)});
  if (!r) return unexpected(r.error());
  return {};
}

Result<idempotency::Claim> IdempotencyStore::claim(std::string_view id, std::chrono::milliseconds lease) {
  const std::string token = uuid_v4();
  const std::string& t = state_->handled;
  const std::string& c = state_->claims;
  // One statement: no claim for a handled id; a new claim, or one taking
  // over a claim past its lease.
  auto r = state_->db->exec(
      "INSERT INTO " + c +
          " (message_id, token, claimed_until) SELECT $1, $2, now() + $3::double precision * interval '1 millisecond'"
          " WHERE NOT EXISTS (SELECT 1 FROM " +
          t +
          " WHERE message_id = $1 AND (expires_at IS NULL OR expires_at > now()))"
          " ON CONFLICT (message_id) DO UPDATE SET token = EXCLUDED.token, claimed_until = EXCLUDED.claimed_until"
          " WHERE " +
          c + ".claimed_until <= now() RETURNING token",
      {std::string(id), token, millis(lease)});
  if (!r) return unexpected(r.error());
  if (PQntuples(r->get()) > 0) return idempotency::Claim{idempotency::ClaimState::acquired, token, {}};
  auto state = state_->db->exec(
      "SELECT (SELECT count(*) FROM " + t +
          " WHERE message_id = $1 AND (expires_at IS NULL OR expires_at > now())),"
          " (SELECT GREATEST(0, floor(extract(epoch FROM claimed_until - now()) * 1000))::bigint FROM " +
          c + " WHERE message_id = $1)",
      {std::string(id)});
  if (!state) return unexpected(state.error());
  if (std::atoll(PQgetvalue(state->get(), 0, 0)) > 0) return idempotency::Claim{idempotency::ClaimState::done, {}, {}};
  if (PQgetisnull(state->get(), 0, 1) != 0) return claim(id, lease);  // released meanwhile: try again
  return idempotency::Claim{
      idempotency::ClaimState::in_flight, {}, std::chrono::milliseconds(std::atoll(PQgetvalue(state->get(), 0, 1)))};
}

Result<bool> IdempotencyStore::renew(std::string_view id, std::string_view token, std::chrono::milliseconds lease) {
  auto r = state_->db->exec("UPDATE " + state_->claims +
                                " SET claimed_until = now() + $3::double precision * interval '1 millisecond'"
                                " WHERE message_id = $1 AND token = $2 RETURNING 1",
                            {std::string(id), std::string(token), millis(lease)});
  if (!r) return unexpected(r.error());
  return PQntuples(r->get()) > 0;
}

Result<void> IdempotencyStore::complete(std::string_view id, std::string_view token) {
  (void)token;  // whoever holds the claim by now: the effect happened
  return remember(id);
}

Result<void> IdempotencyStore::abandon(std::string_view id, std::string_view token) {
  auto r = state_->db->exec("DELETE FROM " + state_->claims + " WHERE message_id = $1 AND token = $2",
                            {std::string(id), std::string(token)});
  if (!r) return unexpected(r.error());
  return {};
}

Result<std::size_t> IdempotencyStore::purge_expired(std::size_t max) {
  std::size_t removed = 0;
  for (const auto& [table, column] : {std::pair{state_->handled, std::string("expires_at")},
                                      std::pair{state_->claims, std::string("claimed_until")}}) {
    if (removed >= max) break;
    auto r = state_->db->exec("DELETE FROM " + table + " WHERE message_id IN (SELECT message_id FROM " + table +
                                  " WHERE " + column + " <= now() LIMIT $1)",
                              {std::to_string(max - removed)});
    if (!r) return unexpected(r.error());
    removed += static_cast<std::size_t>(std::atoll(PQcmdTuples(r->get())));
  }
  return removed;
}

void register_idempotency_store() {
  auto factory = [](const Url& url) -> Result<std::unique_ptr<idempotency::Store>> {
    auto options = IdempotencyStore::options_from_url(url);
    if (!options) return unexpected(options.error());
    auto store = IdempotencyStore::open(std::move(*options));
    if (!store) return unexpected(store.error());
    return std::unique_ptr<idempotency::Store>(std::move(*store));
  };
  idempotency::register_store_scheme("postgresql", factory);
}

}  // namespace babelqueue::postgres
