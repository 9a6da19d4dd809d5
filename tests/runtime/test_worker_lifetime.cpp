// SPDX-License-Identifier: Apache-2.0
// The Worker's lifetime: destroying it while run() is in progress on another
// thread stops that run and waits for it (the handler in flight finishes),
// instead of freeing what run() still uses.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <string>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

TEST(WorkerLifetime, DestroyingARunningWorkerWaitsForItsRunToReturn) {
  auto transport = bq::open_transport("memory://lifetime-" + bq::uuid_v4()).value();
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 50ms;
  options.log = {};
  auto worker = std::make_unique<bq::Worker>(*transport, options);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  worker->handle("urn:slow", [&](const bq::Message&) {
    started = true;
    std::this_thread::sleep_for(300ms);
    finished = true;
  });
  ASSERT_TRUE(worker->publish("urn:slow", {}));
  std::thread runner([&] { EXPECT_TRUE(worker->run()); });
  while (!started) std::this_thread::sleep_for(1ms);
  worker.reset();  // while the handler is still running
  // run() joins its handlers before it returns: a destructor that waited
  // for run() comes back after the handler finished.
  EXPECT_TRUE(finished) << "the destructor returned while run() was still handling a message";
  runner.join();
}

TEST(WorkerLifetime, DestroyingAnIdleWorkerDoesNotWait) {
  auto transport = bq::open_transport("memory://lifetime-" + bq::uuid_v4()).value();
  const auto start = std::chrono::steady_clock::now();
  { bq::Worker worker(*transport); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// Options are checked where they are set: each field out of its range is
// refused with its name and range, instead of being silently adjusted.
TEST(WorkerOptionsCheck, RefusesEachFieldOutOfItsRangeByName) {
  auto transport = bq::open_transport("memory://options-" + bq::uuid_v4()).value();
  auto refused = [&](const bq::WorkerOptions& o, const std::string& field) {
    auto checked = o.check();
    ASSERT_FALSE(checked) << field << " accepted";
    EXPECT_EQ(checked.error().code(), bq::Errc::invalid_argument);
    EXPECT_NE(checked.error().message().find(field), std::string::npos) << checked.error().message();
    try {
      bq::Worker worker(*transport, o);
      ADD_FAILURE() << "the Worker accepted " << field;
    } catch (const bq::Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  EXPECT_TRUE(bq::WorkerOptions{}.check());
  bq::WorkerOptions o;
  o.max_attempts = -3;
  refused(o, "max_attempts");
  o = {};
  o.max_attempts = 0;
  refused(o, "max_attempts");
  o = {};
  o.concurrency = 0;
  refused(o, "concurrency");
  o = {};
  o.poll_timeout = -1ms;
  refused(o, "poll_timeout");
  o = {};
  o.shutdown_deadline = -5s;
  refused(o, "shutdown_deadline");
  o = {};
  o.default_queue.clear();
  refused(o, "default_queue");
  o = {};
  o.retry_backoff = bq::BackoffPolicy{100ms, 2.0, 1s, 1.5};
  refused(o, "retry_backoff.jitter");
  o = {};
  o.receive_error_backoff.multiplier = 0.5;
  refused(o, "receive_error_backoff.multiplier");
  o = {};
  o.retry_backoff = bq::BackoffPolicy{2s, 2.0, 1s, 0.0};
  refused(o, "retry_backoff.max");
}

TEST(WorkerOptionsCheck, BackoffPolicyLimits) {
  EXPECT_TRUE(bq::BackoffPolicy{}.check());
  EXPECT_TRUE((bq::BackoffPolicy{0ms, 1.0, 0ms, 0.0}.check()));
  EXPECT_TRUE((bq::BackoffPolicy{1ms, 1.0, 1ms, 1.0}.check()));
  EXPECT_FALSE((bq::BackoffPolicy{-1ms, 2.0, 1s, 0.0}.check()));
  EXPECT_FALSE((bq::BackoffPolicy{1ms, std::numeric_limits<double>::quiet_NaN(), 1s, 0.0}.check()));
  EXPECT_FALSE((bq::BackoffPolicy{1ms, std::numeric_limits<double>::infinity(), 1s, 0.0}.check()));
  EXPECT_FALSE((bq::BackoffPolicy{1ms, 2.0, 1s, -0.1}.check()));
}
