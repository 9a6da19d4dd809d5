// SPDX-License-Identifier: Apache-2.0
// babelqueue::kafka without a broker: the URL, the header projection, the
// schema-version gate, the bq-attempts header and the commit bookkeeping.
#include "conformance_suite.hpp"
#include "kafka_record.hpp"
#include "partition_progress.hpp"
#include "transport_access.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace bq = babelqueue;
using namespace std::chrono_literals;
using bq::kafka::detail::PartitionProgress;

namespace {

bq::kafka::Transport::Options parse(const std::string& text) {
  auto url = bq::Url::parse(text);
  EXPECT_TRUE(url) << url.error().message();
  auto options = bq::kafka::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << options.error().message();
  return options ? *options : bq::kafka::Transport::Options{};
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(KafkaUrl, DefaultsFollowThePythonSdk) {
  const auto options = parse("kafka://127.0.0.1:9092");
  EXPECT_EQ(options.bootstrap_servers, "127.0.0.1:9092");
  EXPECT_EQ(options.group, "babelqueue");
  EXPECT_TRUE(options.retry_tiers.empty());
  EXPECT_EQ(options.retry_topic_pattern, "{topic}.retry.{n}");
  EXPECT_LE(options.session_timeout, 10s);
  EXPECT_EQ(options.partitions, 1);
}

TEST(KafkaUrl, ReadsEveryParameter) {
  const auto options = parse(
      "kafka://alice:s%40cret@h1:9092,h2:9093?group=orders&partitions=3&replication_factor=2&create_topics=false"
      "&retry_tiers=500ms,5s,2m&retry_topic={topic}.retry.{delay_ms}&session_timeout=6&commit_interval=50ms"
      "&publish_timeout=10&request_timeout=4s&reconnect_min=50ms&reconnect_max=1s&rdkafka.security.protocol=SASL_SSL&"
      "producer.linger.ms=5&consumer.fetch."
      "wait.max.ms=10");
  EXPECT_EQ(options.bootstrap_servers, "h1:9092,h2:9093");
  EXPECT_EQ(options.group, "orders");
  EXPECT_EQ(options.partitions, 3);
  EXPECT_EQ(options.replication_factor, 2);
  EXPECT_FALSE(options.create_topics);
  EXPECT_EQ(options.retry_tiers, (std::vector<std::chrono::milliseconds>{500ms, 5s, 2min}));
  EXPECT_EQ(options.retry_topic_pattern, "{topic}.retry.{delay_ms}");
  EXPECT_EQ(options.session_timeout, 6s);
  EXPECT_EQ(options.commit_interval, 50ms);
  EXPECT_EQ(options.publish_timeout, 10s);
  EXPECT_EQ(options.request_timeout, 4s);
  EXPECT_EQ(options.reconnect_min, 50ms);
  EXPECT_EQ(options.reconnect_max, 1s);
  EXPECT_EQ(options.client_properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(options.client_properties.at("sasl.username"), "alice");
  EXPECT_EQ(options.client_properties.at("sasl.password"), "s@cret");
  EXPECT_EQ(options.producer_properties.at("linger.ms"), "5");
  EXPECT_EQ(options.consumer_properties.at("fetch.wait.max.ms"), "10");
}

TEST(KafkaUrl, RefusesWhatItCannotUse) {
  for (const char* text : {"kafka://h:9092?grup=x", "kafka://h:9092?partitions=0", "kafka://h:9092?retry_tiers=5x",
                           "kafka://h:9092/topic", "kafka://?group=x", "kafka://h:9092?session_timeout=-1"}) {
    auto url = bq::Url::parse(text);
    if (!url) continue;
    auto options = bq::kafka::Transport::options_from_url(*url);
    ASSERT_FALSE(options) << text;
    EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << text;
  }
}

TEST(KafkaUrl, TheSharedTlsNamesBecomeLibrdkafkaProperties) {
  const auto options =
      parse("kafka://h:9093?tls=true&tls_ca=/etc/ca.pem&tls_cert=c.pem&tls_key=k.pem&tls_verify=false");
  EXPECT_EQ(options.client_properties.at("security.protocol"), "SSL");
  EXPECT_EQ(options.client_properties.at("ssl.ca.location"), "/etc/ca.pem");
  EXPECT_EQ(options.client_properties.at("ssl.certificate.location"), "c.pem");
  EXPECT_EQ(options.client_properties.at("ssl.key.location"), "k.pem");
  EXPECT_EQ(options.client_properties.at("enable.ssl.certificate.verification"), "false");
  EXPECT_EQ(options.client_properties.at("ssl.endpoint.identification.algorithm"), "none");
  // With a user: SASL over TLS. A property given as rdkafka.NAME wins.
  const auto sasl = parse("kafka://alice:pw@h:9093?tls=1&tls_ca=/etc/ca.pem&rdkafka.ssl.ca.location=/other.pem");
  EXPECT_EQ(sasl.client_properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(sasl.client_properties.at("ssl.ca.location"), "/other.pem");
  // TLS turned on by librdkafka's own property takes the shared names too.
  const auto by_property = parse("kafka://h:9093?rdkafka.security.protocol=sasl_ssl&cacert=/etc/ca.pem");
  EXPECT_EQ(by_property.client_properties.at("security.protocol"), "sasl_ssl");
  EXPECT_EQ(by_property.client_properties.at("ssl.ca.location"), "/etc/ca.pem");
  // Without TLS nothing is added.
  EXPECT_EQ(parse("kafka://h:9092").client_properties.count("security.protocol"), 0U);
}

TEST(KafkaUrl, ErrorsUseTheSharedTexts) {
  auto refuse = [](const std::string& text) {
    auto options = bq::kafka::Transport::options_from_url(*bq::Url::parse(text));
    EXPECT_FALSE(options) << text;
    return options ? std::string() : options.error().message();
  };
  EXPECT_EQ(refuse("kafka://h:9092?tls_ca=/x"), "kafka:// URL: parameter 'tls_ca' needs TLS (tls=true)");
  EXPECT_NE(refuse("kafka://h:9092?tls=true&tls_server_name=k").find("'tls_server_name'"), std::string::npos);
  EXPECT_NE(refuse("kafka://h:9092?tls=true&tls_cert=c.pem").find("tls_cert and tls_key go together"),
            std::string::npos);
  EXPECT_EQ(refuse("kafka://h:9092?session_timeout=5x"),
            "kafka:// URL: parameter 'session_timeout' is '5x', expected a duration (500ms, 5s, 2m, or a number of "
            "seconds) between 1ms and 1h");
  EXPECT_EQ(refuse("kafka://h:9092?grup=x").rfind("kafka:// URL: unknown parameter 'grup' (known: group, ", 0), 0U);
}

TEST(KafkaTransport, RefusesBadOptionsBeforeConnecting) {
  bq::kafka::Transport::Options options;
  options.retry_tiers = {5s, 1s};
  auto opened = bq::kafka::Transport::open(options);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code(), bq::Errc::invalid_argument);
  options.retry_tiers = {};
  options.client_properties["no.such.property"] = "1";
  opened = bq::kafka::Transport::open(options);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message().find("no.such.property"), std::string::npos) << opened.error().message();
}

TEST(KafkaTransport, NamesRetryTopicsByPattern) {
  bq::kafka::Transport::Options options;
  options.bootstrap_servers = "127.0.0.1:1";  // never contacted
  options.connect_timeout = 0ms;
  options.retry_tiers = {5s, 30s};
  auto opened = bq::kafka::Transport::open(options);
  ASSERT_TRUE(opened) << opened.error().message();
  EXPECT_EQ(babelqueue::kafka::detail::TransportAccess::retry_topic(**opened, "orders", 0), "orders.retry.1");
  EXPECT_EQ(babelqueue::kafka::detail::TransportAccess::retry_topic(**opened, "orders", 1), "orders.retry.2");
  EXPECT_EQ((*opened)->dead_letter_queue("orders"), "orders.dlq");
  const auto caps = (*opened)->capabilities();
  EXPECT_TRUE(caps.native_delay);
  EXPECT_EQ(caps.max_delay, 30s);
  (*opened)->close(100ms);

  options.retry_topic_pattern = "{topic}.retry.{delay_ms}";
  opened = bq::kafka::Transport::open(options);
  ASSERT_TRUE(opened);
  EXPECT_EQ(babelqueue::kafka::detail::TransportAccess::retry_topic(**opened, "orders", 1), "orders.retry.30000");
  (*opened)->close(100ms);
}

TEST(KafkaTransport, WithoutTiersADelayIsRefusedNotDropped) {
  bq::kafka::Transport::Options options;
  options.bootstrap_servers = "127.0.0.1:1";
  options.connect_timeout = 0ms;  // never contacted
  auto opened = bq::kafka::Transport::open(options);
  ASSERT_TRUE(opened);
  EXPECT_FALSE((*opened)->capabilities().native_delay);
  bq::PublishOptions delayed;
  delayed.delay = 1s;
  auto refused = (*opened)->publish("orders", "{}", delayed);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::unsupported);
  EXPECT_NE(refused.error().message().find("retry_tiers"), std::string::npos);
  (*opened)->close(100ms);
}

TEST(KafkaTransport, RegistersItsScheme) {
  bq::kafka::register_transport();
  auto schemes = bq::registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "kafka"), schemes.end());
}

TEST(KafkaRecord, ProjectsTheSixHeadersAndTheTimestamp) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  const auto projection = bq::kafka::detail::project(fixture("order-created.json"));
  ASSERT_EQ(projection.headers.size(), 6U);
  EXPECT_EQ(projection.headers[0], (std::pair<std::string, std::string>{"bq-job", "urn:babel:orders:created"}));
  EXPECT_EQ(projection.headers[5], (std::pair<std::string, std::string>{"bq-attempts", "0"}));
  EXPECT_TRUE(projection.created_at.has_value());
  EXPECT_TRUE(bq::kafka::detail::project("not json").headers.empty());
}

// The fast scan publish uses must give exactly what decoding gives, and give
// up (so decoding decides) on whatever it does not read plainly.
TEST(KafkaRecord, TheScanProjectsExactlyWhatDecodingProjects) {
  std::vector<std::string> bodies;
  for (const char* name : {"order-created.json", "dead-lettered.json", "invalid-missing-urn.json",
                           "invalid-unknown-schema-version.json", "unicode-and-numbers.json", "urn-alias.json"}) {
    bodies.push_back(fixture(name));
  }
  bq::MakeOptions make;
  make.queue = "orders";
  for (const auto& data :
       {bq::Value::object({{"n", 1}}),
        bq::Value::object({{"s", "a \"quoted\" \\ text } ] {"}, {"list", bq::Value::array({1, 2})}}),
        // Strings ending in backslashes, an escaped quote after escaped backslashes.
        bq::Value::object({{"b", "back\\"}, {"bb", "\\\\"}, {"q", "\\\"\\"}, {"after", "x"}}),
        bq::Value::object({{"nested", bq::Value::object({{"deep", bq::Value::array({bq::Value::object()})}})},
                           {"f", 1.5e-7},
                           {"t", true},
                           {"z", nullptr}})}) {
    auto env = bq::Envelope::make("urn:test:scan", data, make);
    ASSERT_TRUE(env);
    bodies.emplace_back(env->body());
    bodies.push_back(*env->encode_with_attempts(7));
    // What the SDKs write is read by the scan itself, whatever the data holds.
    EXPECT_TRUE(bq::binding::scan(bodies.back())) << bodies.back();
  }
  const std::string base =
      R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":5},"attempts":2})";
  bodies.push_back(base);
  bodies.push_back(" \n" + base + "\n ");
  for (
      const char* variant :
      {R"({"job":"urn:\u0061","trace_id":"t","data":{},"meta":{"id":"i","lang":"go","schema_version":1,"created_at":5},"attempts":0})",
       R"({"urn":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1,"created_at":5}})",
       R"({"job":"urn:a","job":"urn:b","trace_id":"t","data":{},"meta":{"schema_version":1}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"data":{},"meta":{"schema_version":1}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":"1","created_at":5}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1.0,"created_at":5}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":1e2})",
       R"({"job":"urn:a","trace_id":"t","data":{"x":[1,2,{"y":"}"}]},"meta":{"schema_version":1}} trailing)",
       R"({"job":"urn:a","trace_id":"t","data":{"x":[1,2},"meta":{"schema_version":1}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"id":7,"schema_version":1}})",
       R"({"job":"urn:a","trace_id":"t","data":{},"meta":[],"attempts":0})", R"([1,2,3])", R"("text")", "", "{",
       "not json", R"({"job":"urn:a"})"}) {
    bodies.emplace_back(variant);
  }
  int scanned = 0;
  for (const std::string& body : bodies) {
    const auto fast = bq::kafka::detail::project(body);
    const auto slow = bq::kafka::detail::project_by_decoding(body);
    EXPECT_EQ(fast.headers, slow.headers) << body;
    EXPECT_EQ(fast.created_at, slow.created_at) << body;
    if (!slow.headers.empty()) {
      EXPECT_EQ(fast.attempts, slow.attempts) << body;
    }
    scanned += bq::binding::scan(body) ? 1 : 0;
  }
  EXPECT_GE(scanned, 8) << "the scan should read the SDKs' plain bodies itself";
}

TEST(KafkaRecord, SchemaVersionGate) {
  // The kit's gate, as the Kafka consumer applies it to the bq-schema-version header.
  auto schema_version_gate = [](std::optional<std::string_view> header) {
    return bq::binding::schema_version_gate(header);
  };
  EXPECT_FALSE(schema_version_gate(std::nullopt));
  EXPECT_FALSE(schema_version_gate(""));
  EXPECT_FALSE(schema_version_gate(" \t\r\n\v\f"));
  EXPECT_FALSE(schema_version_gate("1"));
  for (const char* bad : {"2", "01", " 1", "1 ", "\xc2\xa0",
                          "\xef\xbb\xbf"
                          "1"}) {
    EXPECT_EQ(schema_version_gate(bad), bq::Rejection::schema_version_gate) << bad;
  }
}

TEST(KafkaRecord, AttemptsHeader) {
  // The kit's count parsing, as the Kafka consumer reads the bq-attempts header.
  auto parse_attempts = [](std::string_view text) { return bq::binding::parse_count(text); };
  EXPECT_EQ(parse_attempts("0"), 0);
  EXPECT_EQ(parse_attempts("42"), 42);
  EXPECT_FALSE(parse_attempts(""));
  EXPECT_FALSE(parse_attempts("-1"));
  EXPECT_FALSE(parse_attempts("1.5"));
  EXPECT_FALSE(parse_attempts("99999999999999999999999"));
}

TEST(PartitionProgress, CommitsOnlyTheDonePrefix) {
  PartitionProgress progress;
  for (std::int64_t offset = 10; offset < 15; ++offset) progress.add(offset);
  EXPECT_FALSE(progress.take_commit());
  EXPECT_TRUE(progress.done(12));
  EXPECT_TRUE(progress.done(11));
  EXPECT_FALSE(progress.take_commit()) << "10 is still being handled";
  EXPECT_TRUE(progress.done(10));
  EXPECT_EQ(progress.take_commit(), 13);
  EXPECT_FALSE(progress.take_commit());
  EXPECT_FALSE(progress.done(10)) << "settled twice";
  EXPECT_FALSE(progress.done(99)) << "never polled";
  EXPECT_TRUE(progress.pending(13));
  EXPECT_EQ(progress.outstanding(), 2U);
  EXPECT_TRUE(progress.done(14));
  EXPECT_TRUE(progress.done(13));
  EXPECT_EQ(progress.take_commit(), 15);
  progress.restore_commit(15);
  EXPECT_EQ(progress.take_commit(), 15) << "a failed commit is offered again";
}
