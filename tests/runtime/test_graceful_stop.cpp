// SPDX-License-Identifier: Apache-2.0
// A graceful stop: the handlers that had started finish, the messages
// received ahead of them are handed back without running, and run()
// returns within the in-flight handlers' time plus the shutdown deadline.
// Every message then runs exactly once over two runs.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

std::string temp_sqlite_url() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("bq-stop-tests-" + bq::uuid_v4());
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return d;
  }();
  return "sqlite://" + (dir / (bq::uuid_v4() + ".db")).string();
}

// Counts the runs of each message id.
struct RunLog {
  std::mutex mutex;
  std::map<std::string, int> runs;
  std::atomic<int> started{0};
  void add(std::string_view id) {
    std::lock_guard lock(mutex);
    ++runs[std::string(id)];
  }
  int total() {
    std::lock_guard lock(mutex);
    int sum = 0;
    for (const auto& [id, n] : runs) sum += n;
    return sum;
  }
  int most() {
    std::lock_guard lock(mutex);
    int top = 0;
    for (const auto& [id, n] : runs) top = std::max(top, n);
    return top;
  }
};

// 20 messages, a slow handler, a stop while most are still buffered.
void stop_runs_only_what_had_started(std::unique_ptr<bq::Transport> transport, std::size_t concurrency) {
  constexpr int kMessages = 20;
  constexpr auto kHandlerTime = 150ms;
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.poll_timeout = 20ms;
  options.concurrency = concurrency;
  options.prefetch = 16;
  options.shutdown_deadline = 2s;  // longer than a handler: what had started finishes
  options.log = {};
  bq::Worker worker(std::move(transport), options);
  RunLog log;
  worker.handle("urn:job", [&](const bq::Message& m) {
    log.started++;
    std::this_thread::sleep_for(kHandlerTime);
    log.add(m.id());
  });
  for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(worker.publish("urn:job", bq::Object{{"n", i}}));

  std::chrono::steady_clock::time_point stopped_at;
  std::thread stopper([&] {
    while (log.started.load() < static_cast<int>(concurrency) + 1) std::this_thread::sleep_for(1ms);
    stopped_at = std::chrono::steady_clock::now();
    worker.stop();
  });
  auto first = worker.run();
  const auto returned_at = std::chrono::steady_clock::now();
  stopper.join();
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->reason, bq::RunSummary::Reason::stopped);
  // At most one handler time is still in flight at the stop, well inside
  // the deadline: run() returns when those finish, running nothing else.
  EXPECT_LT(returned_at - stopped_at, kHandlerTime + 500ms) << "the stop ran messages that had not started";
  const int ran_before_stop = log.total();
  EXPECT_LE(ran_before_stop, 2 * static_cast<int>(concurrency) + 1)
      << "the stop ran prefetched messages instead of handing them back";

  // The rest is still there, each message once.
  auto second = worker.drain("jobs");
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(log.most(), 1) << "a message ran twice";
  EXPECT_EQ(log.total(), kMessages);
  EXPECT_EQ(static_cast<int>(log.runs.size()), kMessages);
}

}  // namespace

TEST(GracefulStop, RunsOnlyWhatHadStartedOnSqlite) {
  bq::sqlite::register_transport();
  stop_runs_only_what_had_started(bq::open_transport(temp_sqlite_url()).value(), 1);
}

TEST(GracefulStop, RunsOnlyWhatHadStartedWithSeveralHandlers) {
  bq::sqlite::register_transport();
  stop_runs_only_what_had_started(bq::open_transport(temp_sqlite_url()).value(), 3);
}

TEST(GracefulStop, RunsOnlyWhatHadStartedOnMemory) {
  stop_runs_only_what_had_started(std::make_unique<bq::memory::Transport>(), 2);
}

// A stop that arrives while a run is already ending by itself (its message
// limit reached, buffered messages being finished) hands the buffer back
// at once instead of running it or waiting for the deadline.
TEST(GracefulStop, AStopDuringALimitedRunsWindDownHandsTheBufferBack) {
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.poll_timeout = 20ms;
  options.prefetch = 8;
  options.shutdown_deadline = 5s;
  options.log = {};
  bq::Worker worker(std::make_unique<bq::memory::Transport>(), options);
  RunLog log;
  worker.handle("urn:job", [&](const bq::Message& m) {
    log.started++;
    std::this_thread::sleep_for(100ms);
    log.add(m.id());
  });
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(worker.publish("urn:job", bq::Object{{"n", i}}));
  std::chrono::steady_clock::time_point stopped_at;
  std::thread stopper([&] {
    while (log.started.load() < 2) std::this_thread::sleep_for(1ms);
    stopped_at = std::chrono::steady_clock::now();
    worker.stop();
  });
  bq::RunLimits limits;
  limits.max_messages = 8;  // all of them received at once; the run then winds down
  auto summary = worker.run({}, limits);
  const auto returned_at = std::chrono::steady_clock::now();
  stopper.join();
  ASSERT_TRUE(summary);
  EXPECT_LT(returned_at - stopped_at, 1s);
  EXPECT_LE(log.total(), 3);
  auto rest = worker.drain("jobs");
  ASSERT_TRUE(rest);
  EXPECT_EQ(log.most(), 1);
  EXPECT_EQ(log.total(), 8);
}

// A handler that outlives the deadline: its message is released at the
// deadline (to run again later), the buffered ones are handed back unrun,
// and run() returns once that handler's thread is free — the deadline plus
// what was left of the handler, not the buffer's time.
TEST(GracefulStop, AHandlerPastTheDeadlineIsReleasedAndNothingElseRuns) {
  bq::sqlite::register_transport();
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.poll_timeout = 20ms;
  options.prefetch = 8;
  options.shutdown_deadline = 200ms;
  std::mutex log_mutex;
  std::vector<std::string> logged;
  options.log = [&](bq::LogLevel, std::string_view line) {
    std::lock_guard lock(log_mutex);
    logged.emplace_back(line);
  };
  bq::Worker worker(bq::open_transport(temp_sqlite_url()).value(), options);
  RunLog log;
  std::atomic<bool> slow{true};
  std::string first_id;
  worker.handle("urn:job", [&](const bq::Message& m) {
    if (log.started++ == 0) first_id = std::string(m.id());
    std::this_thread::sleep_for(slow.load() ? 600ms : 1ms);
    log.add(m.id());
  });
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(worker.publish("urn:job", bq::Object{{"n", i}}));
  std::chrono::steady_clock::time_point stopped_at;
  std::thread stopper([&] {
    while (log.started.load() < 1) std::this_thread::sleep_for(1ms);
    stopped_at = std::chrono::steady_clock::now();
    worker.stop();
  });
  auto summary = worker.run();
  const auto returned_at = std::chrono::steady_clock::now();
  stopper.join();
  ASSERT_TRUE(summary);
  EXPECT_LT(returned_at - stopped_at, 600ms + 500ms);
  EXPECT_EQ(log.started.load(), 1) << "a buffered message started after the stop";
  // The log names the message whose handler outlived the deadline by its
  // id (it once printed the queue's name where the id belongs).
  {
    std::lock_guard lock(log_mutex);
    const std::string said = "a handler outlived the shutdown deadline; message " + first_id + " on jobs is released";
    EXPECT_TRUE(std::any_of(logged.begin(), logged.end(),
                            [&](const std::string& line) { return line.find(said) != std::string::npos; }))
        << "no log line says: " << said;
  }
  slow = false;
  auto rest = worker.drain("jobs");
  ASSERT_TRUE(rest);
  // The abandoned one ran to its end once and, released, once more.
  EXPECT_EQ(log.total(), 9);
  EXPECT_EQ(static_cast<int>(log.runs.size()), 8);
}
