// SPDX-License-Identifier: Apache-2.0
#include "artemis_projection.hpp"
#include "c_message.hpp"
#include "chunked_send.hpp"
#include "client.hpp"

#include <babelqueue/artemis/transport.hpp>
#include <babelqueue/binding.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

namespace babelqueue::artemis {

namespace {

constexpr std::uint16_t kDefaultPort = 5672;
constexpr std::uint32_t kMaxConnections = 64;

// A delivery's token: the amqp10 client's id, with the index of the
// connection that received it in the top byte (client.hpp: Incoming::id).
constexpr int kConnectionShift = 56;
constexpr std::uint64_t kClientIdMask = (std::uint64_t{1} << kConnectionShift) - 1;

using Clock = std::chrono::steady_clock;

Result<void> check_queue(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

}  // namespace

// The transport's connections. The first one publishes, browses and
// receives; with Options::connections above 1, receive() opens the others
// (receivers only) the first time it runs, and takes what any of them has.
class Transport::State {
 public:
  State(Options o, amqp10::ConnectionOptions c, std::unique_ptr<amqp10::Client> first)
      : options(std::move(o)), connection(std::move(c)), client(first.get()), clients(options.connections) {
    clients[0] = std::move(first);
  }

  // The connections open so far: clients[0, count) (never fewer later).
  std::size_t count() const { return open.load(std::memory_order_acquire); }

  // The connection that received delivery, and its id there; null when the
  // token names no connection of this transport.
  amqp10::Client* owner(const Delivery& delivery, std::uint64_t& id) const {
    const auto index = static_cast<std::size_t>(delivery.token.id >> kConnectionShift);
    id = delivery.token.id & kClientIdMask;
    return index < count() ? clients[index].get() : nullptr;
  }

  // Opens the receiving connections not open yet, unless another thread is
  // at it (this one then goes on with those open) or the last attempt failed
  // less than a reconnect pause ago.
  void open_receivers() {
    if (count() == clients.size() || closed.load()) return;
    std::unique_lock lock(opening, std::try_to_lock);
    if (!lock.owns_lock() || Clock::now() < retry_at) return;
    for (std::size_t i = count(); i < clients.size() && !closed.load(); ++i) {
      amqp10::ConnectionOptions c = connection;
      if (!c.container_id.empty()) c.container_id += "-" + std::to_string(i + 1);
      auto opened = amqp10::Client::connect(std::move(c));
      if (!opened) {
        retry_at = Clock::now() + options.reconnect.delay_for(failures++);
        if (options.log) {
          options.log(LogLevel::warning, "artemis: receiving connection " + std::to_string(i + 1) + " of " +
                                             std::to_string(clients.size()) + " could not open (" +
                                             opened.error().message() + "); receiving on " + std::to_string(i) +
                                             " until it does");
        }
        return;
      }
      clients[i] = std::move(*opened);
      failures = 0;
      open.store(i + 1, std::memory_order_release);
    }
  }

  Options options;
  amqp10::ConnectionOptions connection;  // what each further connection opens with
  amqp10::Client* client;                // clients[0]
  // Sized once (Options::connections); an entry is set before open counts
  // it, and stays until the transport is destroyed.
  std::vector<std::unique_ptr<amqp10::Client>> clients;
  std::atomic<std::size_t> open{1};
  std::atomic<bool> closed{false};
  std::mutex opening;          // open_receivers()
  Clock::time_point retry_at;  // opening
  std::int64_t failures = 0;   // opening
};

Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

Transport::~Transport() { close(); }

Result<std::unique_ptr<Transport>> Transport::open(Options options) {
  if (options.credit == 0) return unexpected(Errc::invalid_argument, "artemis: credit must be at least 1");
  if (options.connections == 0 || options.connections > kMaxConnections) {
    return unexpected(Errc::invalid_argument, "artemis: connections must be from 1 to " +
                                                  std::to_string(kMaxConnections) + ", got " +
                                                  std::to_string(options.connections));
  }
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
  c.encoded_reader = read_encoded_delivery;
  c.reader = read_delivery;
  c.log = options.log;
  if (options.connections > 1) c.arrivals = std::make_shared<amqp10::Arrivals>();
  auto client = amqp10::Client::connect(c);
  if (!client) {
    return unexpected(client.error().code(), "artemis: " + client.error().message());
  }
  return std::unique_ptr<Transport>(
      new Transport(std::make_unique<State>(std::move(options), std::move(c), std::move(*client))));
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
  read.integer("connections", options.connections, 1, kMaxConnections);
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
  caps.ordering_key = true;                  // AMQP group-id: Artemis message groups
  caps.deduplication = true;                 // _AMQ_DUPL_ID, Artemis's duplicate detection
  caps.broker_dead_letter_policy = true;     // its dead-letter address after max-delivery-attempts
  caps.peek = true;                          // a copy-mode link: a queue browser
  caps.held_ahead = state_->options.credit;  // per queue, on each receiving connection
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
  State& s = *state_;
  // What connection `index` received, appended to out as deliveries whose
  // token says where they came from.
  std::vector<Delivery> out;
  auto take = [&](std::size_t index, std::vector<amqp10::Incoming>& incoming) {
    // Room for a whole receive at the first take from several connections,
    // not a reallocation (moving every Delivery) at each one.
    out.reserve(out.empty() && s.count() > 1 ? std::max(incoming.size(), std::min<std::size_t>(max, 256))
                                             : out.size() + incoming.size());
    const std::uint64_t tag = static_cast<std::uint64_t>(index) << kConnectionShift;
    for (auto& in : incoming) {
      if (in.read) {
        out.push_back(static_cast<const DeliveryRead&>(*in.read).delivery);  // a copy: see DeliveryRead
        out.back().token.id = in.id | tag;
      } else {
        out.push_back(to_delivery(queue, in.id | tag, in.message));  // the reader threw: read here
      }
    }
    s.clients[index]->recycle(incoming);
  };
  s.open_receivers();
  const std::size_t n = s.count();
  if (n == 1) {
    auto incoming = s.client->receive(queue, max, wait);
    if (!incoming) return unexpected(incoming.error());
    take(0, *incoming);
    return out;
  }
  // Several connections: what each has buffered, from the calling thread's
  // own one first (threads spread over the connections as they first come),
  // then the others; when none has anything, wait for an arrival on any.
  static std::atomic<std::size_t> threads{0};
  static thread_local const std::size_t first = threads.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = Clock::now() + wait;
  for (;;) {
    const std::uint64_t seen = s.connection.arrivals->rings();
    for (std::size_t i = 0; i < n && out.size() < max; ++i) {
      const std::size_t index = (first + i) % n;
      auto incoming = s.clients[index]->receive(queue, max - out.size(), std::chrono::milliseconds(0));
      if (!incoming) {
        if (out.empty()) return unexpected(incoming.error());
        if (s.options.log) {
          s.options.log(LogLevel::warning, "artemis: receiving from '" + std::string(queue) + "' on connection " +
                                               std::to_string(index + 1) + ": " + incoming.error().message());
        }
        continue;
      }
      take(index, *incoming);
    }
    // Full-handed, this thread may have left messages behind: another
    // waiting thread takes its turn (arrivals wake one waiter at a time).
    if (out.size() == max) s.connection.arrivals->ring_one();
    if (!out.empty() || !s.connection.arrivals->wait_past(seen, deadline)) return out;
  }
}

namespace {

ErrorInfo not_held() {
  return ErrorInfo{Errc::not_found,
                   "the delivery is no longer held (settled already, or its connection dropped and the broker "
                   "delivers it again)"};
}

}  // namespace

Result<void> Transport::ack(const Delivery& delivery) {
  std::uint64_t id = 0;
  amqp10::Client* client = state_->owner(delivery, id);
  if (client == nullptr) return unexpected(not_held());
  return client->settle(id, amqp10::Outcome::accepted());
}

Result<void> Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  // One hand-over to each connection's thread for the deliveries it holds.
  State& s = *state_;
  const std::size_t before = failures.size();
  std::optional<ErrorInfo> refused;  // a connection that settled none of its own
  std::vector<std::uint64_t> ids;
  std::vector<std::size_t> where;  // ids[j] is deliveries[where[j]]
  std::vector<std::size_t> not_held_here;
  for (std::size_t index = 0; index < s.count(); ++index) {
    ids.clear();
    where.clear();
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
      if ((deliveries[i].token.id >> kConnectionShift) != index) continue;
      ids.push_back(deliveries[i].token.id & kClientIdMask);
      where.push_back(i);
    }
    if (ids.empty()) continue;
    not_held_here.clear();
    if (auto settled = s.clients[index]->settle(ids, amqp10::Outcome::accepted(), not_held_here); !settled) {
      for (const std::size_t i : where) failures.push_back(AckFailure{i, settled.error()});
      refused = settled.error();
      continue;
    }
    for (const std::size_t j : not_held_here) failures.push_back(AckFailure{where[j], not_held()});
  }
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    if ((deliveries[i].token.id >> kConnectionShift) >= s.count()) failures.push_back(AckFailure{i, not_held()});
  }
  const std::size_t failed = failures.size() - before;
  if (failed == 0) return {};
  if (refused && failed == deliveries.size()) {
    return unexpected(refused->code(), "artemis: none of " + std::to_string(deliveries.size()) +
                                           " deliveries was settled: " + refused->message());
  }
  return unexpected(refused ? refused->code() : Errc::not_found,
                    std::to_string(failed) + " of " + std::to_string(deliveries.size()) +
                        " deliveries were not settled: " + (refused ? refused->message() : "no longer held"));
}

Result<void> Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  std::uint64_t id = 0;
  amqp10::Client* owner = state_->owner(delivery, id);
  if (owner == nullptr) return unexpected(not_held());
  if (delay.count() <= 0) return owner->settle(id, amqp10::Outcome::failed());
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
    auto released = owner->settle(id, amqp10::Outcome::failed());
    if (!released) return released;
    return unexpected(sent.error().code(), "artemis: the delayed copy could not be sent (" + sent.error().message() +
                                               "); the message was released without its delay");
  }
  return owner->settle(id, amqp10::Outcome::accepted());
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
  const amqp10::CMessage message = amqp10::new_c_message();
  for (const std::vector<char>& encoded : *copies) {
    Delivery shown;
    pn_message_clear(message.get());  // decoding keeps a section the copy lacks as the last one had it
    if (pn_message_decode(message.get(), encoded.data(), encoded.size()) != 0) {
      return unexpected(Errc::broker, "artemis: peek at '" + std::string(queue) +
                                          "': the broker sent a copy that is not an AMQP message");
    }
    read_into(queue, message.get(), shown);
    out.push_back(PeekedMessage{std::move(shown.body), std::move(shown.headers), shown.native_attempts});
  }
  return out;
}

ConnectionStats Transport::connection_stats() const noexcept {
  std::uint64_t reconnects = 0;  // over every receiving connection opened so far
  for (std::size_t i = 0; i < state_->count(); ++i) reconnects += state_->clients[i]->reconnects();
  return {"artemis", reconnects};
}

void Transport::close(std::chrono::milliseconds deadline) {
  if (!state_) return;
  State& s = *state_;
  s.closed.store(true);
  std::lock_guard wait_for_opening(s.opening);  // a connection being opened is closed too
  for (std::size_t i = 0; i < s.count(); ++i) s.clients[i]->close(deadline);
  // A receive() waiting for an arrival on any connection finds them closed.
  if (s.connection.arrivals) s.connection.arrivals->ring();
}

void register_transport() {
  babelqueue::register_transport("artemis", url_factory<artemis::Transport>());
  babelqueue::register_transport("artemis+ssl", url_factory<artemis::Transport>());
}

}  // namespace babelqueue::artemis
