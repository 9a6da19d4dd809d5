// SPDX-License-Identifier: Apache-2.0
#include "transport_contract.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace bq = babelqueue;
using bq::test_support::ContractTarget;
using namespace std::chrono_literals;

namespace {

ContractTarget memory_target(std::string name, std::chrono::milliseconds visibility_timeout) {
  ContractTarget target;
  target.name = std::move(name);
  target.visibility_timeout = visibility_timeout;
  target.open = [visibility_timeout]() -> bq::Result<std::unique_ptr<bq::Transport>> {
    return std::unique_ptr<bq::Transport>(
        std::make_unique<bq::memory::Transport>(bq::memory::Transport::Options{visibility_timeout}));
  };
  return target;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Memory, TransportContract,
                         testing::Values(memory_target("object", 300ms), memory_target("no_timeout", 0ms),
                                         ContractTarget::from_url("url", "memory://contract?visibility_timeout=0.3")
                                             .with_visibility_timeout(300ms)),
                         ContractTarget::name_of);

namespace {

bq::Delivery receive_one(bq::Transport& transport, std::string_view queue) {
  auto received = transport.receive(queue, 1, 1s);
  EXPECT_TRUE(received) << received.error().message();
  EXPECT_EQ(received->size(), 1U);
  return received->empty() ? bq::Delivery{} : received->front();
}

}  // namespace

TEST(MemoryTransport, SettlingTwiceIsNotFound) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("q", "a"));
  const bq::Delivery delivery = receive_one(transport, "q");
  ASSERT_TRUE(transport.ack(delivery));
  for (auto settled : {transport.ack(delivery), transport.release(delivery), transport.extend(delivery, 1s)}) {
    ASSERT_FALSE(settled);
    EXPECT_EQ(settled.error().code(), bq::Errc::not_found);
  }
  bq::Delivery elsewhere = delivery;
  elsewhere.queue = "other";
  EXPECT_EQ(transport.ack(elsewhere).error().code(), bq::Errc::not_found);
}

// The default ack_batch (a loop over ack): every delivery is tried, and each
// one not settled is named by its index.
TEST(MemoryTransport, AckBatchTriesEveryDeliveryAndNamesTheOnesNotSettled) {
  bq::memory::Transport transport;
  for (const char* body : {"a", "b", "c"}) ASSERT_TRUE(transport.publish("q", body));
  auto received = transport.receive("q", 3, 1s);
  ASSERT_TRUE(received);
  ASSERT_EQ(received->size(), 3U);
  ASSERT_TRUE(transport.ack((*received)[1]));  // settled already: stale in the batch
  std::vector<bq::AckFailure> failures;
  auto acked = transport.ack_batch(*received, failures);
  ASSERT_FALSE(acked);
  EXPECT_EQ(acked.error().code(), bq::Errc::not_found);
  EXPECT_NE(acked.error().message().find("1 of 3"), std::string::npos) << acked.error().message();
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_EQ(failures[0].index, 1U);
  EXPECT_EQ(failures[0].error.code(), bq::Errc::not_found);
  // The one after the failure was settled too.
  EXPECT_EQ(transport.stats("q").value().reserved, 0);
  EXPECT_TRUE(transport.ack_batch({}));
}

TEST(MemoryTransport, ReleaseGoesToTheTail) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("q", "a"));
  ASSERT_TRUE(transport.publish("q", "b"));
  const bq::Delivery a = receive_one(transport, "q");
  EXPECT_EQ(a.body, "a");
  ASSERT_TRUE(transport.release(a));
  EXPECT_EQ(receive_one(transport, "q").body, "b");
  const bq::Delivery again = receive_one(transport, "q");
  EXPECT_EQ(again.body, "a");
  EXPECT_EQ(again.native_attempts, 1);
}

// Without a visibility timeout a receive moves the headers into the
// delivery; a release puts them back from it. With one they are copied, and
// an expired reservation keeps them.
TEST(MemoryTransport, HeadersComeBackAfterAReleaseAndAnExpiry) {
  bq::PublishOptions with_headers;
  with_headers.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"k", "v"}};
  for (const auto visibility : {0ms, 50ms}) {
    bq::memory::Transport transport(bq::memory::Transport::Options{visibility});
    ASSERT_TRUE(transport.publish("q", "a", with_headers));
    const bq::Delivery first = receive_one(transport, "q");
    EXPECT_EQ(first.headers, with_headers.headers) << visibility.count();
    ASSERT_TRUE(transport.release(first));
    const bq::Delivery second = receive_one(transport, "q");
    EXPECT_EQ(second.headers, with_headers.headers) << visibility.count();
    if (visibility.count() > 0) {
      const bq::Delivery third = receive_one(transport, "q");  // after the reservation expired
      EXPECT_EQ(third.headers, with_headers.headers);
      EXPECT_EQ(third.native_attempts, 2);
      EXPECT_TRUE(transport.ack(third));
    } else {
      EXPECT_TRUE(transport.ack(second));
    }
    EXPECT_EQ(transport.stats("q").value().reserved, 0);
  }
}

TEST(MemoryTransport, DelayedMessagesComeInTheOrderTheyAreDue) {
  bq::memory::Transport transport;
  bq::PublishOptions later;
  later.delay = 300ms;
  bq::PublishOptions sooner;
  sooner.delay = 100ms;
  ASSERT_TRUE(transport.publish("q", "later", later));
  ASSERT_TRUE(transport.publish("q", "sooner", sooner));
  auto stats = transport.stats("q").value();
  EXPECT_EQ(stats.delayed, 2);
  EXPECT_EQ(stats.ready, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(receive_one(transport, "q").body, "sooner");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 90ms);
  EXPECT_EQ(receive_one(transport, "q").body, "later");
}

TEST(MemoryTransport, WithoutAVisibilityTimeoutAReservationIsKept) {
  bq::memory::Transport transport;
  EXPECT_FALSE(transport.capabilities().redelivers_unsettled);
  ASSERT_TRUE(transport.publish("q", "a"));
  const bq::Delivery delivery = receive_one(transport, "q");
  ASSERT_TRUE(transport.extend(delivery, 10ms));  // nothing to extend, but not an error
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(transport.receive("q", 1, 50ms).value().empty());
  EXPECT_EQ(transport.stats("q").value().reserved, 1);
  EXPECT_TRUE(transport.ack(delivery));
}

TEST(MemoryTransport, AReceiverWakesWhenAReservationExpires) {
  bq::memory::Transport transport(bq::memory::Transport::Options{150ms});
  ASSERT_TRUE(transport.publish("q", "a"));
  const bq::Delivery first = receive_one(transport, "q");
  // Already waiting when the reservation expires: it must not sleep through.
  const auto start = std::chrono::steady_clock::now();
  auto again = transport.receive("q", 1, 5s).value();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(again.size(), 1U);
  EXPECT_GE(elapsed, 100ms);
  EXPECT_LE(elapsed, 1s);
  EXPECT_EQ(transport.ack(first).error().code(), bq::Errc::not_found);
  EXPECT_TRUE(transport.ack(again[0]));
}

TEST(MemoryTransport, CloseWakesEveryBlockedReceiverOfThatTransportOnly) {
  auto broker = bq::memory::Transport::shared_broker("close-test-" + bq::uuid_v4());
  bq::memory::Transport closing(broker, {});
  bq::memory::Transport staying(broker, {});
  std::vector<std::thread> receivers;
  std::atomic<int> closed_errors{0};
  for (int i = 0; i < 3; ++i) {
    receivers.emplace_back([&] {
      auto result = closing.receive("q", 1, 10s);
      if (!result && result.error().code() == bq::Errc::closed) ++closed_errors;
    });
  }
  std::optional<bq::Result<std::vector<bq::Delivery>>> other;
  std::thread other_receiver([&] { other.emplace(staying.receive("q", 1, 2s)); });
  std::this_thread::sleep_for(100ms);
  closing.close();
  for (auto& thread : receivers) thread.join();
  EXPECT_EQ(closed_errors.load(), 3);
  ASSERT_TRUE(staying.publish("q", "still works"));
  other_receiver.join();
  ASSERT_TRUE(other.has_value() && *other);
  ASSERT_EQ((*other)->size(), 1U);
  EXPECT_EQ((*other)->front().body, "still works");
}

TEST(MemoryTransport, StatsOfAnUnknownQueueAreZero) {
  bq::memory::Transport transport;
  const bq::QueueStats stats = transport.stats("nothing-here").value();
  EXPECT_EQ(stats.ready, 0);
  EXPECT_EQ(stats.reserved, 0);
  EXPECT_EQ(stats.delayed, 0);
}

TEST(MemoryTransport, RefusesNegativeDurationsAndANullBroker) {
  bq::memory::Transport transport;
  bq::PublishOptions options;
  options.delay = -1ms;
  EXPECT_EQ(transport.publish("q", "a", options).error().code(), bq::Errc::invalid_argument);
  EXPECT_THROW(bq::memory::Transport(nullptr, {}), bq::Error);
  EXPECT_THROW(bq::memory::Transport(bq::memory::Transport::Options{-1ms}), bq::Error);
}

TEST(MemoryTransport, KeepsEmptyAndBinaryBodies) {
  bq::memory::Transport transport;
  const std::string binary("\0\xff\x01 bytes", 9);
  ASSERT_TRUE(transport.publish("q", ""));
  ASSERT_TRUE(transport.publish("q", binary));
  EXPECT_EQ(receive_one(transport, "q").body, "");
  EXPECT_EQ(receive_one(transport, "q").body, binary);
}
