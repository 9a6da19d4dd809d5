// SPDX-License-Identifier: Apache-2.0
// What the transactional outbox costs (docs/benchmarks.md, "Transactional
// outbox"), in one run: a business transaction (BEGIN, one INSERT, COMMIT on
// a SQLite file in WAL mode) with and without outbox::write inside it, and
// the relay's throughput from a SQLite outbox to the memory transport (the
// store's part, without a broker's). With BQ_BENCH_POSTGRES_URL (a
// postgresql:// URL, e.g. scripts/broker url postgres) the same on
// PostgreSQL, and the latency from a commit to the message on the broker
// with the relay woken by LISTEN/NOTIFY against the relay polling.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>

#if defined(BQ_BENCH_POSTGRES)
#include <babelqueue/postgres/outbox_store.hpp>

#include <libpq-fe.h>
#endif

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace bq = babelqueue;
namespace outbox = babelqueue::outbox;

namespace {

class Database {
 public:
  Database() : file_(std::filesystem::temp_directory_path() / ("bq-outbox-bench-" + bq::uuid_v4() + ".db")) {
    sqlite3_open(file_.c_str(), &db_);
    exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)");
    (void)outbox::migrate(db_);
  }
  ~Database() {
    sqlite3_close_v2(db_);
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file_.string() + suffix);
  }
  void exec(const char* sql) { sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  sqlite3* get() { return db_; }
  const std::filesystem::path& file() const { return file_; }

  // One order, and its message when with_outbox.
  void order(std::int64_t id, bool with_outbox) {
    exec("BEGIN");
    sqlite3_stmt* insert = nullptr;
    sqlite3_prepare_v2(db_, "INSERT INTO orders VALUES (?1, 100)", -1, &insert, nullptr);
    sqlite3_bind_int64(insert, 1, id);
    sqlite3_step(insert);
    sqlite3_finalize(insert);
    if (with_outbox) {
      benchmark::DoNotOptimize(outbox::write(db_, "urn:shop:orders:created", bq::Value::object({{"order_id", id}}),
                                             bq::PublishParams{.queue = "orders"}));
    }
    exec("COMMIT");
  }

 private:
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
};

void BM_Transaction(benchmark::State& state) {
  Database db;
  const bool with_outbox = state.range(0) == 1;
  std::int64_t id = 0;
  for (auto _ : state) db.order(++id, with_outbox);
}

void BM_RelaySqliteToMemory(benchmark::State& state) {
  Database db;
  auto store = outbox::SqliteStore::open(db.file()).value();
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store, {.batch_size = static_cast<std::size_t>(state.range(0))});
  constexpr int kRows = 2000;
  std::int64_t id = 0;
  for (auto _ : state) {
    state.PauseTiming();
    db.exec("BEGIN");
    for (int i = 0; i < kRows; ++i) {
      (void)outbox::write(db.get(), "urn:shop:orders:created", bq::Value::object({{"order_id", ++id}}),
                          bq::PublishParams{.queue = "orders"});
    }
    db.exec("COMMIT");
    state.ResumeTiming();
    benchmark::DoNotOptimize(relay.drain().value());
    state.PauseTiming();
    while (!broker.receive("orders", 1000, std::chrono::milliseconds(0)).value().empty()) {
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRows);
}

BENCHMARK(BM_Transaction)->Arg(0)->Arg(1)->ArgName("outbox");
BENCHMARK(BM_RelaySqliteToMemory)->Arg(100)->ArgName("batch")->Unit(benchmark::kMillisecond);

#if defined(BQ_BENCH_POSTGRES)

// A table of its own on the server of BQ_BENCH_POSTGRES_URL, and the
// application's connection to it.
class Postgres {
 public:
  explicit Postgres(const std::string& url) : url_(url), table_("bq_bench_" + bq::uuid_v4().substr(0, 8)) {
    auto options = bq::postgres::OutboxStore::options_from_url(bq::Url::parse(url).value()).value();
    conninfo_ = options.conninfo;
    conn_ = PQconnectdb(conninfo_.c_str());
    (void)bq::postgres::migrate_outbox(conn_, table_);
    exec("CREATE TABLE " + table_ + "_orders (id BIGINT PRIMARY KEY)");
  }
  ~Postgres() {
    exec("DROP TABLE " + table_);
    exec("DROP TABLE " + table_ + "_orders");
    PQfinish(conn_);
  }
  void exec(const std::string& sql) { PQclear(PQexec(conn_, sql.c_str())); }
  void order(std::int64_t id, bool with_outbox) {
    exec("BEGIN");
    exec("INSERT INTO " + table_ + "_orders VALUES (" + std::to_string(id) + ")");
    if (with_outbox) {
      benchmark::DoNotOptimize(bq::postgres::write_outbox(conn_, "urn:shop:orders:created",
                                                          bq::Value::object({{"order_id", id}}),
                                                          bq::PublishParams{.queue = "orders"}, table_));
    }
    exec("COMMIT");
  }
  std::unique_ptr<bq::postgres::OutboxStore> store(bool listen) {
    return bq::postgres::OutboxStore::open({.conninfo = conninfo_, .table = table_, .listen = listen}).value();
  }
  PGconn* conn() { return conn_; }
  const std::string& table() const { return table_; }

 private:
  std::string url_;
  std::string table_;
  std::string conninfo_;
  PGconn* conn_ = nullptr;
};

const char* postgres_url() { return std::getenv("BQ_BENCH_POSTGRES_URL"); }

void BM_PostgresTransaction(benchmark::State& state) {
  Postgres db(postgres_url());
  std::int64_t id = 0;
  for (auto _ : state) db.order(++id, state.range(0) == 1);
}

void BM_RelayPostgresToMemory(benchmark::State& state) {
  Postgres db(postgres_url());
  auto store = db.store(false);
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store, {.batch_size = static_cast<std::size_t>(state.range(0))});
  constexpr int kRows = 2000;
  std::int64_t id = 0;
  for (auto _ : state) {
    state.PauseTiming();
    db.exec("BEGIN");
    for (int i = 0; i < kRows; ++i) {
      (void)bq::postgres::write_outbox(db.conn(), "urn:shop:orders:created", bq::Value::object({{"order_id", ++id}}),
                                       bq::PublishParams{.queue = "orders"}, db.table());
    }
    db.exec("COMMIT");
    state.ResumeTiming();
    benchmark::DoNotOptimize(relay.drain().value());
    state.PauseTiming();
    while (!broker.receive("orders", 1000, std::chrono::milliseconds(0)).value().empty()) {
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRows);
}

// From the COMMIT's return to the message on the broker, with a running
// relay that waits for rows (idle_wait 500 ms): woken by the notification
// (listen:1) or by its next poll (listen:0).
void BM_PostgresCommitToPublished(benchmark::State& state) {
  Postgres db(postgres_url());
  auto store = db.store(state.range(0) == 1);
  bq::memory::Transport broker;
  outbox::Relay relay(broker, *store, {.idle_wait = std::chrono::milliseconds(500)});
  std::atomic<bool> stop{false};
  std::thread running([&] { (void)relay.run(stop); });
  std::int64_t id = 0;
  for (auto _ : state) {
    db.order(++id, true);
    const auto committed = std::chrono::steady_clock::now();
    auto got = broker.receive("orders", 1, std::chrono::seconds(5)).value();
    const auto published = std::chrono::steady_clock::now();
    if (got.empty()) state.SkipWithError("not published within 5 s");
    state.SetIterationTime(std::chrono::duration<double>(published - committed).count());
  }
  stop = true;
  db.order(++id, true);  // wakes a listening relay to see the stop
  running.join();
}

const bool postgres_benchmarks = [] {
  if (postgres_url() == nullptr) return false;
  benchmark::RegisterBenchmark("BM_PostgresTransaction", BM_PostgresTransaction)->Arg(0)->Arg(1)->ArgName("outbox");
  benchmark::RegisterBenchmark("BM_RelayPostgresToMemory", BM_RelayPostgresToMemory)
      ->Arg(100)
      ->ArgName("batch")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_PostgresCommitToPublished", BM_PostgresCommitToPublished)
      ->Arg(1)
      ->Arg(0)
      ->ArgName("listen")
      ->UseManualTime()
      ->Iterations(20)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

#endif

}  // namespace

BENCHMARK_MAIN();
