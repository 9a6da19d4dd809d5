// SPDX-License-Identifier: Apache-2.0
// Batched acks: where the transport settles a batch in one round trip
// (Capabilities::batch_ack), the Worker gathers the acks of handled messages
// into ack_batch() calls of at most Capabilities::ack_batch_size (10 unless
// the transport asks for more), sends a partial batch after a short
// linger (WorkerOptions::ack_linger), and flushes what is pending before a
// run (run() after stop(), drain()) returns. A delivery the batch did not settle is counted and logged
// as a failed single ack; the rest are settled. Transports without batch_ack
// keep one ack() per message.
#include "recording_transport.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

namespace bq = babelqueue;
using bq::test_support::RecordingTransport;
using namespace std::chrono_literals;

namespace {

class BatchAck : public testing::Test {
 protected:
  bq::WorkerOptions options() {
    bq::WorkerOptions o;
    o.default_queue = "orders";
    o.poll_timeout = 100ms;
    o.log = [this](bq::LogLevel, std::string_view m) {
      const std::lock_guard lock(log_mutex_);
      logs_.emplace_back(m);
    };
    return o;
  }

  void publish(bq::Worker& worker, int count) {
    for (int i = 0; i < count; ++i) ASSERT_TRUE(worker.publish("urn:a", bq::Value::object({{"n", i}})));
  }

  // A linger no test outlives: only a full batch or the end of the run
  // sends acks.
  bq::WorkerOptions lingering() {
    auto o = options();
    o.ack_linger = std::chrono::hours(1);
    return o;
  }

  // Nothing ready and nothing held: every message was acked.
  void expect_all_settled() {
    auto stats = memory_.stats("orders").value();
    EXPECT_EQ(stats.ready, 0);
    EXPECT_EQ(stats.reserved, 0) << "an ack was never sent";
  }

  // Until `count` ack_batch() calls wait for release_ack_batches() (5 s at
  // most).
  void wait_until_held(std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (batching_.ack_batches_held() < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(2ms);
    }
  }

  static std::size_t total(const std::vector<std::size_t>& sizes) {
    return std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  }

  bq::memory::Transport memory_;
  RecordingTransport batching_{memory_, /*batch_ack=*/true};
  std::mutex log_mutex_;
  std::vector<std::string> logs_;
};

TEST_F(BatchAck, HandledMessagesAreAckedThroughAckBatchAndDrainFlushesTheRest) {
  bq::Worker worker(batching_, lingering());
  worker.handle("urn:a", [](const bq::Message&) {});
  publish(worker, 25);
  EXPECT_EQ(worker.drain("orders").value(), 25U);
  // When drain returns every ack has been sent, the partial batch included.
  expect_all_settled();
  EXPECT_EQ(batching_.single_acks(), 0U);
  const auto batches = batching_.ack_batches();
  EXPECT_EQ(total(batches), 25U);
  for (std::size_t size : batches) EXPECT_LE(size, 10U);
  EXPECT_EQ(batches, (std::vector<std::size_t>{10, 10, 5}));
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 25U);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 0U);
}

TEST_F(BatchAck, StopFlushesThePendingAcksBeforeRunReturns) {
  bq::Worker worker(batching_, lingering());
  std::atomic<int> handled{0};
  worker.handle("urn:a", [&](const bq::Message&) {
    // The last one asks the worker to stop: its ack, and the two before,
    // are still waiting for company.
    if (++handled == 3) worker.stop();
  });
  publish(worker, 3);
  std::thread runner([&] { EXPECT_TRUE(worker.run({"orders"})); });
  runner.join();
  EXPECT_EQ(handled.load(), 3);
  expect_all_settled();
  EXPECT_EQ(batching_.single_acks(), 0U);
  EXPECT_EQ(batching_.ack_batches(), (std::vector<std::size_t>{3}));
}

TEST_F(BatchAck, APartialBatchIsSentAfterAShortLingerWhileTheRunGoesOn) {
  bq::Worker worker(batching_, options());
  std::atomic<int> handled{0};
  worker.handle("urn:a", [&](const bq::Message&) { ++handled; });
  std::thread runner([&] { EXPECT_TRUE(worker.run({"orders"})); });
  publish(worker, 2);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (total(batching_.ack_batches()) < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  // Sent while the worker still runs: a quiet queue does not hold acks back.
  EXPECT_EQ(total(batching_.ack_batches()), 2U);
  worker.stop();
  runner.join();
  EXPECT_EQ(handled.load(), 2);
  expect_all_settled();
}

TEST_F(BatchAck, ADeliveryTheBatchDidNotSettleIsCountedAndTheRestAreSettled) {
  bq::Worker worker(batching_, lingering());
  worker.handle("urn:a", [](const bq::Message&) {});
  publish(worker, 3);
  batching_.fail_in_next_ack_batch(1, bq::Errc::not_found);
  EXPECT_EQ(worker.drain("orders").value(), 3U);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 1U);
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 3U);
  // The one not settled is still held (the broker would deliver it again);
  // the two others are gone.
  auto stats = memory_.stats("orders").value();
  EXPECT_EQ(stats.ready, 0);
  EXPECT_EQ(stats.reserved, 1);
  const std::lock_guard lock(log_mutex_);
  ASSERT_EQ(logs_.size(), 1U);
  EXPECT_NE(logs_[0].find("ack on orders failed"), std::string::npos) << logs_[0];
}

TEST_F(BatchAck, ManyHandlerThreadsAckEachMessageOnce) {
  auto o = options();
  o.concurrency = 4;
  bq::Worker worker(batching_, o);
  std::mutex mutex;
  std::multiset<std::int64_t> seen;
  worker.handle("urn:a", [&](const bq::Message& m) {
    const std::lock_guard lock(mutex);
    seen.insert(m.envelope().data()["n"].as_int64());
  });
  constexpr int kCount = 200;
  publish(worker, kCount);
  EXPECT_EQ(worker.drain("orders").value(), static_cast<std::size_t>(kCount));
  expect_all_settled();
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kCount));
  EXPECT_EQ(total(batching_.ack_batches()), static_cast<std::size_t>(kCount));
  EXPECT_EQ(batching_.single_acks(), 0U);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 0U);
}

// A slow broker (every ack_batch held): the only handler thread goes on
// while the flusher's batch waits, and stops only when it has filled a
// second batch behind the one pending, which it then sends itself: 20 or 30
// messages handled, not 10 (the handler waiting for each of its batches),
// nor all 60 (running ahead without bound).
TEST_F(BatchAck, AHandlerGoesOnWhileABatchIsSettledAndWaitsTwoBatchesAhead) {
  batching_.hold_ack_batches();
  bq::Worker worker(batching_, lingering());
  std::atomic<int> handled{0};
  worker.handle("urn:a", [&](const bq::Message&) { ++handled; });
  publish(worker, 60);
  std::size_t processed = 0;
  std::thread runner([&] { processed = worker.drain("orders").value(); });
  wait_until_held(2);
  EXPECT_EQ(batching_.ack_batches_held(), 2U) << "the flusher's batch and the handler's own";
  // 30, or 20 when the handler filled the second batch before the flusher
  // took the first (it then sends the first, the flusher the second).
  const int reached = handled.load();
  EXPECT_GE(reached, 20);
  EXPECT_LE(reached, 30);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(handled.load(), reached) << "the handler ran ahead of the broker";
  batching_.release_ack_batches();
  runner.join();
  EXPECT_EQ(processed, 60U);
  expect_all_settled();
  const auto batches = batching_.ack_batches();
  EXPECT_EQ(total(batches), 60U);
  for (std::size_t size : batches) EXPECT_LE(size, 10U);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 0U);
}

// stop() while batches wait for the broker: run() returns once every ack
// pending or in flight was sent; the messages not started go back.
TEST_F(BatchAck, StopWhileBatchesWaitForTheBrokerSendsEveryPendingAck) {
  batching_.hold_ack_batches();
  bq::Worker worker(batching_, lingering());
  std::atomic<int> handled{0};
  worker.handle("urn:a", [&](const bq::Message&) { ++handled; });
  publish(worker, 60);
  std::thread runner([&] { EXPECT_TRUE(worker.run({"orders"})); });
  wait_until_held(2);
  worker.stop();
  std::this_thread::sleep_for(20ms);
  batching_.release_ack_batches();
  runner.join();
  const auto n = static_cast<std::size_t>(handled.load());
  EXPECT_GE(n, 20U);
  EXPECT_EQ(total(batching_.ack_batches()), n);
  auto stats = memory_.stats("orders").value();
  EXPECT_EQ(stats.reserved, 0) << "an ack was never sent";
  EXPECT_EQ(static_cast<std::size_t>(stats.ready), 60 - n);
  EXPECT_EQ(worker.metrics().snapshot().succeeded, n);
}

TEST_F(BatchAck, RetriesAndDeadLettersAckTheOriginalAtOnce) {
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 2;
  bq::Worker worker(batching_, o);
  worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("fails"); });
  publish(worker, 1);
  EXPECT_EQ(worker.drain("orders", 1).value(), 1U);  // retried
  EXPECT_EQ(worker.drain("orders", 1).value(), 1U);  // dead-lettered
  EXPECT_EQ(batching_.single_acks(), 2U);
  EXPECT_TRUE(batching_.ack_batches().empty());
  expect_all_settled();
}

TEST_F(BatchAck, AZeroLingerAcksEveryMessageOnItsOwn) {
  auto o = options();
  o.ack_linger = 0ms;
  bq::Worker worker(batching_, o);
  worker.handle("urn:a", [](const bq::Message&) {});
  publish(worker, 12);
  EXPECT_EQ(worker.drain("orders").value(), 12U);
  EXPECT_EQ(batching_.single_acks(), 12U);
  EXPECT_TRUE(batching_.ack_batches().empty());
  expect_all_settled();
}

// A transport asks for its own batch sizes (SQLite: a transaction costs
// about the same for one row as for many): the acks go in batches of
// Capabilities::ack_batch_size, and an automatic prefetch is at least
// Capabilities::default_prefetch.
class SizedBatches final : public RecordingTransport {
 public:
  using RecordingTransport::RecordingTransport;
  bq::Capabilities capabilities() const override {
    bq::Capabilities caps = RecordingTransport::capabilities();
    caps.ack_batch_size = 4;
    caps.default_prefetch = 40;
    return caps;
  }
};

TEST_F(BatchAck, TheTransportSetsTheBatchSizeAndTheAutomaticPrefetch) {
  SizedBatches sized(memory_, /*batch_ack=*/true);
  bq::Worker worker(sized, lingering());
  EXPECT_EQ(worker.options().prefetch, 40U);
  worker.handle("urn:a", [](const bq::Message&) {});
  publish(worker, 10);
  EXPECT_EQ(worker.drain("orders").value(), 10U);
  EXPECT_EQ(sized.ack_batches(), (std::vector<std::size_t>{4, 4, 2}));
  expect_all_settled();

  // A prefetch the application chose is kept; so is the default's floor of
  // one per handler thread.
  auto chosen = options();
  chosen.prefetch = 3;
  EXPECT_EQ(bq::Worker(sized, chosen).options().prefetch, 3U);
  auto many_threads = options();
  many_threads.concurrency = 64;
  EXPECT_EQ(bq::Worker(sized, many_threads).options().prefetch, 64U);
  EXPECT_EQ(bq::Worker(batching_, options()).options().prefetch, 16U);
}

TEST_F(BatchAck, WithoutBatchAckEveryMessageIsAckedOnItsOwn) {
  RecordingTransport single(memory_);
  ASSERT_FALSE(single.capabilities().batch_ack);
  bq::Worker worker(single, options());
  worker.handle("urn:a", [](const bq::Message&) {});
  publish(worker, 12);
  EXPECT_EQ(worker.drain("orders").value(), 12U);
  EXPECT_EQ(single.single_acks(), 12U);
  EXPECT_TRUE(single.ack_batches().empty());
  expect_all_settled();
}

}  // namespace
