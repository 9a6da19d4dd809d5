// SPDX-License-Identifier: Apache-2.0
#include "pulsar_client.hpp"
#include "pulsar_projection.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/pulsar/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace babelqueue::pulsar {

namespace {

constexpr std::uint16_t kDefaultPort = 6650;
constexpr std::uint16_t kDefaultTlsPort = 6651;

Result<void> check_queue(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "pulsar: the queue name is empty");
  return {};
}

bool is_topic_name(std::string_view queue) {
  return queue.starts_with("persistent://") || queue.starts_with("non-persistent://");
}

// A tenant or namespace: letters, digits and - _ . = : only.
bool valid_name_part(std::string_view part) {
  if (part.empty()) return false;
  for (char c : part) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '=' || c == ':';
    if (!ok) return false;
  }
  return true;
}

// The topic's local name for a queue: the queue itself when it holds only
// characters every Pulsar client accepts in a topic name (what the Python
// SDK's queues use), else each other byte as _xHH_, as the Kafka transport
// names its topics: a '/' would otherwise split the name.
std::string local_name(std::string_view queue) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(queue.size());
  for (char c : queue) {
    const bool legal = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-' || c == '=' || c == ':';
    if (legal) {
      out += c;
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    out += "_x";
    out += kHex[byte >> 4U];
    out += kHex[byte & 0xFU];
    out += '_';
  }
  return out;
}

}  // namespace

class Transport::State {
 public:
  State(Options o, std::unique_ptr<pulsar_detail::Client> c) : options(std::move(o)), client(std::move(c)) {}

  // Refuses a partitioned topic once, on its first use (the answer is kept).
  Result<void> check_topic(const std::string& topic) {
    {
      std::lock_guard lock(mutex);
      if (checked.contains(topic)) return {};
    }
    auto partitions = client->partitions(topic);
    if (!partitions) return unexpected(partitions.error());
    if (*partitions > 0) {
      return unexpected(Errc::unsupported, "pulsar: " + topic + " is a partitioned topic (" +
                                               std::to_string(*partitions) +
                                               " partitions); this transport uses non-partitioned topics only");
    }
    std::lock_guard lock(mutex);
    checked.insert(topic);
    return {};
  }

  Options options;
  std::unique_ptr<pulsar_detail::Client> client;
  std::mutex mutex;
  std::set<std::string, std::less<>> checked;
};

Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

Transport::~Transport() { close(); }

Result<std::unique_ptr<Transport>> Transport::open(Options options) {
  if (options.receiver_queue == 0) return unexpected(Errc::invalid_argument, "pulsar: receiver_queue must be >= 1");
  if (!valid_name_part(options.tenant) || !valid_name_part(options.ns)) {
    return unexpected(Errc::invalid_argument,
                      "pulsar: tenant and namespace must be non-empty names of letters, digits, - _ . = :");
  }
  if (options.subscription.empty()) return unexpected(Errc::invalid_argument, "pulsar: the subscription is empty");
  pulsar_detail::ClientOptions c;
  c.host = options.host.empty() ? "localhost" : options.host;
  c.port = options.port;
  c.tls = options.tls;
  c.token = options.token;
  c.listener_name = options.listener_name;
  c.connect_timeout = options.connect_timeout;
  c.operation_timeout = options.operation_timeout;
  c.keepalive = options.keepalive;
  c.reconnect = options.reconnect;
  c.receiver_queue = options.receiver_queue;
  c.log = options.log;
  auto client = pulsar_detail::Client::connect(std::move(c));
  if (!client) return unexpected(client.error().code(), "pulsar: " + client.error().message());
  return std::unique_ptr<Transport>(new Transport(std::make_unique<State>(std::move(options), std::move(*client))));
}

Result<Transport::Options> Transport::options_from_url(const Url& url) {
  if (url.scheme != "pulsar" && url.scheme != "pulsar+ssl") {
    return unexpected(Errc::invalid_argument, "not a pulsar:// or pulsar+ssl:// URL: " + url.redacted());
  }
  if (url.host.find(',') != std::string::npos) {
    return unexpected(Errc::invalid_argument, "pulsar: one host per URL (no service URL list), got " + url.redacted());
  }
  if ((!url.path.empty() && url.path != "/") || !url.user.empty() || !url.password.empty()) {
    return unexpected(
        Errc::invalid_argument,
        "a pulsar URL is pulsar[+ssl]://host[:port][?options] (a token goes in ?token=), got " + url.redacted());
  }
  Options options;
  const bool tls = url.scheme == "pulsar+ssl";
  options.host = url.host.empty() ? "localhost" : url.host;
  options.port = url.port.value_or(tls ? kDefaultTlsPort : kDefaultPort);
  UrlOptionReader read(url);
  read.text("tenant", options.tenant);
  read.text("namespace", options.ns);
  read.text("subscription", options.subscription);
  read.text("token", options.token);
  read.text("listener_name", options.listener_name);
  const DurationRule timeout{.min = std::chrono::milliseconds(1), .max = std::chrono::hours(1)};
  read.duration("connect_timeout", options.connect_timeout, timeout);
  read.duration("operation_timeout", options.operation_timeout, timeout);
  read.duration("publish_timeout", options.publish_timeout, timeout);
  read.duration("keepalive", options.keepalive, {.min = std::chrono::seconds(1), .max = std::chrono::hours(1)});
  read.integer("receiver_queue", options.receiver_queue, 1, 100000);
  read.duration("reconnect_min", options.reconnect.initial, timeout);
  read.duration("reconnect_max", options.reconnect.max, timeout);
  options.tls.enabled = tls;
  read.tls(options.tls, "pulsar+ssl://");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  if (auto checked = options.tls.check(); !checked) return unexpected(checked.error());
  if (!valid_name_part(options.tenant) || !valid_name_part(options.ns)) {
    return unexpected(Errc::invalid_argument,
                      "pulsar: tenant and namespace must be names of letters, digits, - _ . = :"
                      ", got " +
                          url.redacted());
  }
  return options;
}

const Transport::Options& Transport::options() const noexcept { return state_->options; }

std::string Transport::topic(std::string_view queue) const {
  if (is_topic_name(queue)) return std::string(queue);
  return "persistent://" + state_->options.tenant + "/" + state_->options.ns + "/" + local_name(queue);
}

Capabilities Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;  // deliver_at_time (Shared subscriptions)
  caps.peek = true;          // a reader from the subscription's mark-delete position
  caps.native_release = true;
  caps.delivery_count = true;        // redeliveryCount
  caps.redelivers_unsettled = true;  // when the consumer's connection drops
  caps.extendable_lease = false;
  caps.batch_publish = true;
  caps.ordering_key = true;  // the message key, read back
  return caps;
}

Result<void> Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (auto ok = check_queue(queue); !ok) return ok;
  if (options.delay.count() < 0) return unexpected(Errc::invalid_argument, "pulsar: a negative delay");
  const std::string t = topic(queue);
  if (auto ok = state_->check_topic(t); !ok) return ok;
  std::vector<pulsar_detail::OutMessage> messages;
  messages.push_back(make_message(body, options));
  auto sent = state_->client->send(t, std::move(messages), state_->options.publish_timeout);
  if (!sent) return unexpected(sent.error().code(), "pulsar: publish to " + t + ": " + sent.error().message());
  return {};
}

Result<void> Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  // One send per topic, in the order the topics first appear; each keeps
  // its messages' order.
  std::vector<std::pair<std::string, std::vector<pulsar_detail::OutMessage>>> groups;
  std::map<std::string, std::size_t, std::less<>> index;
  for (const auto& m : messages) {
    if (auto ok = check_queue(m.queue); !ok) return ok;
    if (m.options.delay.count() < 0) return unexpected(Errc::invalid_argument, "pulsar: a negative delay");
    std::string t = topic(m.queue);
    auto [it, inserted] = index.emplace(t, groups.size());
    if (inserted) groups.emplace_back(std::move(t), std::vector<pulsar_detail::OutMessage>{});
    groups[it->second].second.push_back(make_message(m.body, m.options));
  }
  std::size_t done = 0;
  for (auto& [t, batch] : groups) {
    if (auto ok = state_->check_topic(t); !ok) return ok;
    const std::size_t n = batch.size();
    auto sent = state_->client->send(t, std::move(batch), state_->options.publish_timeout, true);
    if (!sent) {
      return unexpected(sent.error().code(), "pulsar: batch publish to " + t + " (" + std::to_string(done) +
                                                 " messages of earlier topics published): " + sent.error().message());
    }
    done += n;
  }
  return {};
}

Result<std::vector<Delivery>> Transport::receive(std::string_view queue, std::size_t max,
                                                 std::chrono::milliseconds wait) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "pulsar: receive of 0 messages");
  const std::string t = topic(queue);
  if (auto ok = state_->check_topic(t); !ok) return unexpected(ok.error());
  auto incoming = state_->client->receive(t, state_->options.subscription, max, wait);
  if (!incoming) return unexpected(incoming.error().code(), "pulsar: " + incoming.error().message());
  std::vector<Delivery> out;
  out.reserve(incoming->size());
  for (auto& in : *incoming) out.push_back(to_delivery(queue, std::move(in)));
  return out;
}

Result<void> Transport::ack(const Delivery& delivery) { return state_->client->ack(delivery.token.id); }

Result<void> Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  return state_->client->negative_ack(delivery.token.id, std::max(delay, std::chrono::milliseconds(0)));
}

Result<std::vector<PeekedMessage>> Transport::peek(std::string_view queue, std::size_t max) {
  if (auto ok = check_queue(queue); !ok) return unexpected(ok.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "pulsar: peek of 0 messages");
  const std::string t = topic(queue);
  if (auto ok = state_->check_topic(t); !ok) return unexpected(ok.error());
  auto shown =
      state_->client->browse(t, state_->options.subscription, max, state_->client->options().operation_timeout);
  if (!shown) return unexpected(shown.error().code(), "pulsar: peek at " + t + ": " + shown.error().message());
  std::vector<PeekedMessage> out;
  out.reserve(shown->size());
  for (auto& in : *shown) {
    Delivery d = to_delivery(queue, std::move(in));
    // A reader is told no redelivery count: the subscription keeps it.
    out.push_back(PeekedMessage{std::move(d.body), std::move(d.headers), std::nullopt});
  }
  return out;
}

ConnectionStats Transport::connection_stats() const noexcept { return {"pulsar", state_->client->reconnects()}; }

void Transport::close(std::chrono::milliseconds deadline) {
  if (state_ && state_->client) state_->client->close(deadline);
}

void register_transport() {
  babelqueue::register_transport("pulsar", url_factory<pulsar::Transport>());
  babelqueue::register_transport("pulsar+ssl", url_factory<pulsar::Transport>());
}

}  // namespace babelqueue::pulsar
