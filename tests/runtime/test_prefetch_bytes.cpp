// SPDX-License-Identifier: Apache-2.0
// WorkerOptions::prefetch_bytes: messages received ahead of the handlers are
// bounded by their bodies' bytes as well as by their count, so big messages
// wait at the broker (where their leases do not run) rather than in memory.
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// Runs a worker (one handler thread, prefetch 16) over 20 messages of 1 MiB
// whose first handler waits until released, and returns how many messages
// the broker counted as reserved meanwhile: the one in flight plus the
// buffered ones.
std::int64_t reserved_while_the_handler_waits(std::size_t prefetch_bytes) {
  auto transport = bq::open_transport("memory://prefetch-bytes-" + bq::uuid_v4()).value();
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.concurrency = 1;
  options.prefetch = 16;
  options.prefetch_bytes = prefetch_bytes;
  options.poll_timeout = 20ms;
  options.log = {};
  bq::Worker worker(*transport, options);
  std::atomic<bool> released{false};
  std::atomic<int> ran{0};
  worker.handle("urn:big", [&](const bq::Message&) {
    ++ran;
    while (!released.load()) std::this_thread::sleep_for(5ms);
  });
  const std::string blob(std::size_t{1} << 20U, 'x');
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(worker.publish("urn:big", bq::Object{{"blob", blob}}));
  std::thread runner([&] { EXPECT_TRUE(worker.run()); });
  // Long enough for the receive loop to fill whatever room it has.
  std::this_thread::sleep_for(400ms);
  const auto stats = transport->stats("jobs");
  released.store(true);
  for (int i = 0; i < 500 && ran.load() < 20; ++i) std::this_thread::sleep_for(10ms);
  worker.stop();
  runner.join();
  EXPECT_EQ(ran.load(), 20) << "every message still runs";
  EXPECT_TRUE(stats) << stats.error().message();
  return stats ? stats->reserved : -1;
}

}  // namespace

TEST(PrefetchBytes, BigMessagesWaitAtTheBrokerNotInTheBuffer) {
  // 4 MiB of bodies: the one in flight, and 4 of 1 MiB in the buffer.
  const std::int64_t bounded = reserved_while_the_handler_waits(std::size_t{4} << 20U);
  EXPECT_GE(bounded, 2);
  EXPECT_LE(bounded, 5);
  // Without the byte bound (as before it existed) the count alone applies:
  // 16 received, one of them in flight.
  EXPECT_EQ(reserved_while_the_handler_waits(0), 16);
}
