// SPDX-License-Identifier: Apache-2.0
#include "artemis_projection.hpp"
#include "chunked_send.hpp"
#include "client.hpp"

#include <babelqueue/artemis/transport.hpp>
#include <babelqueue/binding.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace babelqueue::artemis {

namespace {

constexpr std::uint16_t kDefaultPort = 5672;

Result<void> check_queue(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

}  // namespace

class Transport::State {
 public:
  State(Options o, std::unique_ptr<amqp10::Client> c) : options(std::move(o)), client(std::move(c)) {}

  Options options;
  std::unique_ptr<amqp10::Client> client;
};

Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

Transport::~Transport() { close(); }

Result<std::unique_ptr<Transport>> Transport::open(Options options) {
  if (options.credit == 0) return unexpected(Errc::invalid_argument, "artemis: credit must be at least 1");
  amqp10::ConnectionOptions c;
  c.host = options.host.empty() ? "localhost" : options.host;
  c.port = options.port;
  c.user = options.user;
  c.password = options.password;
  c.tls = options.tls;
  c.container_id = options.container_id;
  c.connect_timeout = options.connect_timeout;
  c.idle_timeout = options.idle_timeout;
  c.reconnect = options.reconnect;
  c.credit_window = options.credit;
  c.max_message_size = options.max_message_size;
  // Anycast: without it an address created on first attach is multicast and
  // a message sent before any receiver exists is dropped.
  c.terminus_capabilities = {"queue"};
  c.reader = read_delivery;
  c.log = options.log;
  auto client = amqp10::Client::connect(std::move(c));
  if (!client) {
    return unexpected(client.error().code(), "artemis: " + client.error().message());
  }
  return std::unique_ptr<Transport>(new Transport(std::make_unique<State>(std::move(options), std::move(*client))));
}

Result<Transport::Options> Transport::options_from_url(const Url& url) {
  if (url.scheme != "artemis" && url.scheme != "artemis+ssl") {
    return unexpected(Errc::invalid_argument, "not an artemis:// or artemis+ssl:// URL: " + url.redacted());
  }
  if (url.host.find(',') != std::string::npos) {
    return unexpected(Errc::invalid_argument, "artemis: one host per URL (no failover list), got " + url.redacted());
  }
  if (!url.path.empty()) {
    return unexpected(Errc::invalid_argument,
                      "an artemis URL is artemis[+ssl]://[user:password@]host[:port][?options], got " + url.redacted());
  }
  Options options;
  options.host = url.host.empty() ? "localhost" : url.host;
  options.port = url.port.value_or(kDefaultPort);
  options.user = url.user;
  options.password = url.password;
  UrlOptionReader read(url);
  read.integer("credit", options.credit, 1, 100000);
  read.integer("max_message_size", options.max_message_size, 0, std::numeric_limits<std::int64_t>::max());
  read.duration("connect_timeout", options.connect_timeout,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("publish_timeout", options.publish_timeout,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("idle_timeout", options.idle_timeout, {.max = std::chrono::hours(1)});
  read.duration("reconnect_min", options.reconnect.initial,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("reconnect_max", options.reconnect.max,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.text("container_id", options.container_id);
  options.tls.enabled = url.scheme == "artemis+ssl";
  read.tls(options.tls, "artemis+ssl://");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  if (auto checked = options.tls.check(); !checked) return unexpected(checked.error());
  if (options.user.empty() && !options.password.empty()) {
    return unexpected(Errc::invalid_argument, "artemis: a password without a user in " + url.redacted());
  }
  return options;
}

const Transport::Options& Transport::options() const noexcept { return state_->options; }

Capabilities Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;
  caps.native_release = true;
  caps.delivery_count = true;
  caps.redelivers_unsettled = true;
  caps.extendable_lease = false;  // no lock timeout: a held message stays held
  caps.batch_publish = true;
  // ack_batch() is one hand-over to the connection's thread, but an ack is
  // no round trip here (nothing waits for the broker): a Worker gathering
  // acks for it (copies, a flusher thread) spent more than it saved.
  caps.batch_ack = false;
  caps.ordering_key = true;               // AMQP group-id: Artemis message groups
  caps.deduplication = true;              // _AMQ_DUPL_ID, Artemis's duplicate detection
  caps.broker_dead_letter_policy = true;  // its dead-letter address after max-delivery-attempts
  caps.peek = true;                       // a copy-mode link: a queue browser
  return caps;
}

Result<void> Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (auto ok = check_queue(queue); !ok) return ok;
  if (options.delay.count() < 0) return unexpected(Errc::invalid_argument, "artemis: a negative delay");
  MessageEncoder encoder;
  amqp10::EncodedMessages encoded;
  if (auto appended = encoder.append(body, options, std::nullopt, encoded); !appended) {
    return unexpected(appended.error().code(), "artemis: " + appended.error().message());
  }
  auto sent = state_->client->send(queue, std::move(encoded), state_->options.publish_timeout);
  if (!sent)
    return unexpected(sent.error().code(),
                      "artemis: publish to '" + std::string(queue) + "': " + sent.error().message());
  return {};
}

Result<void> Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  for (const auto& m : messages) {
    if (auto ok = check_queue(m.queue); !ok) return ok;
    if (m.options.delay.count() < 0) return unexpected(Errc::invalid_argument, "artemis: a negative delay");
  }
  // Streamed in chunks: the first transfers are on the wire while the rest
  // are being encoded (chunked_send.hpp).
  MessageEncoder encoder;
  return amqp10::send_in_chunks(*state_->client, messages, state_->options.publish_timeout, "artemis",
                                [&](const OutgoingMessage& m, amqp10::EncodedMessages& out) {
                                  return encoder.append(m.body, m.options, std::nullopt, out);
                                });
}

Result<std::vector<Delivery>> Transport::receive(std::string_view queue, std::size_t max,
                                                 std::chrono::milliseconds wait) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "artemis: receive of 0 messages");
  auto incoming = state_->client->receive(queue, max, wait);
  if (!incoming) return unexpected(incoming.error());
  std::vector<Delivery> out;
  out.reserve(incoming->size());
  for (auto& in : *incoming) {
    if (in.read) {
      out.push_back(std::move(static_cast<DeliveryRead&>(*in.read).delivery));
      out.back().token.id = in.id;
    } else {
      out.push_back(to_delivery(queue, in.id, in.message));  // the reader threw: read here
    }
  }
  state_->client->recycle(*incoming);
  return out;
}

Result<void> Transport::ack(const Delivery& delivery) {
  return state_->client->settle(delivery.token.id, amqp10::Outcome::accepted());
}

Result<void> Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  // One hand-over to the container's thread for the whole batch.
  std::vector<std::uint64_t> ids;
  ids.reserve(deliveries.size());
  for (const auto& d : deliveries) ids.push_back(d.token.id);
  std::vector<std::size_t> not_held;
  if (auto settled = state_->client->settle(ids, amqp10::Outcome::accepted(), not_held); !settled) {
    for (std::size_t i = 0; i < deliveries.size(); ++i) failures.push_back(AckFailure{i, settled.error()});
    return unexpected(settled.error().code(), "artemis: none of " + std::to_string(deliveries.size()) +
                                                  " deliveries was settled: " + settled.error().message());
  }
  if (not_held.empty()) return {};
  for (const std::size_t i : not_held) {
    failures.push_back(AckFailure{
        i, ErrorInfo{Errc::not_found,
                     "the delivery is no longer held (settled already, or its connection dropped and the broker "
                     "delivers it again)"}});
  }
  return unexpected(Errc::not_found, std::to_string(not_held.size()) + " of " + std::to_string(deliveries.size()) +
                                         " deliveries were not settled: no longer held");
}

Result<void> Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return state_->client->settle(delivery.token.id, amqp10::Outcome::failed());
  // AMQP has no delayed outcome: a copy held back by the broker goes first,
  // then the original is accepted. The copy carries the next delivery-count,
  // as a redelivery would have.
  const std::uint32_t next_count = static_cast<std::uint32_t>(
      std::min<std::int64_t>(delivery.native_attempts.value_or(0) + 1, std::numeric_limits<std::uint32_t>::max()));
  PublishOptions copy;
  copy.headers = delivery.headers;
  copy.delay = delay;
  copy.ordering_key = delivery.ordering_key;
  MessageEncoder encoder;
  amqp10::EncodedMessages encoded;
  auto sent = encoder.append(delivery.body, copy, next_count, encoded);
  if (sent) sent = state_->client->send(delivery.queue, std::move(encoded), state_->options.publish_timeout);
  if (!sent) {
    // The copy may not exist: give the original back now instead.
    auto released = state_->client->settle(delivery.token.id, amqp10::Outcome::failed());
    if (!released) return released;
    return unexpected(sent.error().code(), "artemis: the delayed copy could not be sent (" + sent.error().message() +
                                               "); the message was released without its delay");
  }
  return state_->client->settle(delivery.token.id, amqp10::Outcome::accepted());
}

Result<std::vector<PeekedMessage>> Transport::peek(std::string_view queue, std::size_t max) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "artemis: peek of 0 messages");
  // A browser: Artemis answers a copy-mode link with a queue browser.
  auto copies = state_->client->browse(queue, max, state_->options.publish_timeout);
  if (!copies)
    return unexpected(copies.error().code(),
                      "artemis: peek at '" + std::string(queue) + "': " + copies.error().message());
  std::vector<PeekedMessage> out;
  out.reserve(copies->size());
  proton::message message;
  for (const std::vector<char>& encoded : *copies) {
    message.decode(encoded);
    Delivery shown = to_delivery(queue, 0, message);
    out.push_back(PeekedMessage{std::move(shown.body), std::move(shown.headers), shown.native_attempts});
  }
  return out;
}

ConnectionStats Transport::connection_stats() const noexcept { return {"artemis", state_->client->reconnects()}; }

void Transport::close(std::chrono::milliseconds deadline) {
  if (state_ && state_->client) state_->client->close(deadline);
}

void register_transport() {
  babelqueue::register_transport("artemis", url_factory<artemis::Transport>());
  babelqueue::register_transport("artemis+ssl", url_factory<artemis::Transport>());
}

}  // namespace babelqueue::artemis
