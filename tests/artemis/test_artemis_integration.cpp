// SPDX-License-Identifier: Apache-2.0
// babelqueue::artemis against the real broker: what is on the wire (read
// back by a raw proton peer), delivery-count and dead-lettering, delays,
// messages from peers that set nothing of ours, and the errors a person sees
// for a wrong URL, password, port or certificate name.
#include "artemis_test_env.hpp"
#include "conformance_suite.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <proton/annotation_key.hpp>
#include <proton/binary.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <sstream>

namespace bq = babelqueue;
using namespace std::chrono_literals;
using bq::testing::RawPeer;

namespace {

class ArtemisIntegration : public ::testing::Test {
 protected:
  void SetUp() override { transport_ = open(""); }

  void TearDown() override {
    if (transport_) transport_->close(2s);
  }

  static std::unique_ptr<bq::artemis::Transport> open(const std::string& query) {
    auto url = bq::Url::parse(bq::testing::artemis_url(query));
    EXPECT_TRUE(url) << url.error().message();
    auto options = bq::artemis::Transport::options_from_url(*url);
    EXPECT_TRUE(options) << options.error().message();
    options->log = {};
    auto opened = bq::artemis::Transport::open(*options);
    EXPECT_TRUE(opened) << opened.error().message();
    return opened ? std::move(*opened) : nullptr;
  }

  static std::string fixture(const std::string& name) {
    std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static std::string envelope(const std::string& urn, int n, const std::string& queue) {
    bq::MakeOptions make;
    make.queue = queue;
    return std::string(bq::Envelope::make(urn, bq::Value::object({{"n", n}}), make).value().body());
  }

  std::vector<bq::Delivery> receive_all(const std::string& q, std::size_t count, std::chrono::milliseconds wait = 5s) {
    std::vector<bq::Delivery> all;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (all.size() < count && std::chrono::steady_clock::now() < deadline) {
      auto got = transport_->receive(q, count - all.size(), 200ms);
      EXPECT_TRUE(got) << got.error().message();
      if (!got) break;
      for (auto& d : *got) all.push_back(std::move(d));
    }
    return all;
  }

  static std::map<std::string, std::string> string_properties(const proton::message& m) {
    std::map<std::string, proton::scalar> props;
    proton::get(m.properties().value(), props);
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : props) {
      EXPECT_EQ(v.type(), proton::STRING) << "property " << k << " is not a string";
      out[k] = proton::to_string(v);
    }
    return out;
  }

  static bq::WorkerOptions quiet() {
    bq::WorkerOptions options;
    options.log = [](bq::LogLevel, std::string_view m) { std::cerr << "worker: " << m << "\n"; };
    options.poll_timeout = 500ms;
    options.dead_letter = true;
    options.retry_backoff = bq::BackoffPolicy{100ms, 2.0, 1s, 0.0};
    return options;
  }

  std::unique_ptr<bq::artemis::Transport> transport_;
};

TEST_F(ArtemisIntegration, TheBrokerHoldsTheBodyAndEveryProjectedField) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  ASSERT_TRUE(transport_);
  const std::string q = bq::testing::unique_queue("projection");
  const std::string body = fixture("order-created.json");
  ASSERT_FALSE(body.empty());
  ASSERT_TRUE(transport_->publish(q, body, {.headers = {{"traceparent", "00-abc-def-01"}}}));

  auto got = RawPeer::receive(q, 1, 5s);
  ASSERT_EQ(got.size(), 1U);
  const proton::message& m = got[0];
  // The body: the envelope's bytes as an AMQP string value.
  ASSERT_EQ(m.body().type(), proton::STRING);
  EXPECT_EQ(proton::get<std::string>(m.body()), body);
  EXPECT_TRUE(m.durable());
  EXPECT_EQ(m.content_type(), "application/json");
  // The manifest's artemis block.
  const auto env = bq::Envelope::decode(body).value();
  auto annotations = m.message_annotations();
  const proton::value jms_type = annotations.get(proton::symbol("x-opt-jms-type"));
  ASSERT_EQ(jms_type.type(), proton::STRING);
  EXPECT_EQ(proton::get<std::string>(jms_type), "urn:babel:orders:created");
  EXPECT_EQ(m.subject(), "urn:babel:orders:created");
  EXPECT_EQ(proton::to_string(m.correlation_id()), "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b");
  EXPECT_EQ(proton::to_string(m.id()), std::string(env.id()));
  EXPECT_EQ(m.creation_time().milliseconds(), env.created_at());
  const auto props = string_properties(m);
  EXPECT_EQ(props, (std::map<std::string, std::string>{{"bq_schema_version", "1"},
                                                       {"bq_source_lang", "php"},
                                                       {"bq_attempts", "0"},
                                                       {"bq_app_id", "babelqueue"},
                                                       {"traceparent", "00-abc-def-01"}}));
}

TEST_F(ArtemisIntegration, AMessageSentBeforeAnyConsumerExistsIsKept) {
  const std::string q = bq::testing::unique_queue("anycast");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:anycast", 1, q)));
  // A new connection, a new receiver: the message waited in the queue.
  auto other = open("");
  auto got = other->receive(q, 1, 5s);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1U);
  EXPECT_TRUE(other->ack((*got)[0]));
}

TEST_F(ArtemisIntegration, ReleaseCountsADeliveryAndTheWorkerDeadLettersAtMaxAttempts) {
  const std::string q = bq::testing::unique_queue("release");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:release", 1, q)));
  for (std::int64_t expected = 0; expected < 3; ++expected) {
    auto got = receive_all(q, 1);
    ASSERT_EQ(got.size(), 1U);
    ASSERT_TRUE(got[0].native_attempts);
    EXPECT_EQ(*got[0].native_attempts, expected) << "delivery-count must climb with each release";
    ASSERT_TRUE(transport_->release(got[0]));
  }
  // delivery-count 3 = max_attempts: the runtime dead-letters it.
  bq::WorkerOptions options = quiet();
  options.max_attempts = 3;
  std::int64_t handled = 0;
  {
    bq::Worker worker(*transport_, options);
    worker.handle("urn:test:release", [&](const bq::Message&) -> bq::Result<void> {
      ++handled;
      return bq::unexpected(bq::Errc::io, "always fails");
    });
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 3s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  const std::string dlq = transport_->dead_letter_queue(q);
  EXPECT_EQ(dlq, q + ".dlq");
  auto dead = receive_all(dlq, 1);
  ASSERT_EQ(dead.size(), 1U);
  auto decoded = bq::Envelope::decode(dead[0].body);
  ASSERT_TRUE(decoded) << bq::to_error_info(decoded.error()).message();
  ASSERT_TRUE(decoded->dead_letter());
  EXPECT_EQ(decoded->dead_letter()->original_queue, q);
  EXPECT_GE(decoded->attempts(), 3);
  ASSERT_TRUE(transport_->ack(dead[0]));
  EXPECT_TRUE(receive_all(q, 1, 500ms).empty());
}

TEST_F(ArtemisIntegration, TheWorkerRetriesByRepublishingUntilTheDeadLetterQueue) {
  const std::string q = bq::testing::unique_queue("retry");
  std::vector<std::int64_t> seen;
  bq::WorkerOptions options = quiet();
  options.max_attempts = 3;
  {
    bq::Worker worker(*transport_, options);
    worker.handle("urn:test:retry", [&](const bq::Message& m) -> bq::Result<void> {
      seen.push_back(m.attempts());
      return bq::unexpected(bq::Errc::io, "always fails");
    });
    ASSERT_TRUE(transport_->publish(q, envelope("urn:test:retry", 1, q)));
    bq::RunLimits limits;
    limits.max_messages = 3;
    limits.idle_exit = 5s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2}));
  auto dead = RawPeer::receive(q + ".dlq", 1, 5s);
  ASSERT_EQ(dead.size(), 1U);
  const auto props = string_properties(dead[0]);
  EXPECT_EQ(props.at("bq_attempts"), "3");
}

TEST_F(ArtemisIntegration, AReleaseWithADelayIsNotEarlyAndLosesNothing) {
  const std::string q = bq::testing::unique_queue("delayed-release");
  const std::string body = envelope("urn:test:later", 1, q);
  ASSERT_TRUE(transport_->publish(q, body));
  auto got = receive_all(q, 1);
  ASSERT_EQ(got.size(), 1U);
  const auto released_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(transport_->release(got[0], 2s));
  EXPECT_TRUE(receive_all(q, 1, 1500ms).empty()) << "redelivered before its delay";
  auto again = receive_all(q, 1, 5s);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_GE(std::chrono::steady_clock::now() - released_at, 1900ms);
  EXPECT_EQ(again[0].body, body);
  ASSERT_TRUE(again[0].native_attempts);
  EXPECT_EQ(*again[0].native_attempts, 1) << "the delayed copy counts as a redelivery";
  ASSERT_TRUE(transport_->ack(again[0]));
  EXPECT_TRUE(receive_all(q, 1, 300ms).empty()) << "the original was not settled";
}

TEST_F(ArtemisIntegration, ADelayRidesTheDeliveryTimeAnnotationAsALong) {
  const std::string q = bq::testing::unique_queue("delay");
  const auto before =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:delay", 1, q), {.delay = 1500ms}));
  EXPECT_TRUE(RawPeer::receive(q, 1, 1000ms).empty()) << "delivered before its time";
  auto got = RawPeer::receive(q, 1, 5s);
  ASSERT_EQ(got.size(), 1U);
  auto annotations = got[0].message_annotations();
  const proton::value at = annotations.get(proton::symbol("x-opt-delivery-time"));
  ASSERT_EQ(at.type(), proton::LONG);
  EXPECT_GE(proton::get<std::int64_t>(at), before + 1500);
  EXPECT_EQ(string_properties(got[0]).at("bq_delay"), "1500");
}

TEST_F(ArtemisIntegration, APeerThatSetsNothingOfOursIsRead) {
  // What the Python SDK sends: no capability, not durable, an amqp-value
  // string; and a Data section as a JMS BytesMessage would.
  const std::string q = bq::testing::unique_queue("plain");
  const std::string body = envelope("urn:test:plain", 7, q);
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:first", 0, q)));  // the queue exists
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_TRUE(transport_->ack(first[0]));
  proton::message text(body);
  proton::message data;
  data.body(proton::binary(body.begin(), body.end()));
  data.inferred(true);
  data.properties().put("bq_schema_version", 1);  // an integral AMQP value passes the gate
  RawPeer::send(q, {text, data}, /*queue_capability=*/false);
  auto got = receive_all(q, 2);
  ASSERT_EQ(got.size(), 2U);
  for (const auto& d : got) {
    EXPECT_EQ(d.body, body);
    EXPECT_FALSE(d.gate_rejection);
    ASSERT_TRUE(transport_->ack(d));
  }
}

TEST_F(ArtemisIntegration, TheSchemaVersionGateRunsBeforeTheBody) {
  const std::string q = bq::testing::unique_queue("gate");
  proton::message future(std::string(R"({"not":"read"})"));
  future.properties().put("bq_schema_version", "2");
  RawPeer::send(q, {future});
  auto got = receive_all(q, 1);
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(got[0].gate_rejection);
  // The Worker dead-letters it with its bytes.
  ASSERT_TRUE(transport_->release(got[0]));
  {
    bq::Worker worker(*transport_, quiet());
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 3s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  auto dead = receive_all(q + ".dlq", 1);
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_NE(dead[0].body.find("not"), std::string::npos);
  ASSERT_TRUE(transport_->ack(dead[0]));
}

TEST_F(ArtemisIntegration, AnOrderingKeyIsTheGroupIdAndADedupIdDropsTheDuplicate) {
  const std::string q = bq::testing::unique_queue("group");
  const std::string body = envelope("urn:test:group", 1, q);
  bq::PublishOptions keyed;
  keyed.ordering_key = "customer-42";
  keyed.dedup_id = "dedup-" + bq::uuid_v4();
  ASSERT_TRUE(transport_->publish(q, body, keyed));
  ASSERT_TRUE(transport_->publish(q, body, keyed));  // a duplicate: Artemis drops it
  auto got = receive_all(q, 2, 2s);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].ordering_key, "customer-42");
  ASSERT_TRUE(transport_->ack(got[0]));
}

TEST_F(ArtemisIntegration, ASettledDeliveryIsNotFoundTheSecondTime) {
  const std::string q = bq::testing::unique_queue("twice");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:twice", 1, q)));
  auto got = receive_all(q, 1);
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(transport_->ack(got[0]));
  auto again = transport_->ack(got[0]);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), bq::Errc::not_found);
}

TEST_F(ArtemisIntegration, AckBatchSettlesEveryHeldDeliveryAndNamesTheStaleOnes) {
  const std::string q = bq::testing::unique_queue("ackbatch");
  std::vector<bq::OutgoingMessage> batch;
  for (int n = 0; n < 3; ++n) batch.push_back({q, envelope("urn:test:ackbatch", n, q), {}});
  ASSERT_TRUE(transport_->publish_batch(batch));
  auto got = receive_all(q, 3);
  ASSERT_EQ(got.size(), 3U);
  ASSERT_TRUE(transport_->ack(got[1]));  // settled already: stale in the batch below
  std::vector<bq::AckFailure> failures;
  auto settled = transport_->ack_batch(got, failures);
  ASSERT_FALSE(settled);
  EXPECT_EQ(settled.error().code(), bq::Errc::not_found) << settled.error().message();
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_EQ(failures[0].index, 1U);
  EXPECT_EQ(failures[0].error.code(), bq::Errc::not_found);
  // Settled for good: a new connection gets nothing back.
  transport_->close(2s);
  transport_ = open("");
  EXPECT_TRUE(receive_all(q, 1, 1s).empty());
}

TEST_F(ArtemisIntegration, ABatchOverSeveralChunksAndQueuesKeepsEachQueuesOrder) {
  // More messages than one chunk of the streamed publish_batch, interleaved
  // over two queues: every message arrives, each queue's in publish order.
  const std::string a = bq::testing::unique_queue("chunks-a");
  const std::string b = bq::testing::unique_queue("chunks-b");
  std::vector<bq::OutgoingMessage> batch;
  for (int n = 0; n < 150; ++n) {
    const std::string& q = n % 3 == 0 ? b : a;
    batch.push_back({q, envelope("urn:test:chunks", n, q), {}});
  }
  ASSERT_TRUE(transport_->publish_batch(batch));
  for (const std::string& q : {a, b}) {
    std::vector<std::string> expected;
    for (const auto& m : batch) {
      if (m.queue == q) expected.push_back(m.body);
    }
    auto got = receive_all(q, expected.size(), 10s);
    ASSERT_EQ(got.size(), expected.size()) << q;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].body, expected[i]) << q << " message " << i;
    ASSERT_TRUE(transport_->ack_batch(got));
    EXPECT_TRUE(receive_all(q, 1, 300ms).empty());
  }
}

TEST_F(ArtemisIntegration, UnsettledMessagesComeBackWhenTheConnectionCloses) {
  const std::string q = bq::testing::unique_queue("unsettled");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:unsettled", 1, q)));
  {
    auto holder = open("");
    auto got = holder->receive(q, 1, 5s);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1U);
    holder->close(2s);  // a worker that died holding it
  }
  auto again = receive_all(q, 1);
  ASSERT_EQ(again.size(), 1U);
  ASSERT_TRUE(transport_->ack(again[0]));
}

TEST_F(ArtemisIntegration, SeveralConnectionsShareTheQueueAndSettleWhereTheyReceived) {
  // connections=3 with a small credit window: the broker spreads the queue
  // over three consumers, and receive() takes from each.
  transport_->close(2s);
  transport_ = open("connections=3&credit=5");
  ASSERT_TRUE(transport_);
  const std::string q = bq::testing::unique_queue("pool");
  std::vector<bq::OutgoingMessage> batch;
  for (int n = 0; n < 60; ++n) batch.push_back({q, envelope("urn:test:pool", n, q), {}});
  ASSERT_TRUE(transport_->publish_batch(batch));
  auto got = receive_all(q, 60, 10s);
  ASSERT_EQ(got.size(), 60U);
  std::set<std::string> bodies;
  std::set<std::uint64_t> connections;
  for (const auto& d : got) {
    bodies.insert(d.body);
    connections.insert(d.token.id >> 56);  // the connection's index (artemis_transport.cpp)
  }
  EXPECT_EQ(bodies.size(), 60U) << "a message was received twice";
  EXPECT_GT(connections.size(), 1U) << "every message came through one connection";
  // A release goes back through the connection that holds the message: it
  // comes back with its delivery-count raised.
  const std::string released = got.back().body;
  ASSERT_TRUE(transport_->release(got.back()));
  got.pop_back();
  auto again = receive_all(q, 1);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].body, released);
  EXPECT_EQ(again[0].native_attempts.value_or(0), 1);
  got.push_back(std::move(again[0]));
  // One ack_batch over deliveries of every connection, one of them stale.
  ASSERT_TRUE(transport_->ack(got[7]));
  std::vector<bq::AckFailure> failures;
  auto settled = transport_->ack_batch(got, failures);
  ASSERT_FALSE(settled);
  EXPECT_EQ(settled.error().code(), bq::Errc::not_found) << settled.error().message();
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_EQ(failures[0].index, 7U);
  // A token naming no connection of this transport is not held.
  bq::Delivery foreign = got[0];
  foreign.token.id |= std::uint64_t{9} << 56;
  auto refused = transport_->ack(foreign);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::not_found);
  // All settled for good: a new connection gets nothing back.
  transport_->close(2s);
  transport_ = open("");
  EXPECT_TRUE(receive_all(q, 1, 1s).empty());
}

// ---- the errors a person sees ----

bq::ErrorInfo open_error(const std::string& url_text) {
  bq::artemis::register_transport();
  auto opened = bq::open_transport(url_text);
  EXPECT_FALSE(opened) << url_text << " opened";
  return opened ? bq::ErrorInfo(bq::Errc::internal, "opened") : opened.error();
}

std::string with_query(std::string url, const std::string& query) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

TEST(ArtemisErrors, ABadUrlIsRefusedBeforeAnyConnection) {
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672?credit=0").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672?connections=0").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672?connections=65").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672?bogus=1").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672/path").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://a:1,b:2").code(), bq::Errc::invalid_argument);
  EXPECT_EQ(open_error("artemis://127.0.0.1:5672?tls_ca=/x.pem").code(), bq::Errc::invalid_argument);
}

TEST(ArtemisErrors, AWrongPasswordIsAnAuthErrorWithinTheConnectTimeout) {
  auto info = bq::testing::broker_info("artemis");
  const auto start = std::chrono::steady_clock::now();
  auto e = open_error("artemis://admin:wrong@127.0.0.1:" + info.at("port") + "?connect_timeout=5s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
  EXPECT_EQ(e.code(), bq::Errc::auth) << e.message();
  EXPECT_NE(e.message().find("127.0.0.1:" + info.at("port")), std::string::npos) << e.message();
}

TEST(ArtemisErrors, AnUnreachableBrokerIsAConnectionError) {
  const auto start = std::chrono::steady_clock::now();
  auto e = open_error("artemis://127.0.0.1:1?connect_timeout=3s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(e.code(), bq::Errc::connection) << e.message();
  EXPECT_NE(e.message().find("127.0.0.1:1"), std::string::npos) << e.message();
}

TEST(ArtemisErrors, TlsWorksWithTheCaAndANameMismatchIsRefused) {
  auto info = bq::testing::broker_info("artemis");
  const std::string tls = with_query(info.at("tls_url"), "tls_ca=" + info.at("tls_ca"));
  bq::artemis::register_transport();
  auto ok = bq::open_transport(tls);
  ASSERT_TRUE(ok) << ok.error().message();
  const std::string q = bq::testing::unique_queue("tls");
  ASSERT_TRUE((*ok)->publish(q, R"({"tls":true})"));
  auto got = (*ok)->receive(q, 1, 5s);
  ASSERT_TRUE(got && got->size() == 1U);
  EXPECT_TRUE((*ok)->ack((*got)[0]));
  (*ok)->close();

  const auto start = std::chrono::steady_clock::now();
  auto e = open_error(with_query(tls, "tls_server_name=not-this-broker.example&connect_timeout=5s"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
  EXPECT_EQ(e.code(), bq::Errc::auth) << e.message();
  EXPECT_NE(e.message().find("TLS"), std::string::npos) << e.message();
}

}  // namespace

// Artemis announces no message size limit (it pages large messages to disk):
// a 4 MiB message goes through. A limit of the transport's own refuses a
// larger message before it is sent, naming both sizes, and the link stays
// usable.
TEST_F(ArtemisIntegration, AMessageAboveTheTransportsSizeLimitIsRefusedUnsent) {
  const std::string q = bq::testing::unique_queue("big");
  const std::string large(4 * 1024 * 1024, 'x');
  ASSERT_TRUE(transport_->publish(q, large));
  auto got = receive_all(q, 1, 20s);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].body.size(), large.size());
  EXPECT_TRUE(transport_->ack(got[0]));

  auto limited = open("max_message_size=1000");
  ASSERT_TRUE(limited);
  auto refused = limited->publish(q, std::string(1001, 'x'));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(refused.error().message().find("bytes; this transport takes at most 1000 bytes (max_message_size)"),
            std::string::npos)
      << refused.error().message();
  ASSERT_TRUE(limited->publish(q, "small"));
  got = receive_all(q, 1);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].body, "small");
  EXPECT_TRUE(transport_->ack(got[0]));
  limited->close();
}
