// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/postgres/outbox_store.hpp>
#include <babelqueue/url_options.hpp>

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace babelqueue::postgres {

namespace {

using postgres_detail::QueryResult;

Result<void> check_table(std::string_view table) {
  if (!postgres_detail::valid_identifier(table)) {
    return unexpected(Errc::invalid_argument,
                      "outbox: '" + std::string(table) + "' is not a table name ([A-Za-z_][A-Za-z0-9_]*, at most 63)");
  }
  return {};
}

std::string trimmed(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One statement through the caller's connection (never a reconnect: it is
// theirs, inside their transaction).
Result<QueryResult> run(PGconn* conn, const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  QueryResult r(
      PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
  const ExecStatusType status = PQresultStatus(r.get());
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
  return unexpected(PQstatus(conn) == CONNECTION_OK ? Errc::broker : Errc::connection,
                    "outbox: " + trimmed(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn)));
}

std::vector<std::string> migration(const std::string& t) {
  return {"CREATE TABLE IF NOT EXISTS " + t +
              " (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, body TEXT NOT NULL,"
              " created_at TIMESTAMPTZ NOT NULL DEFAULT now(), attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
              " available_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
              " claimed_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity', published_at TIMESTAMPTZ)",
          "CREATE INDEX IF NOT EXISTS " + t + "_pending ON " + t + " (id) WHERE published_at IS NULL"};
}

}  // namespace

Result<void> migrate_outbox(PGconn* conn, std::string_view table) {
  if (auto ok = check_table(table); !ok) return ok;
  for (const std::string& statement : migration(std::string(table))) {
    if (auto r = run(conn, statement, {}); !r) return unexpected(r.error());
  }
  return {};
}

Result<std::int64_t> write_outbox(PGconn* conn, const Envelope& envelope, std::string_view queue,
                                  std::string_view table) {
  if (auto ok = check_table(table); !ok) return unexpected(ok.error());
  if (conn == nullptr || PQtransactionStatus(conn) != PQTRANS_INTRANS) {
    return unexpected(Errc::invalid_argument,
                      "outbox: write needs the caller's open transaction (BEGIN first): outside one the message "
                      "would stay even if the business rows are rolled back");
  }
  auto body = envelope.encode();
  if (!body) return unexpected(body.error());
  std::string target(queue.empty() ? envelope.queue() : queue);
  if (target.empty()) target = "default";
  const std::string t(table);
  // The insert and the notification in one round trip; PostgreSQL delivers
  // the notification when (and only if) the caller commits.
  auto r = run(conn,
               "WITH row AS (INSERT INTO " + t +
                   " (queue, body) VALUES ($1, $2) RETURNING id)"
                   " SELECT id, pg_notify('" +
                   t + "', '') FROM row",
               {target, *body});
  if (!r) return unexpected(r.error());
  return std::atoll(PQgetvalue(r->get(), 0, 0));
}

Result<std::string> write_outbox(PGconn* conn, std::string_view urn, const Value& data, const PublishParams& params,
                                 std::string_view table) {
  MakeOptions make;
  make.queue = params.queue.empty() ? "default" : params.queue;
  make.trace_id = params.trace_id;
  auto envelope = Envelope::make(urn, data, make);
  if (!envelope) return unexpected(envelope.error());
  if (auto row = write_outbox(conn, *envelope, make.queue, table); !row) return unexpected(row.error());
  return std::string(envelope->id());
}

class OutboxStore::State {
 public:
  std::unique_ptr<postgres_detail::Connection> db;
  std::unique_ptr<postgres_detail::Connection> listener;  // null when polling
  std::string table;
};

OutboxStore::OutboxStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
OutboxStore::~OutboxStore() = default;

Result<OutboxStore::Options> OutboxStore::options_from_url(const Url& url) {
  Options options;
  Url own;
  for (std::string_view name : {"table", "listen"}) {
    if (auto it = url.query.find(name); it != url.query.end()) own.query.emplace(it->first, it->second);
  }
  UrlOptionReader read(own);
  read.text("table", options.table);
  read.flag("listen", options.listen);
  if (auto done = read.finish(); !done) return unexpected(done.error());
  options.conninfo = postgres_detail::conninfo_of(url, {"table", "listen"});
  return options;
}

Result<std::unique_ptr<OutboxStore>> OutboxStore::open(Options options) {
  if (auto ok = check_table(options.table); !ok) return unexpected(ok.error());
  auto state = std::make_unique<State>();
  state->table = options.table;
  auto db = postgres_detail::Connection::open(options.conninfo);
  if (!db) return unexpected(db.error());
  state->db = std::move(*db);
  for (const std::string& statement : migration(state->table)) {
    auto r = state->db->exec(statement);
    if (!r) r = state->db->exec(statement);  // two relays creating it at once
    if (!r) return unexpected(r.error());
  }
  if (options.listen) {
    auto listener = postgres_detail::Connection::open(options.conninfo);
    if (!listener) return unexpected(listener.error());
    state->listener = std::move(*listener);
    if (auto r = state->listener->exec("LISTEN " + state->table); !r) return unexpected(r.error());
  }
  return std::unique_ptr<OutboxStore>(new OutboxStore(std::move(state)));
}

Result<std::vector<outbox::Record>> OutboxStore::claim(std::size_t limit, std::chrono::milliseconds lease) {
  const std::string& t = state_->table;
  // SKIP LOCKED: rows another relay is claiming right now are passed over,
  // not waited for; the lease keeps them its own afterwards.
  auto r = state_->db->exec("WITH due AS (SELECT id FROM " + t +
                                " WHERE published_at IS NULL AND available_at <= now() AND claimed_until <= now()"
                                " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)"
                                " UPDATE " +
                                t +
                                " SET claimed_until = now() + $2::double precision * interval '1 millisecond'"
                                " FROM due WHERE " +
                                t + ".id = due.id RETURNING " + t + ".id, " + t + ".queue, " + t + ".body, " + t +
                                ".attempts",
                            {std::to_string(limit), std::to_string(lease.count())});
  if (!r) return unexpected(r.error());
  std::vector<outbox::Record> rows;
  const int n = PQntuples(r->get());
  rows.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    outbox::Record row;
    row.id = std::atoll(PQgetvalue(r->get(), i, 0));
    row.queue = PQgetvalue(r->get(), i, 1);
    row.body.assign(PQgetvalue(r->get(), i, 2), static_cast<std::size_t>(PQgetlength(r->get(), i, 2)));
    row.attempts = std::atoll(PQgetvalue(r->get(), i, 3));
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });  // oldest first
  return rows;
}

Result<void> OutboxStore::mark_published(const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return {};
  std::string array = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) array += (i ? "," : "") + std::to_string(ids[i]);
  array += "}";
  auto r = state_->db->exec(
      "UPDATE " + state_->table + " SET published_at = now(), last_error = NULL WHERE id = ANY($1::bigint[])", {array});
  if (!r) return unexpected(r.error());
  return {};
}

Result<void> OutboxStore::mark_failed(std::int64_t id, std::string_view error, std::chrono::milliseconds retry_after) {
  auto r = state_->db->exec("UPDATE " + state_->table +
                                " SET attempts = attempts + 1, last_error = $2, claimed_until = '-infinity',"
                                " available_at = now() + $3::double precision * interval '1 millisecond' WHERE id = $1",
                            {std::to_string(id), std::string(error), std::to_string(retry_after.count())});
  if (!r) return unexpected(r.error());
  return {};
}

Result<void> OutboxStore::wait_for_rows(std::chrono::milliseconds timeout) {
  if (!state_->listener) return Store::wait_for_rows(timeout);
  std::lock_guard lock(state_->listener->mutex());
  PGconn* conn = state_->listener->raw();
  auto drained = [conn] {
    bool any = false;
    while (PGnotify* note = PQnotifies(conn)) {
      PQfreemem(note);
      any = true;
    }
    return any;
  };
  if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK) {
    // The listening connection dropped: listen again on a new one (rows
    // committed meanwhile are found by the next pass anyway).
    auto again = state_->listener->exec("LISTEN " + state_->table);
    if (!again) {
      std::this_thread::sleep_for(timeout);
      return unexpected(again.error());
    }
    return {};
  }
  if (drained()) return {};
  pollfd fd{PQsocket(conn), POLLIN, 0};
  if (::poll(&fd, 1, static_cast<int>(timeout.count())) > 0) {
    PQconsumeInput(conn);
    drained();
  }
  return {};
}

std::string OutboxStore::describe() const { return state_->db->describe() + "?table=" + state_->table; }

Result<std::int64_t> OutboxStore::pending() {
  auto r = state_->db->exec("SELECT count(*) FROM " + state_->table + " WHERE published_at IS NULL");
  if (!r) return unexpected(r.error());
  return std::atoll(PQgetvalue(r->get(), 0, 0));
}

}  // namespace babelqueue::postgres
