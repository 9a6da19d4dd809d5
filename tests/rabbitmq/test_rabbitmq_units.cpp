// SPDX-License-Identifier: Apache-2.0
// babelqueue::rabbitmq without a broker: the parts of the transport that do
// no I/O (URL options, delay buckets, reply mapping, publish jobs and their
// confirms, the consumer table, ack coalescing, deliveries, the wake-up).
#include "amqp_projection.hpp"
#include "connection.hpp"
#include "consumer_table.hpp"
#include "consumers.hpp"
#include "delay_buckets.hpp"
#include "publish_jobs.hpp"
#include "publisher.hpp"
#include "shared_state.hpp"

#include <babelqueue/rabbitmq/transport.hpp>

#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

namespace bq = babelqueue;
namespace rd = babelqueue::rabbitmq::detail;
using namespace std::chrono_literals;

namespace {

// ---- URL options -----------------------------------------------------------

bq::Url url_of(const std::string& text) {
  auto url = bq::Url::parse(text);
  if (!url) throw bq::Error(url.error());
  return *url;
}

bq::Result<bq::rabbitmq::Options> options_of(const std::string& text) {
  return bq::rabbitmq::Transport::options_from_url(url_of(text));
}

std::string error_of(const std::string& text) {
  auto options = options_of(text);
  if (options) return "(accepted)";
  EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << text;
  return options.error().message();
}

// Every field that decides the connection, in one line, so a difference
// shows in the failure message.
std::string describe(const bq::rabbitmq::Options& o) {
  const auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; };
  return "host=" + o.host + " port=" + std::to_string(o.port) + " user=" + o.user + " password=" + o.password +
         " vhost=" + o.vhost + " tls=" + std::to_string(o.tls.enabled) + " ca=" + o.tls.ca_file +
         " cert=" + o.tls.cert_file + " key=" + o.tls.key_file + " server_name=" + o.tls.server_name +
         " verify=" + std::to_string(o.tls.verify) + " heartbeat=" + std::to_string(o.heartbeat.count()) +
         "s name=" + o.connection_name + " connect_timeout=" + ms(o.connect_timeout) +
         " publish_timeout=" + ms(o.publish_timeout) + " confirm=" + std::to_string(o.confirm) +
         " max_in_flight=" + std::to_string(o.max_in_flight) + " prefetch=" + std::to_string(o.prefetch) +
         " queue_type=" + (o.queue_type == bq::rabbitmq::Transport::QueueType::quorum ? "quorum" : "classic") +
         " reconnect=" + ms(o.reconnect_backoff.initial) + ".." + ms(o.reconnect_backoff.max);
}

TEST(RabbitmqUrlOptions, EveryUrlOfTheTestsScriptsAndDocsReadsAsBefore) {
  // The URLs of tests/rabbitmq, scripts/broker, the benchmark and
  // docs/transports/rabbitmq.md, with the Options the reader before the
  // shared kit made of them (recorded from it).
  const std::pair<std::string, std::string> pinned[] = {
      {"amqp://guest:guest@127.0.0.1:5682/%2F",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/%2F?max_in_flight=64",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=64 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/%2F?prefetch=7",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=7 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/%2F?heartbeat=1",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=1s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/%2F?queue_type=quorum",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=quorum reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/"
       "%2F?reconnect_min=0.05&reconnect_max=0.5&connection_name=bq-test-reconnect-1a2b3c4d",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=bq-test-reconnect-1a2b3c4d connect_timeout=10000ms publish_timeout=30000ms confirm=1 "
       "max_in_flight=1024 prefetch=0 queue_type=classic reconnect=50ms..500ms"},
      {"amqp://guest:guest@127.0.0.1:1/%2F?connect_timeout=2",
       "host=127.0.0.1 port=1 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=2000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqps://guest:guest@localhost:5681/%2F?cacert=/state/rabbitmq/tls/ca.crt",
       "host=localhost port=5681 user=guest password=guest vhost=/ tls=1 ca=/state/rabbitmq/tls/ca.crt cert= key= "
       "server_name= verify=1 heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms "
       "confirm=1 max_in_flight=1024 prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqps://guest:guest@127.0.0.1:5681/%2F?cacert=/state/rabbitmq/tls/ca.crt",
       "host=127.0.0.1 port=5681 user=guest password=guest vhost=/ tls=1 ca=/state/rabbitmq/tls/ca.crt cert= key= "
       "server_name= verify=1 heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms "
       "confirm=1 max_in_flight=1024 prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqps://guest:guest@localhost:40123/%2F?connect_timeout=3&cacert=/tmp/bq-no-ip-1a2b3c4d/ca.crt",
       "host=localhost port=40123 user=guest password=guest vhost=/ tls=1 ca=/tmp/bq-no-ip-1a2b3c4d/ca.crt cert= key= "
       "server_name= verify=1 heartbeat=30s name=babelqueue-cpp connect_timeout=3000ms publish_timeout=30000ms "
       "confirm=1 max_in_flight=1024 prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqps://guest:guest@localhost:5681/%2F?cacert=/tls/ca.crt&cert=/tls/client.crt&key=/tls/"
       "client.key&verify=false",
       "host=localhost port=5681 user=guest password=guest vhost=/ tls=1 ca=/tls/ca.crt cert=/tls/client.crt "
       "key=/tls/client.key server_name= verify=0 heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms "
       "publish_timeout=30000ms confirm=1 max_in_flight=1024 prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5682/%2F?verify=false",
       "host=127.0.0.1 port=5682 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=0 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://app:secret@rabbit:5672/%2F",
       "host=rabbit port=5672 user=app password=secret vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@127.0.0.1:5672/%2F",
       "host=127.0.0.1 port=5672 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://guest:guest@localhost:5672/",
       "host=localhost port=5672 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqp://rabbit",
       "host=rabbit port=5672 user=guest password=guest vhost=/ tls=0 ca= cert= key= server_name= verify=1 "
       "heartbeat=30s name=babelqueue-cpp connect_timeout=10000ms publish_timeout=30000ms confirm=1 max_in_flight=1024 "
       "prefetch=0 queue_type=classic reconnect=100ms..10000ms"},
      {"amqps://rabbit/"
       "prod?heartbeat=0&confirm=false&publish_timeout=2.5&connect_timeout=0.25&max_in_flight=1000000&prefetch=65535",
       "host=rabbit port=5671 user=guest password=guest vhost=prod tls=1 ca= cert= key= server_name= verify=1 "
       "heartbeat=0s name=babelqueue-cpp connect_timeout=250ms publish_timeout=2500ms confirm=0 max_in_flight=1000000 "
       "prefetch=65535 queue_type=classic reconnect=100ms..10000ms"},
  };
  for (const auto& [text, want] : pinned) {
    auto options = options_of(text);
    ASSERT_TRUE(options) << text << ": " << options.error().message();
    EXPECT_EQ(describe(*options), want) << text;
    EXPECT_EQ(options->reconnect_backoff.multiplier, 2.0) << text;
    EXPECT_EQ(options->reconnect_backoff.jitter, 0.25) << text;
  }
  EXPECT_NE(error_of("amqp://guest:guest@127.0.0.1/%2F?prefech=4").find("'prefech'"), std::string::npos);
}

TEST(RabbitmqUrlOptions, DurationsTakeTheSharedSyntax) {
  const std::string base = "amqp://h/%2F?";
  EXPECT_EQ(options_of(base + "heartbeat=30").value().heartbeat, 30s);
  EXPECT_EQ(options_of(base + "heartbeat=30s").value().heartbeat, 30s);
  EXPECT_EQ(options_of(base + "heartbeat=1m").value().heartbeat, 60s);
  EXPECT_EQ(options_of(base + "heartbeat=2000ms").value().heartbeat, 2s);
  EXPECT_EQ(options_of(base + "heartbeat=0").value().heartbeat, 0s) << "0 turns heartbeats off";
  EXPECT_EQ(options_of(base + "heartbeat=65535").value().heartbeat, 65535s);
  for (const char* refused : {"1.5", "500ms", "65536", "-1", "abc"}) {
    const std::string error = error_of(base + "heartbeat=" + refused);
    EXPECT_EQ(error.rfind("amqp:// URL: parameter 'heartbeat' is '" + std::string(refused) +
                              "', expected a duration in whole seconds",
                          0),
              0U)
        << error;
  }
  const bq::rabbitmq::Options timeouts =
      options_of(base + "connect_timeout=500ms&publish_timeout=2m&reconnect_min=0.25&reconnect_max=1m").value();
  EXPECT_EQ(timeouts.connect_timeout, 500ms);
  EXPECT_EQ(timeouts.publish_timeout, 2min);
  EXPECT_EQ(timeouts.reconnect_backoff.initial, 250ms);
  EXPECT_EQ(timeouts.reconnect_backoff.max, 1min);
  EXPECT_EQ(options_of(base + "publish_timeout=24h").value().publish_timeout, 24h);
  EXPECT_EQ(options_of(base + "connect_timeout=1h").value().connect_timeout, 1h);
  for (const char* refused : {"connect_timeout=0", "connect_timeout=2h", "publish_timeout=0", "publish_timeout=25h",
                              "reconnect_min=0", "reconnect_max=61m", "connect_timeout=5sec"}) {
    EXPECT_NE(error_of(base + refused).find("expected a duration"), std::string::npos) << refused;
  }
}

TEST(RabbitmqUrlOptions, TheReconnectPolicyComesFromTheUrl) {
  const bq::BackoffPolicy defaults = options_of("amqp://h").value().reconnect_backoff;
  EXPECT_EQ(defaults.initial, 100ms);
  EXPECT_EQ(defaults.max, 10s);
  const bq::BackoffPolicy policy = options_of("amqp://h?reconnect_min=50ms&reconnect_max=2s").value().reconnect_backoff;
  EXPECT_EQ(policy.initial, 50ms);
  EXPECT_EQ(policy.max, 2s);
  EXPECT_EQ(policy.multiplier, 2.0);
  EXPECT_EQ(policy.jitter, 0.25);
  // The transport's pauses are this policy's: doubling from 50 ms up to 2 s,
  // each varied by at most a quarter.
  EXPECT_EQ(policy.nominal_delay(1), 50ms);
  EXPECT_EQ(policy.nominal_delay(2), 100ms);
  EXPECT_EQ(policy.nominal_delay(7), 2s);
  for (int i = 0; i < 100; ++i) {
    const auto first = policy.delay_for(1);
    EXPECT_GE(first, 37ms);
    EXPECT_LE(first, 63ms);
    EXPECT_LE(policy.delay_for(1000), 2500ms);
  }
}

TEST(RabbitmqUrlOptions, CountsAndChoicesAreReadExactly) {
  const std::string base = "amqp://h?";
  EXPECT_EQ(options_of(base + "max_in_flight=1").value().max_in_flight, 1U);
  EXPECT_EQ(options_of(base + "prefetch=0").value().prefetch, 0);
  EXPECT_FALSE(options_of(base + "confirm=no").value().confirm);
  EXPECT_TRUE(options_of(base + "confirm=on").value().confirm);
  EXPECT_EQ(error_of(base + "max_in_flight=2.0"),
            "amqp:// URL: parameter 'max_in_flight' is '2.0', expected a whole number from 1 to 1000000");
  EXPECT_EQ(error_of(base + "max_in_flight=0"),
            "amqp:// URL: parameter 'max_in_flight' is '0', expected a whole number from 1 to 1000000");
  EXPECT_EQ(error_of(base + "prefetch=65536"),
            "amqp:// URL: parameter 'prefetch' is '65536', expected a whole number from 0 to 65535");
  EXPECT_EQ(error_of(base + "queue_type=stream"),
            "amqp:// URL: parameter 'queue_type' is 'stream', expected one of classic, quorum");
  EXPECT_EQ(error_of(base + "confirm=maybe"),
            "amqp:// URL: parameter 'confirm' is 'maybe', expected true or false (also yes/no, on/off, 1/0)");
  // An empty value keeps the default, as Python's parse_qs reads it.
  EXPECT_EQ(describe(options_of(base + "heartbeat=&connection_name=&max_in_flight=&prefetch=&queue_type=").value()),
            describe(options_of("amqp://h").value()));
}

TEST(RabbitmqUrlOptions, TlsTakesTheSharedNamesAndTheOlderSpellings) {
  const bq::TlsOptions tls =
      options_of("amqps://h?tls_ca=/ca.pem&tls_cert=/c.pem&tls_key=/k.pem&tls_server_name=broker&tls_verify=false")
          .value()
          .tls;
  EXPECT_TRUE(tls.enabled);
  EXPECT_EQ(tls.ca_file, "/ca.pem");
  EXPECT_EQ(tls.cert_file, "/c.pem");
  EXPECT_EQ(tls.key_file, "/k.pem");
  EXPECT_EQ(tls.server_name, "broker");
  EXPECT_FALSE(tls.verify);
  const bq::TlsOptions older = options_of("amqps://h?cacert=/ca.pem&cert=/c.pem&key=/k.pem&verify=0").value().tls;
  EXPECT_EQ(older.ca_file, "/ca.pem");
  EXPECT_EQ(older.cert_file, "/c.pem");
  EXPECT_EQ(older.key_file, "/k.pem");
  EXPECT_FALSE(older.verify);
  EXPECT_EQ(error_of("amqps://h?cacert=/a&tls_ca=/b"),
            "amqps:// URL: parameters 'tls_ca' and 'cacert' are one option; give one of them");
  // Files and names without TLS would suggest a secured connection.
  EXPECT_EQ(error_of("amqp://h?cacert=/ca.pem"), "amqp:// URL: parameter 'cacert' needs TLS (amqps://)");
  EXPECT_EQ(error_of("amqp://h?key=/k.pem"), "amqp:// URL: parameter 'key' needs TLS (amqps://)");
  EXPECT_EQ(error_of("amqp://h?tls_server_name=broker"),
            "amqp:// URL: parameter 'tls_server_name' needs TLS (amqps://)");
  EXPECT_FALSE(options_of("amqp://h?verify=false").value().tls.verify) << "accepted, as before";
  EXPECT_FALSE(options_of("amqp://h?tls_verify=false").value().tls.enabled);
}

TEST(RabbitmqUrlOptions, ErrorsNeverShowThePassword) {
  const std::string unknown = error_of("amqp://guest:SECRET@127.0.0.1/%2F?bogus=1");
  EXPECT_EQ(unknown.rfind("amqp:// URL: unknown parameter 'bogus' (known: heartbeat, connection_name, ", 0), 0U)
      << unknown;
  EXPECT_EQ(unknown.find("SECRET"), std::string::npos) << unknown;
  const std::string malformed = error_of("amqps://guest:SECRET@127.0.0.1/%2F?heartbeat=SECRET");
  EXPECT_EQ(malformed.find("guest:SECRET"), std::string::npos) << malformed;
  const std::string scheme =
      bq::rabbitmq::Transport::options_from_url(url_of("redis://guest:SECRET@h/0")).error().message();
  EXPECT_EQ(scheme.find("SECRET"), std::string::npos) << scheme;
}

TEST(RabbitmqUrlOptions, OpenRefusesOptionsThatCannotWork) {
  bq::rabbitmq::Options half;
  half.tls.enabled = true;
  half.tls.cert_file = "/c.pem";
  auto refused = bq::rabbitmq::Transport::open(half);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_EQ(refused.error().message(), "tls_cert and tls_key go together: give both or neither");
  bq::rabbitmq::Options backwards;
  backwards.reconnect_backoff.initial = 5s;
  backwards.reconnect_backoff.max = 1s;
  refused = bq::rabbitmq::Transport::open(backwards);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
}

// ---- Delay buckets -----------------------------------------------------------

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
  EXPECT_EQ(bq::rabbitmq::detail::delay_bucket_queue("orders", 1234ms), "orders.delay.1300");
  EXPECT_EQ(bq::rabbitmq::detail::bucket_of(1234ms), 1300ms);
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

TEST(RabbitmqConnection, TheEndpointNamesSchemeHostAndPortButNoCredentials) {
  bq::rabbitmq::Transport::Options options;
  options.host = "broker";
  options.port = 5671;
  options.tls.enabled = true;
  options.password = "secret";
  EXPECT_EQ(rd::endpoint_of(options), "amqps://broker:5671");
  options.tls.enabled = false;
  EXPECT_EQ(rd::endpoint_of(options), "amqp://broker:5671");
}

// ---- Publish jobs and confirms -------------------------------------------

bq::OutgoingMessage message(std::string queue, std::string body, std::chrono::milliseconds delay = {}) {
  bq::OutgoingMessage out;
  out.queue = std::move(queue);
  out.body = std::move(body);
  out.options.delay = delay;
  return out;
}

std::shared_ptr<rd::PublishJob> job_of(std::vector<bq::OutgoingMessage> messages,
                                       rd::Clock::time_point deadline = rd::Clock::now() + 1h) {
  auto items = rd::publish_items(messages);
  EXPECT_TRUE(items) << items.error().message();
  return std::make_shared<rd::PublishJob>(std::move(*items), deadline);
}

TEST(RabbitmqPublishJobs, MessagesAreCheckedAndRoutedBeforeAnythingIsQueued) {
  std::vector<bq::OutgoingMessage> messages = {message("orders", "{}"), message("orders", "{}", 1234ms)};
  auto items = rd::publish_items(messages);
  ASSERT_TRUE(items) << items.error().message();
  ASSERT_EQ(items->size(), 2U);
  EXPECT_EQ((*items)[0].routing_key, "orders");
  EXPECT_EQ((*items)[0].bucket, 0ms);
  EXPECT_EQ((*items)[1].queue, "orders");
  EXPECT_EQ((*items)[1].routing_key, "orders.delay.1300");
  EXPECT_EQ((*items)[1].bucket, 1300ms);
  EXPECT_EQ((*items)[1].body, "{}");
}

TEST(RabbitmqPublishJobs, ABadMessageFailsTheWholeCall) {
  const std::vector<std::pair<bq::OutgoingMessage, std::string>> bad = {
      {message("", "{}"), "publish: empty queue name"},
      {message(std::string(256, 'q'), "{}"), "publish: queue name longer than 255 bytes"},
      {message("orders", "{}", -1ms), "publish to orders: delay out of range"},
      {message("orders", "{}", rd::kMaxDelay + 1ms), "publish to orders: delay out of range"},
  };
  for (const auto& [one, text] : bad) {
    std::vector<bq::OutgoingMessage> messages = {message("fine", "{}"), one};
    auto items = rd::publish_items(messages);
    ASSERT_FALSE(items) << text;
    EXPECT_EQ(items.error().code(), bq::Errc::invalid_argument);
    EXPECT_EQ(items.error().message(), text);
  }
  EXPECT_TRUE(rd::publish_items({}).value().empty());
}

TEST(RabbitmqPublishJobs, ABatchErrorNamesTheMessageAndWhatWasConfirmed) {
  rd::PublishProgress progress;
  progress.confirmed = 3;
  progress.fail(4, bq::ErrorInfo(bq::Errc::broker, "refused"));
  EXPECT_TRUE(progress.done);
  progress.fail(5, bq::ErrorInfo(bq::Errc::timeout, "later"));
  EXPECT_EQ(progress.failed_index, 4U) << "the first failure stays";
  EXPECT_EQ(rd::publish_error(progress, 1).message(), "refused");
  const bq::ErrorInfo batch = rd::publish_error(progress, 10);
  EXPECT_EQ(batch.code(), bq::Errc::broker);
  EXPECT_EQ(batch.message(), "publish_batch: message 4 of 10 failed (3 confirmed): refused");
  rd::PublishProgress timed_out;  // publish() gave up waiting: no index, the first unconfirmed one
  timed_out.confirmed = 2;
  timed_out.error = bq::ErrorInfo(bq::Errc::timeout, "no confirm");
  EXPECT_EQ(rd::publish_error(timed_out, 5).message(),
            "publish_batch: message 2 of 5 failed (2 confirmed): no confirm");
}

TEST(RabbitmqPublishJobs, TheQueueHandsOutMessagesInOrderAndSkipsFinishedJobs) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  rd::PublishQueue& queue = locked->publishes;
  auto finished = job_of({message("a", "1")});
  finished->progress(locked).fail(0, bq::ErrorInfo(bq::Errc::broker, "x"));
  auto batch = job_of({message("b", "1"), message("b", "2")});
  queue.push_back(finished);
  queue.push_back(batch);
  auto first = queue.next(locked);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->job, batch);
  EXPECT_EQ(first->index, 0U);
  auto second = queue.next(locked);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->index, 1U);
  EXPECT_FALSE(queue.next(locked)) << "everything of the batch is on the wire";
  EXPECT_TRUE(queue.empty());
  batch->progress(locked).to_send.push_front(1);  // lost with the connection
  queue.push_front_once(batch);
  queue.push_front_once(batch);
  EXPECT_EQ(queue.next(locked)->index, 1U);
  EXPECT_FALSE(queue.next(locked)) << "queued once";
}

TEST(RabbitmqPublishJobs, AJobPastItsDeadlineFailsWithTheLastConnectionError) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  const auto now = rd::Clock::now();
  auto late = job_of({message("a", "1")}, now - 1ms);
  auto early = job_of({message("b", "1")}, now + 1h);
  locked->publishes.push_back(late);
  locked->publishes.push_back(early);
  locked->last_error = "connection refused";
  EXPECT_TRUE(locked->publishes.expire(locked, now, "amqp://h:1", 30000ms));
  const rd::PublishProgress& progress = late->progress(locked);
  ASSERT_TRUE(progress.done && progress.error);
  EXPECT_EQ(progress.error->code(), bq::Errc::timeout);
  EXPECT_EQ(progress.error->message(),
            "publish: not confirmed by amqp://h:1 within 30000 ms (last error: connection refused; the message may or "
            "may not have been published)");
  EXPECT_FALSE(early->progress(locked).done);
  EXPECT_FALSE(locked->publishes.expire(locked, now, "amqp://h:1", 30000ms));
  EXPECT_EQ(locked->publishes.next(locked)->job, early) << "the expired job left the queue";
  locked->publishes.push_back(early);
  locked->publishes.fail_all(locked, bq::ErrorInfo(bq::Errc::closed, "closed"));
  EXPECT_TRUE(early->progress(locked).done);
  EXPECT_TRUE(locked->publishes.empty());
}

TEST(RabbitmqConfirms, AMultipleAckConfirmsEveryOlderMessage) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  rd::ConfirmTracker confirms;
  auto job = job_of({message("a", "1"), message("a", "2"), message("a", "3")});
  EXPECT_EQ(confirms.add(job, 0), 1U);
  EXPECT_EQ(confirms.add(job, 1), 2U);
  EXPECT_EQ(confirms.add(job, 2), 3U);
  EXPECT_TRUE(confirms.confirm(locked, 2, true, true).empty());
  EXPECT_EQ(job->progress(locked).confirmed, 2U);
  EXPECT_FALSE(job->progress(locked).done);
  EXPECT_EQ(confirms.size(), 1U);
  (void)confirms.confirm(locked, 3, false, true);
  EXPECT_TRUE(job->progress(locked).done);
  EXPECT_FALSE(job->progress(locked).error);
  EXPECT_TRUE(confirms.empty());
}

TEST(RabbitmqConfirms, SingleConfirmsMayComeOutOfOrder) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  rd::ConfirmTracker confirms;
  auto a = job_of({message("a", "1")});
  auto b = job_of({message("b", "1")});
  (void)confirms.add(a, 0);
  (void)confirms.add(b, 0);
  (void)confirms.confirm(locked, 2, false, true);
  EXPECT_TRUE(b->progress(locked).done);
  EXPECT_FALSE(a->progress(locked).done);
  (void)confirms.confirm(locked, 7, false, true);  // unknown: ignored
  EXPECT_EQ(confirms.size(), 1U);
  (void)confirms.confirm(locked, 1, false, false);
  ASSERT_TRUE(a->progress(locked).error);
  EXPECT_EQ(a->progress(locked).error->code(), bq::Errc::broker);
  EXPECT_EQ(a->progress(locked).error->message(), "publish to a: the broker refused the message (basic.nack)");
}

TEST(RabbitmqConfirms, AReturnedMessageFailsAsNotFoundAndItsQueueIsToBeDeclaredAgain) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  rd::ConfirmTracker confirms;
  auto job = job_of({message("gone", "same"), message("gone", "same"), message("gone", "other", 5ms)});
  (void)confirms.add(job, 0);
  (void)confirms.add(job, 1);
  (void)confirms.add(job, 2);
  confirms.returned("gone.delay.5", "other", 312, "NO_ROUTE");
  (void)confirms.confirm(locked, 2, true, true);
  EXPECT_EQ(job->progress(locked).confirmed, 2U);
  const std::vector<std::string> gone = confirms.confirm(locked, 3, false, true);
  EXPECT_EQ(gone, std::vector<std::string>{"gone.delay.5"});
  const rd::PublishProgress& progress = job->progress(locked);
  ASSERT_TRUE(progress.error);
  EXPECT_EQ(progress.error->code(), bq::Errc::not_found);
  EXPECT_EQ(progress.failed_index, 2U);
  EXPECT_EQ(progress.error->message(),
            "publish to gone: unroutable, the broker returned it (312 NO_ROUTE): the queue does not exist (deleted "
            "after it was declared?)");
}

TEST(RabbitmqConfirms, ALostConnectionSendsUnconfirmedMessagesAgainAndALostChannelFailsThem) {
  rd::SharedState shared;
  rd::Locked locked = shared.lock();
  rd::ConfirmTracker confirms;
  auto job = job_of({message("a", "1"), message("a", "2")});
  locked->publishes.push_back(job);
  for (std::size_t i = 0; i < 2; ++i) (void)confirms.add(job, locked->publishes.next(locked)->index);
  EXPECT_FALSE(locked->publishes.next(locked));
  confirms.requeue(locked);
  EXPECT_TRUE(confirms.empty());
  std::set<std::size_t> again;
  while (auto next = locked->publishes.next(locked)) {
    EXPECT_EQ(next->job, job);
    again.insert(next->index);
  }
  EXPECT_EQ(again, (std::set<std::size_t>{0, 1}));
  (void)confirms.add(job, 0);
  confirms.fail_all(locked, bq::ErrorInfo(bq::Errc::broker, "channel closed"));
  EXPECT_TRUE(job->progress(locked).done);
  EXPECT_EQ(job->progress(locked).error->message(), "channel closed");
  confirms.restart_numbering();
  EXPECT_EQ(confirms.add(job, 0), 1U);
}

// ---- Consumers ------------------------------------------------------------

bq::Delivery delivery(std::string queue, std::uint64_t tag, std::uint64_t generation = 1) {
  bq::Delivery out;
  out.queue = std::move(queue);
  out.token.id = tag;
  out.token.text = std::to_string(generation);
  return out;
}

TEST(RabbitmqConsumers, AcksCoveringTheOldestDeliveriesBecomeOneMultipleAck) {
  std::set<std::uint64_t> unacked = {1, 2, 3, 4, 5, 7};
  EXPECT_EQ(rd::cover_oldest({1, 2, 3, 7}, unacked), 3U);
  EXPECT_EQ(unacked, (std::set<std::uint64_t>{4, 5, 7}));
  EXPECT_EQ(rd::cover_oldest({5, 7}, unacked), 0U) << "4 is still unacked";
  EXPECT_EQ(rd::cover_oldest({4}, unacked), 1U);
  EXPECT_EQ(rd::cover_oldest({}, unacked), 0U);
  std::set<std::uint64_t> none;
  EXPECT_EQ(rd::cover_oldest({1}, none), 0U);
}

TEST(RabbitmqConsumers, ReceivedDeliveriesAreHeldUntilSettledOnce) {
  rd::ConsumerTable table;
  auto [consumer, created] = table.open("q");
  EXPECT_TRUE(created);
  EXPECT_FALSE(table.open("q").second);
  std::vector<bq::Delivery> incoming = {delivery("q", 1), delivery("q", 2), delivery("q", 3)};
  consumer->waiting = 2;
  std::vector<std::pair<std::condition_variable*, int>> wake;
  table.deliver(incoming, wake);
  ASSERT_EQ(wake.size(), 1U);
  EXPECT_EQ(wake[0].second, 2) << "three deliveries wake both waiting receivers, no more";
  auto taken = table.take(*consumer, 2);
  ASSERT_EQ(taken.size(), 2U);
  EXPECT_EQ(consumer->buffer.size(), 1U);
  EXPECT_EQ(consumer->reserved, 2);
  EXPECT_TRUE(table.holds(taken[0]));
  EXPECT_TRUE(table.settle(1, taken[0], true));
  EXPECT_FALSE(table.settle(1, taken[0], true)) << "settled already";
  EXPECT_FALSE(table.holds(taken[0]));
  EXPECT_TRUE(table.settle(1, taken[1], false));
  EXPECT_EQ(consumer->reserved, 0);
  auto settles = table.take_settles();
  ASSERT_EQ(settles.size(), 2U);
  EXPECT_TRUE(settles[0].ack);
  EXPECT_EQ(settles[1].tag, 2U);
  EXPECT_FALSE(settles[1].ack);
  EXPECT_FALSE(table.has_settles());
}

TEST(RabbitmqConsumers, ALostChannelMakesEveryHeldDeliveryStale) {
  rd::ConsumerTable table;
  rd::Consumer& consumer = *table.open("q").first;
  std::vector<bq::Delivery> incoming = {delivery("q", 1), delivery("q", 2)};
  std::vector<std::pair<std::condition_variable*, int>> wake;
  table.deliver(incoming, wake);
  auto taken = table.take(consumer, 1);
  consumer.active = true;
  EXPECT_EQ(table.drop(), 2U);
  EXPECT_FALSE(consumer.active);
  EXPECT_TRUE(consumer.buffer.empty());
  EXPECT_EQ(consumer.reserved, 0);
  EXPECT_FALSE(table.holds(taken[0]));
  EXPECT_FALSE(table.settle(1, taken[0], true));
  EXPECT_FALSE(table.settle(2, taken[0], true)) << "its tag may name another message on the new channel";
}

TEST(RabbitmqConsumers, ConsumersStartOnceAndAFailedStartWaitsForItsReceive) {
  rd::ConsumerTable table;
  (void)table.open("a");
  (void)table.open("b");
  EXPECT_TRUE(table.has_starts());
  EXPECT_EQ(table.claim_starts(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(table.has_starts());
  EXPECT_TRUE(table.claim_starts().empty());
  table.started("a");
  table.start_failed("b", bq::ErrorInfo(bq::Errc::broker, "406"));
  EXPECT_TRUE(table.find("a")->active);
  EXPECT_TRUE(table.find("b")->start_error);
  EXPECT_FALSE(table.has_starts()) << "until receive() took the error";
  EXPECT_EQ(table.find("c"), nullptr);
}

TEST(RabbitmqConsumers, ACancelledConsumerLosesWhatItBuffered) {
  rd::ConsumerTable table;
  rd::Consumer& consumer = *table.open("q").first;
  consumer.active = true;
  std::vector<bq::Delivery> incoming = {delivery("q", 5), delivery("q", 6)};
  std::vector<std::pair<std::condition_variable*, int>> wake;
  table.deliver(incoming, wake);
  EXPECT_EQ(table.cancelled("q"), (std::vector<std::uint64_t>{5, 6}));
  EXPECT_FALSE(consumer.active);
  EXPECT_TRUE(consumer.buffer.empty());
  EXPECT_TRUE(table.has_starts()) << "the next turn consumes again";
}

TEST(RabbitmqConsumers, ADeliveryCarriesTheApplicationsHeadersOnly) {
  std::vector<amqp_table_entry_t> entries(4);
  entries[0].key = rd::bytes_of("traceparent");
  entries[0].value.kind = AMQP_FIELD_KIND_UTF8;
  entries[0].value.value.bytes = rd::bytes_of("00-abc-01");
  entries[1].key = rd::bytes_of("x-attempts");
  entries[1].value.kind = AMQP_FIELD_KIND_I32;
  entries[1].value.value.i32 = 2;
  entries[2].key = rd::bytes_of("x-delivery-count");
  entries[2].value.kind = AMQP_FIELD_KIND_I64;
  entries[2].value.value.i64 = 3;
  entries[3].key = rd::bytes_of("empty");
  entries[3].value.kind = AMQP_FIELD_KIND_UTF8;
  entries[3].value.value.bytes = rd::bytes_of("");
  amqp_message_t message{};
  message.properties._flags = AMQP_BASIC_HEADERS_FLAG;
  message.properties.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  message.body = rd::bytes_of("{\"job\":\"x\"}");
  const bq::Delivery classic = rd::delivery_of(message, false);
  EXPECT_EQ(classic.body, "{\"job\":\"x\"}");
  EXPECT_EQ(classic.headers, (bq::Headers{{"traceparent", "00-abc-01"}}));
  EXPECT_FALSE(classic.native_attempts);
  EXPECT_EQ(rd::delivery_of(message, true).native_attempts, 3);
  message.properties._flags = 0;
  EXPECT_TRUE(rd::delivery_of(message, false).headers.empty());
  EXPECT_EQ(rd::delivery_of(message, true).native_attempts, 0);
}

TEST(RabbitmqConsumers, AutoPrefetchIsEightTimesTheFirstReceiveWithinLimits) {
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(1), 128);
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(24), 192);
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(100000), 65535);
}

// ---- Shared state ---------------------------------------------------------

std::uint64_t pending_wakes(const rd::WakeFd& fd) {
  pollfd poll_fd{fd.fd(), POLLIN, 0};
  if (::poll(&poll_fd, 1, 0) != 1) return 0;
  std::uint64_t value = 0;
  EXPECT_EQ(::read(fd.fd(), &value, sizeof value), static_cast<ssize_t>(sizeof value));
  return value;
}

TEST(RabbitmqSharedState, ASleepingIoThreadIsWokenWithOneWriteWhateverTheRequests) {
  rd::SharedState shared;
  ASSERT_TRUE(shared.wake_fd.valid());
  {
    rd::Locked locked = shared.lock();
    locked.wake_io();
  }
  EXPECT_EQ(pending_wakes(shared.wake_fd), 0U) << "an awake I/O thread takes requests in its next turn";
  {
    rd::Locked locked = shared.lock();
    locked->io_sleeping = true;
    locked.wake_io();
    locked.wake_io();
    EXPECT_FALSE(locked->io_sleeping);
  }
  EXPECT_EQ(pending_wakes(shared.wake_fd), 1U);
  shared.wake_fd.close();
  EXPECT_FALSE(shared.wake_fd.valid());
}

}  // namespace
