// SPDX-License-Identifier: Apache-2.0
// What the transactional outbox costs (docs/benchmarks.md, "Transactional
// outbox"), in one run: a business transaction (BEGIN, one INSERT, COMMIT on
// a SQLite file in WAL mode) with and without outbox::write inside it, and
// the relay's throughput from a SQLite outbox to the memory transport (the
// store's part, without a broker's).
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <filesystem>

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

}  // namespace

BENCHMARK_MAIN();
