// SPDX-License-Identifier: Apache-2.0
#include "pulsar_conformance.hpp"

#include "pulsar_client.hpp"
#include "pulsar_projection.hpp"

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/pulsar/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <map>

namespace babelqueue::pulsar {
namespace {

// What the block's property_projection says a message must carry, compared
// with the payload and properties of a message; empty when it matches.
std::string compare(const Value& projection, const std::string& body, const std::string& payload,
                    const pulsar_detail::Properties& properties) {
  std::string why;
  if (payload != body) why += "the payload is not the envelope byte for byte; ";
  std::map<std::string, std::string> seen;
  for (const auto& [name, value] : properties) {
    if (!seen.emplace(name, value).second) why += "property " + name + " twice; ";
  }
  const Object& expected = projection["properties"].as_object();
  for (const auto& [name, value] : expected) {
    auto found = seen.find(name);
    if (found == seen.end()) {
      why += name + " missing; ";
    } else if (found->second != value.as_string()) {
      why += name + " is \"" + found->second + "\", expected \"" + value.as_string() + "\"; ";
    }
  }
  for (const auto& [name, value] : seen) {
    if (!expected.contains(name)) why += "unexpected property " + name + "; ";
  }
  return why;
}

// Publishes body through the transport to a fresh topic of the live broker
// and reads the message back with a plain consumer of the protocol client.
Result<pulsar_detail::InMessage> round_trip(const std::string& url_text, const std::string& body) {
  auto url = Url::parse(url_text);
  if (!url) return unexpected(url.error());
  auto options = Transport::options_from_url(*url);
  if (!options) return unexpected(options.error());
  options->log = {};
  auto transport = Transport::open(*options);
  if (!transport) return unexpected(transport.error());
  const std::string queue = "bq-conformance-" + uuid_v4().substr(0, 8);
  const std::string topic = (*transport)->topic(queue);
  if (auto published = (*transport)->publish(queue, body); !published) return unexpected(published.error());
  (*transport)->close();

  pulsar_detail::ClientOptions raw;
  raw.host = options->host;
  raw.port = options->port;
  raw.tls = options->tls;
  raw.token = options->token;
  auto client = pulsar_detail::Client::connect(raw);
  if (!client) return unexpected(client.error());
  // A subscription of its own, at the earliest position: it sees the message.
  auto received = (*client)->receive(topic, "bq-conformance", 1, std::chrono::seconds(10));
  if (!received) return unexpected(received.error());
  if (received->empty()) return unexpected(Errc::not_found, "the published message was not received back");
  static_cast<void>((*client)->ack(received->front().handle));
  auto message = std::move(received->front());
  (*client)->close(std::chrono::seconds(2));
  return message;
}

void run_section(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                 conformance::Reporter& reporter) {
  const Value& projection = block["property_projection"];
  const std::string body = suite.read_file(projection["envelope_file"].as_string());
  const auto made = make_message(body, {});
  if (const std::string why = compare(projection, body, made.payload, made.properties); why.empty()) {
    reporter.pass("pulsar/property_projection");
  } else {
    reporter.fail("pulsar/property_projection", why);
  }
  const std::string live = "pulsar/property_projection/broker";
  if (!options.url || !options.url->starts_with("pulsar")) {
    reporter.skip(live, "needs --url pulsar://...");
  } else if (auto read_back = round_trip(*options.url, body); !read_back) {
    reporter.fail(live, read_back.error().message());
  } else if (const std::string why = compare(projection, body, read_back->payload, read_back->properties);
             !why.empty()) {
    reporter.fail(live, why);
  } else {
    reporter.pass(live);
  }

  for (const Value& c : block["attempts_reconciliation"]["cases"].as_array()) {
    const std::string name = "pulsar/attempts_reconciliation/" + c["name"].as_string();
    // The transport's own reading of a message with that redeliveryCount,
    // then the runtime's merge.
    pulsar_detail::InMessage message;
    message.payload = body;
    message.redelivery_count = static_cast<std::uint32_t>(c["redelivery_count"].as_int64());
    const Delivery delivery = to_delivery("conformance", std::move(message));
    const std::int64_t attempts =
        AttemptsRule{delivery.attempts_merge}.reconcile(c["body_attempts"].as_int64(), delivery.native_attempts);
    const std::int64_t want = c["expected_attempts"].as_int64();
    if (attempts == want) {
      reporter.pass(name);
    } else {
      reporter.fail(name, "attempts " + std::to_string(attempts) + ", expected " + std::to_string(want));
    }
  }
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) { runner.add_section("pulsar", run_section); }

}  // namespace babelqueue::pulsar
