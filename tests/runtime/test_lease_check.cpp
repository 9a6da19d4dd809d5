// SPDX-License-Identifier: Apache-2.0
// A message received ahead of the handlers whose lease ends before a handler
// is free (a paused process, a lease that could not be extended) is not run:
// the broker has handed it to another consumer, which runs it. Each message
// runs once.
#include "fault_injecting_transport.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

namespace {

struct Runs {
  std::mutex mutex;
  std::map<std::string, int> by_id;
  void add(std::string_view id) {
    std::lock_guard lock(mutex);
    ++by_id[std::string(id)];
  }
};

}  // namespace

TEST(LeaseCheck, TransportsWithLeasesSayWhenTheyEnd) {
  auto transport = bq::open_transport("memory://lease-" + bq::uuid_v4() + "?visibility_timeout=5s").value();
  ASSERT_TRUE(transport->publish("q", "x"));
  const auto before = std::chrono::steady_clock::now();
  auto got = transport->receive("q", 1, 100ms);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1U);
  ASSERT_TRUE(got->front().lease_deadline);
  EXPECT_GE(*got->front().lease_deadline, before + 5s);
  EXPECT_LE(*got->front().lease_deadline, std::chrono::steady_clock::now() + 5s);
  auto unleased = bq::open_transport("memory://lease-" + bq::uuid_v4()).value();
  ASSERT_TRUE(unleased->publish("q", "x"));
  got = unleased->receive("q", 1, 100ms);
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->front().lease_deadline) << "a reservation that never expires has no deadline";
}

TEST(LeaseCheck, APrefetchedMessageWhoseLeaseEndedIsDroppedUnrunNotAcked) {
  const std::string url = "memory://lease-" + bq::uuid_v4() + "?visibility_timeout=300ms";
  FaultInjectingTransport faulty(bq::open_transport(url).value());
  faulty.fail_next_extends(1000);  // the leases run out as if the process were paused
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.poll_timeout = 20ms;
  options.concurrency = 1;
  options.prefetch = 4;
  options.log = {};
  bq::Worker first(faulty, options);
  Runs runs;
  std::atomic<int> first_ran{0};
  first.handle("urn:job", [&](const bq::Message& m) {
    // The first message keeps the only handler busy past every lease.
    if (first_ran++ == 0) std::this_thread::sleep_for(900ms);
    runs.add(m.id());
  });
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(first.publish("urn:job", bq::Object{{"n", i}}));

  // Another consumer on the same broker takes over what the first lost.
  auto other_transport = bq::open_transport(url).value();
  bq::Worker other(*other_transport, options);
  other.handle("urn:job", [&](const bq::Message& m) { runs.add(m.id()); });

  bq::RunLimits once;
  once.max_messages = 4;
  std::thread taker([&] {
    std::this_thread::sleep_for(450ms);  // the leases (300 ms) have ended
    bq::RunLimits limits;
    limits.idle_exit = 200ms;
    EXPECT_TRUE(other.run({}, limits));
  });
  auto summary = first.run({}, once);
  taker.join();
  ASSERT_TRUE(summary) << summary.error().message();

  EXPECT_EQ(first.metrics().snapshot().lease_expired, 3U) << "the three buffered messages must not run here";
  EXPECT_EQ(first_ran.load(), 1);
  // Each message ran once, except the one in flight past its lease, which
  // could not be helped (its late ack is stale).
  int total = 0;
  for (const auto& [id, n] : runs.by_id) {
    EXPECT_LE(n, 2) << id;
    total += n;
  }
  EXPECT_EQ(runs.by_id.size(), 4U);
  EXPECT_LE(total, 5);
}
