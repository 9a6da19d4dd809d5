// SPDX-License-Identifier: Apache-2.0
// Without a broker: the receive buffer's ring and the reader's reuse of
// what it read before (ADR 0056).
#include "../../src/amqp10/c_message.hpp"
#include "../../src/amqp10/ring.hpp"
#include "../../src/artemis/artemis_projection.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <proton/message.hpp>
#include <string>

namespace bq = babelqueue;
using bq::amqp10::Ring;

TEST(Ring, KeepsTheOrderAcrossTheWrapAndWhileGrowing) {
  Ring<int> ring;
  int next_in = 0;
  int next_out = 0;
  // Pushes and pops of changing sizes wrap the head around the array many
  // times and grow it while wrapped (16, 32, 64 slots).
  for (int round = 1; round <= 40; ++round) {
    for (int i = 0; i < round + 3; ++i) ring.push_back(int{next_in++});
    for (int i = 0; i < round && !ring.empty(); ++i) {
      ASSERT_EQ(ring.front(), next_out++);
      ring.pop_front();
    }
    ASSERT_EQ(ring.size(), static_cast<std::size_t>(next_in - next_out));
    for (std::size_t i = 0; i < ring.size(); ++i) ASSERT_EQ(ring[i], next_out + static_cast<int>(i));
  }
  while (!ring.empty()) {
    ASSERT_EQ(ring.front(), next_out++);
    ring.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
}

TEST(Ring, ClearReleasesWhatTheSlotsHold) {
  Ring<std::shared_ptr<int>> ring;
  auto held = std::make_shared<int>(7);
  ring.push_back(std::shared_ptr<int>(held));
  ring.push_back(std::shared_ptr<int>(held));
  std::shared_ptr<int> taken = std::move(ring.front());
  ring.pop_front();  // its slot keeps the moved-from (empty) pointer
  taken.reset();
  EXPECT_EQ(held.use_count(), 2);
  ring.pop_front();  // nothing moved out: its slot keeps the pointer until cleared or reused
  EXPECT_EQ(held.use_count(), 2);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(held.use_count(), 1);
  ring.push_back(std::make_shared<int>(8));
  EXPECT_EQ(*ring.front(), 8);
}

TEST(ArtemisReader, AReusedReadIsFilledAnewWithNothingLeftOfTheLastMessage) {
  bq::PublishOptions first_options;
  first_options.headers = {{"tenant", "acme"}, {"region", "eu"}};
  first_options.ordering_key = "customer-42";
  const std::string first_body(600, 'a');
  const proton::message first = bq::artemis::make_message(first_body, first_options, 3);
  auto read = bq::artemis::read_delivery("orders", bq::amqp10::c_message_of(first).get(), nullptr);
  ASSERT_NE(read, nullptr);
  const bq::Delivery first_delivery = static_cast<const bq::artemis::DeliveryRead&>(*read).delivery;
  EXPECT_EQ(first_delivery.body, first_body);
  EXPECT_EQ(first_delivery.headers.size(), 2U);
  EXPECT_EQ(first_delivery.ordering_key, "customer-42");
  EXPECT_EQ(first_delivery.native_attempts, 3);

  const bq::amqp10::Read* const object = read.get();
  const proton::message second = bq::artemis::make_message("{}", bq::PublishOptions{}, std::nullopt);
  auto again = bq::artemis::read_delivery("invoices.long-queue-name-past-the-inline-string",
                                          bq::amqp10::c_message_of(second).get(), std::move(read));
  ASSERT_EQ(again.get(), object);  // the same object, filled again
  const bq::Delivery& d = static_cast<const bq::artemis::DeliveryRead&>(*again).delivery;
  EXPECT_EQ(d.queue, "invoices.long-queue-name-past-the-inline-string");
  EXPECT_EQ(d.body, "{}");
  EXPECT_TRUE(d.headers.empty());
  EXPECT_TRUE(d.ordering_key.empty());
  EXPECT_EQ(d.native_attempts, 0);
  EXPECT_FALSE(d.gate_rejection.has_value());
  EXPECT_EQ(d.token.id, 0U);
  EXPECT_TRUE(d.token.text.empty());
}

TEST(ArtemisReader, AReusedReadGivesUpWhatALargeMessageGrewItsBodyTo) {
  const proton::message large =
      bq::artemis::make_message(std::string(1 << 20, 'x'), bq::PublishOptions{}, std::nullopt);
  auto read = bq::artemis::read_delivery("orders", bq::amqp10::c_message_of(large).get(), nullptr);
  ASSERT_GE(static_cast<const bq::artemis::DeliveryRead&>(*read).delivery.body.capacity(), std::size_t{1} << 20);
  const proton::message small = bq::artemis::make_message(std::string(600, 'y'), bq::PublishOptions{}, std::nullopt);
  read = bq::artemis::read_delivery("orders", bq::amqp10::c_message_of(small).get(), std::move(read));
  const std::string& body = static_cast<const bq::artemis::DeliveryRead&>(*read).delivery.body;
  EXPECT_EQ(body, std::string(600, 'y'));
  EXPECT_LT(body.capacity(), std::size_t{64} * 1024);
  // A small body's storage is kept for the next one.
  const char* const storage = body.data();
  read = bq::artemis::read_delivery("orders", bq::amqp10::c_message_of(small).get(), std::move(read));
  EXPECT_EQ(static_cast<const bq::artemis::DeliveryRead&>(*read).delivery.body.data(), storage);
}
