// SPDX-License-Identifier: Apache-2.0
#include "temp_dir.hpp"
#include "transport_contract.hpp"

#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

namespace bq = babelqueue;
namespace sqlite = bq::sqlite;
using bq::test_support::ContractTarget;
using bq::test_support::TempDir;
using namespace std::chrono_literals;

namespace {

// One directory per test process; each contract test gets a file of its own.
TempDir& scratch() {
  static TempDir dir("bq-sqlite-test");
  return dir;
}

std::string fresh_file() {
  static std::atomic<int> counter{0};
  return scratch().file("q" + std::to_string(counter++) + ".db");
}

ContractTarget sqlite_url_target() {
  ContractTarget target;
  target.name = "url";
  target.visibility_timeout = 500ms;
  target.open = [] {
    bq::sqlite::register_transport();
    return bq::open_transport("sqlite://" + fresh_file() + "?visibility_timeout=0.5");  // absolute: sqlite:///tmp/...
  };
  return target;
}

ContractTarget sqlite_options_target() {
  ContractTarget target;
  target.name = "options";
  target.visibility_timeout = 400ms;
  target.open = []() -> bq::Result<std::unique_ptr<bq::Transport>> {
    sqlite::Transport::Options options;
    options.path = fresh_file();
    options.visibility_timeout = 400ms;
    options.poll_interval = 20ms;
    options.synchronous = sqlite::Transport::Synchronous::full;
    auto transport = sqlite::Transport::open(options);
    if (!transport) return bq::unexpected(transport.error());
    return std::unique_ptr<bq::Transport>(std::move(*transport));
  };
  return target;
}

std::unique_ptr<sqlite::Transport> open_file(const std::string& path, std::chrono::milliseconds visibility = 30s) {
  sqlite::Transport::Options options;
  options.path = path;
  options.visibility_timeout = visibility;
  auto transport = sqlite::Transport::open(options);
  EXPECT_TRUE(transport) << transport.error().message();
  return transport ? std::move(*transport) : nullptr;
}

bq::Result<sqlite::Transport::Options> options_of(std::string_view url) {
  auto parsed = bq::Url::parse(url);
  if (!parsed) return bq::unexpected(parsed.error());
  return sqlite::Transport::options_from_url(*parsed);
}

// Runs one SQL query on the file with a connection of its own and returns the
// first column of the first row.
std::string query(const std::string& path, const char* sql) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db.get(), sql, -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(db.get());
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> owned(statement, &sqlite3_finalize);
  std::string result;
  if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  return result;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Sqlite, TransportContract, testing::Values(sqlite_url_target(), sqlite_options_target()),
                         ContractTarget::name_of);

TEST(SqliteTransportUrl, RelativeAndAbsolutePaths) {
  EXPECT_EQ(options_of("sqlite://queue.db").value().path, "queue.db");
  EXPECT_EQ(options_of("sqlite://data/queues/q.db").value().path, "data/queues/q.db");
  EXPECT_EQ(options_of("sqlite://./q.db").value().path, "./q.db");
  EXPECT_EQ(options_of("sqlite://../q.db").value().path, "../q.db");
  EXPECT_EQ(options_of("sqlite:///var/lib/app/q.db").value().path, "/var/lib/app/q.db");
  EXPECT_EQ(options_of("sqlite:///my%20queues/q.db").value().path, "/my queues/q.db");
}

TEST(SqliteTransportUrl, ParametersAndDefaults) {
  const sqlite::Transport::Options defaults = options_of("sqlite://q.db").value();
  EXPECT_EQ(defaults.visibility_timeout, 30s);
  EXPECT_EQ(defaults.busy_timeout, 5s);
  EXPECT_EQ(defaults.poll_interval, 50ms);
  EXPECT_EQ(defaults.synchronous, sqlite::Transport::Synchronous::normal);
  const sqlite::Transport::Options set =
      options_of("sqlite://q.db?visibility_timeout=1.5&busy_timeout=0&poll_interval=0.01&synchronous=full").value();
  EXPECT_EQ(set.visibility_timeout, 1500ms);
  EXPECT_EQ(set.busy_timeout, 0ms);
  EXPECT_EQ(set.poll_interval, 10ms);
  EXPECT_EQ(set.synchronous, sqlite::Transport::Synchronous::full);
}

TEST(SqliteTransportUrl, RejectsWhatItCannotUse) {
  for (const char* url :
       {"sqlite://", "sqlite:///", "sqlite://q.db?visibilty_timeout=1", "sqlite://q.db?visibility_timeout=0",
        "sqlite://q.db?visibility_timeout=-1", "sqlite://q.db?synchronous=off", "sqlite://user:pw@q.db",
        "sqlite://host:1/q.db", "redis://q.db"}) {
    auto options = options_of(url);
    ASSERT_FALSE(options) << url;
    EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << url;
  }
}

TEST(SqliteTransportUrl, ARelativePathIsRelativeToTheWorkingDirectory) {
  TempDir dir("bq-sqlite-cwd");
  std::filesystem::create_directory(dir.path() / "data");
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  bq::sqlite::register_transport();
  {
    auto transport = bq::open_transport("sqlite://data/q.db");
    ASSERT_TRUE(transport) << transport.error().message();
    ASSERT_TRUE((*transport)->publish("q", "m"));
  }
  std::filesystem::current_path(previous);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "data" / "q.db"));
  auto transport = bq::open_transport("sqlite://" + dir.file("data/q.db"));
  ASSERT_TRUE(transport) << transport.error().message();
  EXPECT_EQ((*transport)->stats("q").value().ready, 1);
}

TEST(SqliteTransport, RegistersItsScheme) {
  bq::sqlite::register_transport();
  bq::sqlite::register_transport();  // harmless twice
  const auto schemes = bq::registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "sqlite"), schemes.end());
}

TEST(SqliteTransport, CreatesTheSchemaInWalMode) {
  const std::string path = fresh_file();
  auto transport = open_file(path);
  ASSERT_TRUE(transport);
  EXPECT_EQ(query(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query(path, "PRAGMA user_version"), "1");
  EXPECT_EQ(query(path,
                  "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'bq_messages' AND "
                  "name = 'bq_messages_by_queue'"),
            "bq_messages_by_queue");
  // Opening again (the schema exists) is fine.
  EXPECT_TRUE(open_file(path));
}

TEST(SqliteTransport, MessagesSurviveClosingAndReopening) {
  const std::string path = fresh_file();
  {
    auto transport = open_file(path);
    bq::PublishOptions options;
    options.headers = {{"traceparent", "00-abc-def-01"}};
    ASSERT_TRUE(transport->publish("q", "durable", options));
  }
  auto reopened = open_file(path);
  const auto received = reopened->receive("q", 5, 1s).value();
  ASSERT_EQ(received.size(), 1U);
  EXPECT_EQ(received[0].body, "durable");
  EXPECT_EQ(received[0].headers.at("traceparent"), "00-abc-def-01");
  EXPECT_EQ(received[0].native_attempts, 0);
}

TEST(SqliteTransport, KeepsEmptyAndBinaryBodies) {
  auto transport = open_file(fresh_file());
  const std::string binary("\0\xff\x01 bytes", 9);
  ASSERT_TRUE(transport->publish("q", ""));
  ASSERT_TRUE(transport->publish("q", binary));
  const auto received = transport->receive("q", 2, 1s).value();
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[0].body, "");
  EXPECT_EQ(received[1].body, binary);
  EXPECT_TRUE(received[0].headers.empty());
}

TEST(SqliteTransport, ALostLeaseSettlesNothing) {
  const std::string path = fresh_file();
  auto first_worker = open_file(path, 200ms);
  auto second_worker = open_file(path, 30s);
  ASSERT_TRUE(first_worker->publish("q", "m"));
  const bq::Delivery stale = first_worker->receive("q", 1, 1s).value().at(0);
  std::this_thread::sleep_for(300ms);  // the first worker "hangs" past its visibility timeout
  const bq::Delivery fresh = second_worker->receive("q", 1, 1s).value().at(0);
  EXPECT_EQ(fresh.token.id, stale.token.id);      // the same row...
  EXPECT_NE(fresh.token.text, stale.token.text);  // ...under a new lease
  EXPECT_EQ(fresh.native_attempts, 1);
  for (auto settled : {first_worker->ack(stale), first_worker->release(stale), first_worker->extend(stale, 1s)}) {
    ASSERT_FALSE(settled);
    EXPECT_EQ(settled.error().code(), bq::Errc::not_found) << settled.error().message();
  }
  EXPECT_EQ(second_worker->stats("q").value().reserved, 1);
  ASSERT_TRUE(second_worker->ack(fresh));
  EXPECT_EQ(second_worker->ack(fresh).error().code(), bq::Errc::not_found);  // twice
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM bq_messages"), "0");
}

TEST(SqliteTransport, AnAckBatchSettlesTheHeldAndReportsTheRest) {
  const std::string path = fresh_file();
  auto transport = open_file(path);
  for (const char* body : {"1", "2", "3", "4"}) ASSERT_TRUE(transport->publish("q", body));
  std::vector<bq::Delivery> batch = transport->receive("q", 4, 1s).value();
  ASSERT_EQ(batch.size(), 4U);
  ASSERT_TRUE(transport->ack(batch[1]));  // settled before the batch: no longer held
  batch[3].token.text = "not-the-lease";  // a token this transport never gave out
  std::vector<bq::AckFailure> failures;
  auto settled = transport->ack_batch(batch, failures);
  ASSERT_FALSE(settled);
  EXPECT_EQ(settled.error().code(), bq::Errc::not_found) << settled.error().message();
  ASSERT_EQ(failures.size(), 2U);
  EXPECT_EQ(failures[0].index, 1U);
  EXPECT_EQ(failures[1].index, 3U);
  EXPECT_EQ(failures[1].error.code(), bq::Errc::not_found);
  // The held ones are gone, the forged one is still reserved.
  EXPECT_EQ(query(path, "SELECT group_concat(CAST(body AS TEXT)) FROM bq_messages"), "4");
  EXPECT_TRUE(transport->ack_batch(std::span<const bq::Delivery>()));
  transport->close();
  failures.clear();
  EXPECT_EQ(transport->ack_batch(batch, failures).error().code(), bq::Errc::closed);
  EXPECT_EQ(failures.size(), batch.size());
}

TEST(SqliteTransport, AForgedTokenSettlesNothing) {
  auto transport = open_file(fresh_file());
  ASSERT_TRUE(transport->publish("q", "m"));
  bq::Delivery forged = transport->receive("q", 1, 1s).value().at(0);
  forged.token.text = "not-the-lease";
  EXPECT_EQ(transport->ack(forged).error().code(), bq::Errc::not_found);
  forged.token.text.clear();
  EXPECT_EQ(transport->ack(forged).error().code(), bq::Errc::not_found);
  forged.token.id = ~std::uint64_t{0};
  forged.token.text = "x";
  EXPECT_EQ(transport->ack(forged).error().code(), bq::Errc::not_found);
}

TEST(SqliteTransport, ABatchIsAllOrNothing) {
  auto transport = open_file(fresh_file());
  std::vector<bq::OutgoingMessage> batch{{"q", "1", {}}, {"q", "2", {}}, {"q", "3", {}}};
  batch[2].options.headers = {{"bad", std::string("\xff\xfe", 2)}};  // not UTF-8: cannot be stored
  auto published = transport->publish_batch(batch);
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::invalid_argument);
  EXPECT_EQ(transport->stats("q").value().ready, 0);
  batch[2].options.headers.clear();
  ASSERT_TRUE(transport->publish_batch(batch));
  EXPECT_EQ(transport->stats("q").value().ready, 3);
}

TEST(SqliteTransport, TwoConnectionsInOneProcessShareTheFile) {
  const std::string path = fresh_file();
  auto a = open_file(path);
  auto b = open_file(path);
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  std::mutex seen_mutex;
  std::set<std::string> seen;
  std::atomic<int> received{0};
  for (sqlite::Transport* transport : {a.get(), b.get()}) {
    threads.emplace_back([transport, tag = transport == a.get() ? "a" : "b"] {
      for (int i = 0; i < kPerThread; ++i) ASSERT_TRUE(transport->publish("q", tag + std::to_string(i)));
    });
    threads.emplace_back([&, transport] {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (received.load() < 2 * kPerThread && std::chrono::steady_clock::now() < deadline) {
        auto batch = transport->receive("q", 16, 50ms);
        ASSERT_TRUE(batch) << batch.error().message();
        for (const bq::Delivery& delivery : *batch) {
          ASSERT_TRUE(transport->ack(delivery));
          const std::lock_guard lock(seen_mutex);
          EXPECT_TRUE(seen.insert(delivery.body).second) << "twice: " << delivery.body;
          ++received;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(seen.size(), 2U * kPerThread);
}

TEST(SqliteTransport, AnUnopenablePathIsAnIoErrorNamingIt) {
  sqlite::Transport::Options options;
  options.path = scratch().file("no/such/dir/q.db");
  auto transport = sqlite::Transport::open(options);
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::io);
  EXPECT_NE(transport.error().message().find(options.path), std::string::npos) << transport.error().message();
  // Retrying does not create the directory: terminal, decided where SQLite
  // said so, with SQLite's own code kept.
  EXPECT_FALSE(transport.error().retriable());
  EXPECT_EQ(transport.error().native_code(), "SQLITE_CANTOPEN");
  EXPECT_FALSE(transport.error().native_message().empty());
}

TEST(SqliteTransport, ACorruptFileIsAnIoError) {
  const std::string path = fresh_file();
  {
    std::ofstream garbage(path, std::ios::binary);
    for (int i = 0; i < 1024; ++i) garbage << "this is not a database, just text. ";
  }
  sqlite::Transport::Options options;
  options.path = path;
  auto transport = sqlite::Transport::open(options);
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::io) << transport.error().message();
  EXPECT_NE(transport.error().message().find(path), std::string::npos) << transport.error().message();
  // A text file stays a text file: not retriable.
  EXPECT_FALSE(transport.error().retriable());
  EXPECT_EQ(transport.error().native_code(), "SQLITE_NOTADB");
}

TEST(SqliteTransport, ASchemaFromANewerSdkIsRefused) {
  const std::string path = fresh_file();
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
    ASSERT_EQ(sqlite3_exec(db.get(), "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  sqlite::Transport::Options options;
  options.path = path;
  auto transport = sqlite::Transport::open(options);
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::unsupported) << transport.error().message();
}

TEST(SqliteTransport, RefusesBadOptions) {
  sqlite::Transport::Options options;
  EXPECT_EQ(sqlite::Transport::open(options).error().code(), bq::Errc::invalid_argument);  // no path
  options.path = fresh_file();
  options.visibility_timeout = 0ms;
  EXPECT_EQ(sqlite::Transport::open(options).error().code(), bq::Errc::invalid_argument);
  options.visibility_timeout = 1s;
  options.poll_interval = 0ms;
  EXPECT_EQ(sqlite::Transport::open(options).error().code(), bq::Errc::invalid_argument);
}

TEST(SqliteTransport, StatsSeparateReadyReservedAndDelayed) {
  auto transport = open_file(fresh_file(), 200ms);
  ASSERT_TRUE(transport->publish("q", "a"));
  ASSERT_TRUE(transport->publish("q", "b"));
  bq::PublishOptions later;
  later.delay = 1h;
  ASSERT_TRUE(transport->publish("q", "c", later));
  const bq::Delivery held = transport->receive("q", 1, 1s).value().at(0);
  bq::QueueStats stats = transport->stats("q").value();
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.reserved, 1);
  EXPECT_EQ(stats.delayed, 1);
  std::this_thread::sleep_for(250ms);  // the reservation expires: ready again
  stats = transport->stats("q").value();
  EXPECT_EQ(stats.ready, 2);
  EXPECT_EQ(stats.reserved, 0);
  EXPECT_EQ(transport->stats("other").value().ready, 0);
  (void)held;
}

TEST(SqliteTransport, CapabilitiesAreHonest) {
  auto transport = open_file(fresh_file());
  const bq::Capabilities caps = transport->capabilities();
  EXPECT_TRUE(caps.headers && caps.native_delay && caps.native_release && caps.delivery_count &&
              caps.redelivers_unsettled && caps.extendable_lease && caps.batch_publish && caps.batch_ack &&
              caps.ordered);
  EXPECT_EQ(transport->dead_letter_queue("orders"), "orders.dlq");
}
