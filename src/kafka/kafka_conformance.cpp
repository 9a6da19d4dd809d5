// SPDX-License-Identifier: Apache-2.0
#include "kafka_conformance.hpp"

#include "kafka_record.hpp"
#include "transport_access.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace babelqueue::kafka {
namespace {

using namespace std::chrono_literals;
using detail::RecordHeaders;

struct RawRecord {
  std::string value;
  RecordHeaders headers;
  std::int64_t timestamp = 0;
};

// Reads count records of partition 0 of topic from the beginning with a plain
// librdkafka consumer (no group), so what the broker holds is checked, not
// what the transport makes of it.
Result<std::vector<RawRecord>> read_back(const std::string& servers, const std::string& topic, std::size_t count) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  conf->set("bootstrap.servers", servers, error);
  conf->set("group.id", "babelqueue-conformance-reader", error);
  conf->set("enable.auto.commit", "false", error);
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!consumer) return unexpected(Errc::internal, "raw consumer: " + error);
  std::vector<RdKafka::TopicPartition*> partitions{
      RdKafka::TopicPartition::create(topic, 0, RdKafka::Topic::OFFSET_BEGINNING)};
  consumer->assign(partitions);
  RdKafka::TopicPartition::destroy(partitions);
  std::vector<RawRecord> out;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> message(consumer->consume(200));
    if (message->err() != RdKafka::ERR_NO_ERROR) continue;
    RawRecord record;
    record.value.assign(static_cast<const char*>(message->payload()), message->len());
    record.timestamp = message->timestamp().timestamp;
    if (const RdKafka::Headers* headers = message->headers()) {
      for (const RdKafka::Headers::Header& h : headers->get_all()) {
        record.headers.emplace_back(h.key(), std::string(static_cast<const char*>(h.value()), h.value_size()));
      }
    }
    out.push_back(std::move(record));
  }
  consumer->close();
  if (out.size() < count) return unexpected(Errc::timeout, "only " + std::to_string(out.size()) + " records read back");
  return out;
}

// Produces one record with exactly these headers (another producer's record).
Result<void> produce_raw(const std::string& servers, const std::string& topic, const std::string& value,
                         const RecordHeaders& headers) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  conf->set("bootstrap.servers", servers, error);
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), error));
  if (!producer) return unexpected(Errc::internal, "raw producer: " + error);
  RdKafka::Headers* list = RdKafka::Headers::create();
  for (const auto& [name, text] : headers) list->add(name, text);
  RdKafka::ErrorCode code = producer->produce(topic, 0, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()),
                                              value.size(), nullptr, 0, 0, list, nullptr);
  if (code != RdKafka::ERR_NO_ERROR) {
    delete list;
    return unexpected(Errc::broker, RdKafka::err2str(code));
  }
  if (producer->flush(10000) != RdKafka::ERR_NO_ERROR) return unexpected(Errc::timeout, "raw produce not flushed");
  return {};
}

Result<kafka::Transport::Options> options_of(const std::string& text) {
  auto url = Url::parse(text);
  if (!url) return unexpected(url.error());
  return kafka::Transport::options_from_url(*url);
}

std::string describe(const RecordHeaders& headers) {
  std::string out;
  for (const auto& [name, value] : headers) out += name + "=" + value + " ";
  return out;
}

void check_projection(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                      conformance::Reporter& reporter) {
  const Value& projection = block["property_projection"];
  const std::string body = suite.read_file(projection["envelope_file"].as_string());
  RecordHeaders expected;
  for (const auto& [name, value] : projection["headers"].as_object()) expected.emplace_back(name, value.as_string());
  const detail::Projection projected = detail::project(body);
  if (projected.headers == expected) {
    reporter.pass("kafka.property_projection");
  } else {
    reporter.fail("kafka.property_projection", "expected " + describe(expected) + "got " + describe(projected.headers));
  }

  const std::string name = "kafka.property_projection.broker";
  if (!options.url || options.url->rfind("kafka://", 0) != 0) {
    reporter.skip(name, "needs --url kafka://...");
    return;
  }
  auto transport_options = options_of(*options.url);
  if (!transport_options) return reporter.fail(name, transport_options.error().message());
  auto transport = kafka::Transport::open(*transport_options);
  if (!transport) return reporter.fail(name, transport.error().message());
  const std::string topic = "conformance-projection-" + uuid_v4().substr(0, 8);
  if (auto sent = (*transport)->publish(topic, body); !sent) return reporter.fail(name, sent.error().message());
  (*transport)->close();
  auto records = read_back(transport_options->bootstrap_servers, topic, 1);
  if (!records) return reporter.fail(name, records.error().message());
  const RawRecord& record = records->front();
  auto envelope = Envelope::decode(body);
  if (record.value != body) return reporter.fail(name, "the record value is not the envelope byte for byte");
  if (!envelope || record.timestamp != envelope->created_at().value_or(-1)) {
    return reporter.fail(name, "record timestamp " + std::to_string(record.timestamp) + " is not meta.created_at");
  }
  for (const auto& header : expected) {
    bool found = false;
    for (const auto& got : record.headers) found = found || got == header;
    if (!found) return reporter.fail(name, "header " + header.first + "=" + header.second + " not on the record");
  }
  reporter.pass(name);
}

void check_attempts(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                    conformance::Reporter& reporter) {
  const Value& reconciliation = block["attempts_reconciliation"];
  const std::string fixture = suite.read_file(block["property_projection"]["envelope_file"].as_string());
  auto envelope = Envelope::decode(fixture);
  if (!envelope) return reporter.fail("kafka.attempts_reconciliation", "the fixture does not decode");

  const bool live = options.url && options.url->rfind("kafka://", 0) == 0;
  std::unique_ptr<kafka::Transport> transport;
  std::string servers;
  std::string topic;
  if (live) {
    auto parsed = options_of(*options.url);
    if (!parsed) return reporter.fail("kafka.attempts_reconciliation.broker", parsed.error().message());
    parsed->group = "conformance-" + uuid_v4().substr(0, 8);
    servers = parsed->bootstrap_servers;
    auto opened = kafka::Transport::open(*parsed);
    if (!opened) return reporter.fail("kafka.attempts_reconciliation.broker", opened.error().message());
    transport = std::move(*opened);
    topic = "conformance-attempts-" + uuid_v4().substr(0, 8);
    if (auto made = babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic); !made) {
      return reporter.fail("kafka.attempts_reconciliation.broker", made.error().message());
    }
  }
  for (const Value& item : reconciliation["cases"].as_array()) {
    const std::string name = "kafka.attempts_reconciliation." + item["name"].as_string();
    const std::int64_t body_attempts = item["body_attempts"].as_int64();
    const std::int64_t expected = item["expected_attempts"].as_int64();
    auto body = envelope->encode_with_attempts(body_attempts);
    if (!body) return reporter.fail(name, body.error().message());
    RecordHeaders headers;
    if (!item["header_attempts"].is_null()) {
      headers.emplace_back(std::string(detail::kAttemptsHeader), std::to_string(item["header_attempts"].as_int64()));
    }
    if (!live) {
      reporter.skip(name + ".broker", "needs --url kafka://...");
      continue;
    }
    // Another producer's record, received through the transport; the runtime's rule
    // (authoritative header, else the body) applied to what the Delivery says.
    if (auto sent = produce_raw(servers, topic, *body, headers); !sent)
      return reporter.fail(name, sent.error().message());
    auto received = transport->receive(topic, 1, 15s);
    if (!received || received->empty()) {
      reporter.fail(name, received ? "nothing received" : received.error().message());
      continue;
    }
    const Delivery& delivery = received->front();
    auto decoded = Envelope::decode(delivery.body);
    std::int64_t attempts = decoded ? decoded->attempts() : -1;
    attempts = AttemptsRule{delivery.attempts_merge}.reconcile(attempts, delivery.native_attempts);
    (void)transport->ack(delivery);
    if (attempts == expected) {
      reporter.pass(name);
    } else {
      reporter.fail(name, "expected attempts " + std::to_string(expected) + ", got " + std::to_string(attempts));
    }
  }
  if (transport) transport->close();
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) {
  runner.add_section("kafka", [](const conformance::Suite& suite, const Value& block,
                                 const conformance::Options& options, conformance::Reporter& reporter) {
    check_projection(suite, block, options, reporter);
    check_attempts(suite, block, options, reporter);
  });
}

}  // namespace babelqueue::kafka
