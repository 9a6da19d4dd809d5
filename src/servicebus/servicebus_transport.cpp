// SPDX-License-Identifier: Apache-2.0
#include "chunked_send.hpp"
#include "client.hpp"
#include "lock_renewal.hpp"
#include "management_peek.hpp"
#include "servicebus_connection.hpp"
#include "servicebus_projection.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/servicebus/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

namespace babelqueue::servicebus {

namespace {

constexpr std::string_view kDeadLetterCondition = "com.microsoft:dead-letter";

// peek() asks the service for at most this many messages at a time.
constexpr std::size_t kPeekPage = 100;

Result<void> check_queue(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

Unexpected<ErrorInfo> failed(const ErrorInfo& error, const std::string& what) {
  return unexpected(error.code(), "servicebus: " + what + ": " + error.message());
}

}  // namespace

class Transport::State {
 public:
  State(Options o, std::unique_ptr<amqp10::Client> c)
      : options(std::move(o)), client(std::move(c)), renewal(*client, options.operation_timeout, options.log) {}

  // Settles each delivery with outcome and waits for the service's answer.
  std::vector<std::optional<ErrorInfo>> settle(std::span<const Delivery> deliveries, const amqp10::Outcome& outcome) {
    std::vector<std::uint64_t> ids;
    ids.reserve(deliveries.size());
    for (const auto& d : deliveries) {
      ids.push_back(d.token.id);
      renewal.forget(d.token.id);
    }
    return client->settle_confirmed(ids, outcome, options.operation_timeout);
  }

  Result<void> settle_one(const Delivery& delivery, const amqp10::Outcome& outcome, std::string_view what) {
    auto errors = settle(std::span<const Delivery>(&delivery, 1), outcome);
    if (errors[0]) return failed(*errors[0], std::string(what) + " on '" + delivery.queue + "'");
    return {};
  }

  // Encodes body as the binding says and sends it.
  Result<void> send_one(std::string_view queue, std::string_view body, const PublishOptions& publish) {
    MessageEncoder encoder;
    amqp10::EncodedMessages encoded;
    if (auto appended = encoder.append(body, publish, encoded); !appended) return appended;
    return client->send(queue, std::move(encoded), options.operation_timeout);
  }

  Options options;
  std::unique_ptr<amqp10::Client> client;
  LockRenewal renewal;
};

Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

Transport::~Transport() { close(); }

Result<std::unique_ptr<Transport>> Transport::open(Options options) {
  if (options.prefetch == 0) return unexpected(Errc::invalid_argument, "servicebus: prefetch must be at least 1");
  if (options.lock_duration.count() <= 0) {
    return unexpected(Errc::invalid_argument, "servicebus: lock_duration must be above 0");
  }
  if (options.token_lifetime.count() < 2) {
    return unexpected(Errc::invalid_argument, "servicebus: token_lifetime must be at least 2 s");
  }
  auto connection = connection_options(options);
  if (!connection) return unexpected(connection.error());
  // Each message is read on the connection's thread, as it arrives: its
  // lease is counted from then.
  connection->reader = [lock_duration = options.lock_duration](std::string_view queue, pn_message_t* m,
                                                               std::unique_ptr<amqp10::Read> reuse) {
    return read_delivery(queue, m, std::move(reuse), lock_duration);
  };
  const std::string endpoint = connection->host + ":" + std::to_string(connection->port);
  auto client = amqp10::Client::connect(std::move(*connection));
  if (!client) return unexpected(client.error().code(), "servicebus: " + client.error().message());
  if (options.log) options.log(LogLevel::info, "servicebus: connected to " + endpoint);
  return std::unique_ptr<Transport>(new Transport(std::make_unique<State>(std::move(options), std::move(*client))));
}

Result<Transport::Options> Transport::options_from_url(const Url& url) {
  if (url.scheme != "sb" && url.scheme != "servicebus" && url.scheme != "azureservicebus") {
    return unexpected(Errc::invalid_argument,
                      "not an sb://, servicebus:// or azureservicebus:// URL: " + url.redacted());
  }
  if (!url.user.empty() || !url.password.empty()) {
    return unexpected(Errc::invalid_argument,
                      "servicebus: credentials come from a connection string (AZURE_SERVICEBUS_CONNECTION_STRING), "
                      "not from the URL: " +
                          url.redacted());
  }
  if (!url.path.empty()) {
    return unexpected(Errc::invalid_argument,
                      "a Service Bus URL is sb://[NAMESPACE][:port][?options], got " + url.redacted());
  }
  Options options;
  options.namespace_host = url.host;
  options.port = url.port;
  UrlOptionReader read(url);
  read.duration("lock_duration", options.lock_duration,
                {.min = std::chrono::milliseconds(1000), .max = std::chrono::minutes(5)});
  read.integer("prefetch", options.prefetch, 1, 5000);
  read.integer("max_message_size", options.max_message_size, 0, std::numeric_limits<std::int64_t>::max());
  read.duration("token_lifetime", options.token_lifetime,
                {.min = std::chrono::minutes(1), .max = std::chrono::hours(24 * 7)});
  read.duration("connect_timeout", options.connect_timeout,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("operation_timeout", options.operation_timeout,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("idle_timeout", options.idle_timeout, {.max = std::chrono::hours(1)});
  read.duration("reconnect_min", options.reconnect.initial,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.duration("reconnect_max", options.reconnect.max,
                {.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)});
  read.text("container_id", options.container_id);
  options.tls.enabled = true;  // off again at open() for UseDevelopmentEmulator=true
  read.tls(options.tls, "a connection string without UseDevelopmentEmulator=true");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  if (auto checked = options.tls.check(); !checked) return unexpected(checked.error());
  return options;
}

const Transport::Options& Transport::options() const noexcept { return state_->options; }

std::string Transport::native_dead_letter_queue(std::string_view queue) {
  return std::string(queue) + "/$DeadLetterQueue";
}

Capabilities Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;          // x-opt-scheduled-enqueue-time
  caps.native_release = true;        // Abandon hands back the same message
  caps.delivery_count = true;        // DeliveryCount
  caps.redelivers_unsettled = true;  // the lock expires
  caps.extendable_lease = true;      // renew-lock
  caps.lease = state_->options.lock_duration;
  caps.batch_publish = true;
  caps.batch_ack = true;                  // every Complete goes out at once, one wait for the lot
  caps.broker_dead_letter_policy = true;  // MaxDeliveryCount -> $DeadLetterQueue
  caps.native_dead_letter = true;         // DeadLetter into $DeadLetterQueue
  caps.peek = true;                       // com.microsoft:peek-message on $management
  return caps;
}

Result<void> Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (auto ok = check_queue(queue); !ok) return ok;
  if (options.delay.count() < 0) return unexpected(Errc::invalid_argument, "servicebus: a negative delay");
  if (auto sent = state_->send_one(queue, body, options); !sent) {
    return failed(sent.error(), "publish to '" + std::string(queue) + "'");
  }
  return {};
}

Result<void> Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  for (const auto& m : messages) {
    if (auto ok = check_queue(m.queue); !ok) return ok;
    if (m.options.delay.count() < 0) return unexpected(Errc::invalid_argument, "servicebus: a negative delay");
  }
  // Streamed in chunks: the first transfers are on the wire while the rest
  // are being encoded (chunked_send.hpp).
  MessageEncoder encoder;
  return amqp10::send_in_chunks(
      *state_->client, messages, state_->options.operation_timeout, "servicebus",
      [&](const OutgoingMessage& m, amqp10::EncodedMessages& out) { return encoder.append(m.body, m.options, out); });
}

Result<std::vector<Delivery>> Transport::receive(std::string_view queue, std::size_t max,
                                                 std::chrono::milliseconds wait) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "servicebus: receive of 0 messages");
  auto incoming = state_->client->receive(queue, max, wait);
  if (!incoming) return failed(incoming.error(), "receive from '" + std::string(queue) + "'");
  std::vector<Delivery> out;
  out.reserve(incoming->size());
  for (auto& in : *incoming) {
    if (in.read) {
      out.push_back(static_cast<const DeliveryRead&>(*in.read).delivery);  // a copy: see DeliveryRead
      out.back().token.id = in.id;
    } else {
      // Handed over (no x-opt-lock-token, or the reader threw): read here,
      // with the delivery tag as the lock token.
      out.push_back(to_delivery(queue, in.id, in.message, in.tag, state_->options.lock_duration));
    }
  }
  state_->client->recycle(*incoming);
  return out;
}

Result<void> Transport::ack(const Delivery& delivery) {
  return state_->settle_one(delivery, amqp10::Outcome::accepted(), "complete");
}

Result<void> Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  if (deliveries.empty()) return {};
  auto errors = state_->settle(deliveries, amqp10::Outcome::accepted());
  const std::size_t before = failures.size();
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (errors[i]) failures.push_back(AckFailure{i, *errors[i]});
  }
  const std::size_t failed_count = failures.size() - before;
  if (failed_count == 0) return {};
  const ErrorInfo& first = failures[before].error;
  return unexpected(first.code(), "servicebus: " + std::to_string(failed_count) + " of " +
                                      std::to_string(deliveries.size()) +
                                      " completes failed; the first: " + first.message());
}

Result<void> Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  if (delay.count() < 0) return unexpected(Errc::invalid_argument, "servicebus: a negative delay");
  if (delay.count() == 0) return state_->settle_one(delivery, amqp10::Outcome::failed(), "abandon");
  // Service Bus abandons at once: a copy scheduled for later goes first,
  // then the original is completed — never the other way round, so nothing
  // is lost.
  PublishOptions copy;
  copy.headers = delivery.headers;
  copy.delay = delay;
  if (auto sent = state_->send_one(delivery.queue, delivery.body, copy); !sent) {
    // The copy may not exist: give the original back now instead.
    if (auto abandoned = state_->settle_one(delivery, amqp10::Outcome::failed(), "abandon"); !abandoned) {
      return abandoned;
    }
    return failed(sent.error(), "the delayed copy for '" + delivery.queue +
                                    "' could not be sent; the message was abandoned without its delay");
  }
  return state_->settle_one(delivery, amqp10::Outcome::accepted(), "complete (after its delayed copy was sent)");
}

Result<void> Transport::extend(const Delivery& delivery, std::chrono::milliseconds lease) {
  if (lease.count() <= 0) return unexpected(Errc::invalid_argument, "servicebus: extend by a lease of 0");
  if (delivery.token.text.empty()) {
    return unexpected(Errc::invalid_argument, "servicebus: the delivery carries no lock token");
  }
  auto renewed = state_->renewal.keep(delivery.token.id, delivery.queue, delivery.token.text, lease);
  if (!renewed) return failed(renewed.error(), "renew the lock on '" + delivery.queue + "'");
  return {};
}

Result<void> Transport::dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                             std::string_view description) {
  amqp10::Outcome outcome;
  outcome.kind = amqp10::Outcome::Kind::rejected;
  outcome.condition = std::string(kDeadLetterCondition);
  outcome.description = std::string(description);
  outcome.info = {{"DeadLetterReason", std::string(reason)}, {"DeadLetterErrorDescription", std::string(description)}};
  return state_->settle_one(delivery, outcome, "dead-letter");
}

Result<std::vector<PeekedMessage>> Transport::peek(std::string_view queue, std::size_t max) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "servicebus: peek of 0 messages");
  // The service's Peek shows scheduled and deferred messages too, which a
  // receive would not hand out: they are skipped, and the peek goes on
  // after them, a page at a time, in sequence order.
  const std::string name(queue);
  const auto deadline = std::chrono::steady_clock::now() + state_->options.operation_timeout;
  std::vector<PeekedMessage> out;
  std::int64_t from = 1;
  while (out.size() < max) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return unexpected(Errc::timeout, "servicebus: peek at '" + name + "' did not end within " +
                                           std::to_string(state_->options.operation_timeout.count()) + " ms");
    }
    const auto asked = static_cast<std::int32_t>(std::min(max - out.size(), kPeekPage));
    auto page = peek_messages(*state_->client, name, from, asked, left);
    if (!page) return failed(page.error(), "peek at '" + name + "'");
    for (const PeekedCopy& copy : *page) {
      from = std::max(from, copy.sequence_number + 1);
      if (copy.waiting_elsewhere || out.size() == max) continue;
      Delivery shown = to_delivery(queue, 0, copy.message, proton::binary());
      out.push_back(PeekedMessage{std::move(shown.body), std::move(shown.headers), shown.native_attempts});
    }
    if (page->size() < static_cast<std::size_t>(asked)) break;  // the queue's end
  }
  return out;
}

ConnectionStats Transport::connection_stats() const noexcept { return {"servicebus", state_->client->reconnects()}; }

void Transport::close(std::chrono::milliseconds deadline) {
  if (!state_) return;
  // The client first: a renewal waiting for its reply ends at once.
  if (state_->client) state_->client->close(deadline);
  state_->renewal.stop();
}

void register_transport() {
  for (const char* scheme : {"sb", "servicebus", "azureservicebus"}) {
    babelqueue::register_transport(scheme, url_factory<servicebus::Transport>());
  }
}

}  // namespace babelqueue::servicebus
