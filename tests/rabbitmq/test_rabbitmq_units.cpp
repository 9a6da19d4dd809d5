// babelqueue::rabbitmq without a broker: the pure parts of the transport
// (delay buckets, reply mapping and backoff, ...).
#include "amqp_projection.hpp"
#include "connection.hpp"
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

amqp_rpc_reply_t server_close(amqp_method_number_t id, void* decoded) {
  amqp_rpc_reply_t reply{};
  reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
  reply.reply.id = id;
  reply.reply.decoded = decoded;
  return reply;
}

TEST(RabbitmqConnection, AChannelCloseFailsOnlyThatChannel) {
  amqp_channel_close_t close{};
  close.reply_code = 404;
  close.reply_text = rd::bytes_of("NOT_FOUND - no queue 'x'");
  const rd::AmqpFailure missing = rd::failure_of(server_close(AMQP_CHANNEL_CLOSE_METHOD, &close), "declare queue x");
  EXPECT_NE(missing.channel, 0);
  EXPECT_EQ(missing.info.code(), bq::Errc::not_found);
  EXPECT_EQ(missing.info.message(), "declare queue x: broker closed the channel: 404 NOT_FOUND - no queue 'x'");
  close.reply_code = 406;
  const rd::AmqpFailure mismatch = rd::failure_of(server_close(AMQP_CHANNEL_CLOSE_METHOD, &close), "declare");
  EXPECT_NE(mismatch.channel, 0);
  EXPECT_EQ(mismatch.info.code(), bq::Errc::broker);
}

TEST(RabbitmqConnection, AConnectionCloseLosesTheConnectionAndRefusedAccessIsAnAuthError) {
  amqp_connection_close_t close{};
  close.reply_code = 530;
  close.reply_text = rd::bytes_of("NOT_ALLOWED - vhost");
  const rd::AmqpFailure refused = rd::failure_of(server_close(AMQP_CONNECTION_CLOSE_METHOD, &close), "login");
  EXPECT_EQ(refused.channel, 0);
  EXPECT_EQ(refused.info.code(), bq::Errc::auth);
  EXPECT_EQ(refused.info.message(), "login: broker closed the connection: 530 NOT_ALLOWED - vhost");
  close.reply_code = 403;
  EXPECT_EQ(rd::failure_of(server_close(AMQP_CONNECTION_CLOSE_METHOD, &close), "login").info.code(), bq::Errc::auth);
  close.reply_code = 320;
  const rd::AmqpFailure forced = rd::failure_of(server_close(AMQP_CONNECTION_CLOSE_METHOD, &close), "read");
  EXPECT_EQ(forced.channel, 0);
  EXPECT_EQ(forced.info.code(), bq::Errc::connection);
}

TEST(RabbitmqConnection, LibraryErrorsLoseTheConnectionAndATimeoutSaysSo) {
  amqp_rpc_reply_t reply{};
  reply.reply_type = AMQP_RESPONSE_LIBRARY_EXCEPTION;
  reply.library_error = AMQP_STATUS_TIMEOUT;
  EXPECT_EQ(rd::failure_of(reply, "basic.qos").info.code(), bq::Errc::timeout);
  EXPECT_EQ(rd::failure_of(reply, "basic.qos").channel, 0);
  reply.library_error = AMQP_STATUS_SOCKET_ERROR;
  EXPECT_EQ(rd::failure_of(reply, "basic.qos").info.code(), bq::Errc::connection);
  EXPECT_EQ(rd::failure_of(reply, "basic.qos").info.message(),
            "basic.qos: " + rd::status_text(AMQP_STATUS_SOCKET_ERROR));
  amqp_rpc_reply_t none{};
  none.reply_type = AMQP_RESPONSE_NONE;
  EXPECT_EQ(rd::failure_of(none, "x").info.code(), bq::Errc::connection);
  amqp_basic_ack_t ack{};
  EXPECT_EQ(rd::failure_of(server_close(AMQP_BASIC_ACK_METHOD, &ack), "x").info.code(), bq::Errc::broker);
}

TEST(RabbitmqConnection, ReconnectPausesDoubleWithJitterUpToTheMaximum) {
  rd::ReconnectBackoff backoff(100ms, 1000ms);
  std::mt19937_64 random(42);
  for (const auto bound : {100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms}) {
    for (int i = 0; i < 50; ++i) {
      const auto pause = backoff.pause(random);
      EXPECT_GE(pause, bound / 2);
      EXPECT_LE(pause, bound);
    }
    backoff.failed();
  }
  rd::ReconnectBackoff tiny(1ms, 1ms);
  EXPECT_LE(tiny.pause(random), 1ms);
}

TEST(RabbitmqConnection, TheEndpointNamesSchemeHostAndPortButNoCredentials) {
  bq::RabbitmqTransport::Options options;
  options.host = "broker";
  options.port = 5671;
  options.tls = true;
  options.password = "secret";
  EXPECT_EQ(rd::endpoint_of(options), "amqps://broker:5671");
  options.tls = false;
  EXPECT_EQ(rd::endpoint_of(options), "amqp://broker:5671");
}

}  // namespace
