// SPDX-License-Identifier: Apache-2.0
// babelqueue_reconnects_total on a real Redis server taken away and back: a
// worker with the metrics middleware consumes, the server is stopped and
// started again (as test_redis_restart.cpp does), the worker goes on, and a
// scrape of the registry counts the transport's reconnect under
// transport="redis". Restarts the shared server, so CTest runs it alone
// (RUN_SERIAL).
#include "reconnect_metrics.hpp"
#include "redis_test_support.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

void wait_for(const std::atomic<int>& handled, int n) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (handled.load() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_GE(handled.load(), n);
}

}  // namespace

TEST(RedisReconnectMetrics, AServerTakenAwayAndBackIsCountedPerTransport) {
  const std::string url = bq::redis_test::plain_url();
  auto consumer = bq::redis_test::open_or_die(url);
  auto producer = bq::redis_test::open_or_die(url);
  const std::string queue = bq::redis_test::fresh_queue("reconnect-metrics");
  auto metrics = std::make_shared<bq::metrics::Middleware>();

  bq::WorkerOptions options;
  options.poll_timeout = 200ms;
  options.log = {};
  options.middleware.push_back(metrics);
  bq::Worker worker(*consumer, options);
  std::atomic<int> handled{0};
  worker.handle("urn:test:reconnect", [&](const bq::Message&) { ++handled; });
  std::thread runner([&] { EXPECT_TRUE(worker.run({queue})); });

  bq::testing::publish_with_retry(*producer, queue, 1, 30s, 100ms);
  wait_for(handled, 1);
  EXPECT_EQ(consumer->connection_stats().reconnects, 0U);
  EXPECT_EQ(bq::testing::counter_value(*metrics->registry(), "babelqueue_reconnects_total", "transport", "redis"), -1)
      << "no reconnect yet, no series";

  const std::string broker = bq::testing::broker_script();
  bq::testing::run_command_output(broker + " stop redis >/dev/null 2>&1");
  std::this_thread::sleep_for(1s);  // the worker's receives fail meanwhile
  bq::testing::run_command_output(broker + " start redis >/dev/null 2>&1");

  bq::testing::publish_with_retry(*producer, queue, 2, 30s, 100ms);
  wait_for(handled, 2);
  worker.stop();
  runner.join();

  const auto reconnects = consumer->connection_stats().reconnects;
  EXPECT_GE(reconnects, 1U);
  EXPECT_EQ(consumer->connection_stats().transport, "redis");
  EXPECT_EQ(bq::testing::counter_value(*metrics->registry(), "babelqueue_reconnects_total", "transport", "redis"),
            static_cast<double>(reconnects));
}
