// SPDX-License-Identifier: Apache-2.0
#include "fault_injecting_transport.hpp"

#include <babelqueue/memory/transport.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

TEST(FaultInjectingTransport, FailsTheNextPublishesThenForwards) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>());
  faulty.fail_next_publishes(2, bq::Errc::timeout);
  auto first = faulty.publish("q", "1");
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code(), bq::Errc::timeout);
  EXPECT_TRUE(first.error().retriable());
  EXPECT_FALSE(faulty.publish("q", "2"));
  ASSERT_TRUE(faulty.publish("q", "3"));
  EXPECT_EQ(faulty.injected_failures(), 2U);
  // Nothing of the failed publishes reached the broker.
  auto received = faulty.receive("q", 10, 100ms).value();
  ASSERT_EQ(received.size(), 1U);
  EXPECT_EQ(received[0].body, "3");
}

TEST(FaultInjectingTransport, APublishFaultCanTargetOneQueue) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>());
  faulty.fail_next_publishes(1, bq::Errc::connection, "orders.dlq");
  ASSERT_TRUE(faulty.publish("orders", "retry"));
  auto dead_letter = faulty.publish("orders.dlq", "dead");
  ASSERT_FALSE(dead_letter);
  EXPECT_EQ(dead_letter.error().code(), bq::Errc::connection);
  EXPECT_TRUE(faulty.publish("orders.dlq", "dead"));
  EXPECT_EQ(faulty.failed_publish_queues(), std::vector<std::string>{"orders.dlq"});
}

TEST(FaultInjectingTransport, AFailedAckOrReleaseLeavesTheMessageReserved) {
  bq::memory::Transport inner;
  FaultInjectingTransport faulty(inner);  // borrowed
  ASSERT_TRUE(faulty.publish("q", "m"));
  const bq::Delivery delivery = faulty.receive("q", 1, 100ms).value().at(0);
  faulty.fail_next_acks(1, bq::Errc::broker);
  faulty.fail_next_releases(1, bq::Errc::closed);
  EXPECT_EQ(faulty.ack(delivery).error().code(), bq::Errc::broker);
  EXPECT_EQ(faulty.release(delivery).error().code(), bq::Errc::closed);
  EXPECT_EQ(inner.stats("q").value().reserved, 1);
  ASSERT_TRUE(faulty.release(delivery));
  const bq::Delivery again = faulty.receive("q", 1, 100ms).value().at(0);
  EXPECT_TRUE(faulty.ack(again));
}

TEST(FaultInjectingTransport, ABatchStopsAtTheFaultedMessage) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>());
  faulty.fail_next_publishes(1, bq::Errc::connection, "b");
  std::vector<bq::OutgoingMessage> batch{{"a", "1", {}}, {"a", "2", {}}, {"b", "3", {}}, {"a", "4", {}}};
  auto published = faulty.publish_batch(batch);
  ASSERT_FALSE(published);
  EXPECT_NE(published.error().message().find("2 of 4"), std::string::npos) << published.error().message();
  auto received = faulty.receive("a", 10, 100ms).value();
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[0].body, "1");
  EXPECT_EQ(received[1].body, "2");
}

TEST(FaultInjectingTransport, ReceiveFaultsAndHealing) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>());
  faulty.fail_next_receives(5);
  EXPECT_EQ(faulty.receive("q", 1, 0ms).error().code(), bq::Errc::connection);
  faulty.heal();
  EXPECT_TRUE(faulty.receive("q", 1, 0ms));
  EXPECT_EQ(faulty.injected_failures(), 1U);
}

TEST(FaultInjectingTransport, ForwardsEverythingElse) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>(bq::memory::Transport::Options{1s}));
  EXPECT_TRUE(faulty.capabilities().redelivers_unsettled);
  EXPECT_EQ(faulty.dead_letter_queue("orders"), "orders.dlq");
  ASSERT_TRUE(faulty.publish("q", "m"));
  EXPECT_EQ(faulty.stats("q").value().ready, 1);
  const bq::Delivery delivery = faulty.receive("q", 1, 100ms).value().at(0);
  EXPECT_TRUE(faulty.extend(delivery, 5s));
  faulty.close();
  EXPECT_EQ(faulty.publish("q", "m").error().code(), bq::Errc::closed);
}
