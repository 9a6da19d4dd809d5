// SPDX-License-Identifier: Apache-2.0
// babelqueue::pulsar against the real broker: what reaches the wire and
// comes back (every projected property, the key, redeliveryCount, delays,
// messages published before the first consumer), TLS, and the errors of bad
// settings, each within the connect timeout.
#include "conformance_suite.hpp"
#include "pulsar_client.hpp"
#include "pulsar_test_env.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace bq = babelqueue;
namespace pd = babelqueue::pulsar_detail;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<bq::pulsar::Transport> open(const std::string& query = {}) {
  auto url = bq::Url::parse(bq::testing::pulsar_url(query));
  EXPECT_TRUE(url);
  auto options = bq::pulsar::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << options.error().message();
  options->log = {};
  auto transport = bq::pulsar::Transport::open(*options);
  EXPECT_TRUE(transport) << transport.error().message();
  return transport ? std::move(*transport) : nullptr;
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return body;
}

// A raw consumer of the protocol client on its own subscription.
std::vector<pd::InMessage> raw_receive(const std::string& topic, std::size_t count) {
  auto info = bq::testing::broker_info("pulsar");
  pd::ClientOptions options;
  options.port = static_cast<std::uint16_t>(std::stoi(info.at("port")));
  auto client = pd::Client::connect(options);
  EXPECT_TRUE(client) << client.error().message();
  std::vector<pd::InMessage> out;
  const auto deadline = Clock::now() + 10s;
  while (out.size() < count && Clock::now() < deadline) {
    auto got = (*client)->receive(topic, "bq-raw-reader", count - out.size(), 1s);
    EXPECT_TRUE(got) << got.error().message();
    if (!got) break;
    for (auto& m : *got) {
      EXPECT_TRUE((*client)->ack(m.handle));
      out.push_back(std::move(m));
    }
  }
  (*client)->close(2s);
  return out;
}

std::map<std::string, std::string> as_map(const pd::Properties& properties) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : properties) EXPECT_TRUE(out.emplace(k, v).second) << "property " << k << " twice";
  return out;
}

}  // namespace

TEST(PulsarIntegration, EveryProjectedPropertyTheKeyAndHeadersAreReadBackFromTheBroker) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("projection");
  const std::string body = fixture("order-created.json");
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                     {"bq-job", "a header may not override the binding"}};
  options.ordering_key = "customer-42";
  ASSERT_TRUE(transport->publish(queue, body, options));
  transport->close();

  auto got = raw_receive(transport->topic(queue), 1);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].payload, body);
  EXPECT_EQ(got[0].key, "customer-42");
  EXPECT_GT(got[0].publish_time, 0U);
  const auto properties = as_map(got[0].properties);
  const std::map<std::string, std::string> expected{
      {"bq-job", "urn:babel:orders:created"},
      {"bq-trace-id", "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b"},
      {"bq-message-id", "f1e2d3c4-b5a6-4789-90ab-cdef01234567"},
      {"bq-schema-version", "1"},
      {"bq-source-lang", "php"},
      {"bq-attempts", "0"},
      {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  EXPECT_EQ(properties, expected);
}

TEST(PulsarIntegration, AMessagePublishedBeforeAnyConsumerExistsIsReceived) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  // The subscription is created at the earliest position by the first
  // receive, after the publish.
  auto producer = open();
  ASSERT_TRUE(producer);
  const std::string queue = bq::testing::unique_queue("earliest");
  ASSERT_TRUE(producer->publish(queue, fixture("order-created.json")));
  producer->close();
  auto consumer = open();
  ASSERT_TRUE(consumer);
  auto got = consumer->receive(queue, 1, 10s);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_TRUE(consumer->ack(got->front()));
}

TEST(PulsarIntegration, ReleaseRaisesTheRedeliveryCount) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("redelivery");
  ASSERT_TRUE(transport->publish(queue, fixture("order-created.json")));
  for (std::int64_t expected = 0; expected < 3; ++expected) {
    auto got = transport->receive(queue, 1, 10s);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->size(), 1U) << "delivery " << expected;
    const bq::Delivery& d = got->front();
    ASSERT_TRUE(d.native_attempts);
    EXPECT_EQ(*d.native_attempts, expected);
    EXPECT_EQ(d.attempts_merge, bq::AttemptsMerge::max_with_body);
    if (expected < 2) {
      ASSERT_TRUE(transport->release(d));
    } else {
      ASSERT_TRUE(transport->ack(d));
      // Settled: a second settle of the same delivery is stale.
      EXPECT_EQ(transport->ack(d).error().code(), bq::Errc::not_found);
    }
  }
  auto empty = transport->receive(queue, 1, 500ms);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(PulsarIntegration, ADelayedMessageArrivesNoEarlierThanItsDelay) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("delay");
  bq::PublishOptions options;
  options.delay = 1500ms;
  const auto published_at = Clock::now();
  ASSERT_TRUE(transport->publish(queue, fixture("order-created.json"), options));
  auto got = transport->receive(queue, 1, 10s);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_GE(Clock::now() - published_at, 1500ms);
  EXPECT_TRUE(transport->ack(got->front()));
  auto raw = raw_receive(transport->topic(queue), 1);
  ASSERT_EQ(raw.size(), 1U);
  EXPECT_EQ(as_map(raw[0].properties).at("bq-delay"), "1500");
}

// peek reads from the subscription's mark-delete position: what a receive
// acknowledged is not shown, a delayed message is not shown before it is
// due, and a Worker-side consumer of the subscription keeps its messages.
TEST(PulsarIntegration, PeekShowsTheSubscriptionsWaitingMessagesOnly) {
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("peek");
  const std::string body = fixture("order-created.json");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(transport->publish(queue, body));
  bq::PublishOptions later;
  later.delay = 60s;
  ASSERT_TRUE(transport->publish(queue, body, later));
  auto first = transport->receive(queue, 1, 10s);
  ASSERT_TRUE(first && first->size() == 1U);
  ASSERT_TRUE(transport->ack(first->front()));
  // The ack moves the mark-delete position a moment later.
  std::size_t shown = 0;
  for (const auto deadline = Clock::now() + 5s; Clock::now() < deadline;) {
    auto peeked = transport->peek(queue, 10);
    ASSERT_TRUE(peeked) << peeked.error().message();
    shown = peeked->size();
    if (shown == 2) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(shown, 2U) << "the acknowledged message, or the delayed one, was shown";
  auto rest = transport->receive(queue, 10, 10s);
  ASSERT_TRUE(rest) << rest.error().message();
  std::size_t received = rest->size();
  for (const auto& delivery : *rest) {
    EXPECT_EQ(delivery.native_attempts, 0) << "peek counted as a delivery";
    EXPECT_TRUE(transport->ack(delivery));
  }
  if (received < 2) {
    auto more = transport->receive(queue, 10, 5s);
    ASSERT_TRUE(more);
    received += more->size();
    for (const auto& delivery : *more) EXPECT_TRUE(transport->ack(delivery));
  }
  EXPECT_EQ(received, 2U);
}

TEST(PulsarIntegration, TheSchemaVersionGateRejectsBeforeDecoding) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("gate");
  // A body without the plain shape still travels; its gate property is the
  // one the sender set, through a raw client.
  auto info = bq::testing::broker_info("pulsar");
  pd::ClientOptions raw;
  raw.port = static_cast<std::uint16_t>(std::stoi(info.at("port")));
  auto client = pd::Client::connect(raw);
  ASSERT_TRUE(client);
  pd::OutMessage m;
  m.payload = fixture("order-created.json");
  m.properties = {{"bq-schema-version", "2"}};
  ASSERT_TRUE((*client)->send(transport->topic(queue), {m}, 10s));
  (*client)->close(2s);
  auto got = transport->receive(queue, 1, 10s);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1U);
  EXPECT_TRUE(got->front().gate_rejection);
  EXPECT_TRUE(transport->ack(got->front()));
}

TEST(PulsarIntegration, TlsVerifiesTheBrokerAndRefusesAWrongName) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto info = bq::testing::broker_info("pulsar");
  const std::string ca = info.at("tls_ca");
  bq::pulsar::register_transport();
  auto ok = bq::open_transport(bq::testing::pulsar_tls_url("tls_ca=" + ca));
  ASSERT_TRUE(ok) << ok.error().message();
  const std::string queue = bq::testing::unique_queue("tls");
  ASSERT_TRUE((*ok)->publish(queue, fixture("order-created.json")));
  auto got = (*ok)->receive(queue, 1, 10s);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_TRUE((*ok)->ack(got->front()));

  const auto started = Clock::now();
  auto wrong = bq::open_transport(bq::testing::pulsar_tls_url("tls_ca=" + ca + "&tls_server_name=wrong.example"));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), bq::Errc::auth) << wrong.error().message();
  EXPECT_NE(wrong.error().message().find("wrong.example"), std::string::npos) << wrong.error().message();
  EXPECT_LT(Clock::now() - started, 10s);
  // Without the CA, the system's trust store does not know the test CA.
  auto unknown = bq::open_transport(bq::testing::pulsar_tls_url());
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), bq::Errc::auth) << unknown.error().message();
}

TEST(PulsarIntegration, BadSettingsAreClearErrorsWithinTheConnectTimeout) {
  bq::pulsar::register_transport();
  auto misspelt = bq::open_transport(bq::testing::pulsar_url("subscriptoin=x"));
  ASSERT_FALSE(misspelt);
  EXPECT_EQ(misspelt.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(misspelt.error().message().find("subscriptoin"), std::string::npos);
  auto path = bq::open_transport("pulsar://127.0.0.1:6650/some/path");
  ASSERT_FALSE(path);
  EXPECT_EQ(path.error().code(), bq::Errc::invalid_argument);
  auto secret = bq::open_transport(bq::testing::pulsar_url("token=s3cret&tls_ca=/x"));
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().message().find("s3cret"), std::string::npos) << secret.error().message();

  // Nothing listens on the port above the TLS port's neighbours: refused at once.
  const auto started = Clock::now();
  auto unreachable = bq::open_transport("pulsar://127.0.0.1:1?connect_timeout=2s");
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code(), bq::Errc::connection) << unreachable.error().message();
  EXPECT_NE(unreachable.error().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_LT(Clock::now() - started, 3s);

  // A TLS port spoken to in plain text: no CONNECTED, an error in time.
  auto info = bq::testing::broker_info("pulsar");
  const auto started_tls = Clock::now();
  auto plain_on_tls = bq::open_transport("pulsar://127.0.0.1:" + info.at("tls_port") + "?connect_timeout=2s");
  ASSERT_FALSE(plain_on_tls);
  EXPECT_TRUE(plain_on_tls.error().code() == bq::Errc::connection || plain_on_tls.error().code() == bq::Errc::timeout)
      << plain_on_tls.error().message();
  EXPECT_LT(Clock::now() - started_tls, 4s);
}

TEST(PulsarIntegration, ABatchPublishSharesEntriesAndEachMessageKeepsItsPropertiesAndKey) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("batch");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 5; ++i) {
    bq::OutgoingMessage m{queue, fixture("order-created.json"), {}};
    m.options.ordering_key = "key-" + std::to_string(i);
    m.options.headers = {{"n", std::to_string(i)}};
    batch.push_back(std::move(m));
  }
  ASSERT_TRUE(transport->publish_batch(batch));
  auto got = raw_receive(transport->topic(queue), 5);
  ASSERT_EQ(got.size(), 5U);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)].key, "key-" + std::to_string(i));
    EXPECT_EQ(as_map(got[static_cast<std::size_t>(i)].properties).at("n"), std::to_string(i));
    EXPECT_EQ(as_map(got[static_cast<std::size_t>(i)].properties).at("bq-job"), "urn:babel:orders:created");
    // One entry for the five: the same ledger and entry, batch indexes 0..4.
    EXPECT_EQ(got[static_cast<std::size_t>(i)].id.entry, got[0].id.entry);
    EXPECT_EQ(got[static_cast<std::size_t>(i)].id.batch_index, i);
  }
}

TEST(PulsarIntegration, ReleasingOneMessageOfABatchRedeliversOnlyThatOne) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("batch-release");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 4; ++i) {
    bq::OutgoingMessage m{queue, fixture("order-created.json"), {}};
    m.options.headers = {{"n", std::to_string(i)}};
    batch.push_back(std::move(m));
  }
  ASSERT_TRUE(transport->publish_batch(batch));
  std::vector<bq::Delivery> first;
  const auto deadline = Clock::now() + 10s;
  while (first.size() < 4 && Clock::now() < deadline) {
    auto got = transport->receive(queue, 4, 1s);
    ASSERT_TRUE(got);
    for (auto& d : *got) first.push_back(std::move(d));
  }
  ASSERT_EQ(first.size(), 4U);
  for (const auto& d : first) {
    if (d.headers.at("n") == "2") {
      ASSERT_TRUE(transport->release(d));
    } else {
      ASSERT_TRUE(transport->ack(d));
    }
  }
  auto again = transport->receive(queue, 4, 10s);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1U);
  EXPECT_EQ(again->front().headers.at("n"), "2");
  EXPECT_EQ(again->front().native_attempts, 1);
  ASSERT_TRUE(transport->ack(again->front()));
  auto empty = transport->receive(queue, 4, 1s);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

// A message above the broker's maxMessageSize (5 MiB by default, said in
// CONNECTED) is refused before it is sent, naming both sizes: the broker
// would drop the connection, and the client send it again on every
// reconnect. The connection stays up; in a batch the others are published.
TEST(PulsarIntegration, AMessageAboveTheBrokersSizeLimitIsRefusedNamingBothSizes) {
  auto transport = open();
  ASSERT_TRUE(transport);
  const std::string queue = bq::testing::unique_queue("big");
  const std::string big(5 * 1024 * 1024 + 1, 'x');
  auto refused = transport->publish(queue, big);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(refused.error().message().find("is 5242881 bytes; the Pulsar broker takes at most 5242880 bytes"),
            std::string::npos)
      << refused.error().message();

  std::vector<bq::OutgoingMessage> batch(3);
  for (auto& message : batch) message.queue = queue;
  batch[0].body = "small one";
  batch[1].body = big;
  batch[2].body = "small two";
  auto partly = transport->publish_batch(batch);
  ASSERT_FALSE(partly);
  EXPECT_NE(partly.error().message().find("2 of 3 messages were accepted"), std::string::npos)
      << partly.error().message();

  std::set<std::string> bodies;
  const auto deadline = Clock::now() + 10s;
  while (bodies.size() < 2 && Clock::now() < deadline) {
    auto got = transport->receive(queue, 10, 1s);
    ASSERT_TRUE(got) << got.error().message();
    for (auto& d : *got) {
      bodies.insert(d.body);
      EXPECT_TRUE(transport->ack(d));
    }
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"small one", "small two"}));
  transport->close();
}
