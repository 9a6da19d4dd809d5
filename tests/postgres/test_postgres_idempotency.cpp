// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL idempotency store on a real server (scripts/broker start
// postgres): the seen-set, the in-flight claim and its lease, a time to live,
// and rows written the Go SDK's way (a plain INSERT into its table) honoured.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/postgres/idempotency_store.hpp>

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <broker_env.hpp>
#include <thread>

namespace bq = babelqueue;
namespace pg = babelqueue::postgres;
using babelqueue::idempotency::ClaimState;
using namespace std::chrono_literals;

namespace {

std::string server() { return bq::testing::broker_url("postgres"); }

// A table of its own for each test.
std::string fresh_table() { return "bq_idem_" + bq::uuid_v4().substr(0, 8); }

std::unique_ptr<pg::IdempotencyStore> open(const std::string& table, const std::string& extra = {}) {
  auto options = pg::IdempotencyStore::options_from_url(bq::Url::parse(server() + "?table=" + table + extra).value());
  EXPECT_TRUE(options) << options.error().message();
  auto store = pg::IdempotencyStore::open(std::move(*options));
  EXPECT_TRUE(store) << store.error().message();
  return std::move(*store);
}

// SQL as another program (the Go SDK) runs it.
void sql(const std::string& statement) {
  auto url = bq::Url::parse(server()).value();
  const std::string conninfo = "host=" + url.host + " port=" + std::to_string(*url.port) + " user=" + url.user +
                               " password=" + url.password + " dbname=" + url.path;
  PGconn* conn = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PGresult* r = PQexec(conn, statement.c_str());
  EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(conn);
}

}  // namespace

TEST(PostgresIdempotency, TheSeenSet) {
  auto store = open(fresh_table());
  const std::string id = bq::uuid_v4();
  EXPECT_FALSE(store->seen(id).value());
  ASSERT_TRUE(store->remember(id));
  EXPECT_TRUE(store->seen(id).value());
  ASSERT_TRUE(store->remember(id));  // again: no error
  ASSERT_TRUE(store->forget(id));
  EXPECT_FALSE(store->seen(id).value());
}

TEST(PostgresIdempotency, AClaimIsExclusiveUntilItsLeaseEnds) {
  const std::string table = fresh_table();
  auto a = open(table);
  auto b = open(table);  // another worker
  const std::string id = bq::uuid_v4();
  auto first = a->claim(id, 5s).value();
  ASSERT_EQ(first.state, ClaimState::acquired);
  auto second = b->claim(id, 5s).value();
  EXPECT_EQ(second.state, ClaimState::in_flight);
  EXPECT_GT(second.remaining, 3s);
  EXPECT_FALSE(a->seen(id).value());  // a claim is not a handled id
  EXPECT_TRUE(a->renew(id, first.token, 5s).value());
  EXPECT_FALSE(b->renew(id, "not-the-token", 5s).value());
  ASSERT_TRUE(a->abandon(id, first.token));  // the handler failed
  auto retry = b->claim(id, 200ms).value();
  ASSERT_EQ(retry.state, ClaimState::acquired);
  std::this_thread::sleep_for(300ms);  // b dies: its lease ends
  auto taken = a->claim(id, 5s).value();
  ASSERT_EQ(taken.state, ClaimState::acquired);
  EXPECT_FALSE(b->renew(id, retry.token, 5s).value());
  ASSERT_TRUE(a->complete(id, taken.token));
  EXPECT_TRUE(b->seen(id).value());
  EXPECT_EQ(b->claim(id, 5s).value().state, ClaimState::done);
}

TEST(PostgresIdempotency, ARowWrittenTheGoWayIsHonoured) {
  const std::string table = fresh_table();
  auto store = open(table);  // creates the table as Go's schema.sql does
  // Go's Remember without a TTL, and with one that has passed.
  sql("INSERT INTO " + table + " (message_id) VALUES ('go-handled')");
  sql("INSERT INTO " + table + " (message_id, expires_at) VALUES ('go-expired', now() - interval '1 second')");
  EXPECT_TRUE(store->seen("go-handled").value());
  EXPECT_EQ(store->claim("go-handled", 5s).value().state, ClaimState::done);
  EXPECT_FALSE(store->seen("go-expired").value());
  EXPECT_EQ(store->claim("go-expired", 5s).value().state, ClaimState::acquired);  // re-claim of an expired id
  ASSERT_TRUE(store->remember("go-expired"));
  EXPECT_TRUE(store->seen("go-expired").value());
}

TEST(PostgresIdempotency, ATableGoCreatedIsUsedAsItIs) {
  const std::string table = fresh_table();
  sql("CREATE TABLE " + table +
      " (message_id TEXT PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), expires_at TIMESTAMPTZ NULL)");
  sql("INSERT INTO " + table + " (message_id) VALUES ('from-go')");
  auto store = open(table);
  EXPECT_TRUE(store->seen("from-go").value());
}

TEST(PostgresIdempotency, ATimeToLiveExpiresAndPurgeRemovesTheRows) {
  auto store = open(fresh_table(), "&ttl=300ms");
  ASSERT_TRUE(store->remember("short"));
  EXPECT_TRUE(store->seen("short").value());
  std::this_thread::sleep_for(400ms);
  EXPECT_FALSE(store->seen("short").value());
  EXPECT_EQ(store->purge_expired(100).value(), 1U);
  EXPECT_EQ(store->purge_expired(100).value(), 0U);
}

TEST(PostgresIdempotency, OpensByUrlAndRefusesABadTableOrServer) {
  bq::postgres::register_idempotency_store();
  auto store = bq::idempotency::open_store(server() + "?table=" + fresh_table());
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_FALSE((*store)->seen("x").value());
  auto bad = bq::idempotency::open_store(server() + "?table=x;DROP");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), bq::Errc::invalid_argument);
  auto url = bq::Url::parse(server()).value();
  auto wrong = bq::idempotency::open_store("postgresql://" + url.user + ":wrong@" + url.host + ":" +
                                           std::to_string(*url.port) + "/" + url.path);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), bq::Errc::auth);
  EXPECT_EQ(wrong.error().message().find("wrong"), std::string::npos);  // no password in the text
}
