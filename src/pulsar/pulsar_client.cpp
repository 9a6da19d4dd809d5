// SPDX-License-Identifier: Apache-2.0
#include "pulsar_client.hpp"

#include "pulsar_frame.hpp"

#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/error.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace babelqueue::pulsar_detail {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// How often the I/O thread checks deadlines, keepalives and due redeliveries.
constexpr std::chrono::milliseconds kTick(50);
// Lookups that redirect more often than this are given up.
constexpr int kMaxRedirects = 20;
// A batched entry of publish_batch(): at most this many messages, and closed
// once its payloads reach this size (libpulsar's defaults: 1000 and 128 KiB).
constexpr std::size_t kMaxBatchMessages = 1000;
constexpr std::size_t kMaxBatchBytes = 128 * 1024;
// A broker's maxMessageSize when it does not say (Pulsar's default, 5 MiB).
constexpr std::size_t kDefaultMaxMessageSize = 5 * 1024 * 1024;

std::string ms_text(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// host and port of pulsar://host:port or pulsar+ssl://host:port.
std::optional<std::pair<std::string, std::uint16_t>> parse_broker_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  std::string_view rest = url.substr(scheme_end + 3);
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string host(rest.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  for (char ch : rest.substr(colon + 1)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    port = port * 10 + static_cast<unsigned>(ch - '0');
    if (port > 65535) return std::nullopt;
  }
  if (port == 0) return std::nullopt;
  return std::make_pair(std::move(host), static_cast<std::uint16_t>(port));
}

Errc errc_of(std::int32_t server_error) {
  switch (static_cast<ServerError>(server_error)) {
    case ServerError::authentication:
    case ServerError::authorization: return Errc::auth;
    case ServerError::topic_not_found:
    case ServerError::subscription_not_found:
    case ServerError::consumer_not_found: return Errc::not_found;
    case ServerError::invalid_topic_name: return Errc::invalid_argument;
    default: return Errc::broker;
  }
}

ErrorInfo server_error(const Command& c, std::string_view what) {
  const std::int32_t code = c.error.value_or(0);
  std::string text = std::string(what) + ": " + server_error_name(code);
  if (!c.message.empty()) text += " (" + c.message + ")";
  return ErrorInfo{errc_of(code), std::move(text)}.with_native(server_error_name(code), c.message);
}

}  // namespace

// ---------------------------------------------------------------------------
// The state the I/O thread and the callers share. Everything below is
// guarded by Impl::mutex_; socket operations start on the I/O thread only.
// ---------------------------------------------------------------------------

struct Conn {
  Conn(asio::io_context& io, asio::ssl::context& context) : stream(io, context) {}

  enum class State { connecting, ready, dead };

  std::string host;
  std::uint16_t port = 0;
  bool tls = false;
  asio::ssl::stream<tcp::socket> stream;
  State state = State::connecting;
  Clock::time_point connect_deadline;
  FrameReader reader;
  // The largest message the broker takes (CONNECTED's max_message_size; the
  // broker's default until it says).
  std::size_t max_message_size = kDefaultMaxMessageSize;
  std::array<char, 64 * 1024> input{};
  std::string out_pending;
  std::string out_writing;
  bool writing = false;
  struct Request {
    Clock::time_point deadline;
    std::function<void(Result<Command>)> done;
  };
  std::map<std::uint64_t, Request> requests;
  std::vector<std::function<void(Result<void>)>> waiters;  // for CONNECTED
  Clock::time_point last_heard = Clock::now();
  bool ping_sent = false;
  std::optional<ErrorInfo> error;  // why it died

  std::string address() const {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
  }
};

// One send() call.
struct SendOp {
  std::vector<OutMessage> messages;
  bool batch = false;        // consecutive messages may share a batched entry
  std::size_t answered = 0;  // receipts, errors and failures
  std::size_t confirmed = 0;
  std::size_t unknown = 0;  // on the wire when the connection dropped
  std::size_t sent = 0;
  std::optional<ErrorInfo> error;
  bool abandoned = false;

  bool finished() const { return answered == messages.size(); }
};

struct Producer {
  enum class State { closed, opening, ready };
  std::string topic;
  std::uint64_t id = 0;
  State state = State::closed;
  std::shared_ptr<Conn> conn;
  std::string name;
  std::uint64_t next_sequence = 0;
  std::deque<std::pair<std::shared_ptr<SendOp>, std::size_t>> queued;
  // By the sequence id of each SEND: the call and its messages (several for a batched entry).
  std::map<std::uint64_t, std::pair<std::shared_ptr<SendOp>, std::vector<std::size_t>>> in_flight;
  std::int64_t failures = 0;
  Clock::time_point next_attempt{};
};

// One broker entry held by a consumer: a single message, or a batch whose
// messages are settled one by one.
struct Entry {
  MessageId id;  // batch_index -1
  std::size_t outstanding = 0;
  std::vector<std::int32_t> acked;  // batch indexes acknowledged, for a batch redelivered whole
  bool released = false;
  std::chrono::milliseconds delay{0};
};

struct Consumer {
  enum class State { closed, opening, ready };
  std::string topic;
  std::string subscription;
  std::uint64_t id = 0;
  State state = State::closed;
  std::shared_ptr<Conn> conn;
  std::uint64_t generation = 0;  // raised whenever held messages become stale
  std::deque<InMessage> buffer;
  std::uint32_t permits_owed = 0;  // messages taken out, to give back in FLOW
  // Batched entries redelivered whole because one of their messages was
  // released: the batch indexes already acknowledged, skipped when the entry
  // comes back (ledger, entry -> indexes).
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::int32_t>> acked_in_batch;
  std::optional<ErrorInfo> error;  // the last open failure, reported once
  std::int64_t failures = 0;
  Clock::time_point next_attempt{};
};

// One browse(): a reader of the topic from the subscription's mark-delete
// position up to the topic's last message when it looked.
struct BrowseOp {
  std::string topic;
  std::string subscription;
  std::size_t max = 0;
  std::vector<InMessage> messages;  // under Impl::mutex_
  std::optional<ErrorInfo> error;
  bool done = false;
  MessageId start;              // the subscription's mark-delete position
  MessageId last;               // the topic's last message when the browse began
  std::uint64_t reader_id = 0;  // 0: no reader open
  std::shared_ptr<Conn> conn;
};

struct Held {
  std::shared_ptr<Consumer> consumer;
  std::uint64_t generation = 0;
  std::shared_ptr<Entry> entry;
  std::int32_t batch_index = -1;
};

struct DueRedelivery {
  Clock::time_point at;
  std::shared_ptr<Consumer> consumer;
  std::uint64_t generation = 0;
  MessageId id;
};

class Client::Impl {
 public:
  explicit Impl(ClientOptions options)
      : options_(std::move(options)),
        plain_context_(asio::ssl::context::tls_client),
        guard_(asio::make_work_guard(io_)),
        tick_(io_) {}

  ~Impl() { close(std::chrono::seconds(5)); }

  std::uint64_t reconnects() const noexcept { return reconnects_.load(std::memory_order_relaxed); }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Result<void> start() {
    if (options_.tls.enabled) {
      auto context = make_tls_context();
      if (!context) return unexpected(context.error());
      tls_context_ = std::move(*context);
    }
    thread_ = std::thread([this] { io_.run(); });
    std::unique_lock lock(mutex_);
    schedule_tick_locked();
    auto c = connection_locked(options_.host, options_.port);
    // Shared with the I/O thread, which may answer after a timed-out wait.
    auto outcome = std::make_shared<std::optional<Result<void>>>();
    when_ready_locked(c, [this, outcome](Result<void> r) {
      *outcome = std::move(r);
      cv_.notify_all();
    });
    cv_.wait_for(lock, options_.connect_timeout + std::chrono::seconds(1), [&] { return outcome->has_value(); });
    if (*outcome && **outcome) return {};
    ErrorInfo error = *outcome ? (*outcome)->error()
                               : ErrorInfo{Errc::timeout, "no answer from the Pulsar broker at " + c->address() +
                                                              " within " + ms_text(options_.connect_timeout)};
    lock.unlock();
    close(std::chrono::seconds(1));
    return unexpected(std::move(error));
  }

  const ClientOptions& options() const noexcept { return options_; }

  // ---- caller threads ----

  Result<void> send(const std::string& topic, std::vector<OutMessage> messages, std::chrono::milliseconds timeout,
                    bool batch) {
    if (messages.empty()) return {};
    auto op = std::make_shared<SendOp>();
    op->messages = std::move(messages);
    op->batch = batch;
    std::unique_lock lock(mutex_);
    if (closed_) return closed_error();
    auto& producer = producers_[topic];
    if (!producer) {
      producer = std::make_shared<Producer>();
      producer->topic = topic;
    }
    for (std::size_t i = 0; i < op->messages.size(); ++i) producer->queued.emplace_back(op, i);
    auto p = producer;
    asio::post(io_, [this, p] {
      std::lock_guard inner(mutex_);
      pump_producer_locked(p);
    });
    cv_.wait_for(lock, timeout, [&] { return op->finished() || closed_; });
    if (op->finished()) {
      if (!op->error) return {};
      if (op->messages.size() == 1) return unexpected(*op->error);
      return unexpected(op->error->with_message(op->error->message() + " (" + std::to_string(op->confirmed) + " of " +
                                                std::to_string(op->messages.size()) + " messages were accepted)"));
    }
    op->abandoned = true;
    const std::size_t not_sent = op->messages.size() - op->sent;
    const std::size_t unknown = op->sent - op->confirmed;
    std::string text = closed_ ? "the Pulsar client was closed" : "no answer from the Pulsar broker";
    text += " for " + std::to_string(op->messages.size() - op->confirmed) + " of " +
            std::to_string(op->messages.size()) + " messages to " + topic + " within " + ms_text(timeout) + ": " +
            std::to_string(not_sent) + " not sent, " + std::to_string(unknown) +
            " with an unknown outcome (sent, unconfirmed)";
    if (op->error) text += "; " + op->error->message();
    // Sent and unconfirmed: the broker may hold them. Nothing sent: a plain
    // timeout, which a re-send repairs.
    Errc code = closed_ ? Errc::closed : Errc::timeout;
    if (unknown > 0 && !closed_) code = Errc::outcome_unknown;
    return unexpected(code, std::move(text));
  }

  Result<std::vector<InMessage>> receive(const std::string& topic, const std::string& subscription, std::size_t max,
                                         std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    if (closed_) return closed_error();
    auto& slot = consumers_[topic + '\n' + subscription];
    if (!slot) {
      slot = std::make_shared<Consumer>();
      slot->topic = topic;
      slot->subscription = subscription;
    }
    auto consumer = slot;
    if (consumer->state == Consumer::State::closed && Clock::now() >= consumer->next_attempt) {
      asio::post(io_, [this, consumer] {
        std::lock_guard inner(mutex_);
        open_consumer_locked(consumer);
      });
    }
    cv_.wait_for(lock, wait, [&] { return !consumer->buffer.empty() || consumer->error || closed_; });
    if (closed_) return closed_error();
    if (consumer->buffer.empty() && consumer->error) {
      ErrorInfo e = std::move(*consumer->error);
      consumer->error.reset();
      return unexpected(std::move(e));
    }
    std::vector<InMessage> out;
    const std::size_t n = std::min(max, consumer->buffer.size());
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(std::move(consumer->buffer.front()));
      consumer->buffer.pop_front();
    }
    if (n > 0) {
      consumer->permits_owed += static_cast<std::uint32_t>(n);
      if (consumer->permits_owed >= std::max<std::uint32_t>(1, options_.receiver_queue / 2)) {
        asio::post(io_, [this, consumer] {
          std::lock_guard inner(mutex_);
          give_permits_locked(consumer);
        });
      }
    }
    return out;
  }

  Result<std::vector<InMessage>> browse(const std::string& topic, const std::string& subscription, std::size_t max,
                                        std::chrono::milliseconds timeout) {
    auto op = std::make_shared<BrowseOp>();
    op->topic = topic;
    op->subscription = subscription;
    op->max = max;
    std::unique_lock lock(mutex_);
    if (closed_) return closed_error();
    asio::post(io_, [this, op] {
      std::lock_guard inner(mutex_);
      start_browse_locked(op);
    });
    cv_.wait_for(lock, timeout, [&] { return op->done || closed_; });
    if (!op->done) {
      const ErrorInfo error{closed_ ? Errc::closed : Errc::timeout,
                            "browsing " + topic + " did not end within " + ms_text(timeout)};
      asio::post(io_, [this, op, error] {
        std::lock_guard inner(mutex_);
        end_browse_locked(op, error);
      });
      return unexpected(error);
    }
    if (op->error) return unexpected(*op->error);
    return std::move(op->messages);
  }

  Result<void> settle(std::uint64_t handle, bool ok, std::chrono::milliseconds delay) {
    std::lock_guard lock(mutex_);
    if (closed_) return closed_error();
    auto it = held_.find(handle);
    if (it == held_.end() || it->second.generation != it->second.consumer->generation) {
      if (it != held_.end()) held_.erase(it);
      return unexpected(Errc::not_found,
                        "the Pulsar message is no longer held (settled already, or its connection dropped and the "
                        "broker delivers it again)");
    }
    Held held = std::move(it->second);
    held_.erase(it);
    Entry& entry = *held.entry;
    if (!ok) {
      entry.released = true;
      entry.delay = std::max(entry.delay, delay);
    } else if (held.batch_index >= 0) {
      entry.acked.push_back(held.batch_index);
    }
    if (--entry.outstanding > 0) return {};
    auto consumer = held.consumer;
    const auto generation = held.generation;
    auto settled = held.entry;
    asio::post(io_, [this, consumer, generation, settled] {
      std::lock_guard inner(mutex_);
      settle_entry_locked(consumer, generation, *settled);
    });
    return {};
  }

  Result<std::uint32_t> partitions(const std::string& topic) {
    std::unique_lock lock(mutex_);
    if (closed_) return closed_error();
    // Shared with the I/O thread, which may answer after close() woke us.
    auto outcome = std::make_shared<std::optional<Result<std::uint32_t>>>();
    auto c = connection_locked(options_.host, options_.port);
    when_ready_locked(c, [this, outcome, c, topic](Result<void> ready) {
      if (!ready) {
        *outcome = unexpected(ready.error());
        cv_.notify_all();
        return;
      }
      request_locked(
          c, [&](std::uint64_t id) { return encode_partitioned_metadata(topic, id); },
          [this, outcome, topic](Result<Command> r) {
            if (!r) {
              *outcome = unexpected(r.error());
            } else if (r->type == CommandType::error || r->failed) {
              *outcome = unexpected(server_error(*r, "partitioned metadata of " + topic));
            } else {
              *outcome = r->partitions;
            }
            cv_.notify_all();
          });
    });
    cv_.wait(lock, [&] { return outcome->has_value() || closed_; });
    if (!outcome->has_value()) return closed_error();
    return std::move(**outcome);
  }

  void close(std::chrono::milliseconds deadline) {
    // One close at a time: a second caller waits for the first to finish.
    std::lock_guard closing(close_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (closed_ && !thread_.joinable()) return;
      closed_ = true;
      cv_.notify_all();
    }
    if (!thread_.joinable()) return;
    // Consumers and producers end with their connections: the broker
    // redelivers what was held or buffered.
    asio::post(io_, [this] {
      std::lock_guard lock(mutex_);
      for (auto& [address, c] : conns_) {
        error_code ignored;
        c->stream.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
        c->stream.next_layer().close(ignored);
        c->state = Conn::State::dead;
      }
      tick_.cancel();
    });
    guard_.reset();
    // The handlers left finish quickly once the sockets are closed.
    const auto until = babelqueue::detail::saturating_after(Clock::now(), deadline);
    while (!io_.stopped() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    io_.stop();
    thread_.join();
    std::lock_guard lock(mutex_);
    for (auto& [address, c] : conns_) c->requests.clear();
    conns_.clear();
  }

 private:
  Unexpected<ErrorInfo> closed_error() const { return unexpected(Errc::closed, "the Pulsar client is closed"); }

  void log(LogLevel level, const std::string& text) const {
    if (options_.log) options_.log(level, text);
  }

  Result<std::shared_ptr<asio::ssl::context>> make_tls_context() const {
    if (auto checked = options_.tls.check(); !checked) return unexpected(checked.error());
    if (auto usable = options_.tls.check_files(); !usable) return unexpected(usable.error());
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    error_code ec;
    const auto& tls = options_.tls;
    if (!tls.ca_file.empty()) {
      context->load_verify_file(tls.ca_file, ec);
      if (ec) return unexpected(Errc::invalid_argument, "tls_ca " + tls.ca_file + " cannot be loaded: " + ec.message());
    } else {
      context->set_default_verify_paths(ec);
      if (ec) return unexpected(Errc::invalid_argument, "the system's trusted CAs cannot be loaded: " + ec.message());
    }
    if (!tls.cert_file.empty()) {
      context->use_certificate_chain_file(tls.cert_file, ec);
      if (ec) {
        return unexpected(Errc::invalid_argument, "tls_cert " + tls.cert_file + " cannot be loaded: " + ec.message());
      }
      context->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
      if (ec)
        return unexpected(Errc::invalid_argument, "tls_key " + tls.key_file + " cannot be loaded: " + ec.message());
    }
    context->set_verify_mode(tls.verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return context;
  }

  // ---- the I/O thread (mutex_ held) ----

  std::uint64_t next_id() { return ++next_id_; }

  void schedule_tick_locked() {
    tick_.expires_after(kTick);
    tick_.async_wait([this](const error_code& ec) {
      if (ec) return;
      std::lock_guard lock(mutex_);
      if (closed_) return;
      on_tick_locked();
      schedule_tick_locked();
    });
  }

  void on_tick_locked() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Conn>> conns;
    for (auto& [address, c] : conns_) conns.push_back(c);
    for (auto& c : conns) {
      if (c->state == Conn::State::connecting && now >= c->connect_deadline) {
        fail_conn_locked(c, ErrorInfo{Errc::timeout, "cannot connect to the Pulsar broker at " + c->address() +
                                                         " within " + ms_text(options_.connect_timeout)});
        continue;
      }
      if (c->state != Conn::State::ready) continue;
      if (now - c->last_heard >= options_.keepalive) {
        if (c->ping_sent) {
          fail_conn_locked(
              c, ErrorInfo{Errc::connection, "the Pulsar broker at " + c->address() + " did not answer PING within " +
                                                 ms_text(options_.keepalive)});
          continue;
        }
        c->ping_sent = true;
        c->last_heard = now;
        write_locked(c, frame(encode_ping()));
      }
      std::vector<std::function<void(Result<Command>)>> expired;
      for (auto it = c->requests.begin(); it != c->requests.end();) {
        if (now >= it->second.deadline) {
          expired.push_back(std::move(it->second.done));
          it = c->requests.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& done : expired) {
        done(unexpected(Errc::timeout, "no answer from the Pulsar broker at " + c->address() + " within " +
                                           ms_text(options_.operation_timeout)));
      }
    }
    for (auto it = redeliveries_.begin(); it != redeliveries_.end();) {
      if (now >= it->at) {
        if (it->consumer->generation == it->generation && it->consumer->state == Consumer::State::ready) {
          write_locked(it->consumer->conn, frame(encode_redeliver(it->consumer->id, {it->id})));
        }
        it = redeliveries_.erase(it);
      } else {
        ++it;
      }
    }
    // Producers with messages waiting, and consumers, come back by
    // themselves after a lost connection.
    for (auto& [topic, p] : producers_) {
      if (p->state == Producer::State::closed && !p->queued.empty() && now >= p->next_attempt) {
        pump_producer_locked(p);
      }
    }
    for (auto& [key, consumer] : consumers_) {
      if (consumer->state == Consumer::State::closed && consumer->failures > 0 && now >= consumer->next_attempt) {
        open_consumer_locked(consumer);
      }
    }
  }

  std::shared_ptr<Conn> connection_locked(const std::string& host, std::uint16_t port) {
    const std::string key = host + "\n" + std::to_string(port);
    auto& slot = conns_[key];
    if (slot && slot->state != Conn::State::dead) return slot;
    auto c = std::make_shared<Conn>(io_, tls_context_ ? *tls_context_ : plain_context_);
    c->host = host;
    c->port = port;
    c->tls = options_.tls.enabled;
    c->connect_deadline = Clock::now() + options_.connect_timeout;
    c->reader.set_max_frame_size(kDefaultMaxFrameSize);
    slot = c;
    start_connect_locked(c);
    return c;
  }

  void when_ready_locked(const std::shared_ptr<Conn>& c, std::function<void(Result<void>)> done) {
    switch (c->state) {
      case Conn::State::ready: done({}); return;
      case Conn::State::dead:
        done(unexpected(c->error.value_or(ErrorInfo{Errc::connection, "the connection is closed"})));
        return;
      case Conn::State::connecting: c->waiters.push_back(std::move(done)); return;
    }
  }

  void start_connect_locked(const std::shared_ptr<Conn>& c) {
    error_code ec;
    const auto address = asio::ip::make_address(c->host, ec);
    if (!ec) {
      std::vector<tcp::endpoint> targets{tcp::endpoint(address, c->port)};
      connect_to_locked(c, std::move(targets));
      return;
    }
    auto resolver = std::make_shared<tcp::resolver>(io_);
    resolver->async_resolve(c->host, std::to_string(c->port),
                            [this, c, resolver](const error_code& e, const tcp::resolver::results_type& results) {
                              std::lock_guard lock(mutex_);
                              if (c->state == Conn::State::dead) return;
                              if (e) {
                                fail_conn_locked(c, ErrorInfo{Errc::connection, "cannot resolve the Pulsar host " +
                                                                                    c->host + ": " + e.message()});
                                return;
                              }
                              std::vector<tcp::endpoint> targets;
                              for (const auto& entry : results) targets.push_back(entry.endpoint());
                              connect_to_locked(c, std::move(targets));
                            });
  }

  void connect_to_locked(const std::shared_ptr<Conn>& c, std::vector<tcp::endpoint> targets) {
    asio::async_connect(c->stream.next_layer(), targets, [this, c](const error_code& e, const tcp::endpoint&) {
      std::lock_guard lock(mutex_);
      if (c->state == Conn::State::dead) return;
      if (e) {
        fail_conn_locked(c, ErrorInfo{Errc::connection,
                                      "cannot connect to the Pulsar broker at " + c->address() + ": " + e.message()});
        return;
      }
      error_code ignored;
      c->stream.next_layer().set_option(tcp::no_delay(true), ignored);
      if (c->tls) {
        start_handshake_locked(c);
      } else {
        send_connect_locked(c);
      }
    });
  }

  void start_handshake_locked(const std::shared_ptr<Conn>& c) {
    const auto& tls = options_.tls;
    const std::string name = tls.server_name.empty() ? c->host : tls.server_name;
    SSL* ssl = c->stream.native_handle();
    const bool ip = is_ip_literal(name);
    if (!ip) SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
    if (tls.verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      const int named = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                           : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      if (named != 1) {
        fail_conn_locked(c, ErrorInfo{Errc::invalid_argument, "cannot check the TLS certificate against " + name});
        return;
      }
    }
    c->stream.async_handshake(asio::ssl::stream_base::client, [this, c, name](const error_code& e) {
      std::lock_guard lock(mutex_);
      if (c->state == Conn::State::dead) return;
      if (e) {
        const long verdict = SSL_get_verify_result(c->stream.native_handle());  // NOLINT(google-runtime-int)
        if (options_.tls.verify && verdict != X509_V_OK) {
          const std::string ca =
              options_.tls.ca_file.empty() ? "the system's trusted CAs" : "tls_ca " + options_.tls.ca_file;
          fail_conn_locked(c, ErrorInfo{Errc::auth, "the TLS certificate of the Pulsar broker at " + c->address() +
                                                        " was not accepted: " + X509_verify_cert_error_string(verdict) +
                                                        " (checked against " + ca + " for the name " + name + ")"});
        } else {
          fail_conn_locked(c, ErrorInfo{Errc::connection, "TLS handshake with the Pulsar broker at " + c->address() +
                                                              " failed: " + e.message() + " (is it a TLS port?)"});
        }
        return;
      }
      send_connect_locked(c);
    });
  }

  void send_connect_locked(const std::shared_ptr<Conn>& c) {
    const std::string method = options_.token.empty() ? "" : "token";
    write_locked(c, frame(encode_connect(options_.client_version, method, options_.token)));
    start_read_locked(c);
  }

  void start_read_locked(const std::shared_ptr<Conn>& c) {
    auto handler = [this, c](const error_code& e, std::size_t n) {
      std::lock_guard lock(mutex_);
      if (c->state == Conn::State::dead) return;
      if (e) {
        const bool before = c->state == Conn::State::connecting;
        std::string text = e == asio::error::eof || e == asio::ssl::error::stream_truncated
                               ? "the Pulsar broker at " + c->address() + " closed the connection"
                               : "connection to the Pulsar broker at " + c->address() + " lost: " + e.message();
        if (before) text += " before answering CONNECT (a TLS port, or a refused connection?)";
        fail_conn_locked(c, ErrorInfo{Errc::connection, std::move(text)});
        return;
      }
      c->last_heard = Clock::now();
      c->ping_sent = false;
      c->reader.feed(std::string_view(c->input.data(), n));
      for (;;) {
        auto next = c->reader.next();
        if (!next) {
          fail_conn_locked(c, ErrorInfo{next.error().code(), next.error().message() + " (from " + c->address() + ")"});
          return;
        }
        if (!*next) break;
        dispatch_locked(c, std::move(**next));
        if (c->state == Conn::State::dead) return;
      }
      start_read_locked(c);
    };
    if (c->tls) {
      c->stream.async_read_some(asio::buffer(c->input), std::move(handler));
    } else {
      c->stream.next_layer().async_read_some(asio::buffer(c->input), std::move(handler));
    }
  }

  void write_locked(const std::shared_ptr<Conn>& c, std::string_view bytes) {
    if (c->state == Conn::State::dead) return;
    c->out_pending.append(bytes);
    if (!c->writing) start_write_locked(c);
  }

  void start_write_locked(const std::shared_ptr<Conn>& c) {
    if (c->out_pending.empty()) return;
    c->writing = true;
    c->out_writing.clear();
    c->out_writing.swap(c->out_pending);
    auto handler = [this, c](const error_code& e, std::size_t) {
      std::lock_guard lock(mutex_);
      c->writing = false;
      if (c->state == Conn::State::dead) return;
      if (e) {
        fail_conn_locked(c, ErrorInfo{Errc::connection,
                                      "connection to the Pulsar broker at " + c->address() + " lost: " + e.message()});
        return;
      }
      start_write_locked(c);
    };
    if (c->tls) {
      asio::async_write(c->stream, asio::buffer(c->out_writing), std::move(handler));
    } else {
      asio::async_write(c->stream.next_layer(), asio::buffer(c->out_writing), std::move(handler));
    }
  }

  // Sends the command built for a fresh request id and calls done with the
  // answer (or a failure) once.
  void request_locked(const std::shared_ptr<Conn>& c, const std::function<std::string(std::uint64_t)>& build,
                      std::function<void(Result<Command>)> done) {
    if (c->state != Conn::State::ready) {
      done(unexpected(c->error.value_or(ErrorInfo{Errc::connection, "the connection is not open"})));
      return;
    }
    const std::uint64_t id = next_id();
    c->requests[id] = Conn::Request{Clock::now() + options_.operation_timeout, std::move(done)};
    write_locked(c, frame(build(id)));
  }

  void fail_conn_locked(const std::shared_ptr<Conn>& c, ErrorInfo error) {
    if (c->state == Conn::State::dead) return;
    const bool was_ready = c->state == Conn::State::ready;
    c->state = Conn::State::dead;
    c->error = error;
    error_code ignored;
    c->stream.next_layer().close(ignored);
    if (was_ready && !closed_) {
      lost_ready_ = true;
      log(LogLevel::warning, error.message() + "; reconnecting");
    }
    auto waiters = std::move(c->waiters);
    c->waiters.clear();
    auto requests = std::move(c->requests);
    c->requests.clear();
    for (auto& w : waiters) w(unexpected(error));
    for (auto& [id, r] : requests) r.done(unexpected(error));
    for (auto& [topic, p] : producers_) {
      if (p->conn == c) producer_lost_locked(p, error);
    }
    for (auto& [key, consumer] : consumers_) {
      if (consumer->conn == c) consumer_lost_locked(consumer, error);
    }
    std::vector<std::shared_ptr<BrowseOp>> browsing;
    for (auto& [id, op] : browsers_by_id_) {
      if (op->conn == c) browsing.push_back(op);
    }
    for (auto& op : browsing) end_browse_locked(op, error);
    cv_.notify_all();
  }

  void producer_lost_locked(const std::shared_ptr<Producer>& p, const ErrorInfo& error) {
    producers_by_id_.erase(p->id);
    p->state = Producer::State::closed;
    p->conn.reset();
    p->failures++;
    p->next_attempt = Clock::now() + options_.reconnect.delay_for(p->failures);
    for (auto& [sequence, entry] : p->in_flight) {
      auto& op = entry.first;
      op->answered += entry.second.size();
      if (!op->error) {
        op->error = ErrorInfo{Errc::outcome_unknown,
                              "the connection dropped before the broker confirmed (outcome unknown: "
                              "the message may have arrived): " +
                                  error.message()};
      }
    }
    p->in_flight.clear();
    cv_.notify_all();
  }

  void consumer_lost_locked(const std::shared_ptr<Consumer>& consumer, const ErrorInfo& error) {
    consumers_by_id_.erase(consumer->id);
    consumer->state = Consumer::State::closed;
    consumer->conn.reset();
    consumer->generation++;
    consumer->buffer.clear();
    consumer->permits_owed = 0;
    consumer->acked_in_batch.clear();
    consumer->failures++;
    consumer->next_attempt = Clock::now() + options_.reconnect.delay_for(consumer->failures);
    (void)error;
    cv_.notify_all();
  }

  void dispatch_locked(const std::shared_ptr<Conn>& c, Frame f) {
    Command& cmd = f.command;
    switch (cmd.type) {
      case CommandType::connected: {
        c->state = Conn::State::ready;
        if (std::exchange(lost_ready_, false)) reconnects_.fetch_add(1, std::memory_order_relaxed);
        if (cmd.max_message_size && *cmd.max_message_size > 0) {
          c->max_message_size = static_cast<std::size_t>(*cmd.max_message_size);
          c->reader.set_max_frame_size(c->max_message_size + 10 * 1024);
        }
        auto waiters = std::move(c->waiters);
        c->waiters.clear();
        for (auto& w : waiters) w({});
        cv_.notify_all();
        return;
      }
      case CommandType::auth_challenge:
        write_locked(c, frame(encode_auth_response(options_.client_version, "token", options_.token)));
        return;
      case CommandType::ping: write_locked(c, frame(encode_pong())); return;
      case CommandType::pong: return;
      case CommandType::error:
        if (c->state == Conn::State::connecting) {
          ErrorInfo e = server_error(cmd, "the Pulsar broker at " + c->address() + " refused the connection");
          fail_conn_locked(c, std::move(e));
          return;
        }
        [[fallthrough]];
      case CommandType::success:
      case CommandType::producer_success:
      case CommandType::lookup_response:
      case CommandType::partitioned_metadata_response:
      case CommandType::get_last_message_id_response:
      case CommandType::ack_response: {
        if (!cmd.request_id) return;
        auto it = c->requests.find(*cmd.request_id);
        if (it == c->requests.end()) return;
        auto done = std::move(it->second.done);
        c->requests.erase(it);
        done(std::move(cmd));
        return;
      }
      case CommandType::send_receipt:
      case CommandType::send_error: on_send_answer_locked(cmd); return;
      case CommandType::message: on_message_locked(std::move(f)); return;
      case CommandType::close_producer: {
        auto it = producers_by_id_.find(cmd.producer_id);
        if (it != producers_by_id_.end()) {
          auto p = it->second;
          producer_lost_locked(p, ErrorInfo{Errc::connection, "the broker closed the producer on " + p->topic});
        }
        return;
      }
      case CommandType::close_consumer: {
        auto it = consumers_by_id_.find(cmd.consumer_id);
        if (it != consumers_by_id_.end()) {
          auto consumer = it->second;
          consumer_lost_locked(consumer,
                               ErrorInfo{Errc::connection, "the broker closed the consumer on " + consumer->topic});
        }
        return;
      }
      default:
        // REACHED_END_OF_TOPIC, ACTIVE_CONSUMER_CHANGE and commands newer
        // than this client: nothing to do for a Shared consumer.
        log(LogLevel::debug, "ignored " + std::string(to_string(cmd.type)) + " (type " +
                                 std::to_string(static_cast<std::uint32_t>(cmd.type)) + ") from " + c->address());
        return;
    }
  }

  // ---- lookup ----

  void lookup_locked(const std::string& topic, std::function<void(Result<std::shared_ptr<Conn>>)> done,
                     std::shared_ptr<Conn> via = nullptr, bool authoritative = false, int hops = 0) {
    auto c = via ? via : connection_locked(options_.host, options_.port);
    when_ready_locked(c, [this, topic, done, c, authoritative, hops](Result<void> ready) {
      if (!ready) {
        done(unexpected(ready.error()));
        return;
      }
      request_locked(
          c, [&](std::uint64_t id) { return encode_lookup(topic, id, authoritative, options_.listener_name); },
          [this, topic, done, c, hops](Result<Command> r) {
            if (!r) {
              done(unexpected(r.error()));
              return;
            }
            if (r->type == CommandType::error || r->lookup == LookupType::failed || !r->lookup) {
              done(unexpected(server_error(*r, "lookup of " + topic)));
              return;
            }
            if (r->proxy_through_service_url) {
              // A proxy: everything goes through the service connection.
              done(connection_locked(options_.host, options_.port));
              return;
            }
            const std::string& url = options_.tls.enabled ? r->broker_url_tls : r->broker_url;
            auto target = parse_broker_url(url);
            if (!target) {
              done(unexpected(Errc::broker, "lookup of " + topic + " answered an unusable broker URL '" + url + "'"));
              return;
            }
            auto next = connection_locked(target->first, target->second);
            if (*r->lookup == LookupType::connect) {
              when_ready_locked(next, [done, next](Result<void> ok) {
                if (!ok) {
                  done(unexpected(ok.error()));
                } else {
                  done(next);
                }
              });
              return;
            }
            if (hops >= kMaxRedirects) {
              done(unexpected(Errc::broker, "lookup of " + topic + " redirected more than " +
                                                std::to_string(kMaxRedirects) + " times"));
              return;
            }
            lookup_locked(topic, done, next, r->authoritative, hops + 1);
          });
    });
  }

  // ---- producers ----

  void pump_producer_locked(const std::shared_ptr<Producer>& p) {
    if (closed_) return;
    if (p->state == Producer::State::ready) {
      flush_producer_locked(p);
      return;
    }
    if (p->state == Producer::State::opening || p->queued.empty()) return;
    p->state = Producer::State::opening;
    lookup_locked(p->topic, [this, p](Result<std::shared_ptr<Conn>> c) {
      if (!c) {
        producer_failed_locked(p, c.error());
        return;
      }
      auto conn = *c;
      p->id = next_id();
      request_locked(
          conn, [&](std::uint64_t id) { return encode_producer(p->topic, p->id, id); },
          [this, p, conn](Result<Command> r) {
            if (!r) {
              producer_failed_locked(p, r.error());
              return;
            }
            if (r->type != CommandType::producer_success) {
              producer_failed_locked(p, server_error(*r, "the broker refused a producer on " + p->topic));
              return;
            }
            p->state = Producer::State::ready;
            p->conn = conn;
            p->name = r->producer_name;
            p->failures = 0;
            producers_by_id_[p->id] = p;
            flush_producer_locked(p);
          });
    });
  }

  void producer_failed_locked(const std::shared_ptr<Producer>& p, const ErrorInfo& error) {
    p->state = Producer::State::closed;
    p->failures++;
    p->next_attempt = Clock::now() + options_.reconnect.delay_for(p->failures);
    for (auto& [op, index] : p->queued) {
      if (op->abandoned) continue;
      op->answered++;
      if (!op->error) op->error = ErrorInfo{error.code(), "no producer on " + p->topic + ": " + error.message()};
    }
    p->queued.clear();
    cv_.notify_all();
  }

  void flush_producer_locked(const std::shared_ptr<Producer>& p) {
    if (p->queued.empty()) return;
    std::string bytes;
    const auto publish_time = static_cast<std::uint64_t>(now_ms());
    while (!p->queued.empty()) {
      auto [op, index] = p->queued.front();
      p->queued.pop_front();
      if (op->abandoned) continue;
      OutMessage& m = op->messages[index];
      // Above the broker's limit the broker would drop the connection (a
      // frame too large), and every reconnect would send it again: refused
      // here, naming both sizes, and the rest of the call goes on.
      const std::size_t limit = p->conn->max_message_size;
      if (m.payload.size() > limit) {
        op->answered++;
        if (!op->error) {
          op->error = ::babelqueue::detail::message_too_large(p->topic, m.payload.size(), "the Pulsar broker", limit,
                                                              "its maxMessageSize");
        }
        if (op->finished()) cv_.notify_all();
        continue;
      }
      // A batch call's consecutive messages without a delay (deliver_at_time
      // is per entry) share one batched entry, as libpulsar's producer does.
      std::vector<std::size_t> members{index};
      std::size_t batch_bytes = m.payload.size();
      if (op->batch && !m.deliver_at) {
        while (!p->queued.empty() && members.size() < kMaxBatchMessages && batch_bytes < kMaxBatchBytes) {
          const auto& [next_op, next_index] = p->queued.front();
          if (next_op != op || op->messages[next_index].deliver_at) break;
          // (with room for the entry's framing, a few bytes a member)
          if (batch_bytes + op->messages[next_index].payload.size() + 64 * (members.size() + 1) > limit) break;
          batch_bytes += op->messages[next_index].payload.size();
          members.push_back(next_index);
          p->queued.pop_front();
        }
      }
      const std::uint64_t sequence = p->next_sequence;
      p->next_sequence += members.size();
      MessageMetadata metadata;
      metadata.producer_name = p->name;
      metadata.sequence_id = sequence;
      metadata.publish_time = publish_time;
      if (members.size() == 1) {
        metadata.properties = m.properties;
        metadata.partition_key = m.key;
        metadata.deliver_at_time = m.deliver_at;
        append_payload_frame(bytes, encode_send(p->id, sequence, 1), encode_metadata(metadata), m.payload);
      } else {
        std::vector<EntryMessage> entries;
        entries.reserve(members.size());
        for (std::size_t i : members) {
          OutMessage& member = op->messages[i];
          entries.push_back(EntryMessage{member.properties, member.key, member.payload, -1});
        }
        metadata.num_messages_in_batch = static_cast<std::int32_t>(members.size());
        append_payload_frame(bytes, encode_send(p->id, sequence, static_cast<std::int32_t>(members.size())),
                             encode_metadata(metadata), build_batch(entries));
      }
      op->sent += members.size();
      p->in_flight.emplace(sequence, std::make_pair(op, std::move(members)));
    }
    write_locked(p->conn, bytes);
  }

  void on_send_answer_locked(const Command& cmd) {
    auto pit = producers_by_id_.find(cmd.producer_id);
    if (pit == producers_by_id_.end()) return;
    auto& p = pit->second;
    auto it = p->in_flight.find(cmd.sequence_id);
    if (it == p->in_flight.end()) return;
    auto op = it->second.first;
    const std::size_t count = it->second.second.size();
    p->in_flight.erase(it);
    op->answered += count;
    if (cmd.type == CommandType::send_receipt) {
      op->confirmed += count;
    } else if (!op->error) {
      op->error = server_error(cmd, "the broker refused a message on " + p->topic);
    }
    if (op->finished()) cv_.notify_all();
  }

  // ---- consumers ----

  void open_consumer_locked(const std::shared_ptr<Consumer>& consumer) {
    if (closed_ || consumer->state != Consumer::State::closed) return;
    consumer->state = Consumer::State::opening;
    lookup_locked(consumer->topic, [this, consumer](Result<std::shared_ptr<Conn>> c) {
      if (!c) {
        consumer_failed_locked(consumer, c.error());
        return;
      }
      auto conn = *c;
      consumer->id = next_id();
      consumers_by_id_[consumer->id] = consumer;
      consumer->conn = conn;
      request_locked(
          conn,
          [&](std::uint64_t id) {
            return encode_subscribe(consumer->topic, consumer->subscription, SubscriptionType::shared, consumer->id, id,
                                    "", InitialPosition::earliest);
          },
          [this, consumer, conn](Result<Command> r) {
            if (!r) {
              consumer_failed_locked(consumer, r.error());
              return;
            }
            if (r->type != CommandType::success) {
              consumer_failed_locked(consumer,
                                     server_error(*r, "the broker refused a subscription on " + consumer->topic));
              return;
            }
            if (consumer->failures > 0) log(LogLevel::info, "Pulsar consumer on " + consumer->topic + " is back");
            consumer->state = Consumer::State::ready;
            consumer->failures = 0;
            consumer->permits_owed = 0;
            write_locked(conn, frame(encode_flow(consumer->id, options_.receiver_queue)));
          });
    });
  }

  void consumer_failed_locked(const std::shared_ptr<Consumer>& consumer, const ErrorInfo& error) {
    consumers_by_id_.erase(consumer->id);
    consumer->conn.reset();
    consumer->state = Consumer::State::closed;
    consumer->failures++;
    consumer->next_attempt = Clock::now() + options_.reconnect.delay_for(consumer->failures);
    consumer->error = ErrorInfo{error.code(), "no consumer on " + consumer->topic + ": " + error.message()};
    cv_.notify_all();
  }

  void give_permits_locked(const std::shared_ptr<Consumer>& consumer) {
    if (consumer->state != Consumer::State::ready || consumer->permits_owed == 0) return;
    write_locked(consumer->conn, frame(encode_flow(consumer->id, consumer->permits_owed)));
    consumer->permits_owed = 0;
  }

  void on_message_locked(Frame f) {
    if (auto browser = browsers_by_id_.find(f.command.consumer_id); browser != browsers_by_id_.end()) {
      auto op = browser->second;
      browse_entry_locked(op, std::move(f));
      return;
    }
    auto it = consumers_by_id_.find(f.command.consumer_id);
    if (it == consumers_by_id_.end() || !f.metadata) return;
    auto consumer = it->second;
    if (consumer->state != Consumer::State::ready) return;
    const MessageMetadata& metadata = *f.metadata;
    MessageId entry_id = f.command.message_id;
    entry_id.batch_index = -1;
    std::vector<EntryMessage> messages;
    const std::int32_t announced = metadata.num_messages_in_batch.value_or(1);
    auto split = split_entry(metadata, f.payload, options_.max_message_size);
    if (split) {
      messages = std::move(*split);
    } else {
      // An entry this client cannot unpack (a codec it does not know, a
      // corrupt batch) still reaches the runtime, as its raw bytes: they do
      // not decode as an envelope, so it is treated as poison instead of
      // being redelivered forever.
      log(LogLevel::error, "a Pulsar message on " + consumer->topic + " cannot be unpacked (" +
                               split.error().message() + "); handing over its raw payload");
      EntryMessage raw;
      raw.properties = metadata.properties;
      raw.partition_key = metadata.partition_key;
      raw.payload = std::move(f.payload);
      messages.push_back(std::move(raw));
    }
    // A batch redelivered after some of its messages were acknowledged
    // carries the still unacknowledged ones as set bits.
    const auto& ack_set = f.command.ack_set;
    if (!ack_set.empty()) {
      std::erase_if(messages, [&](const EntryMessage& m) {
        if (m.batch_index < 0) return false;
        const auto word = static_cast<std::size_t>(m.batch_index) / 64;
        const auto bit = static_cast<unsigned>(m.batch_index) % 64;
        return word >= ack_set.size() || ((static_cast<std::uint64_t>(ack_set[word]) >> bit) & 1U) == 0;
      });
    }
    // The same, remembered by this consumer: the broker redelivers a batch
    // whole when one of its messages was released.
    const auto entry_key = std::make_pair(entry_id.ledger, entry_id.entry);
    std::vector<std::int32_t> acked_before;
    if (auto known = consumer->acked_in_batch.find(entry_key); known != consumer->acked_in_batch.end()) {
      acked_before = std::move(known->second);
      consumer->acked_in_batch.erase(known);
      std::erase_if(messages, [&](const EntryMessage& m) {
        return m.batch_index >= 0 &&
               std::find(acked_before.begin(), acked_before.end(), m.batch_index) != acked_before.end();
      });
    }
    const auto delivered = static_cast<std::int32_t>(messages.size());
    if (announced > delivered) consumer->permits_owed += static_cast<std::uint32_t>(announced - delivered);
    if (messages.empty()) {
      write_locked(consumer->conn, frame(encode_ack(consumer->id, {entry_id})));
      return;
    }
    auto entry = std::make_shared<Entry>();
    entry->id = entry_id;
    entry->outstanding = messages.size();
    entry->acked = std::move(acked_before);
    for (auto& m : messages) {
      InMessage in;
      in.handle = next_id();
      in.payload = std::move(m.payload);
      in.properties = std::move(m.properties);
      in.key = std::move(m.partition_key);
      in.redelivery_count = f.command.redelivery_count;
      in.id = entry_id;
      in.id.batch_index = m.batch_index;
      in.publish_time = metadata.publish_time;
      held_.emplace(in.handle, Held{consumer, consumer->generation, entry, m.batch_index});
      consumer->buffer.push_back(std::move(in));
    }
    cv_.notify_all();
  }

  // ---- browsing ----

  // Whether a comes after b in the topic (ledger, then entry). -1 is read
  // as such: the last message of an empty topic is -1:-1, and a
  // subscription at a ledger's start has entry -1.
  static bool after(const MessageId& a, const MessageId& b) {
    const auto signed_value = [](std::uint64_t value) { return static_cast<std::int64_t>(value); };
    if (a.ledger != b.ledger) return signed_value(a.ledger) > signed_value(b.ledger);
    return signed_value(a.entry) > signed_value(b.entry);
  }

  // A consumer of the subscription that is given no permits (so the broker
  // sends it nothing) asks for the topic's last message and the
  // subscription's mark-delete position, and closes; a non-durable reader
  // then reads from that position to that last message.
  void start_browse_locked(const std::shared_ptr<BrowseOp>& op) {
    if (closed_) return end_browse_locked(op, ErrorInfo{Errc::closed, "the Pulsar client is closed"});
    lookup_locked(op->topic, [this, op](Result<std::shared_ptr<Conn>> found) {
      if (!found) return end_browse_locked(op, found.error());
      auto conn = *found;
      op->conn = conn;
      const std::uint64_t probe = next_id();
      request_locked(
          conn,
          [&](std::uint64_t id) {
            return encode_subscribe(op->topic, op->subscription, SubscriptionType::shared, probe, id, "",
                                    InitialPosition::earliest);
          },
          [this, op, conn, probe](Result<Command> subscribed) {
            if (!subscribed || subscribed->type != CommandType::success) {
              return end_browse_locked(
                  op, subscribed ? server_error(*subscribed, "browsing " + op->topic) : subscribed.error());
            }
            request_locked(
                conn, [&](std::uint64_t id) { return encode_get_last_message_id(probe, id); },
                [this, op, conn, probe](Result<Command> last) {
                  request_locked(
                      conn, [&](std::uint64_t id) { return encode_close_consumer(probe, id); }, [](Result<Command>) {});
                  if (!last || last->type != CommandType::get_last_message_id_response) {
                    return end_browse_locked(op, last ? server_error(*last, "browsing " + op->topic) : last.error());
                  }
                  if (!last->mark_delete_position) {
                    return end_browse_locked(op, ErrorInfo{Errc::unsupported,
                                                           "the Pulsar broker does not tell a subscription's "
                                                           "position (brokers from 2.8 on do)"});
                  }
                  op->last = last->message_id;
                  if (!after(op->last, *last->mark_delete_position)) return end_browse_locked(op, std::nullopt);
                  open_reader_locked(op, conn, *last->mark_delete_position);
                });
          });
    });
  }

  void open_reader_locked(const std::shared_ptr<BrowseOp>& op, const std::shared_ptr<Conn>& conn,
                          const MessageId& start) {
    op->start = start;
    op->reader_id = next_id();
    browsers_by_id_[op->reader_id] = op;
    const std::string name = "babelqueue-peek-" + std::to_string(op->reader_id);
    request_locked(
        conn,
        [&](std::uint64_t id) {
          return encode_subscribe(op->topic, name, SubscriptionType::exclusive, op->reader_id, id, "",
                                  InitialPosition::earliest, false, &start);
        },
        [this, op, conn](Result<Command> r) {
          if (!r || r->type != CommandType::success) {
            return end_browse_locked(op, r ? server_error(*r, "reading " + op->topic) : r.error());
          }
          write_locked(conn, frame(encode_flow(op->reader_id, options_.receiver_queue)));
        });
  }

  // An entry for a reader: its messages are shown, unless still delayed
  // (deliver_at_time: a consumer would not get them yet).
  void browse_entry_locked(const std::shared_ptr<BrowseOp>& op, Frame f) {
    if (op->done || !f.metadata) return;
    const MessageMetadata& metadata = *f.metadata;
    MessageId entry_id = f.command.message_id;
    entry_id.batch_index = -1;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (after(entry_id, op->last)) return end_browse_locked(op, std::nullopt);  // published since we looked
    // The broker starts a reader at its start position itself, which is
    // acknowledged already: skipped, as libpulsar's readers skip it.
    const bool acknowledged = !after(entry_id, op->start);
    if (!acknowledged && (!metadata.deliver_at_time || *metadata.deliver_at_time <= now)) {
      auto split = split_entry(metadata, f.payload, options_.max_message_size);
      std::vector<EntryMessage> messages;
      if (split) {
        messages = std::move(*split);
      } else {
        EntryMessage raw;  // shown as its raw bytes, as receive() hands it over
        raw.properties = metadata.properties;
        raw.partition_key = metadata.partition_key;
        raw.payload = std::move(f.payload);
        messages.push_back(std::move(raw));
      }
      for (auto& m : messages) {
        if (op->messages.size() >= op->max) break;
        InMessage in;
        in.payload = std::move(m.payload);
        in.properties = std::move(m.properties);
        in.key = std::move(m.partition_key);
        in.id = entry_id;
        in.id.batch_index = m.batch_index;
        in.publish_time = metadata.publish_time;
        op->messages.push_back(std::move(in));
      }
    }
    if (op->messages.size() >= op->max || !after(op->last, entry_id)) return end_browse_locked(op, std::nullopt);
    // Keep the window open: a permit back for each message of the entry.
    write_locked(op->conn, frame(encode_flow(op->reader_id, static_cast<std::uint32_t>(std::max<std::int32_t>(
                                                                1, metadata.num_messages_in_batch.value_or(1))))));
  }

  // Ends a browse once: closes its reader (the non-durable subscription goes
  // with it) and wakes the caller.
  void end_browse_locked(const std::shared_ptr<BrowseOp>& op, std::optional<ErrorInfo> error) {
    if (op->done) return;
    op->done = true;
    op->error = std::move(error);
    if (op->reader_id != 0) {
      browsers_by_id_.erase(op->reader_id);
      if (op->conn && op->conn->state == Conn::State::ready) {
        const std::uint64_t reader = op->reader_id;
        request_locked(
            op->conn, [&](std::uint64_t id) { return encode_close_consumer(reader, id); }, [](Result<Command>) {});
      }
    }
    cv_.notify_all();
  }

  void settle_entry_locked(const std::shared_ptr<Consumer>& consumer, std::uint64_t generation, const Entry& entry) {
    if (consumer->generation != generation || consumer->state != Consumer::State::ready) return;
    if (!entry.released) {
      write_locked(consumer->conn, frame(encode_ack(consumer->id, {entry.id})));
      return;
    }
    if (!entry.acked.empty()) consumer->acked_in_batch[{entry.id.ledger, entry.id.entry}] = entry.acked;
    if (entry.delay.count() > 0) {
      redeliveries_.push_back(DueRedelivery{babelqueue::detail::saturating_after(Clock::now(), entry.delay), consumer,
                                            generation, entry.id});
      return;
    }
    write_locked(consumer->conn, frame(encode_redeliver(consumer->id, {entry.id})));
  }

  ClientOptions options_;
  asio::io_context io_{1};
  asio::ssl::context plain_context_;  // unused by plain connections; the stream type needs one
  std::shared_ptr<asio::ssl::context> tls_context_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  asio::steady_timer tick_;
  std::thread thread_;

  std::mutex close_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool lost_ready_ = false;                   // a ready connection was lost since the last one became ready
  std::atomic<std::uint64_t> reconnects_{0};  // connections ready again after such a loss; read from any thread
  std::uint64_t next_id_ = 0;
  std::map<std::string, std::shared_ptr<Conn>> conns_;
  std::map<std::string, std::shared_ptr<Producer>> producers_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Producer>> producers_by_id_;
  std::map<std::string, std::shared_ptr<Consumer>> consumers_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Consumer>> consumers_by_id_;
  std::unordered_map<std::uint64_t, std::shared_ptr<BrowseOp>> browsers_by_id_;
  std::unordered_map<std::uint64_t, Held> held_;
  std::vector<DueRedelivery> redeliveries_;
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::connect(ClientOptions options) {
  if (options.host.empty()) return unexpected(Errc::invalid_argument, "the Pulsar host is empty");
  if (options.receiver_queue == 0) return unexpected(Errc::invalid_argument, "the receiver queue must be at least 1");
  auto impl = std::make_unique<Impl>(std::move(options));
  if (auto started = impl->start(); !started) return unexpected(started.error());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const ClientOptions& Client::options() const noexcept { return impl_->options(); }
std::uint64_t Client::reconnects() const noexcept { return impl_->reconnects(); }

Result<void> Client::send(const std::string& topic, std::vector<OutMessage> messages, std::chrono::milliseconds timeout,
                          bool batch) {
  return impl_->send(topic, std::move(messages), timeout, batch);
}

Result<std::vector<InMessage>> Client::receive(const std::string& topic, const std::string& subscription,
                                               std::size_t max, std::chrono::milliseconds wait) {
  return impl_->receive(topic, subscription, max, wait);
}

Result<std::vector<InMessage>> Client::browse(const std::string& topic, const std::string& subscription,
                                              std::size_t max, std::chrono::milliseconds timeout) {
  return impl_->browse(topic, subscription, max, timeout);
}

Result<void> Client::ack(std::uint64_t handle) { return impl_->settle(handle, true, {}); }

Result<void> Client::negative_ack(std::uint64_t handle, std::chrono::milliseconds delay) {
  return impl_->settle(handle, false, delay);
}

Result<std::uint32_t> Client::partitions(const std::string& topic) { return impl_->partitions(topic); }

void Client::close(std::chrono::milliseconds deadline) { impl_->close(deadline); }

}  // namespace babelqueue::pulsar_detail
