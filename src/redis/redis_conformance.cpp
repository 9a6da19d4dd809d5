// SPDX-License-Identifier: Apache-2.0
#include "redis_conformance.hpp"

#include "redis_connection.hpp"

#include <babelqueue/redis/transport.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>

#include <chrono>

namespace babelqueue::redis {
namespace {

using namespace std::chrono_literals;

// The list elements of queue, read with a connection of our own (LRANGE),
// so the check sees what Redis stores rather than what the transport says.
Result<std::vector<std::string>> stored_elements(const redis::Transport::Options& options, const std::string& queue) {
  auto endpoint = redis_detail::endpoint_of(options);
  if (!endpoint) return unexpected(endpoint.error());
  auto connection = redis_detail::Connection::open(*endpoint, options.connect_timeout);
  if (!connection) return unexpected(connection.error());
  auto reply = (*connection)->execute(redis_detail::Command{"LRANGE", queue, "0", "-1"}, options.command_timeout);
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(Errc::broker, reply->text);
  std::vector<std::string> elements;
  for (const auto& element : reply->elements) elements.push_back(element.text);
  return elements;
}

void payload_identity(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                      conformance::Reporter& reporter) {
  const std::string name = "redis.payload_identity";
  const Value* check = block.find("payload_identity");
  if (check == nullptr || !check->is_object() || check->find("envelope_file") == nullptr) {
    reporter.fail(name, "the manifest's redis block has no payload_identity.envelope_file");
    return;
  }
  const std::string envelope = suite.read_file(check->find("envelope_file")->as_string());
  std::optional<Url> url;
  if (options.url) {
    if (auto parsed = Url::parse(*options.url); parsed && (parsed->scheme == "redis" || parsed->scheme == "rediss")) {
      url = std::move(*parsed);
    }
  }
  if (!url) {
    reporter.skip(name, "needs --url redis://... (a live Redis)");
    return;
  }
  auto transport_options = redis::Transport::options_from_url(*url);
  if (!transport_options) {
    reporter.fail(name, transport_options.error().message());
    return;
  }
  auto transport = redis::Transport::open(*transport_options);
  if (!transport) {
    reporter.fail(name, transport.error().message());
    return;
  }
  const std::string queue = "conformance-payload-identity-" + uuid_v4();

  // Produce: the list element is the envelope, byte for byte.
  if (auto published = (*transport)->publish(queue, envelope); !published) {
    reporter.fail(name + ".produce", published.error().message());
    return;
  }
  auto stored = stored_elements(*transport_options, queue);
  if (!stored) {
    reporter.fail(name + ".produce", "cannot read the list back: " + stored.error().message());
  } else if (stored->size() != 1 || stored->front() != envelope) {
    reporter.fail(name + ".produce", "the list element is not the envelope byte for byte");
  } else {
    reporter.pass(name + ".produce");
  }

  // Reserve: the same bytes come back, with nothing added.
  auto received = (*transport)->receive(queue, 1, 2s);
  if (!received || received->size() != 1) {
    reporter.fail(name + ".reserve", received ? "nothing was received" : received.error().message());
    return;
  }
  const Delivery& delivery = received->front();
  if (delivery.body != envelope || !delivery.headers.empty()) {
    reporter.fail(name + ".reserve", "the reserved body differs from the envelope or carries headers");
  } else {
    reporter.pass(name + ".reserve");
  }
  if (auto acked = (*transport)->ack(delivery); !acked) reporter.fail(name + ".ack", acked.error().message());
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) { runner.add_section("redis", payload_identity); }

}  // namespace babelqueue::redis
