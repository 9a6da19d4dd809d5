// SPDX-License-Identifier: Apache-2.0
#include "servicebus_conformance.hpp"

#include "../servicebus_connection.hpp"
#include "../servicebus_projection.hpp"
#include "client.hpp"

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/servicebus/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <map>
#include <proton/binary.hpp>
#include <proton/scalar.hpp>
#include <proton/types.hpp>

namespace babelqueue::servicebus {
namespace {

bool is_integral(proton::type_id t) { return t == proton::INT || t == proton::LONG; }

// What the block's property_projection says a message must carry, compared
// with message; empty when it matches. Numbers must be AMQP integers (an
// int for bq-schema-version, a long for bq-created-at, as the binding
// says), strings AMQP strings.
std::string compare(const Value& projection, const std::string& body, const proton::message& message) {
  std::string why;
  if (message.body().type() != proton::BINARY || !message.inferred()) {
    why += "the body is not a Data section; ";
  } else {
    const auto data = proton::get<proton::binary>(message.body());
    if (std::string(data.begin(), data.end()) != body) why += "the Data section is not the envelope; ";
  }
  const Value& fields = projection["message"];
  if (message.subject() != fields["subject"].as_string()) why += "subject is '" + message.subject() + "'; ";
  if (proton::to_string(message.correlation_id()) != fields["correlation_id"].as_string()) {
    why += "correlation-id is " + proton::to_string(message.correlation_id()) + "; ";
  }
  if (proton::to_string(message.id()) != fields["message_id"].as_string()) {
    why += "message-id is " + proton::to_string(message.id()) + "; ";
  }
  if (message.content_type() != fields["content_type"].as_string()) {
    why += "content-type is '" + message.content_type() + "'; ";
  }
  std::map<std::string, proton::scalar> properties;
  if (!message.properties().empty()) proton::get(message.properties().value(), properties);
  const Object& expected = projection["application_properties"].as_object();
  const std::map<std::string, proton::type_id> typed = {{"bq-schema-version", proton::INT},
                                                        {"bq-created-at", proton::LONG}};
  for (const auto& [name, value] : expected) {
    auto found = properties.find(name);
    if (found == properties.end()) {
      why += name + " missing; ";
      continue;
    }
    const proton::scalar& got = found->second;
    if (value.is_string()) {
      if (got.type() != proton::STRING || proton::get<std::string>(got) != value.as_string()) {
        why += name + " is " + proton::to_string(got) + ", expected the string \"" + value.as_string() + "\"; ";
      }
      continue;
    }
    if (!is_integral(got.type()) || proton::coerce<std::int64_t>(got) != value.as_int64()) {
      why += name + " is " + proton::to_string(got) + " (" + proton::type_name(got.type()) + "), expected the number " +
             std::to_string(value.as_int64()) + "; ";
    } else if (auto t = typed.find(name); t != typed.end() && got.type() != t->second) {
      why += name + " is an AMQP " + proton::type_name(got.type()) + ", the binding says " +
             proton::type_name(t->second) + "; ";
    }
  }
  for (const auto& [name, value] : properties) {
    if (!expected.contains(name)) why += "unexpected property " + name + "; ";
  }
  return why;
}

// Publishes body through the transport to a fresh queue of the live
// namespace and reads the message back with a plain AMQP receiver.
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

  auto raw = connection_options(*options);
  if (!raw) return unexpected(raw.error());
  raw->credit_window = 1;
  auto client = amqp10::Client::connect(std::move(*raw));
  if (!client) return unexpected(client.error());
  auto received = (*client)->receive(queue, 1, std::chrono::seconds(10));
  if (!received) return unexpected(received.error());
  if (received->empty()) return unexpected(Errc::not_found, "the published message was not received back");
  const std::uint64_t id = received->front().id;
  static_cast<void>((*client)->settle_confirmed(std::span<const std::uint64_t>(&id, 1), amqp10::Outcome::accepted(),
                                                std::chrono::seconds(10)));
  proton::message message = std::move(received->front().message);
  (*client)->close();
  return message;
}

void run_section(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                 conformance::Reporter& reporter) {
  const Value& projection = block["property_projection"];
  const std::string body = suite.read_file(projection["envelope_file"].as_string());
  // The message as it goes on the wire: encoded and decoded again.
  proton::message computed;
  {
    std::vector<char> bytes;
    make_message(body, {}).encode(bytes);
    computed.decode(bytes);
  }
  if (const std::string why = compare(projection, body, computed); why.empty()) {
    reporter.pass("asb/property_projection");
  } else {
    reporter.fail("asb/property_projection", why);
  }
  const std::string live = "asb/property_projection/broker";
  const bool ours = options.url && (options.url->starts_with("sb://") || options.url->starts_with("servicebus://") ||
                                    options.url->starts_with("azureservicebus://"));
  if (!ours) {
    reporter.skip(live, "needs --url sb://... (credentials in AZURE_SERVICEBUS_CONNECTION_STRING)");
  } else if (auto read_back = round_trip(*options.url, body); !read_back) {
    reporter.fail(live, read_back.error().message());
  } else if (const std::string why = compare(projection, body, *read_back); !why.empty()) {
    reporter.fail(live, why);
  } else {
    reporter.pass(live);
  }

  for (const Value& c : block["attempts_reconciliation"]["cases"].as_array()) {
    const std::string name = "asb/attempts_reconciliation/" + c["name"].as_string();
    const std::int64_t delivery_count = c["delivery_count"].as_int64();
    // The transport's own reading: the service puts DeliveryCount - 1 in the
    // header's delivery-count (a DeliveryCount below 1 never reaches the
    // wire: the rule alone reads it).
    std::optional<std::int64_t> native;
    AttemptsMerge merge = kOneBasedDeliveryCount.merge;
    if (delivery_count >= 1) {
      proton::message message(body);
      message.delivery_count(static_cast<std::uint32_t>(delivery_count - 1));
      const Delivery delivery = to_delivery("conformance", 0, message, proton::binary());
      native = delivery.native_attempts;
      merge = delivery.attempts_merge;
    } else {
      native = native_attempts_of_delivery_count(delivery_count);
    }
    const std::int64_t attempts = AttemptsRule{merge}.reconcile(c["body_attempts"].as_int64(), native);
    const std::int64_t want = c["expected_attempts"].as_int64();
    if (attempts == want) {
      reporter.pass(name);
    } else {
      reporter.fail(name, "attempts " + std::to_string(attempts) + ", expected " + std::to_string(want));
    }
  }
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) { runner.add_section("asb", run_section); }

}  // namespace babelqueue::servicebus
