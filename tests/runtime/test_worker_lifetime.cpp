// The Worker's lifetime: destroying it while run() is in progress on another
// thread stops that run and waits for it (the handler in flight finishes),
// instead of freeing what run() still uses.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
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
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    auto summary = worker->run();
    EXPECT_TRUE(summary);
    returned = true;
  });
  while (!started) std::this_thread::sleep_for(1ms);
  worker.reset();  // while the handler is still running
  EXPECT_TRUE(returned) << "the destructor returned before run() did";
  EXPECT_TRUE(finished) << "the in-flight handler was cut short";
  runner.join();
}

TEST(WorkerLifetime, DestroyingAnIdleWorkerDoesNotWait) {
  auto transport = bq::open_transport("memory://lifetime-" + bq::uuid_v4()).value();
  const auto start = std::chrono::steady_clock::now();
  { bq::Worker worker(*transport); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}
