// SPDX-License-Identifier: Apache-2.0
// babelqueue::kafka against the real Kafka broker (scripts/broker start kafka):
// the transport contract, then what the Kafka binding adds.
#include "../../src/kafka/transport_access.hpp"
#include "broker_env.hpp"
#include "raw_kafka.hpp"
#include "transport_contract.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

const std::string& kafka_url() {
  static const std::string url = bq::testing::broker_url("kafka");
  return url;
}

std::string servers() { return kafka_url().substr(std::string("kafka://").size()); }

std::string unique(const std::string& prefix) { return prefix + "-" + bq::uuid_v4().substr(0, 8); }

// A transport of its own consumer group (so tests never rebalance each other).
std::unique_ptr<bq::kafka::Transport> open_kafka(const std::string& query = "", const std::string& group = "") {
  const std::string separator = query.empty() ? "" : "&";
  auto url = bq::Url::parse(kafka_url() + "?group=" + (group.empty() ? unique("test") : group) + separator + query);
  EXPECT_TRUE(url) << url.error().message();
  auto options = bq::kafka::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << options.error().message();
  auto opened = bq::kafka::Transport::open(*options);
  EXPECT_TRUE(opened) << opened.error().message();
  return opened ? std::move(*opened) : nullptr;
}

std::string envelope(const std::string& queue, int n, std::int64_t attempts = 0) {
  bq::MakeOptions make;
  make.queue = queue;
  make.created_at = 1700000000123 + n;
  auto env = bq::Envelope::make("urn:test:kafka:item", bq::Value::object({{"n", n}}), make);
  EXPECT_TRUE(env);
  auto body = env->encode_with_attempts(attempts);
  return *body;
}

std::vector<bq::Delivery> receive_all(bq::Transport& transport, const std::string& queue, std::size_t count,
                                      std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  std::vector<bq::Delivery> out;
  const auto deadline = Clock::now() + wait;
  while (out.size() < count && Clock::now() < deadline) {
    auto batch = transport.receive(queue, count - out.size(), std::chrono::milliseconds(200));
    EXPECT_TRUE(batch) << batch.error().message();
    if (!batch) break;
    for (auto& d : *batch) out.push_back(std::move(d));
  }
  return out;
}

bq::test_support::ContractTarget target(std::string name, std::string query) {
  bq::test_support::ContractTarget t;
  t.name = std::move(name);
  t.open = [query = std::move(query)]() -> bq::Result<std::unique_ptr<bq::Transport>> {
    return bq::open_transport(kafka_url() + "?group=" + unique("contract") + query);
  };
  // A consumer joins its group on its first receive: allow for that.
  t.slack = std::chrono::seconds(3);
  return t;
}

struct Register {
  Register() { bq::kafka::register_transport(); }
} register_once;

}  // namespace

INSTANTIATE_TEST_SUITE_P(Kafka, TransportContract,
                         testing::Values(target("RetryTiers", "&retry_tiers=1s,15s"), target("NoTiers", "")),
                         bq::test_support::ContractTarget::name_of);

TEST(KafkaBroker, PublishWritesTheBodyTimestampHeadersAndKey) {
  auto transport = open_kafka();
  const std::string topic = unique("headers");
  const std::string body = envelope(topic, 7);
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                     {"bq-job", "a user header may not override the contract"},
                     {"x-empty", ""}};
  options.ordering_key = "customer-42";
  ASSERT_TRUE(transport->publish(topic, body, options));
  auto records = kafka_test::read_topic(servers(), topic, 1);
  ASSERT_EQ(records.size(), 1U);
  const auto& record = records[0];
  auto env = bq::Envelope::decode(body);
  EXPECT_EQ(record.value, body);
  EXPECT_EQ(record.timestamp, 1700000000130);
  EXPECT_EQ(record.key, "customer-42");
  EXPECT_EQ(record.header("bq-job"), "urn:test:kafka:item");
  EXPECT_EQ(record.header("bq-trace-id"), std::string(env->trace_id()));
  EXPECT_EQ(record.header("bq-message-id"), std::string(env->id()));
  EXPECT_EQ(record.header("bq-schema-version"), "1");
  EXPECT_EQ(record.header("bq-source-lang"), "cpp");
  EXPECT_EQ(record.header("bq-attempts"), "0");
  EXPECT_EQ(record.header("traceparent"), options.headers.at("traceparent"));
  EXPECT_FALSE(record.header("x-empty")) << "empty values are dropped";
  int jobs = 0;
  for (const auto& [k, v] : record.headers) jobs += k == "bq-job" ? 1 : 0;
  EXPECT_EQ(jobs, 1);
  transport->close();
}

// Process-then-commit: several records received, finished out of order; the
// group's offset moves only over the finished prefix, and a consumer that dies
// with records unfinished has them delivered again.
TEST(KafkaBroker, CommitsOnlyTheFinishedPrefix) {
  const std::string group = unique("commit");
  const std::string topic = unique("commit");
  auto first = open_kafka("commit_interval=50ms", group);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first->publish(topic, envelope(topic, i)));
  auto received = receive_all(*first, topic, 3);
  ASSERT_EQ(received.size(), 3U);
  ASSERT_TRUE(first->ack(received[2]));
  ASSERT_TRUE(first->ack(received[1]));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_LT(kafka_test::committed_offset(servers(), group, topic), 0) << "committed past an unfinished record";
  auto again = first->ack(received[1]);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), bq::Errc::not_found);
  first->close();  // received[0] was never finished

  auto second = open_kafka("commit_interval=50ms", group);
  auto redelivered = receive_all(*second, topic, 3);
  ASSERT_EQ(redelivered.size(), 3U) << "the unfinished record and those after it come back";
  EXPECT_EQ(redelivered[0].body, received[0].body);
  for (const auto& d : redelivered) ASSERT_TRUE(second->ack(d));
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (kafka_test::committed_offset(servers(), group, topic) != 3 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(kafka_test::committed_offset(servers(), group, topic), 3);
  second->close();
}

TEST(KafkaBroker, RetryTiersDelayAndReinjectWithMeasuredDelays) {
  auto transport = open_kafka("retry_tiers=1s,3s&commit_interval=50ms");
  const std::string topic = unique("tiers");
  ASSERT_TRUE(babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic));
  // Joins the group first, so the delays measured are the tiers' alone.
  EXPECT_TRUE(receive_all(*transport, topic, 1, std::chrono::seconds(2)).empty());

  bq::PublishOptions short_delay;
  short_delay.delay = std::chrono::milliseconds(400);
  short_delay.headers = {{"traceparent", "00-1-2-01"}};
  bq::PublishOptions long_delay;
  long_delay.delay = std::chrono::milliseconds(2500);
  const auto start = Clock::now();
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 1), long_delay));
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 2), short_delay));
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 3)));

  std::vector<std::pair<int, std::chrono::milliseconds>> arrivals;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (arrivals.size() < 3 && Clock::now() < deadline) {
    auto batch = transport->receive(topic, 10, std::chrono::milliseconds(100));
    ASSERT_TRUE(batch) << batch.error().message();
    for (const auto& d : *batch) {
      auto env = bq::Envelope::decode(d.body);
      ASSERT_TRUE(env);
      arrivals.emplace_back(static_cast<int>(env->data()["n"].as_int64()),
                            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
      if (env->data()["n"].as_int64() == 2) {
        EXPECT_EQ(d.headers.at("traceparent"), "00-1-2-01");
        EXPECT_FALSE(d.headers.contains("bq-delay"));
        EXPECT_FALSE(d.headers.contains("bq-original-topic"));
      }
      ASSERT_TRUE(transport->ack(d));
    }
  }
  ASSERT_EQ(arrivals.size(), 3U);
  for (const auto& [n, at] : arrivals) std::cout << "[          ] record " << n << " after " << at.count() << " ms\n";
  EXPECT_EQ(arrivals[0].first, 3);
  EXPECT_LT(arrivals[0].second, std::chrono::milliseconds(1000));
  EXPECT_EQ(arrivals[1].first, 2);
  EXPECT_GE(arrivals[1].second, std::chrono::milliseconds(1000)) << "the 1 s tier";
  EXPECT_LT(arrivals[1].second, std::chrono::milliseconds(2900));
  EXPECT_EQ(arrivals[2].first, 1);
  EXPECT_GE(arrivals[2].second, std::chrono::milliseconds(3000)) << "the 3 s tier";
  EXPECT_LT(arrivals[2].second, std::chrono::milliseconds(6000));

  // The parked records carry the delay and the original topic.
  auto parked = kafka_test::read_topic(
      servers(), babelqueue::kafka::detail::TransportAccess::retry_topic(*transport, topic, 0), 1);
  ASSERT_EQ(parked.size(), 1U);
  EXPECT_EQ(parked[0].header("bq-delay"), "400");
  EXPECT_EQ(parked[0].header("bq-original-topic"), topic);
  EXPECT_EQ(parked[0].header("bq-attempts"), "0");
  // Too long for every tier: refused, not shortened.
  bq::PublishOptions too_long;
  too_long.delay = std::chrono::seconds(10);
  auto refused = transport->publish(topic, envelope(topic, 4), too_long);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  transport->close();
}

TEST(KafkaBroker, ReleaseRepublishesTheSameBytesOneAttemptFurther) {
  auto transport = open_kafka("retry_tiers=1s");
  const std::string topic = unique("release");
  const std::string body = envelope(topic, 1, 2);
  ASSERT_TRUE(transport->publish(topic, body));
  auto first = receive_all(*transport, topic, 1);
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].native_attempts, 2);
  EXPECT_EQ(first[0].attempts_merge, bq::AttemptsMerge::authoritative);
  ASSERT_TRUE(transport->release(first[0]));
  auto second = receive_all(*transport, topic, 1);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_EQ(second[0].body, body);
  EXPECT_EQ(second[0].native_attempts, 3);
  const auto released_at = Clock::now();
  ASSERT_TRUE(transport->release(second[0], std::chrono::milliseconds(800)));
  auto third = receive_all(*transport, topic, 1);
  ASSERT_EQ(third.size(), 1U);
  EXPECT_GE(Clock::now() - released_at, std::chrono::milliseconds(990));
  EXPECT_EQ(third[0].native_attempts, 4);
  ASSERT_TRUE(transport->ack(third[0]));
  auto stale = transport->release(first[0]);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  transport->close();
}

TEST(KafkaBroker, ADelayedReleaseWithoutTiersIsAnErrorAndKeepsTheRecord) {
  const std::string group = unique("notiers");
  auto transport = open_kafka("commit_interval=50ms", group);
  const std::string topic = unique("notiers");
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 1)));
  auto received = receive_all(*transport, topic, 1);
  ASSERT_EQ(received.size(), 1U);
  auto refused = transport->release(received[0], std::chrono::seconds(5));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::unsupported);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(kafka_test::committed_offset(servers(), group, topic), 0) << "a refused release settled the record";
  ASSERT_TRUE(transport->ack(received[0])) << "the record is still held";
  transport->close();
  EXPECT_EQ(kafka_test::read_topic(servers(), topic, 2, 1, std::chrono::seconds(2)).size(), 1U) << "nothing produced";
}

TEST(KafkaBroker, TheWorkerRetriesThenDeadLettersWithTheBlock) {
  const std::string topic = unique("dlq");
  auto transport = open_kafka();
  bq::WorkerOptions options;
  options.dead_letter = true;
  options.max_attempts = 3;
  options.default_queue = topic;
  bq::Worker worker(*transport, options);
  std::atomic<int> calls{0};
  worker.handle("urn:test:kafka:item", [&](const bq::Message&) -> bq::Result<void> {
    ++calls;
    return bq::unexpected(bq::Errc::io, "always fails");
  });
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 1)));
  std::thread runner([&] { (void)worker.run({topic}); });
  auto dead = kafka_test::read_topic(servers(), topic + ".dlq", 1, 1, std::chrono::seconds(30));
  worker.stop();
  runner.join();
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(calls.load(), 3);
  auto env = bq::Envelope::decode(dead[0].value);
  ASSERT_TRUE(env);
  auto block = env->dead_letter();
  ASSERT_TRUE(block);
  EXPECT_EQ(block->reason, "failed");
  EXPECT_EQ(block->original_queue, topic);
  EXPECT_EQ(block->attempts, 3);
  EXPECT_EQ(dead[0].header("bq-attempts"), "3");
  // The retries went through the same topic, one attempt further each time.
  auto history = kafka_test::read_topic(servers(), topic, 3);
  ASSERT_EQ(history.size(), 3U);
  for (std::size_t i = 0; i < history.size(); ++i) EXPECT_EQ(history[i].header("bq-attempts"), std::to_string(i));
  transport->close();
}

// A record that is not an envelope (and one the gate rejects) goes to the DLQ
// as poison, its bytes kept, its offset committed; the records after it are
// handled.
TEST(KafkaBroker, PoisonAndGatedRecordsAreDeadLetteredAndNeverBlockThePartition) {
  const std::string group = unique("poison");
  const std::string topic = unique("poison");
  auto transport = open_kafka("commit_interval=50ms", group);
  ASSERT_TRUE(babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic));
  const std::string garbage = std::string("not an envelope \xff\x00 {", 20);
  kafka_test::produce_raw(servers(), topic, garbage);
  const std::string gated = envelope(topic, 1);
  kafka_test::produce_raw(servers(), topic, gated, {{"bq-schema-version", "2"}});
  ASSERT_TRUE(transport->publish(topic, envelope(topic, 2)));

  bq::WorkerOptions options;
  options.dead_letter = true;
  bq::Worker worker(*transport, options);
  std::atomic<int> handled{0};
  std::atomic<std::int64_t> handled_n{-1};
  worker.handle("urn:test:kafka:item", [&](const bq::Message& m) {
    handled_n = m.envelope().data()["n"].as_int64();
    ++handled;
  });
  std::thread runner([&] { (void)worker.run({topic}); });
  auto dead = kafka_test::read_topic(servers(), topic + ".dlq", 2, 1, std::chrono::seconds(30));
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (handled.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  worker.stop();
  runner.join();
  EXPECT_EQ(handled.load(), 1);
  EXPECT_EQ(handled_n.load(), 2);
  ASSERT_EQ(dead.size(), 2U);
  EXPECT_EQ(dead[0].value, garbage) << "the poison bytes are forwarded as they were";
  EXPECT_EQ(dead[0].header("bq-dead-letter-reason"), "poison");
  auto gated_dead = bq::Envelope::decode(dead[1].value);
  ASSERT_TRUE(gated_dead);
  ASSERT_TRUE(gated_dead->dead_letter());
  EXPECT_EQ(gated_dead->dead_letter()->reason, "poison");
  EXPECT_EQ(dead[1].header("bq-dead-letter-reason"), "poison");
  transport->close();
  EXPECT_EQ(kafka_test::committed_offset(servers(), group, topic), 3) << "the poison offsets were committed";
}

TEST(KafkaBroker, TwoConsumersInOneGroupSharePartitions) {
  const std::string group = unique("shared");
  const std::string topic = unique("shared");
  auto a = open_kafka("partitions=2&commit_interval=50ms", group);
  auto b = open_kafka("partitions=2&commit_interval=50ms", group);
  constexpr int kCount = 40;
  ASSERT_TRUE(babelqueue::kafka::detail::TransportAccess::ensure_topic(*a, topic));
  std::mutex mutex;
  std::multiset<std::string> acked;
  std::map<std::string, int> per_consumer;
  std::set<std::int32_t> partitions_a;
  std::atomic<bool> done{false};
  auto consume = [&](bq::kafka::Transport& t, const std::string& name) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!done.load() && Clock::now() < deadline) {
      auto batch = t.receive(topic, 5, std::chrono::milliseconds(200));
      if (!batch) return;
      for (const auto& d : *batch) {
        if (!t.ack(d)) continue;  // revoked meanwhile: the other consumer gets it
        std::lock_guard lock(mutex);
        acked.insert(d.body);
        ++per_consumer[name];
        if (acked.size() >= kCount) done = true;
      }
    }
  };
  std::thread ta([&] { consume(*a, "a"); });
  std::thread tb([&] { consume(*b, "b"); });
  // Both join the group and split the two partitions, then the records come.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  for (int i = 0; i < kCount; ++i) {
    bq::PublishOptions keyed;
    keyed.ordering_key = "key-" + std::to_string(i);
    ASSERT_TRUE(a->publish(topic, envelope(topic, i), keyed));
  }
  ta.join();
  tb.join();
  std::set<std::string> distinct(acked.begin(), acked.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kCount));
  EXPECT_GT(per_consumer["a"], 0);
  EXPECT_GT(per_consumer["b"], 0);
  std::cout << "[          ] consumer a: " << per_consumer["a"] << ", b: " << per_consumer["b"]
            << ", duplicates: " << acked.size() - distinct.size() << "\n";
  a->close();
  b->close();
  EXPECT_EQ(kafka_test::committed_offset(servers(), group, topic, 0) +
                kafka_test::committed_offset(servers(), group, topic, 1),
            kCount);
}

TEST(KafkaBroker, AMissingTopicWithoutCreationIsAnErrorNamingIt) {
  auto transport = open_kafka("create_topics=false");
  const std::string topic = unique("missing");
  auto published = transport->publish(topic, envelope(topic, 1));
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::not_found);
  EXPECT_NE(published.error().message().find(topic), std::string::npos) << published.error().message();
  auto received = transport->receive(topic, 1, std::chrono::milliseconds(100));
  ASSERT_FALSE(received);
  EXPECT_NE(received.error().message().find(topic), std::string::npos);
  transport->close();
}

// A batch stops at its first bad message (here past the first chunk of 64
// records): the error says so and counts the records before it, and those
// records are published, none lost and none after the stop.
TEST(KafkaBroker, ABatchStoppedMidwayKeepsEveryRecordBeforeTheStop) {
  constexpr int kBefore = 66;
  for (const char* stop : {"an empty queue name", "a delay without retry tiers"}) {
    SCOPED_TRACE(stop);
    auto transport = open_kafka();
    const std::string topic = unique("batch-stop");
    std::vector<bq::OutgoingMessage> batch;
    for (int i = 0; i < kBefore + 4; ++i) batch.push_back({topic, envelope(topic, i), {}});
    if (std::string_view(stop) == "an empty queue name") {
      batch[kBefore].queue.clear();
    } else {
      batch[kBefore].options.delay = std::chrono::seconds(5);
    }
    auto published = transport->publish_batch(batch);
    ASSERT_FALSE(published);
    EXPECT_EQ(published.error().code(),
              std::string_view(stop) == "an empty queue name" ? bq::Errc::invalid_argument : bq::Errc::unsupported);
    EXPECT_NE(published.error().message().find(std::to_string(kBefore) + " earlier records"), std::string::npos)
        << published.error().message();
    auto received = receive_all(*transport, topic, kBefore);
    ASSERT_EQ(received.size(), static_cast<std::size_t>(kBefore));
    EXPECT_TRUE(receive_all(*transport, topic, 1, std::chrono::seconds(1)).empty()) << "a record after the stop";
    std::set<std::string> bodies;
    for (const bq::Delivery& delivery : received) {
      bodies.insert(delivery.body);
      ASSERT_TRUE(transport->ack(delivery));
    }
    for (int i = 0; i < kBefore; ++i) EXPECT_TRUE(bodies.contains(batch[i].body)) << i;
    transport->close();
  }
}

TEST(KafkaBroker, AFullProduceQueueWaitsForRoomInsteadOfFailing) {
  // librdkafka holds at most 4 unsent records here, so a batch of 200
  // meets a full queue many times; publish_batch serves delivery reports
  // until there is room, and every record arrives.
  auto transport = open_kafka("rdkafka.queue.buffering.max.messages=4&rdkafka.linger.ms=20");
  const std::string topic = unique("queue-full");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 200; ++i) batch.push_back({topic, envelope(topic, i), {}});
  auto published = transport->publish_batch(batch);
  ASSERT_TRUE(published) << published.error().message();
  auto received = receive_all(*transport, topic, batch.size());
  ASSERT_EQ(received.size(), batch.size());
  std::set<std::string> bodies;
  for (const bq::Delivery& delivery : received) {
    bodies.insert(delivery.body);
    ASSERT_TRUE(transport->ack(delivery));
  }
  EXPECT_EQ(bodies.size(), batch.size());
  transport->close();
}

TEST(KafkaBroker, AnUnreachableBrokerIsAClearError) {
  std::mutex logged_mutex;
  std::vector<std::string> logged;
  const bq::LogSink sink = [&](bq::LogLevel level, std::string_view line) {
    std::lock_guard lock(logged_mutex);
    if (level >= bq::LogLevel::warning) logged.emplace_back(line);
  };
  // open() finds out: at once for a refused connection (not at
  // connect_timeout), in one error that names the address and the reason,
  // with librdkafka's lines held back.
  auto refused_options =
      bq::kafka::Transport::options_from_url(*bq::Url::parse("kafka://127.0.0.1:1?connect_timeout=60"));
  ASSERT_TRUE(refused_options);
  refused_options->log = sink;
  const auto start = std::chrono::steady_clock::now();
  auto refused = bq::kafka::Transport::open(*refused_options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::connection);
  EXPECT_NE(refused.error().message().find("cannot reach Kafka at 127.0.0.1:1: "), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("Connection refused"), std::string::npos) << refused.error().message();
  EXPECT_LT(elapsed, std::chrono::seconds(30)) << "waited out connect_timeout";
  {
    std::lock_guard lock(logged_mutex);
    EXPECT_TRUE(logged.empty()) << logged.front();
  }

  // Opened without contacting a broker, the first publish finds out.
  auto url = bq::Url::parse("kafka://127.0.0.1:1?publish_timeout=1&connect_timeout=0");
  auto options = bq::kafka::Transport::options_from_url(*url);
  // librdkafka's complaints reach the transport's log sink, not stderr.
  options->log = sink;
  auto transport = bq::kafka::Transport::open(*options);
  ASSERT_TRUE(transport);
  auto published = (*transport)->publish("orders", "{}");
  ASSERT_FALSE(published);
  EXPECT_TRUE(published.error().retriable()) << published.error().message();
  EXPECT_NE(published.error().message().find("127.0.0.1:1"), std::string::npos) << published.error().message();
  (*transport)->close();
  std::lock_guard lock(logged_mutex);
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged.front().find("127.0.0.1:1"), std::string::npos) << logged.front();
}

// A rebalance in the middle of handling: the revoked records are not
// committed, their tokens settle nothing, and they are delivered again.
TEST(KafkaBroker, ARebalanceCommitsOnlyWhatWasDoneAndRedeliversTheRest) {
  const std::string group = unique("rebalance");
  const std::string topic = unique("rebalance");
  auto a = open_kafka("commit_interval=50ms&session_timeout=6", group);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->publish(topic, envelope(topic, i)));
  auto held = receive_all(*a, topic, 3);
  ASSERT_EQ(held.size(), 3U);
  ASSERT_TRUE(a->ack(held[0]));

  auto b = open_kafka("commit_interval=50ms&session_timeout=6", group);
  std::mutex mutex;
  std::vector<std::string> again;
  std::atomic<bool> stop{false};
  auto consume = [&](bq::kafka::Transport& t) {
    while (!stop.load()) {
      auto batch = t.receive(topic, 10, std::chrono::milliseconds(100));
      if (!batch) return;
      for (const auto& d : *batch) {
        std::lock_guard lock(mutex);
        again.push_back(d.body);
        (void)t.ack(d);
      }
    }
  };
  std::thread tb([&] { consume(*b); });
  // a must keep polling for the rebalance to reach it.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::thread ta([&] { consume(*a); });
  while (Clock::now() < deadline) {
    {
      std::lock_guard lock(mutex);
      if (again.size() >= 2) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  ta.join();
  tb.join();
  auto stale = a->ack(held[1]);
  ASSERT_FALSE(stale) << "a token of a revoked assignment settled a record";
  EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  std::multiset<std::string> bodies(again.begin(), again.end());
  EXPECT_EQ(bodies.count(held[1].body), 1U);
  EXPECT_EQ(bodies.count(held[2].body), 1U);
  EXPECT_EQ(bodies.count(held[0].body), 0U) << "the finished record was committed before the rebalance";
  a->close();
  b->close();
  EXPECT_EQ(kafka_test::committed_offset(servers(), group, topic), 3);
}

// Another producer's record: bq-attempts is authoritative (its first value,
// as the Go and Python SDKs read it), out-of-band headers are surfaced, and a
// record without the header counts by its body.
TEST(KafkaBroker, AttemptsComeFromTheFirstHeaderElseTheBody) {
  auto transport = open_kafka();
  const std::string topic = unique("attempts");
  ASSERT_TRUE(babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic));
  kafka_test::produce_raw(servers(), topic, envelope(topic, 1, 5),
                          {{"bq-attempts", "3"}, {"bq-attempts", "1"}, {"traceparent", "00-a-b-01"}});
  kafka_test::produce_raw(servers(), topic, envelope(topic, 2, 4));
  auto received = receive_all(*transport, topic, 2);
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[0].native_attempts, 3);
  EXPECT_EQ(received[0].attempts_merge, bq::AttemptsMerge::authoritative);
  EXPECT_EQ(received[0].headers.at("traceparent"), "00-a-b-01");
  EXPECT_FALSE(received[0].headers.contains("bq-attempts"));
  EXPECT_FALSE(received[1].native_attempts);
  EXPECT_EQ(received[1].attempts_merge, bq::AttemptsMerge::max_with_body);
  for (const auto& d : received) ASSERT_TRUE(transport->ack(d));
  transport->close();
}

// The record key comes back as Delivery::ordering_key (empty without one),
// and a release republishes the copy with it: same key, same partition.
TEST(KafkaBroker, ReceiveReadsTheKeyAsTheOrderingKeyAndAReleaseKeepsIt) {
  auto transport = open_kafka("partitions=4");
  const std::string topic = unique("keyed");
  EXPECT_TRUE(transport->capabilities().ordering_key);
  const std::string keyed_body = envelope(topic, 1);
  const std::string plain_body = envelope(topic, 2);
  bq::PublishOptions keyed;
  keyed.ordering_key = "customer-7";
  ASSERT_TRUE(transport->publish(topic, keyed_body, keyed));
  ASSERT_TRUE(transport->publish(topic, plain_body));
  auto received = receive_all(*transport, topic, 2);
  ASSERT_EQ(received.size(), 2U);
  const bq::Delivery& first = received[0].body == keyed_body ? received[0] : received[1];
  const bq::Delivery& plain = received[0].body == keyed_body ? received[1] : received[0];
  EXPECT_EQ(first.ordering_key, "customer-7");
  EXPECT_EQ(plain.ordering_key, "");
  ASSERT_TRUE(transport->release(first));
  ASSERT_TRUE(transport->ack(plain));
  auto again = receive_all(*transport, topic, 1);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].body, keyed_body);
  EXPECT_EQ(again[0].ordering_key, "customer-7");
  EXPECT_EQ(again[0].native_attempts, 1);
  ASSERT_TRUE(transport->ack(again[0]));
  transport->close();

  std::vector<kafka_test::RawRecord> copies;
  for (auto& record : kafka_test::read_topic(servers(), topic, 3, 4)) {
    if (record.value == keyed_body) copies.push_back(std::move(record));
  }
  ASSERT_EQ(copies.size(), 2U);
  EXPECT_EQ(copies[0].key, "customer-7");
  EXPECT_EQ(copies[1].key, "customer-7");
  EXPECT_EQ(copies[0].partition, copies[1].partition);
}

// The Worker's retry of a keyed record keeps its key, so it lands on the
// partition of the original (a keyless retry goes to any partition and is
// then ordered with nothing of its key). Eight keys over four partitions: the
// originals spread over several partitions, so chance cannot pass the test.
TEST(KafkaBroker, AKeyedRecordRetriedStaysOnItsPartitionWithItsKey) {
  constexpr int kKeys = 8;
  constexpr int kPartitions = 4;
  const std::string topic = unique("keyed-retry");
  auto transport = open_kafka("partitions=4&commit_interval=50ms");
  ASSERT_TRUE(babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic));
  for (int i = 0; i < kKeys; ++i) {
    bq::PublishOptions keyed;
    keyed.ordering_key = "customer-" + std::to_string(i);
    ASSERT_TRUE(transport->publish(topic, envelope(topic, i), keyed));
  }

  bq::WorkerOptions options;
  options.default_queue = topic;
  options.max_attempts = 3;
  bq::Worker worker(*transport, options);
  std::atomic<int> first_attempts{0};
  std::atomic<int> handled{0};
  worker.handle("urn:test:kafka:item", [&](const bq::Message& m) -> bq::Result<void> {
    if (m.attempts() == 0) {
      ++first_attempts;
      return bq::unexpected(bq::Errc::io, "the first attempt fails");
    }
    ++handled;
    return {};
  });
  std::thread runner([&] { (void)worker.run({topic}); });
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (handled.load() < kKeys && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  worker.stop();
  runner.join();
  transport->close();
  EXPECT_EQ(first_attempts.load(), kKeys);
  ASSERT_EQ(handled.load(), kKeys) << "every record is retried once, then handled";

  // On the topic: each original (bq-attempts 0) and its retry (1).
  auto records = kafka_test::read_topic(servers(), topic, 2 * kKeys, kPartitions);
  ASSERT_EQ(records.size(), static_cast<std::size_t>(2 * kKeys));
  std::map<std::string, const kafka_test::RawRecord*> originals;
  std::map<std::string, const kafka_test::RawRecord*> retries;
  std::set<std::int32_t> partitions_used;
  for (const auto& record : records) {
    auto env = bq::Envelope::decode(record.value);
    ASSERT_TRUE(env);
    const std::string id(env->id());
    if (record.header("bq-attempts") == "0") {
      originals[id] = &record;
      partitions_used.insert(record.partition);
    } else {
      EXPECT_EQ(record.header("bq-attempts"), "1");
      retries[id] = &record;
    }
  }
  ASSERT_EQ(originals.size(), static_cast<std::size_t>(kKeys));
  ASSERT_EQ(retries.size(), static_cast<std::size_t>(kKeys));
  EXPECT_GE(partitions_used.size(), 2U) << "the keys should spread over the partitions";
  for (const auto& [id, original] : originals) {
    SCOPED_TRACE(original->key.value_or("(no key)"));
    const kafka_test::RawRecord* retry = retries.at(id);
    ASSERT_TRUE(original->key);
    EXPECT_EQ(retry->key, original->key) << "the retry lost its key";
    EXPECT_EQ(retry->partition, original->partition) << "the retry moved to another partition";
  }
}

// A record above the producer's message.max.bytes is refused before it is
// sent, naming both sizes and the setting; one the producer lets through but
// the broker (default message.max.bytes 1048588) does not is refused with the
// broker's reason. Neither leaves anything on the topic.
TEST(KafkaBroker, ARecordAboveTheSizeLimitsIsRefusedNamingTheLimit) {
  const std::string topic = unique("big");
  const std::string body(1'200'000, 'x');
  {
    auto transport = open_kafka();
    auto published = transport->publish(topic, body);
    ASSERT_FALSE(published);
    EXPECT_EQ(published.error().code(), bq::Errc::invalid_argument);
    const std::string& text = published.error().message();
    EXPECT_NE(text.find(topic), std::string::npos) << text;
    EXPECT_NE(text.find("1200000 bytes"), std::string::npos) << text;
    EXPECT_NE(text.find("at most 1000000 bytes (producer.message.max.bytes)"), std::string::npos) << text;
    transport->close();
  }
  {
    auto transport = open_kafka("producer.message.max.bytes=3000000");
    auto published = transport->publish(topic, body);
    ASSERT_FALSE(published);
    EXPECT_EQ(published.error().code(), bq::Errc::invalid_argument);
    EXPECT_NE(published.error().message().find("the broker refused the record on topic " + topic), std::string::npos)
        << published.error().message();
    const std::string small = envelope(topic, 1);
    ASSERT_TRUE(transport->publish(topic, small));
    auto received = receive_all(*transport, topic, 2, std::chrono::seconds(5));
    ASSERT_EQ(received.size(), 1U);
    EXPECT_EQ(received[0].body, small);
    transport->close();
  }
}
