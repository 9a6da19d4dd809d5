// babelqueue::rabbitmq without a broker: the pure parts of the transport
// (delay buckets, ...).
#include "amqp_projection.hpp"
#include "delay_buckets.hpp"

#include <babelqueue/rabbitmq_transport.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;
namespace rd = babelqueue::rabbitmq::detail;
using namespace std::chrono_literals;

namespace {

TEST(RabbitmqDelayBuckets, ADelayIsRoundedUpToTwoSignificantDigits) {
  EXPECT_EQ(rd::bucket_of(1ms), 1ms);
  EXPECT_EQ(rd::bucket_of(99ms), 99ms);
  EXPECT_EQ(rd::bucket_of(100ms), 100ms);
  EXPECT_EQ(rd::bucket_of(101ms), 110ms);
  EXPECT_EQ(rd::bucket_of(1234ms), 1300ms);
  EXPECT_EQ(rd::bucket_of(1300ms), 1300ms);
  EXPECT_EQ(rd::bucket_of(45678ms), 46000ms);
  EXPECT_EQ(rd::bucket_of(99999ms), 100000ms);
}

TEST(RabbitmqDelayBuckets, ABucketIsNeverEarlyAndAtMostTenPercentLate) {
  for (std::int64_t ms = 1; ms < 200000; ms = ms * 3 / 2 + 1) {
    const auto bucket = rd::bucket_of(std::chrono::milliseconds(ms));
    EXPECT_GE(bucket.count(), ms);
    EXPECT_LE(bucket.count(), ms + ms / 10 + 1) << ms;
    EXPECT_EQ(rd::bucket_of(bucket), bucket) << "a bucket is its own bucket";
  }
}

TEST(RabbitmqDelayBuckets, NoDelayBelowOneMillisecondAndNoneAboveTheTtlLimit) {
  EXPECT_EQ(rd::bucket_of(0ms), 1ms);
  EXPECT_EQ(rd::bucket_of(-5ms), 1ms);
  EXPECT_EQ(rd::bucket_of(rd::kMaxDelay), rd::kMaxDelay);
  EXPECT_EQ(rd::bucket_of(rd::kMaxDelay - 1ms), rd::kMaxDelay);
}

TEST(RabbitmqDelayBuckets, ABucketQueueIsNamedAfterItsQueueAndBucket) {
  EXPECT_EQ(rd::bucket_queue_name("orders", 1300ms), "orders.delay.1300");
  EXPECT_EQ(bq::rabbitmq::delay_bucket_queue("orders", 1234ms), "orders.delay.1300");
  EXPECT_EQ(bq::rabbitmq::delay_bucket(1234ms), 1300ms);
  EXPECT_EQ(rd::bucket_target("orders.delay.1300"), "orders");
  EXPECT_EQ(rd::bucket_target("a.delay.b.delay.100"), "a.delay.b") << "the last .delay. ends the queue's name";
  EXPECT_EQ(rd::bucket_target("orders"), "orders");
}

TEST(RabbitmqDelayBuckets, OnlyADelayedMessageGoesThroughABucket) {
  const rd::Route now = rd::route_of("orders", 0ms);
  EXPECT_EQ(now.routing_key, "orders");
  EXPECT_EQ(now.bucket, 0ms);
  const rd::Route later = rd::route_of("orders", 1234ms);
  EXPECT_EQ(later.routing_key, "orders.delay.1300");
  EXPECT_EQ(later.bucket, 1300ms);
}

TEST(RabbitmqDelayBuckets, ABucketQueueDeadLettersToItsQueueAndExpiresWhenUnused) {
  const rd::BucketArguments arguments = rd::bucket_arguments("orders.delay.1300", 1300ms);
  EXPECT_EQ(arguments.message_ttl, 1300);
  EXPECT_EQ(arguments.dead_letter_routing_key, "orders");
  EXPECT_EQ(arguments.expires, 2 * 1300 + 600000);
  std::vector<amqp_table_entry_t> entries;
  const amqp_table_t table = rd::bucket_table(arguments, entries);
  ASSERT_EQ(table.num_entries, 4);
  EXPECT_EQ(rd::view(table.entries[0].key), "x-message-ttl");
  EXPECT_EQ(table.entries[0].value.value.i64, 1300);
  EXPECT_EQ(rd::view(table.entries[1].key), "x-dead-letter-exchange");
  EXPECT_EQ(rd::view(table.entries[1].value.value.bytes), "");
  EXPECT_EQ(rd::view(table.entries[2].key), "x-dead-letter-routing-key");
  EXPECT_EQ(rd::view(table.entries[2].value.value.bytes), "orders");
  EXPECT_EQ(rd::view(table.entries[3].key), "x-expires");
  EXPECT_EQ(table.entries[3].value.value.i64, arguments.expires);
}

TEST(RabbitmqDelayBuckets, ABucketQueueIsRedeclaredEveryMinuteWhileUsed) {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_FALSE(rd::redeclare_due(t0, t0));
  EXPECT_FALSE(rd::redeclare_due(t0, t0 + 59999ms));
  EXPECT_TRUE(rd::redeclare_due(t0, t0 + 60000ms));
  EXPECT_TRUE(rd::redeclare_due(t0, t0 + 10min));
}

TEST(RabbitmqDelayBuckets, KnownBucketsListAQueuesBucketsOnceShortestFirst) {
  rd::KnownBuckets known;
  EXPECT_TRUE(known.of("orders").empty());
  known.add("orders", 4600ms);
  known.add("orders", 1300ms);
  known.add("orders", 4600ms);
  known.add("invoices", 100ms);
  const auto buckets = known.of("orders");
  ASSERT_EQ(buckets.size(), 2U);
  EXPECT_EQ(buckets[0].first, "orders.delay.1300");
  EXPECT_EQ(buckets[0].second, 1300ms);
  EXPECT_EQ(buckets[1].first, "orders.delay.4600");
  EXPECT_EQ(known.of("invoices").size(), 1U);
}

}  // namespace
