// SPDX-License-Identifier: Apache-2.0
// babelqueue_reconnects_total on a real Redis server taken away and back: a
// worker with the metrics middleware consumes, the server is stopped and
// started again (as test_redis_restart.cpp does), the worker goes on, and a
// scrape of the registry counts the transport's reconnect under
// transport="redis". Restarts the shared server, so CTest runs it alone
// (RUN_SERIAL).
#include "reconnect_metrics.hpp"
#include "redis_test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

TEST(RedisReconnectMetrics, AServerTakenAwayAndBackIsCountedPerTransport) {
  const std::string url = bq::redis_test::plain_url();
  auto consumer = bq::redis_test::open_or_die(url);
  auto producer = bq::redis_test::open_or_die(url);
  const std::string queue = bq::redis_test::fresh_queue("reconnect-metrics");
  bq::testing::MeteredWorker worker(*consumer, queue);

  bq::testing::publish_with_retry(*producer, queue, 1, 30s, 100ms);
  ASSERT_TRUE(bq::testing::wait_until([&] { return worker.handled() >= 1; }, 60s));
  EXPECT_EQ(consumer->connection_stats().reconnects, 0U);
  EXPECT_EQ(bq::testing::counter_value(worker.registry(), "babelqueue_reconnects_total", "transport", "redis"), -1)
      << "no reconnect yet, no series";

  const std::string broker = bq::testing::broker_script();
  bq::testing::run_command_output(broker + " stop redis >/dev/null 2>&1");
  std::this_thread::sleep_for(1s);  // the worker's receives fail meanwhile
  bq::testing::run_command_output(broker + " start redis >/dev/null 2>&1");

  bq::testing::publish_with_retry(*producer, queue, 2, 30s, 100ms);
  ASSERT_TRUE(bq::testing::wait_until([&] { return worker.handled() >= 2; }, 60s));
  worker.stop();

  const auto reconnects = consumer->connection_stats().reconnects;
  EXPECT_GE(reconnects, 1U);
  EXPECT_EQ(consumer->connection_stats().transport, "redis");
  EXPECT_EQ(bq::testing::counter_value(worker.registry(), "babelqueue_reconnects_total", "transport", "redis"),
            static_cast<double>(reconnects));
}
