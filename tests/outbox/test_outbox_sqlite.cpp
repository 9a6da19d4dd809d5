// SPDX-License-Identifier: Apache-2.0
// The transactional outbox on SQLite (docs/outbox.md): rows written in the
// caller's transaction go out exactly when it commits; the relay publishes
// the stored bytes verbatim, keeps failed rows pending with their error and
// attempts while the broker refuses (a real SQLite broker file locked by
// another connection), and publishes them when it accepts again; three
// relays on one file publish every row.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>
#include <babelqueue/sqlite/transport.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <set>
#include <thread>

namespace bq = babelqueue;
namespace outbox = babelqueue::outbox;
using namespace std::chrono_literals;

namespace {

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("bq-outbox-" + bq::uuid_v4())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path operator/(const char* name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The application's own connection and its business table.
struct App {
  explicit App(const std::filesystem::path& file) {
    EXPECT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    exec("PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total INTEGER)");
    EXPECT_TRUE(outbox::migrate(db));
  }
  ~App() { sqlite3_close_v2(db); }
  void exec(const std::string& sql) const {
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  }
  // One order and its message in one transaction, committed or rolled back.
  void order(int id, bool commit) const {
    exec("BEGIN");
    exec("INSERT INTO orders VALUES (" + std::to_string(id) + ", 100)");
    auto written = outbox::write(db, "urn:shop:orders:created", bq::Value::object({{"order_id", id}}),
                                 bq::PublishParams{.queue = "orders"});
    ASSERT_TRUE(written) << written.error().message();
    exec(commit ? "COMMIT" : "ROLLBACK");
  }
  sqlite3* db = nullptr;
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

TEST(SqliteOutbox, ExactlyTheCommittedRowsArePublishedVerbatim) {
  TempDir dir;
  App app(dir / "app.db");
  std::set<std::int64_t> committed;
  for (int id = 1; id <= 30; ++id) {
    const bool commit = id % 3 != 0;  // every third transaction is rolled back
    app.order(id, commit);
    if (commit) committed.insert(id);
  }
  auto store = outbox::SqliteStore::open(dir / "app.db").value();
  EXPECT_EQ(store->pending().value(), 20);
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store, {.batch_size = 7});
  auto result = relay.drain().value();
  EXPECT_EQ(result.published, 20U);
  EXPECT_EQ(result.failed, 0U);
  EXPECT_EQ(store->pending().value(), 0);
  EXPECT_EQ(order_ids(broker), committed);
  EXPECT_EQ(relay.drain().value().published, 0U);  // nothing twice
}

TEST(SqliteOutbox, TheStoredBytesAreTheBytesSent) {
  TempDir dir;
  App app(dir / "app.db");
  const auto env = bq::Envelope::make("urn:shop:orders:created", bq::Value::object({{"order_id", 1}, {"x", 1.5}}),
                                      bq::MakeOptions{.queue = "orders"})
                       .value();
  app.exec("BEGIN");
  ASSERT_TRUE(outbox::write(app.db, env));
  app.exec("COMMIT");
  auto store = outbox::SqliteStore::open(dir / "app.db").value();
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store);
  ASSERT_EQ(relay.drain().value().published, 1U);
  auto got = broker.receive("orders", 1, 100ms).value();
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].body, env.body());
}

TEST(SqliteOutbox, WriteNeedsTheCallersTransactionAndAValidTable) {
  TempDir dir;
  App app(dir / "app.db");
  auto outside = outbox::write(app.db, "urn:shop:orders:created", bq::Value::object({{"order_id", 1}}));
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code(), bq::Errc::invalid_argument);
  app.exec("BEGIN");
  auto bad_table = outbox::write(app.db, "urn:x", bq::Value::object({}), {}, "orders; DROP TABLE orders");
  ASSERT_FALSE(bad_table);
  EXPECT_EQ(bad_table.error().code(), bq::Errc::invalid_argument);
  app.exec("ROLLBACK");
  EXPECT_FALSE(outbox::SqliteStore::open(dir / "app.db", "1table"));
}

TEST(SqliteOutbox, ARefusingBrokerLeavesRowsPendingWithTheirErrorUntilItAccepts) {
  TempDir dir;
  App app(dir / "app.db");
  for (int id = 1; id <= 5; ++id) app.order(id, true);
  auto store = outbox::SqliteStore::open(dir / "app.db").value();
  // The broker: a SQLite transport file, locked by another connection so
  // every publish fails after its busy timeout.
  bq::sqlite::Transport::Options options;
  options.path = (dir / "broker.db").string();
  options.busy_timeout = 20ms;
  auto broker = bq::sqlite::Transport::open(options).value();
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "broker.db").c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);

  outbox::Relay relay(*broker, *store, {.backoff_step = 10ms, .backoff_cap = 40ms});
  const auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const std::int64_t before = ms();
  auto refused = relay.flush().value();
  const std::int64_t after = ms();
  EXPECT_EQ(refused.published, 0U);
  EXPECT_EQ(refused.failed, 5U);  // every row tried: none blocked the others
  EXPECT_EQ(store->pending().value(), 5);
  // Each row: one attempt, the broker's error, its next try put off by the backoff.
  sqlite3_stmt* row = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(app.db, "SELECT attempts, last_error, available_at FROM babelqueue_outbox", -1, &row, nullptr),
      SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(row) == SQLITE_ROW) {
    ++rows;
    EXPECT_EQ(sqlite3_column_int64(row, 0), 1);
    const auto* error = reinterpret_cast<const char*>(sqlite3_column_text(row, 1));
    ASSERT_NE(error, nullptr);
    EXPECT_NE(std::string(error).find("lock"), std::string::npos) << error;
    EXPECT_GE(sqlite3_column_int64(row, 2), before + 10);
    EXPECT_LE(sqlite3_column_int64(row, 2), after + 10);
  }
  sqlite3_finalize(row);
  EXPECT_EQ(rows, 5);

  ASSERT_EQ(sqlite3_exec(locker, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close_v2(locker);
  std::this_thread::sleep_for(60ms);
  auto accepted = relay.drain().value();
  EXPECT_EQ(accepted.published, 5U);
  EXPECT_EQ(store->pending().value(), 0);
  EXPECT_EQ(order_ids(*broker), (std::set<std::int64_t>{1, 2, 3, 4, 5}));
}

TEST(SqliteOutbox, ThreeRelaysOnOneFilePublishEveryRowOnce) {
  TempDir dir;
  App app(dir / "app.db");
  constexpr int kRows = 600;
  app.exec("BEGIN");
  for (int id = 1; id <= kRows; ++id) {
    ASSERT_TRUE(outbox::write(app.db, "urn:shop:orders:created", bq::Value::object({{"order_id", id}}),
                              bq::PublishParams{.queue = "orders"}));
  }
  app.exec("COMMIT");
  bq::memory::Transport broker;
  std::vector<std::thread> relays;
  std::atomic<std::size_t> published{0};
  for (int r = 0; r < 3; ++r) {
    relays.emplace_back([&] {
      auto store = outbox::SqliteStore::open(dir / "app.db").value();
      outbox::Relay relay(broker, *store, {.batch_size = 25});
      published += relay.drain().value().published;
    });
  }
  for (auto& t : relays) t.join();
  EXPECT_EQ(published.load(), static_cast<std::size_t>(kRows));
  std::size_t deliveries = 0;
  EXPECT_EQ(order_ids(broker, &deliveries).size(), static_cast<std::size_t>(kRows));
  EXPECT_EQ(deliveries, static_cast<std::size_t>(kRows));  // claims never overlap while relays live
}
