// SPDX-License-Identifier: Apache-2.0
#include "artemis_conformance.hpp"

#include "../artemis_projection.hpp"
#include "client.hpp"

#include <babelqueue/artemis/transport.hpp>
#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/uuid.hpp>

#include <map>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/types.hpp>

namespace babelqueue::artemis {
namespace {

// What the block's property_projection says a message must carry, compared
// with message; empty when it matches.
std::string compare(const Value& projection, const std::string& body, const proton::message& message) {
  std::string why;
  if (message.body().type() != proton::STRING || proton::get<std::string>(message.body()) != body) {
    why += "the body is not the envelope as an AMQP string; ";
  }
  auto annotations = message.message_annotations();
  const proton::value jms_type = annotations.get(proton::symbol(projection["jms_type_annotation"].as_string()));
  if (jms_type.type() != proton::STRING || proton::get<std::string>(jms_type) != projection["jms_type"].as_string()) {
    why += projection["jms_type_annotation"].as_string() + " is " + proton::to_string(jms_type) + "; ";
  }
  if (proton::to_string(message.correlation_id()) != projection["correlation_id"].as_string()) {
    why += "correlation-id is " + proton::to_string(message.correlation_id()) + "; ";
  }
  auto envelope = Envelope::decode(body);
  if (envelope && message.creation_time().milliseconds() != envelope->created_at()) {
    why += "creation-time is " + std::to_string(message.creation_time().milliseconds()) + "; ";
  }
  std::map<std::string, proton::scalar> properties;
  if (!message.properties().empty()) proton::get(message.properties().value(), properties);
  const Object& expected = projection["properties"].as_object();
  for (const auto& [name, value] : expected) {
    auto found = properties.find(name);
    if (found == properties.end()) {
      why += name + " missing; ";
    } else if (found->second.type() != proton::STRING || proton::get<std::string>(found->second) != value.as_string()) {
      why += name + " is " + proton::to_string(found->second) + ", expected the string \"" + value.as_string() + "\"; ";
    }
  }
  for (const auto& [name, value] : properties) {
    if (!expected.contains(name)) why += "unexpected property " + name + "; ";
  }
  return why;
}

// Publishes body through the transport to a fresh queue of the live broker
// and reads the message back with a plain AMQP receiver.
Result<proton::message> round_trip(const std::string& url_text, const std::string& body) {
  auto url = Url::parse(url_text);
  if (!url) return unexpected(url.error());
  auto options = Transport::options_from_url(*url);
  if (!options) return unexpected(options.error());
  options->log = {};
  auto transport = Transport::open(*options);
  if (!transport) return unexpected(transport.error());
  const std::string queue = "bq-conformance-" + uuid_v4().substr(0, 8);
  if (auto published = (*transport)->publish(queue, body); !published) return unexpected(published.error());
  (*transport)->close();

  amqp10::ConnectionOptions raw;
  raw.host = options->host;
  raw.port = options->port;
  raw.user = options->user;
  raw.password = options->password;
  raw.tls = options->tls;
  raw.terminus_capabilities = {"queue"};
  raw.credit_window = 1;
  auto client = amqp10::Client::connect(raw);
  if (!client) return unexpected(client.error());
  auto received = (*client)->receive(queue, 1, std::chrono::seconds(5));
  if (!received) return unexpected(received.error());
  if (received->empty()) return unexpected(Errc::not_found, "the published message was not received back");
  static_cast<void>((*client)->settle(received->front().id, amqp10::Outcome::accepted()));
  proton::message message = std::move(received->front().message);
  (*client)->close();
  return message;
}

void run_section(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                 conformance::Reporter& reporter) {
  const Value& projection = block["property_projection"];
  const std::string body = suite.read_file(projection["envelope_file"].as_string());
  if (const std::string why = compare(projection, body, make_message(body, {}, std::nullopt)); why.empty()) {
    reporter.pass("artemis/property_projection");
  } else {
    reporter.fail("artemis/property_projection", why);
  }
  const std::string live = "artemis/property_projection/broker";
  if (!options.url || !options.url->starts_with("artemis")) {
    reporter.skip(live, "needs --url artemis://...");
  } else if (auto read_back = round_trip(*options.url, body); !read_back) {
    reporter.fail(live, read_back.error().message());
  } else if (const std::string why = compare(projection, body, *read_back); !why.empty()) {
    reporter.fail(live, why);
  } else {
    reporter.pass(live);
  }

  for (const Value& c : block["attempts_reconciliation"]["cases"].as_array()) {
    const std::string name = "artemis/attempts_reconciliation/" + c["name"].as_string();
    // The transport's own reading of a message with that delivery-count,
    // then the runtime's merge.
    proton::message message(body);
    message.delivery_count(static_cast<std::uint32_t>(c["delivery_count"].as_int64()));
    const Delivery delivery = to_delivery("conformance", 0, message);
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

void add_conformance_section(conformance::Runner& runner) { runner.add_section("artemis", run_section); }

}  // namespace babelqueue::artemis
