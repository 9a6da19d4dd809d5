// SPDX-License-Identifier: Apache-2.0
// A Redis server restart under a running worker: the server is stopped
// gracefully (SIGTERM, append-only file fsynced) and started again while
// messages flow. The worker never stops (its run() does not return), the
// transport reconnects by itself, nothing is lost. Restarts the shared
// server, so CTest runs it alone (RUN_SERIAL).
#include "redis_test_support.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

void restart_server() {
  const std::string broker = bq::testing::broker_script();
  bq::testing::run_command_output(broker + " stop redis >/dev/null 2>&1 && " + broker + " start redis >/dev/null 2>&1");
}

// Publishes, retrying while the server is away (a publish whose answer was
// lost may have happened: at-least-once).
void publish_with_retry(bq::Transport& transport, const std::string& queue, const std::string& body) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    auto sent = transport.publish(queue, body);
    if (sent) return;
    ASSERT_TRUE(sent.error().retriable()) << sent.error().message();
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << sent.error().message();
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

TEST(RedisRestart, TheWorkerGoesOnByItself) {
  const std::string url = bq::redis_test::with_param(bq::redis_test::plain_url(), "visibility_timeout=3");
  auto consumer = bq::redis_test::open_or_die(url);
  auto producer = bq::redis_test::open_or_die(url);
  const std::string queue = bq::redis_test::fresh_queue("restart");

  bq::WorkerOptions options;
  options.concurrency = 4;
  options.poll_timeout = 500ms;
  std::atomic<int> warnings{0};
  options.log = [&](bq::LogLevel level, std::string_view) {
    if (level >= bq::LogLevel::warning) ++warnings;
  };
  bq::Worker worker(*consumer, options);
  std::mutex mutex;
  std::set<std::string> seen;  // guarded by mutex
  worker.handle("urn:test:restart", [&](const bq::Message& m) {
    std::this_thread::sleep_for(2ms);
    const std::lock_guard lock(mutex);
    seen.insert(std::string(m.id()));
  });
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    auto summary = worker.run({queue});
    EXPECT_TRUE(summary) << (summary ? "" : summary.error().message());
    returned = true;
  });

  constexpr int kBefore = 300;
  constexpr int kAfter = 300;
  std::set<std::string> published;
  bq::MakeOptions make;
  make.queue = queue;
  auto publish_one = [&](int i) {
    auto envelope = bq::Envelope::make("urn:test:restart", bq::Value::object({{"i", i}}), make);
    ASSERT_TRUE(envelope);
    publish_with_retry(*producer, queue, std::string(envelope->body()));
    published.insert(std::string(envelope->id()));
  };
  for (int i = 0; i < kBefore; ++i) publish_one(i);
  restart_server();
  EXPECT_FALSE(returned.load()) << "the worker stopped when the server went away";
  for (int i = kBefore; i < kBefore + kAfter; ++i) publish_one(i);

  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    {
      const std::lock_guard lock(mutex);
      if (seen.size() >= published.size()) break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(returned.load());
  worker.stop();
  runner.join();
  const std::lock_guard lock(mutex);
  EXPECT_EQ(seen, published) << seen.size() << " of " << published.size() << " handled";
  std::cout << "[          ] warnings logged around the restart: " << warnings.load() << "\n";
}
