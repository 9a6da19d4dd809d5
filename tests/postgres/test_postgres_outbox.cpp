// SPDX-License-Identifier: Apache-2.0
// The transactional outbox on a real PostgreSQL (scripts/broker start
// postgres): exactly the committed transactions' messages are published;
// three relays on one table publish every row; a refusing broker leaves rows
// pending with their error and attempts until it accepts; a relay waiting
// for rows is woken by the commit (LISTEN/NOTIFY), not by its next poll.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/postgres/outbox_store.hpp>
#include <babelqueue/sqlite/transport.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <libpq-fe.h>

#include <broker_env.hpp>
#include <filesystem>
#include <set>
#include <thread>

namespace bq = babelqueue;
namespace pg = babelqueue::postgres;
namespace outbox = babelqueue::outbox;
using namespace std::chrono_literals;

namespace {

std::string server() { return bq::testing::broker_url("postgres"); }

// The application's own connection.
class App {
 public:
  App() {
    auto url = bq::Url::parse(server()).value();
    const std::string conninfo = "host=" + url.host + " port=" + std::to_string(*url.port) + " user=" + url.user +
                                 " password=" + url.password + " dbname=" + url.path;
    conn_ = PQconnectdb(conninfo.c_str());
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
    table_ = "bq_outbox_" + bq::uuid_v4().substr(0, 8);
    EXPECT_TRUE(pg::migrate_outbox(conn_, table_));
    exec("CREATE TABLE IF NOT EXISTS " + table_ + "_orders (id BIGINT PRIMARY KEY)");
  }
  ~App() { PQfinish(conn_); }
  void exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
    PQclear(r);
  }
  void order(int id, bool commit) {
    exec("BEGIN");
    exec("INSERT INTO " + table_ + "_orders VALUES (" + std::to_string(id) + ")");
    auto written = pg::write_outbox(conn_, "urn:shop:orders:created", bq::Value::object({{"order_id", id}}),
                                    bq::PublishParams{.queue = "orders"}, table_);
    ASSERT_TRUE(written) << written.error().message();
    exec(commit ? "COMMIT" : "ROLLBACK");
  }
  std::unique_ptr<pg::OutboxStore> store(bool listen = true) {
    auto options = pg::OutboxStore::options_from_url(bq::Url::parse(server()).value()).value();
    options.table = table_;
    options.listen = listen;
    auto opened = pg::OutboxStore::open(options);
    EXPECT_TRUE(opened) << opened.error().message();
    return std::move(*opened);
  }
  PGconn* conn() { return conn_; }
  const std::string& table() const { return table_; }

 private:
  PGconn* conn_ = nullptr;
  std::string table_;
};

std::set<std::int64_t> order_ids(bq::Transport& transport, std::size_t* deliveries = nullptr) {
  std::set<std::int64_t> ids;
  std::size_t n = 0;
  while (true) {
    auto batch = transport.receive("orders", 100, 50ms).value();
    if (batch.empty()) break;
    for (const auto& d : batch) {
      ++n;
      ids.insert(bq::Envelope::decode(d.body).value().data().find("order_id")->as_int64());
      EXPECT_TRUE(transport.ack(d));
    }
  }
  if (deliveries != nullptr) *deliveries = n;
  return ids;
}

}  // namespace

TEST(PostgresOutbox, ExactlyTheCommittedRowsArePublished) {
  App app;
  std::set<std::int64_t> committed;
  for (int id = 1; id <= 30; ++id) {
    const bool commit = id % 3 != 0;
    app.order(id, commit);
    if (commit) committed.insert(id);
  }
  auto store = app.store();
  EXPECT_EQ(store->pending().value(), 20);
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store, {.batch_size = 7});
  EXPECT_EQ(relay.drain().value().published, 20U);
  EXPECT_EQ(store->pending().value(), 0);
  EXPECT_EQ(order_ids(broker), committed);
}

TEST(PostgresOutbox, WriteNeedsTheCallersTransaction) {
  App app;
  auto outside = pg::write_outbox(app.conn(), "urn:x", bq::Value::object({}), {}, app.table());
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code(), bq::Errc::invalid_argument);
}

TEST(PostgresOutbox, ThreeRelaysOnOneTablePublishEveryRow) {
  App app;
  constexpr int kRows = 900;
  app.exec("BEGIN");
  for (int id = 1; id <= kRows; ++id) {
    ASSERT_TRUE(pg::write_outbox(app.conn(), "urn:shop:orders:created", bq::Value::object({{"order_id", id}}),
                                 bq::PublishParams{.queue = "orders"}, app.table()));
  }
  app.exec("COMMIT");
  bq::memory::Transport broker;
  std::atomic<std::size_t> published{0};
  std::vector<std::thread> relays;
  std::vector<std::unique_ptr<pg::OutboxStore>> stores;
  for (int r = 0; r < 3; ++r) stores.push_back(app.store(false));
  for (int r = 0; r < 3; ++r) {
    relays.emplace_back([&, r] {
      outbox::Relay relay(broker, *stores[static_cast<std::size_t>(r)], {.batch_size = 20});
      published += relay.drain().value().published;
    });
  }
  for (auto& t : relays) t.join();
  std::size_t deliveries = 0;
  const auto ids = order_ids(broker, &deliveries);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kRows));
  EXPECT_EQ(published.load(), static_cast<std::size_t>(kRows));
  std::cout << "three relays: " << kRows << " rows, " << deliveries << " deliveries, " << deliveries - ids.size()
            << " duplicates\n";
  EXPECT_EQ(deliveries, static_cast<std::size_t>(kRows));  // SKIP LOCKED: no row claimed twice while relays live
  EXPECT_EQ(stores[0]->pending().value(), 0);
}

TEST(PostgresOutbox, ARefusingBrokerLeavesRowsPendingUntilItAccepts) {
  App app;
  for (int id = 1; id <= 4; ++id) app.order(id, true);
  auto store = app.store();
  const auto dir = std::filesystem::temp_directory_path() / ("bq-pg-outbox-" + bq::uuid_v4());
  std::filesystem::create_directories(dir);
  bq::sqlite::Transport::Options options;
  options.path = (dir / "broker.db").string();
  options.busy_timeout = 20ms;
  auto broker = bq::sqlite::Transport::open(options).value();
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "broker.db").c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  outbox::Relay relay(*broker, *store, {.backoff_step = 10ms, .backoff_cap = 40ms});
  auto refused = relay.flush().value();
  EXPECT_EQ(refused.failed, 4U);
  EXPECT_EQ(refused.published, 0U);
  PGresult* r = PQexec(app.conn(), ("SELECT attempts, last_error FROM " + app.table()).c_str());
  ASSERT_EQ(PQntuples(r), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_STREQ(PQgetvalue(r, i, 0), "1");
    EXPECT_NE(std::string(PQgetvalue(r, i, 1)).find("lock"), std::string::npos) << PQgetvalue(r, i, 1);
  }
  PQclear(r);
  ASSERT_EQ(sqlite3_exec(locker, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close_v2(locker);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(relay.drain().value().published, 4U);
  EXPECT_EQ(order_ids(*broker), (std::set<std::int64_t>{1, 2, 3, 4}));
  broker.reset();
  std::filesystem::remove_all(dir);
}

TEST(PostgresOutbox, AWaitingRelayIsWokenByTheCommit) {
  App app;
  auto store = app.store(true);
  bq::memory::Transport broker;
  // A poll interval far longer than the wait allowed below: only the
  // notification can bring the row out in time.
  outbox::Relay relay(broker, *store, {.idle_wait = 30s});
  std::atomic<bool> stop{false};
  std::thread running([&] { (void)relay.run(stop); });
  std::this_thread::sleep_for(300ms);  // the relay is waiting now
  app.order(1, true);
  auto got = broker.receive("orders", 1, 10s).value();
  ASSERT_EQ(got.size(), 1U);
  stop = true;
  app.order(2, true);  // wakes it to see the stop
  running.join();
}
