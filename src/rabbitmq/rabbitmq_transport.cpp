// SPDX-License-Identifier: Apache-2.0
// rabbitmq::Transport: the public class and its API-thread side (State). The
// pieces, by concept and by the thread that uses them (ADR 0007):
//   shared_state    what API threads and the I/O thread share, under one mutex
//   io_loop         the I/O thread: its loop, frames, sleep and reconnects
//   connection      socket, TLS, login, channels, broker closes (I/O thread)
//   publisher       the publish channel: confirms, returns (I/O thread);
//   publish_jobs    the jobs API threads queue for it (shared)
//   consumers       the consume channel: QoS, consume, acks (I/O thread);
//   consumer_table  the consumers and ready buffers API threads read (shared)
//   queue_declarer  queue and delay bucket declarations (I/O thread)
//   delay_buckets   bucket naming and selection (pure)
#include "delay_buckets.hpp"
#include "io_loop.hpp"
#include "shared_state.hpp"

#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

namespace babelqueue {
namespace {

using rabbitmq::detail::Clock;
using rabbitmq::detail::Consumer;
using rabbitmq::detail::kMaxDelay;
using rabbitmq::detail::Locked;
using rabbitmq::detail::PublishJob;
using rabbitmq::detail::PublishProgress;
using rabbitmq::detail::StatsJob;
using std::chrono::milliseconds;

// A body larger than the broker takes, refused before it is sent: RabbitMQ
// would close the channel with 406 PRECONDITION_FAILED, after the bytes went out.
ErrorInfo too_large(std::string_view queue, std::size_t size, std::size_t limit) {
  return ::babelqueue::detail::message_too_large(queue, size, "RabbitMQ", limit, "max_message_size");
}

// AMQP carries the heartbeat as a 16-bit number of seconds.
constexpr std::chrono::seconds kMaxHeartbeat(65535);

}  // namespace

// The API threads' side: checks requests, queues them in SharedState for the
// I/O thread and waits for the answers. Used by any thread.
class rabbitmq::Transport::State {
 public:
  explicit State(Options options)
      : options_(std::move(options)), endpoint_(rabbitmq::detail::endpoint_of(options_)), io_(options_, shared_) {}

  ~State() { stop(milliseconds(0)); }

  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const Options& options() const { return options_; }

  Result<void> start() {
    if (!shared_.wake_fd.valid()) return unexpected(Errc::io, "eventfd failed");
    auto connected = io_.connect();
    if (!connected) return unexpected(connected.error());
    if (options_.log)
      options_.log(LogLevel::info, "rabbitmq: connected to " + endpoint_ + " (vhost " + options_.vhost + ")");
    io_thread_ = std::thread([this] { io_.run(); });
    return {};
  }

  Result<void> publish(std::span<const OutgoingMessage> messages) {
    auto items = rabbitmq::detail::publish_items(messages);
    if (!items) return unexpected(items.error());
    if (items->empty()) return {};
    auto job = std::make_shared<PublishJob>(std::move(*items), Clock::now() + options_.publish_timeout);
    Locked locked = shared_.lock();
    if (locked->closed) return unexpected(Errc::closed, "publish: the transport is closed");
    for (const auto& item : job->items()) {
      if (item.bucket.count() > 0) locked->buckets.add(item.queue, item.bucket);
    }
    locked->publishes.push_back(job);
    locked.wake_io();
    // The I/O thread enforces the deadline; the extra second covers an I/O
    // thread stuck in a blocking call.
    // The I/O thread finishes every job, also when closing.
    PublishProgress& progress = job->progress(locked);
    const bool finished = shared_.job_done.wait_until(locked.lock(), job->deadline() + std::chrono::seconds(1),
                                                      [&] { return progress.done; });
    if (!finished) {
      progress.done = true;
      if (!progress.error) {
        progress.error = locked->closed
                             ? ErrorInfo(Errc::closed, "publish: the transport was closed before the broker confirmed")
                             : ErrorInfo(progress.sent ? Errc::outcome_unknown : Errc::timeout,
                                         "publish: no confirm from " + endpoint_ + " within " +
                                             std::to_string(options_.publish_timeout.count()) +
                                             " ms (the message may or may not have been published)");
      }
    }
    if (progress.error) return unexpected(rabbitmq::detail::publish_error(progress, job->items().size()));
    return {};
  }

  Result<std::vector<Delivery>> receive(std::string_view queue_name, std::size_t max, milliseconds wait) {
    if (queue_name.empty()) return unexpected(Errc::invalid_argument, "receive: empty queue name");
    if (max == 0) return unexpected(Errc::invalid_argument, "receive: max must be at least 1");
    const std::string queue(queue_name);
    const auto deadline = babelqueue::detail::saturating_after(Clock::now(), std::max(wait, milliseconds(0)));
    Locked locked = shared_.lock();
    if (locked->closed) return unexpected(Errc::closed, "receive: the transport is closed");
    const auto opened = locked->consumers.open(queue);
    Consumer& consumer = *opened.first;
    if (opened.second) {
      // The QoS is fixed when the consumer starts: sized from this first
      // receive's max, which is the worker's prefetch (see auto_prefetch).
      consumer.prefetch = options_.prefetch != 0 ? options_.prefetch : rabbitmq::detail::auto_prefetch(max);
      locked.wake_io();
    }
    ++consumer.waiting;
    consumer.ready->wait_until(locked.lock(), deadline, [&] {
      return locked->closed || !consumer.buffer.empty() || (consumer.start_error && !consumer.starting);
    });
    --consumer.waiting;
    if (locked->closed) return unexpected(Errc::closed, "receive: the transport is closed");
    std::vector<Delivery> out = locked->consumers.take(consumer, max);
    if (out.empty()) {
      if (consumer.start_error) {
        ErrorInfo error = *consumer.start_error;
        consumer.start_error.reset();
        if (!consumer.active) locked.wake_io();  // try again on the next call
        return unexpected(error);
      }
      if (!locked->connected) {
        return unexpected(Errc::connection, "receive from " + queue + ": not connected to " + endpoint_ +
                                                " (reconnecting; last error: " + locked->last_error + ")");
      }
    }
    return out;
  }

  Result<void> settle(const Delivery& delivery, bool ack) {
    std::uint64_t generation = 0;
    const std::string& text = delivery.token.text;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), generation);
    if (parsed.ec != std::errc{} || text.empty()) {
      return unexpected(Errc::invalid_argument, "not a RabbitMQ delivery of this transport");
    }
    Locked locked = shared_.lock();
    if (locked->closed) return unexpected(Errc::closed, "the transport is closed");
    if (!locked->consumers.settle(generation, delivery, ack)) {
      return unexpected(Errc::not_found, "delivery " + std::to_string(delivery.token.id) + " of " + delivery.queue +
                                             " is no longer held (settled already, or its channel was lost "
                                             "and the broker requeued it)");
    }
    locked.wake_io();
    return {};
  }

  // Whether the delivery is still held, without settling it.
  bool holds(const Delivery& delivery) {
    Locked locked = shared_.lock();
    return !locked->closed && locked->consumers.holds(delivery);
  }

  Result<QueueStats> stats(std::string_view queue_name) {
    if (queue_name.empty()) return unexpected(Errc::invalid_argument, "stats: empty queue name");
    const std::string queue(queue_name);
    Locked locked = shared_.lock();
    if (locked->closed) return unexpected(Errc::closed, "stats: the transport is closed");
    auto job = std::make_shared<StatsJob>(queue, locked->buckets.of(queue));
    locked->stats_jobs.push_back(job);
    locked.wake_io();
    StatsJob::Answer& answer = job->answer(locked);
    const bool finished = shared_.job_done.wait_for(locked.lock(), options_.publish_timeout,
                                                    [&] { return answer.done || locked->closed; });
    if (locked->closed) return unexpected(Errc::closed, "stats: the transport is closed");
    if (!finished) return unexpected(Errc::timeout, "stats of " + queue + ": no answer from " + endpoint_);
    if (answer.error) return unexpected(*answer.error);
    QueueStats stats;
    stats.ready = answer.ready;
    stats.reserved = 0;
    if (const Consumer* consumer = locked->consumers.find(queue)) {
      stats.ready += static_cast<std::int64_t>(consumer->buffer.size());
      stats.reserved = consumer->reserved;
    }
    stats.delayed = answer.delayed;
    return stats;
  }

  std::uint64_t reconnects() const { return shared_.reconnects.load(); }

  // Idempotent, and safe to call from several threads at once.
  void stop(milliseconds deadline) {
    const std::lock_guard stopping(stop_mutex_);
    if (stopped_) return;
    stopped_ = true;
    Clock::time_point close_deadline;
    {
      Locked locked = shared_.lock();
      locked->closed = true;
      close_deadline = locked->close_deadline = babelqueue::detail::saturating_after(Clock::now(), deadline);
      locked.wake_io();
    }
    shared_.reconnect_wait.notify_all();
    {
      Locked locked = shared_.lock();
      locked->consumers.wake_all();
    }
    shared_.job_done.notify_all();
    if (io_thread_.joinable()) io_thread_.join();
    io_.goodbye(close_deadline);
    Locked locked = shared_.lock();
    shared_.wake_fd.close();
  }

 private:
  const Options options_;
  const std::string endpoint_;  // for error messages
  rabbitmq::detail::SharedState shared_;
  // The I/O thread's: start() and stop() use it only while that thread does not run.
  rabbitmq::detail::IoLoop io_;
  std::thread io_thread_;
  std::mutex stop_mutex_;  // serialises stop()
  bool stopped_ = false;   // under stop_mutex_
};

// ---- rabbitmq::Transport ----------------------------------------------------

rabbitmq::Transport::Transport(std::shared_ptr<State> state) : state_(std::move(state)) {}

rabbitmq::Transport::~Transport() { close(std::chrono::seconds(5)); }

Result<std::unique_ptr<rabbitmq::Transport>> rabbitmq::Transport::open(Options options) {
  if (options.host.empty()) return unexpected(Errc::invalid_argument, "rabbitmq: empty host");
  if (options.max_in_flight == 0) return unexpected(Errc::invalid_argument, "rabbitmq: max_in_flight must be >= 1");
  if (options.max_message_size == 0) {
    return unexpected(Errc::invalid_argument, "rabbitmq: max_message_size must be >= 1");
  }
  if (options.heartbeat.count() < 0 || options.heartbeat > kMaxHeartbeat) {
    return unexpected(Errc::invalid_argument, "rabbitmq: heartbeat must be 0..65535 seconds");
  }
  if (options.connect_timeout.count() <= 0 || options.publish_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "rabbitmq: timeouts must be positive");
  }
  const BackoffPolicy& backoff = options.reconnect_backoff;
  if (backoff.initial.count() <= 0 || backoff.max < backoff.initial) {
    return unexpected(Errc::invalid_argument, "rabbitmq: reconnect_backoff needs 0 < initial <= max");
  }
  if (auto tls = options.tls.check(); !tls) return unexpected(tls.error());
  if (options.tls.enabled) {
    if (auto usable = options.tls.check_files(); !usable) return unexpected(usable.error());
  }
  auto state = std::make_shared<State>(std::move(options));
  if (auto started = state->start(); !started) return unexpected(started.error());
  return std::unique_ptr<rabbitmq::Transport>(new rabbitmq::Transport(std::move(state)));
}

Result<rabbitmq::Transport::Options> rabbitmq::Transport::options_from_url(const Url& url) {
  Options options;
  if (url.scheme != "amqp" && url.scheme != "amqps") {
    return unexpected(Errc::invalid_argument, "rabbitmq: not an amqp:// or amqps:// URL: " + url.redacted());
  }
  options.tls.enabled = url.scheme == "amqps";
  options.host = url.host.empty() ? "localhost" : url.host;
  if (options.host.find(',') != std::string::npos) {
    return unexpected(Errc::invalid_argument, "rabbitmq: one host per URL: " + url.redacted());
  }
  options.port = url.port.value_or(options.tls.enabled ? 5671 : 5672);
  if (!url.user.empty()) options.user = url.user;
  if (!url.user.empty() || !url.password.empty()) options.password = url.password;
  options.vhost = url.path.empty() ? "/" : url.path;
  constexpr milliseconds kMin(1);
  constexpr std::chrono::hours kHour(1);
  UrlOptionReader read(url);
  // The broker takes the heartbeat in whole seconds: the seconds destination
  // refuses fractions such as 1.5.
  read.duration("heartbeat", options.heartbeat, {.max = kMaxHeartbeat});
  read.text("connection_name", options.connection_name);
  read.duration("connect_timeout", options.connect_timeout, {.min = kMin, .max = kHour});
  read.duration("publish_timeout", options.publish_timeout, {.min = kMin, .max = std::chrono::hours(24)});
  read.flag("confirm", options.confirm);
  read.integer("max_in_flight", options.max_in_flight, 1, 1000000);
  read.integer("max_message_size", options.max_message_size, 1, std::numeric_limits<std::int64_t>::max());
  read.integer("prefetch", options.prefetch, 0, 65535);
  read.choice("queue_type", options.queue_type, {{"classic", QueueType::classic}, {"quorum", QueueType::quorum}});
  read.duration("reconnect_min", options.reconnect_backoff.initial, {.min = kMin, .max = kHour});
  read.duration("reconnect_max", options.reconnect_backoff.max, {.min = kMin, .max = kHour});
  read.tls(options.tls, "amqps://");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return options;
}

const rabbitmq::Transport::Options& rabbitmq::Transport::options() const noexcept { return state_->options(); }

Capabilities rabbitmq::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;
  caps.native_release = true;
  caps.delivery_count = state_->options().queue_type == QueueType::quorum;
  caps.redelivers_unsettled = true;
  caps.extendable_lease = false;
  caps.batch_publish = true;
  caps.ordered = true;
  caps.max_delay = kMaxDelay;
  return caps;
}

Result<void> rabbitmq::Transport::publish(std::string_view queue, std::string_view body,
                                          const PublishOptions& options) {
  if (body.size() > state_->options().max_message_size)
    return unexpected(too_large(queue, body.size(), state_->options().max_message_size));
  OutgoingMessage message;
  message.queue = std::string(queue);
  message.body = std::string(body);
  message.options = options;
  return state_->publish(std::span<const OutgoingMessage>(&message, 1));
}

Result<void> rabbitmq::Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  // Checked before anything is sent: the broker would close the channel on
  // the first one too large, with the batch half sent.
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].body.size() > state_->options().max_message_size) {
      return unexpected(::babelqueue::detail::batch_message_too_large(
          i, too_large(messages[i].queue, messages[i].body.size(), state_->options().max_message_size)));
    }
  }
  return state_->publish(messages);
}

Result<std::vector<Delivery>> rabbitmq::Transport::receive(std::string_view queue, std::size_t max,
                                                           std::chrono::milliseconds wait) {
  return state_->receive(queue, max, wait);
}

Result<void> rabbitmq::Transport::ack(const Delivery& delivery) { return state_->settle(delivery, true); }

Result<void> rabbitmq::Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return state_->settle(delivery, false);
  if (!state_->holds(delivery)) return state_->settle(delivery, false);  // reports not_found / closed
  // Delayed: a confirmed copy into the delay bucket first, then the ack, so
  // a crash in between duplicates the message instead of losing it.
  OutgoingMessage copy;
  copy.queue = delivery.queue;
  copy.body = delivery.body;
  copy.options.headers = delivery.headers;
  copy.options.delay = delay;
  if (auto published = state_->publish(std::span<const OutgoingMessage>(&copy, 1)); !published) {
    return unexpected(published.error().code(), "release of " + delivery.queue + " with a delay: " +
                                                    published.error().message() + " (the message stays held)");
  }
  return state_->settle(delivery, true);
}

Result<std::vector<PeekedMessage>> rabbitmq::Transport::peek(std::string_view queue, std::size_t /*max*/) {
  // basic.get followed by a requeue is not a look: the message comes back
  // marked redelivered, moves behind messages delivered meanwhile, and on a
  // quorum queue counts toward its delivery limit.
  return unexpected(Errc::unsupported, "RabbitMQ cannot show the messages of queue '" + std::string(queue) +
                                           "' without delivering them (a get and requeue marks them redelivered "
                                           "and counts as a delivery)");
}

Result<QueueStats> rabbitmq::Transport::stats(std::string_view queue) { return state_->stats(queue); }

void rabbitmq::Transport::close(std::chrono::milliseconds deadline) { state_->stop(deadline); }

std::uint64_t rabbitmq::Transport::reconnects() const noexcept { return state_->reconnects(); }
ConnectionStats rabbitmq::Transport::connection_stats() const noexcept { return {"rabbitmq", reconnects()}; }

namespace rabbitmq {

void register_transport() {
  const TransportFactory factory = url_factory<rabbitmq::Transport>();
  babelqueue::register_transport("amqp", factory);
  babelqueue::register_transport("amqps", factory);
}

}  // namespace rabbitmq
}  // namespace babelqueue
