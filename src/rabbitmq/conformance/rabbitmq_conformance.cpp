// SPDX-License-Identifier: Apache-2.0
#include "rabbitmq_conformance.hpp"

#include "amqp_projection.hpp"
#include "rabbitmq_raw.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>

#include <map>
#include <string>
#include <variant>

namespace babelqueue::rabbitmq {
namespace {

constexpr const char* kName = "rabbitmq.property_projection";

struct Expected {
  std::map<std::string, std::string> properties;
  std::map<std::string, std::int64_t> integer_headers;
  std::map<std::string, std::string> string_headers;
};

Expected expected_of(const Value& projection) {
  Expected expected;
  if (const Value* props = projection.find("properties"); props != nullptr && props->is_object()) {
    for (const auto& [key, value] : props->as_object()) expected.properties[key] = value.as_string();
  }
  if (const Value* headers = projection.find("headers"); headers != nullptr && headers->is_object()) {
    for (const auto& [key, value] : headers->as_object()) {
      if (value.is_integer()) {
        expected.integer_headers[key] = value.as_int64();
      } else {
        expected.string_headers[key] = value.as_string();
      }
    }
  }
  return expected;
}

// "" when message matches expected, else what differs.
std::string compare(const Expected& expected, const raw::Message& message, const std::string& body) {
  if (message.body != body) return "body bytes differ";
  if (message.delivery_mode != 2) return "delivery_mode is not 2 (persistent)";
  for (const auto& [key, value] : expected.properties) {
    auto it = message.properties.find(key);
    if (it == message.properties.end()) return "property " + key + " missing";
    if (it->second != value) return "property " + key + ": expected '" + value + "', got '" + it->second + "'";
  }
  for (const auto& [key, value] : expected.integer_headers) {
    auto it = message.headers.find(key);
    if (it == message.headers.end()) return "header " + key + " missing";
    const auto* number = std::get_if<std::int64_t>(&it->second);
    if (number == nullptr)
      return "header " + key + " is not an integer (field kind '" + message.header_kinds.at(key) + "')";
    if (*number != value)
      return "header " + key + ": expected " + std::to_string(value) + ", got " + std::to_string(*number);
  }
  for (const auto& [key, value] : expected.string_headers) {
    auto it = message.headers.find(key);
    if (it == message.headers.end()) return "header " + key + " missing";
    const auto* text = std::get_if<std::string>(&it->second);
    if (text == nullptr || *text != value) return "header " + key + ": expected '" + value + "'";
  }
  return {};
}

// The projection as the transport computes it, read like a broker would.
raw::Message computed(const std::string& body) {
  raw::Message message;
  message.body = body;
  auto projection = detail::project(body, {});
  if (!projection) return message;
  std::vector<amqp_table_entry_t> entries;
  const amqp_basic_properties_t p = detail::properties(*projection, entries);
  auto put = [&](amqp_flags_t flag, const char* name, amqp_bytes_t value) {
    if ((p._flags & flag) != 0) message.properties[name] = std::string(detail::view(value));
  };
  put(AMQP_BASIC_TYPE_FLAG, "type", p.type);
  put(AMQP_BASIC_CORRELATION_ID_FLAG, "correlation_id", p.correlation_id);
  put(AMQP_BASIC_MESSAGE_ID_FLAG, "message_id", p.message_id);
  put(AMQP_BASIC_APP_ID_FLAG, "app_id", p.app_id);
  put(AMQP_BASIC_CONTENT_TYPE_FLAG, "content_type", p.content_type);
  if ((p._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) != 0) message.delivery_mode = p.delivery_mode;
  for (const amqp_table_entry_t& entry : entries) {
    const std::string name(detail::view(entry.key));
    message.header_kinds[name] = static_cast<char>(entry.value.kind);
    if (auto number = detail::field_integer(entry.value)) {
      message.headers[name] = *number;
    } else if (auto text = detail::field_text(entry.value)) {
      message.headers[name] = *text;
    }
  }
  return message;
}

void run(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
         conformance::Reporter& reporter) {
  const Value* projection = block.find("property_projection");
  if (projection == nullptr || projection->find("envelope_file") == nullptr) {
    reporter.fail(kName, "the manifest has no rabbitmq.property_projection.envelope_file");
    return;
  }
  std::string body;
  try {
    body = suite.read_file(projection->find("envelope_file")->as_string());
  } catch (const std::exception& error) {
    reporter.fail(kName, error.what());
    return;
  }
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  const Expected expected = expected_of(*projection);

  if (std::string why = compare(expected, computed(body), body); why.empty()) {
    reporter.pass(std::string(kName) + " (computed)");
  } else {
    reporter.fail(std::string(kName) + " (computed)", why);
  }

  const std::string broker_check = std::string(kName) + " (read back from the broker)";
  std::optional<Url> url;
  if (options.url) {
    if (auto parsed = Url::parse(*options.url); parsed && (parsed->scheme == "amqp" || parsed->scheme == "amqps")) {
      url = *parsed;
    }
  }
  if (!url) {
    reporter.skip(broker_check, "needs --url amqp://...");
    return;
  }
  auto transport_options = rabbitmq::Transport::options_from_url(*url);
  if (!transport_options) return reporter.fail(broker_check, transport_options.error().message());
  auto transport = rabbitmq::Transport::open(*transport_options);
  if (!transport) return reporter.fail(broker_check, transport.error().message());
  const std::string queue = "bq-conformance-" + uuid_v4().substr(0, 8);
  if (auto published = (*transport)->publish(queue, body); !published) {
    return reporter.fail(broker_check, published.error().message());
  }
  auto client = raw::Client::connect(*options.url);
  if (!client) return reporter.fail(broker_check, client.error().message());
  auto got = client->get(queue);
  [[maybe_unused]] auto deleted = client->delete_queue(queue);
  if (!got) return reporter.fail(broker_check, got.error().message());
  if (!*got) return reporter.fail(broker_check, "the published message is not in " + queue);
  if (std::string why = compare(expected, **got, body); why.empty()) {
    reporter.pass(broker_check);
  } else {
    reporter.fail(broker_check, why);
  }
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) { runner.add_section("rabbitmq", run); }

}  // namespace babelqueue::rabbitmq
