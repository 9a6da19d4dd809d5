// RabbitmqTransport. Threading model: one I/O thread owns the rabbitmq-c
// connection and every call into rabbitmq-c; API threads post requests to it
// under mutex_ and wait on condition variables. Three channels:
//   1 publish  (confirm mode; a channel error here fails only unconfirmed publishes)
//   2 consume  (basic.qos + basic.consume per queue, acks and nacks)
//   3 control  (queue.declare; a 406 on a mismatching queue closes only this one)
#include "amqp_projection.hpp"
#include "connection.hpp"
#include "delay_buckets.hpp"
#include "queue_declarer.hpp"

#include <babelqueue/rabbitmq_transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <amqp.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

namespace babelqueue {
namespace {

using Clock = std::chrono::steady_clock;
using rabbitmq::detail::bytes_of;
using rabbitmq::detail::view;
using std::chrono::milliseconds;

using rabbitmq::detail::AmqpFailure;
using rabbitmq::detail::Connection;
using rabbitmq::detail::failure_of;
using rabbitmq::detail::kConsumeChannel;
using rabbitmq::detail::kControlChannel;
using rabbitmq::detail::kMaxDelay;
using rabbitmq::detail::kPublishChannel;
using rabbitmq::detail::status_text;
// Frames handled in one go before the I/O thread looks at its requests again,
// so acks and publishes are not starved by a flood of deliveries.
constexpr int kFramesPerTurn = 256;
// The auto QoS: several times what one receive() asks for, so the broker
// keeps pushing while the caller holds a batch and its handlers run another
// (measured: a QoS of 16 -> 64 doubles consume throughput, 64 -> 128..256
// gains again at concurrency 4; RabbitMQ suggests 100-300).
constexpr std::size_t kAutoPrefetchFactor = 8;
constexpr std::size_t kMinAutoPrefetch = 128;

// One publish() or publish_batch() call.
struct PublishJob {
  struct Item {
    std::string queue;        // the destination queue
    std::string routing_key;  // queue, or its delay bucket
    milliseconds bucket{0};
    std::string body;
    rabbitmq::detail::Projection projection;
  };
  std::vector<Item> items;
  std::deque<std::size_t> to_send;  // indexes not (or no longer) on the wire
  std::size_t confirmed = 0;
  Clock::time_point deadline;
  std::optional<ErrorInfo> error;  // the first failure
  std::optional<std::size_t> failed_index;
  bool done = false;  // guarded by State::mutex_
};

struct PendingConfirm {
  std::uint64_t seq;
  std::shared_ptr<PublishJob> job;
  std::size_t index;
  bool returned = false;
  std::string return_text;
};

struct Consumer {
  std::uint16_t prefetch = 1;
  bool active = false;  // consuming on the current channel generation
  bool starting = false;
  std::string tag;
  std::deque<Delivery> buffer;  // delivered by the broker, not yet received
  std::int64_t reserved = 0;    // received, not settled
  std::optional<ErrorInfo> start_error;
  // receive() calls of this queue wait here, so a batch of deliveries wakes
  // as many of them as it can feed, not every waiting thread of every queue.
  std::unique_ptr<std::condition_variable> ready = std::make_unique<std::condition_variable>();
  int waiting = 0;
};

struct Settle {
  std::uint64_t generation;
  std::uint64_t tag;
  bool ack;
};

struct StatsJob {
  std::string queue;
  std::vector<std::pair<std::string, milliseconds>> buckets;
  std::int64_t ready = 0;
  std::int64_t delayed = 0;
  std::optional<ErrorInfo> error;
  bool done = false;
};

}  // namespace

class RabbitmqTransport::State {
 public:
  explicit State(Options options)
      : options_(std::move(options)),
        endpoint_(rabbitmq::detail::endpoint_of(options_)),
        connection_(options_,
                    [this](amqp_channel_t channel, const ErrorInfo& why) { on_channel_closed(channel, why); }),
        declarer_(options_, connection_) {}

  ~State() { stop(milliseconds(0)); }

  const Options& options() const { return options_; }

  const std::string& endpoint() const { return endpoint_; }

  Result<void> start() {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return unexpected(Errc::io, "eventfd failed");
    auto connected = connect();
    if (!connected) return unexpected(connected.error());
    io_thread_ = std::thread([this] { io_loop(); });
    return {};
  }

  // ---- API side -----------------------------------------------------------

  Result<void> publish(std::span<const OutgoingMessage> messages) {
    auto job = std::make_shared<PublishJob>();
    job->items.reserve(messages.size());
    for (const OutgoingMessage& message : messages) {
      if (message.queue.empty()) return unexpected(Errc::invalid_argument, "publish: empty queue name");
      if (message.queue.size() > 255) {
        return unexpected(Errc::invalid_argument, "publish: queue name longer than 255 bytes");
      }
      if (message.options.delay.count() < 0 || message.options.delay > kMaxDelay) {
        return unexpected(Errc::invalid_argument, "publish to " + message.queue + ": delay out of range");
      }
      auto projection = rabbitmq::detail::project(message.body, message.options.headers);
      if (!projection) return unexpected(projection.error());
      rabbitmq::detail::Route route = rabbitmq::detail::route_of(message.queue, message.options.delay);
      PublishJob::Item item;
      item.queue = message.queue;
      item.bucket = route.bucket;
      item.routing_key = std::move(route.routing_key);
      item.body = message.body;
      item.projection = std::move(*projection);
      job->to_send.push_back(job->items.size());
      job->items.push_back(std::move(item));
    }
    if (job->items.empty()) return {};
    job->deadline = Clock::now() + options_.publish_timeout;
    std::unique_lock lock(mutex_);
    if (closed_) return unexpected(Errc::closed, "publish: the transport is closed");
    for (const auto& item : job->items) {
      if (item.bucket.count() > 0) known_buckets_.add(item.queue, item.bucket);
    }
    publish_queue_.push_back(job);
    wake_locked();
    // The I/O thread enforces the deadline; the extra second covers an I/O
    // thread stuck in a blocking call.
    // The I/O thread finishes every job, also when closing.
    const bool finished =
        job_done_.wait_until(lock, job->deadline + std::chrono::seconds(1), [&] { return job->done; });
    if (!finished) {
      job->done = true;
      if (!job->error) {
        job->error = closed_ ? ErrorInfo(Errc::closed, "publish: the transport was closed before the broker confirmed")
                             : ErrorInfo(Errc::timeout, "publish: no confirm from " + endpoint() + " within " +
                                                            std::to_string(options_.publish_timeout.count()) +
                                                            " ms (the message may or may not have been published)");
      }
    }
    if (job->error) {
      if (job->items.size() == 1) return unexpected(*job->error);
      const std::size_t index = job->failed_index.value_or(job->confirmed);
      return unexpected(job->error->code(),
                        "publish_batch: message " + std::to_string(index) + " of " + std::to_string(job->items.size()) +
                            " failed (" + std::to_string(job->confirmed) + " confirmed): " + job->error->message());
    }
    return {};
  }

  Result<std::vector<Delivery>> receive(std::string_view queue_name, std::size_t max, milliseconds wait) {
    if (queue_name.empty()) return unexpected(Errc::invalid_argument, "receive: empty queue name");
    if (max == 0) return unexpected(Errc::invalid_argument, "receive: max must be at least 1");
    const std::string queue(queue_name);
    const auto deadline = Clock::now() + std::max(wait, milliseconds(0));
    std::unique_lock lock(mutex_);
    if (closed_) return unexpected(Errc::closed, "receive: the transport is closed");
    auto [it, created] = consumers_.try_emplace(queue);
    Consumer& consumer = it->second;
    if (created) {
      // The QoS is fixed when the consumer starts: sized from this first
      // receive's max, which is the worker's prefetch (see auto_prefetch).
      consumer.prefetch = options_.prefetch != 0 ? options_.prefetch : rabbitmq::auto_prefetch(max);
      wake_locked();
    }
    ++consumer.waiting;
    consumer.ready->wait_until(lock, deadline, [&] {
      return closed_ || !consumer.buffer.empty() || (consumer.start_error && !consumer.starting);
    });
    --consumer.waiting;
    if (closed_) return unexpected(Errc::closed, "receive: the transport is closed");
    std::vector<Delivery> out;
    while (!consumer.buffer.empty() && out.size() < max) {
      Delivery& delivery = consumer.buffer.front();
      handed_out_.insert(delivery.token.id);
      ++consumer.reserved;
      out.push_back(std::move(delivery));
      consumer.buffer.pop_front();
    }
    if (out.empty()) {
      if (consumer.start_error) {
        ErrorInfo error = *consumer.start_error;
        consumer.start_error.reset();
        if (!consumer.active) wake_locked();  // try again on the next call
        return unexpected(error);
      }
      if (!connected_) {
        return unexpected(Errc::connection, "receive from " + queue + ": not connected to " + endpoint() +
                                                " (reconnecting; last error: " + last_error_ + ")");
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
    std::lock_guard lock(mutex_);
    if (closed_) return unexpected(Errc::closed, "the transport is closed");
    if (generation != generation_ || handed_out_.erase(delivery.token.id) == 0) {
      return unexpected(Errc::not_found, "delivery " + std::to_string(delivery.token.id) + " of " + delivery.queue +
                                             " is no longer held (settled already, or its channel was lost "
                                             "and the broker requeued it)");
    }
    if (auto it = consumers_.find(delivery.queue); it != consumers_.end() && it->second.reserved > 0) {
      --it->second.reserved;
    }
    settles_.push_back(Settle{generation, delivery.token.id, ack});
    wake_locked();
    return {};
  }

  // Whether the delivery is still held, without settling it.
  bool holds(const Delivery& delivery) {
    std::lock_guard lock(mutex_);
    return !closed_ && delivery.token.text == std::to_string(generation_) && handed_out_.contains(delivery.token.id);
  }

  Result<QueueStats> stats(std::string_view queue_name) {
    if (queue_name.empty()) return unexpected(Errc::invalid_argument, "stats: empty queue name");
    auto job = std::make_shared<StatsJob>();
    job->queue = std::string(queue_name);
    std::unique_lock lock(mutex_);
    if (closed_) return unexpected(Errc::closed, "stats: the transport is closed");
    job->buckets = known_buckets_.of(job->queue);
    stats_jobs_.push_back(job);
    wake_locked();
    const bool finished = job_done_.wait_for(lock, options_.publish_timeout, [&] { return job->done || closed_; });
    if (closed_) return unexpected(Errc::closed, "stats: the transport is closed");
    if (!finished) return unexpected(Errc::timeout, "stats of " + job->queue + ": no answer from " + endpoint());
    if (job->error) return unexpected(*job->error);
    QueueStats stats;
    stats.ready = job->ready;
    stats.reserved = 0;
    if (auto it = consumers_.find(job->queue); it != consumers_.end()) {
      stats.ready += static_cast<std::int64_t>(it->second.buffer.size());
      stats.reserved = it->second.reserved;
    }
    stats.delayed = job->delayed;
    return stats;
  }

  std::uint64_t reconnects() const { return reconnects_.load(); }

  // Idempotent, and safe to call from several threads at once.
  void stop(milliseconds deadline) {
    const std::lock_guard stopping(stop_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (closed_ && !io_thread_.joinable() && !connection_.is_open()) return;
      closed_ = true;
      close_deadline_ = Clock::now() + deadline;
      wake_locked();
    }
    reconnect_wait_.notify_all();
    {
      std::lock_guard lock(mutex_);
      wake_all_receivers_locked();
    }
    job_done_.notify_all();
    if (io_thread_.joinable()) io_thread_.join();
    if (connection_.is_open()) {
      // The goodbye (channel.close, connection.close) waits for replies:
      // bound it by what is left of the deadline.
      const auto left = std::chrono::duration_cast<milliseconds>(close_deadline_ - Clock::now());
      connection_.set_rpc_timeout(std::max(left, milliseconds(100)));
      connection_.close();
    }
    if (wake_fd_ >= 0) {
      ::close(wake_fd_);
      wake_fd_ = -1;
    }
  }

 private:
  // ---- I/O thread ---------------------------------------------------------

  void wake_all_receivers_locked() {
    for (auto& [queue, consumer] : consumers_) consumer.ready->notify_all();
  }

  // Wakes the I/O thread if it sleeps. One write per sleep: the requests
  // that follow before it wakes are all taken in its next turn.
  void wake_locked() {
    if (io_sleeping_) {
      io_sleeping_ = false;
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
    }
  }

  void drain_wake_fd() const {
    std::uint64_t value = 0;
    [[maybe_unused]] const auto read = ::read(wake_fd_, &value, sizeof value);
  }

  // Bookkeeping when the broker closed one channel (the connection lives on).
  void on_channel_closed(amqp_channel_t channel, const ErrorInfo& why) {
    if (channel == kPublishChannel) {
      fail_pending(why);
      next_seq_ = 1;
    } else if (channel == kConsumeChannel) {
      std::lock_guard lock(mutex_);
      drop_consumers_locked();
    }
  }

  // The consume channel is gone: its deliveries are dead (the broker requeues
  // them), so every token handed out so far becomes stale.
  void drop_consumers_locked() {
    ++generation_;
    handed_out_.clear();
    unacked_.clear();
    consumer_tags_.clear();
    for (auto& [queue, consumer] : consumers_) {
      consumer.active = false;
      consumer.starting = false;
      consumer.tag.clear();
      consumer.buffer.clear();
      consumer.reserved = 0;
    }
  }

  void fail_pending(const ErrorInfo& why) {
    std::lock_guard lock(mutex_);
    for (PendingConfirm& pending : pending_) fail_job_locked(*pending.job, pending.index, why);
    pending_.clear();
    job_done_.notify_all();
  }

  void fail_job_locked(PublishJob& job, std::size_t index, const ErrorInfo& why) {
    if (job.done) return;
    job.error = why;
    job.failed_index = index;
    job.done = true;
  }

  Result<void> connect() {
    if (auto opened = connection_.open(); !opened) return opened;
    next_seq_ = 1;
    declarer_.forget_all();
    std::lock_guard lock(mutex_);
    connected_ = true;
    return {};
  }

  // The connection broke: everything on the wire is void.
  void on_connection_lost(const ErrorInfo& why) {
    connection_.set_lost(why);
    connection_.close();
    std::lock_guard lock(mutex_);
    connected_ = false;
    last_error_ = why.message();
    drop_consumers_locked();
    // Unconfirmed messages go back to their jobs to be sent again.
    for (PendingConfirm& pending : pending_) {
      if (pending.job->done) continue;
      pending.job->to_send.push_front(pending.index);
      if (std::find(publish_queue_.begin(), publish_queue_.end(), pending.job) == publish_queue_.end()) {
        publish_queue_.push_front(pending.job);
      }
    }
    pending_.clear();
    wake_all_receivers_locked();
  }

  void reconnect_with_backoff() {
    std::mt19937_64 random(std::random_device{}());
    rabbitmq::detail::ReconnectBackoff backoff(options_.reconnect_min, options_.reconnect_max);
    while (true) {
      const milliseconds pause = backoff.pause(random);
      {
        std::unique_lock lock(mutex_);
        expire_jobs_locked();
        if (reconnect_wait_.wait_for(lock, pause, [&] { return closed_; })) return;
      }
      auto connected = connect();
      if (connected) {
        reconnects_.fetch_add(1);
        return;
      }
      {
        std::lock_guard lock(mutex_);
        last_error_ = connected.error().message();
      }
      backoff.failed();
    }
  }

  void expire_jobs_locked() {
    const auto now = Clock::now();
    bool any = false;
    for (auto& job : publish_queue_) {
      if (!job->done && now >= job->deadline) {
        fail_job_locked(
            *job, job->to_send.empty() ? 0 : job->to_send.front(),
            ErrorInfo(Errc::timeout, "publish: not confirmed by " + endpoint() + " within " +
                                         std::to_string(options_.publish_timeout.count()) +
                                         " ms (last error: " + (last_error_.empty() ? "none" : last_error_) +
                                         "; the message may or may not have been published)"));
        any = true;
      }
    }
    std::erase_if(publish_queue_, [](const auto& job) { return job->done; });
    if (any) job_done_.notify_all();
  }

  void io_loop() {
    while (true) {
      if (!connection_.is_open()) {
        {
          std::lock_guard lock(mutex_);
          if (closed_) break;
        }
        reconnect_with_backoff();
        if (!connection_.is_open()) break;  // closed while reconnecting
      }
      const bool closing = turn();
      if (connection_.lost()) {
        on_connection_lost(*connection_.lost());
        continue;
      }
      if (closing) break;
    }
    // Closing: whatever was never sent fails.
    std::lock_guard lock(mutex_);
    for (auto& job : publish_queue_) {
      fail_job_locked(*job, job->to_send.empty() ? 0 : job->to_send.front(),
                      ErrorInfo(Errc::closed, "publish: the transport was closed before the message was sent"));
    }
    publish_queue_.clear();
    for (PendingConfirm& pending : pending_) {
      fail_job_locked(*pending.job, pending.index,
                      ErrorInfo(Errc::closed, "publish: the transport was closed before the broker confirmed"));
    }
    pending_.clear();
    for (auto& job : stats_jobs_) job->done = true;
    stats_jobs_.clear();
    connected_ = false;
    job_done_.notify_all();
  }

  // One turn of the I/O loop. Returns true when the transport is closing and
  // everything that can still be finished was.
  bool turn() {
    std::vector<Settle> settles;
    std::vector<std::shared_ptr<StatsJob>> stats_jobs;
    std::vector<std::string> to_start;
    bool closing = false;
    {
      std::lock_guard lock(mutex_);
      settles.swap(settles_);
      stats_jobs.swap(stats_jobs_);
      closing = closed_;
      if (!closing) {
        for (auto& [queue, consumer] : consumers_) {
          if (!consumer.active && !consumer.starting && !consumer.start_error) {
            consumer.starting = true;
            to_start.push_back(queue);
          }
        }
      }
      expire_jobs_locked();
    }
    if (!send_settles(settles)) return false;
    for (auto& job : stats_jobs) {
      run_stats(*job);
      if (connection_.lost()) return false;
    }
    if (!stats_jobs.empty()) job_done_.notify_all();
    for (const std::string& queue : to_start) {
      start_consumer(queue);
      if (connection_.lost()) return false;
    }
    send_publishes();
    if (connection_.lost()) return false;
    const bool busy = read_frames();
    if (connection_.lost()) return false;
    if (closing) {
      std::lock_guard lock(mutex_);
      // Closing waits for confirms of what is on the wire, up to the deadline.
      if (pending_.empty() || Clock::now() >= close_deadline_) return true;
    }
    if (!busy) sleep_until_readable();
    return false;
  }

  // Sends the acks and nacks API threads asked for. The acks of this turn
  // that cover the oldest unacknowledged deliveries of the channel go as one
  // basic.ack with multiple=1 (one frame, and much less work for the
  // broker); the others one by one.
  bool send_settles(const std::vector<Settle>& settles) {
    if (settles.empty()) return true;
    const std::uint64_t generation = current_generation();
    std::vector<std::uint64_t> acks;
    acks.reserve(settles.size());
    for (const Settle& settle : settles) {
      if (settle.generation != generation) continue;  // its channel is gone: the broker requeued it
      if (settle.ack) {
        acks.push_back(settle.tag);
        continue;
      }
      unacked_.erase(settle.tag);
      if (const int status = amqp_basic_nack(connection_.get(), kConsumeChannel, settle.tag, 0, 1);
          status != AMQP_STATUS_OK) {
        connection_.set_lost(ErrorInfo(Errc::connection, "basic.nack: " + status_text(status)));
        return false;
      }
    }
    std::sort(acks.begin(), acks.end());
    auto send_ack = [&](std::uint64_t tag, bool multiple) {
      if (const int status = amqp_basic_ack(connection_.get(), kConsumeChannel, tag, multiple ? 1 : 0);
          status != AMQP_STATUS_OK) {
        connection_.set_lost(ErrorInfo(Errc::connection, "basic.ack: " + status_text(status)));
        return false;
      }
      return true;
    };
    std::size_t covered = 0;
    while (covered < acks.size() && !unacked_.empty() && *unacked_.begin() == acks[covered]) {
      unacked_.erase(unacked_.begin());
      ++covered;
    }
    if (covered > 0 && !send_ack(acks[covered - 1], covered > 1)) return false;
    for (std::size_t i = covered; i < acks.size(); ++i) {
      unacked_.erase(acks[i]);
      if (!send_ack(acks[i], false)) return false;
    }
    return true;
  }

  std::uint64_t current_generation() {
    std::lock_guard lock(mutex_);
    return generation_;
  }

  void run_stats(StatsJob& job) {
    auto ready = declarer_.declare(job.queue);
    std::int64_t delayed = 0;
    if (ready) {
      for (const auto& [bucket_queue, bucket] : job.buckets) {
        auto count = declarer_.declare(bucket_queue, bucket);
        if (count) delayed += *count;
        if (connection_.lost()) break;
      }
    }
    std::lock_guard lock(mutex_);
    if (ready) {
      job.ready = *ready;
      job.delayed = delayed;
    } else {
      job.error = ready.error();
    }
    job.done = true;
  }

  void start_consumer(const std::string& queue) {
    std::uint16_t prefetch = 1;
    {
      std::lock_guard lock(mutex_);
      prefetch = consumers_[queue].prefetch;
    }
    auto fail = [&](const ErrorInfo& error) {
      std::lock_guard lock(mutex_);
      Consumer& consumer = consumers_[queue];
      consumer.starting = false;
      consumer.start_error = error;
      wake_all_receivers_locked();
    };
    if (auto declared = declarer_.declare(queue); !declared) return fail(declared.error());
    amqp_basic_qos(connection_.get(), kConsumeChannel, 0, prefetch, 0);
    if (auto checked = connection_.check_rpc(kConsumeChannel, "basic.qos on " + queue); !checked)
      return fail(checked.error());
    const amqp_basic_consume_ok_t* ok = amqp_basic_consume(connection_.get(), kConsumeChannel, bytes_of(queue),
                                                           amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    if (auto checked = connection_.check_rpc(kConsumeChannel, "basic.consume on " + queue); !checked) {
      return fail(checked.error());
    }
    std::lock_guard lock(mutex_);
    Consumer& consumer = consumers_[queue];
    consumer.starting = false;
    consumer.active = true;
    consumer.tag = std::string(view(ok->consumer_tag));
    consumer_tags_[consumer.tag] = queue;
  }

  void send_publishes() {
    while (true) {
      std::shared_ptr<PublishJob> job;
      std::size_t index = 0;
      {
        std::lock_guard lock(mutex_);
        if (options_.confirm && pending_.size() >= options_.max_in_flight) return;
        while (!publish_queue_.empty() && (publish_queue_.front()->done || publish_queue_.front()->to_send.empty())) {
          publish_queue_.pop_front();
        }
        if (publish_queue_.empty()) return;
        job = publish_queue_.front();
        index = job->to_send.front();
        job->to_send.pop_front();
      }
      const PublishJob::Item& item = job->items[index];
      auto declared = declarer_.ensure_declared(item.queue);
      if (declared && item.bucket.count() > 0) declared = declarer_.ensure_declared(item.routing_key, item.bucket);
      if (!declared) {
        if (connection_.lost()) {
          std::lock_guard lock(mutex_);
          job->to_send.push_front(index);
          return;
        }
        std::lock_guard lock(mutex_);
        fail_job_locked(*job, index, declared.error());
        job_done_.notify_all();
        continue;
      }
      std::vector<amqp_table_entry_t> entries;
      const amqp_basic_properties_t props = rabbitmq::detail::properties(item.projection, entries);
      const int status = amqp_basic_publish(connection_.get(), kPublishChannel, amqp_empty_bytes,
                                            bytes_of(item.routing_key), 1, 0, &props, bytes_of(item.body));
      std::lock_guard lock(mutex_);
      if (status != AMQP_STATUS_OK) {
        job->to_send.push_front(index);
        connection_.set_lost(ErrorInfo(Errc::connection, "publish to " + item.queue + ": " + status_text(status)));
        return;
      }
      if (options_.confirm) {
        pending_.push_back(PendingConfirm{next_seq_++, job, index});
      } else if (++job->confirmed == job->items.size()) {
        job->done = true;
        job_done_.notify_all();
      }
    }
  }

  void on_confirm(std::uint64_t tag, bool multiple, bool ack) {
    std::lock_guard lock(mutex_);
    auto settle = [&](PendingConfirm& pending) {
      PublishJob& job = *pending.job;
      if (job.done) return;
      if (pending.returned) {
        fail_job_locked(job, pending.index, ErrorInfo(Errc::not_found, pending.return_text));
        declarer_.forget(job.items[pending.index].routing_key);
      } else if (!ack) {
        fail_job_locked(job, pending.index,
                        ErrorInfo(Errc::broker, "publish to " + job.items[pending.index].queue +
                                                    ": the broker refused the message (basic.nack)"));
      } else if (++job.confirmed == job.items.size()) {
        job.done = true;
      }
    };
    if (multiple) {
      while (!pending_.empty() && pending_.front().seq <= tag) {
        settle(pending_.front());
        pending_.pop_front();
      }
    } else {
      // Confirms of messages routed to different queues may come out of order.
      auto it = std::lower_bound(pending_.begin(), pending_.end(), tag,
                                 [](const PendingConfirm& pending, std::uint64_t seq) { return pending.seq < seq; });
      if (it != pending_.end() && it->seq == tag) {
        settle(*it);
        pending_.erase(it);
      }
    }
    job_done_.notify_all();
  }

  // A basic.return comes right before the confirm of the same message: it is
  // the oldest unconfirmed one with that routing key and body.
  void on_return(const amqp_basic_return_t& returned, const amqp_message_t& message) {
    const std::string_view routing_key = view(returned.routing_key);
    const std::string_view body = view(message.body);
    std::lock_guard lock(mutex_);
    for (PendingConfirm& pending : pending_) {
      const PublishJob::Item& item = pending.job->items[pending.index];
      if (!pending.returned && item.routing_key == routing_key && item.body == body) {
        pending.returned = true;
        pending.return_text = "publish to " + item.queue + ": unroutable, the broker returned it (" +
                              std::to_string(returned.reply_code) + " " + std::string(view(returned.reply_text)) +
                              "): the queue does not exist (deleted after it was declared?)";
        return;
      }
    }
  }

  void on_deliver(const amqp_basic_deliver_t& deliver, amqp_message_t& message) {
    Delivery delivery;
    delivery.body.assign(static_cast<const char*>(message.body.bytes), message.body.len);
    const amqp_basic_properties_t& props = message.properties;
    std::optional<std::int64_t> delivery_count;
    if ((props._flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
      for (int i = 0; i < props.headers.num_entries; ++i) {
        const amqp_table_entry_t& entry = props.headers.entries[i];
        const std::string_view name = view(entry.key);
        if (name == rabbitmq::detail::kDeliveryCountHeader) {
          delivery_count = rabbitmq::detail::field_integer(entry.value);
        }
        if (name.empty() || rabbitmq::detail::is_reserved_header(name)) continue;
        if (auto text = rabbitmq::detail::field_text(entry.value); text && !text->empty()) {
          delivery.headers.emplace(std::string(name), std::move(*text));
        }
      }
    }
    if (options_.queue_type == QueueType::quorum) delivery.native_attempts = delivery_count.value_or(0);
    delivery.token.id = deliver.delivery_tag;
    // consumer_tags_ and generation_ change on this thread only: no lock to read them.
    auto tag = consumer_tags_.find(std::string(view(deliver.consumer_tag)));
    if (tag == consumer_tags_.end()) {
      // A cancelled consumer's leftover: hand it back at once.
      stray_tags_.push_back(deliver.delivery_tag);
      return;
    }
    unacked_.insert(deliver.delivery_tag);
    delivery.queue = tag->second;
    delivery.token.text = std::to_string(generation_);
    incoming_.push_back(std::move(delivery));
  }

  // Reads what the broker sent. Returns true when frames were handled (the
  // loop should come round again at once).
  bool read_frames() {
    bool handled = false;
    const timeval zero{};
    for (int i = 0; i < kFramesPerTurn; ++i) {
      amqp_frame_t frame;
      timeval poll_now = zero;
      const int status = amqp_simple_wait_frame_noblock(connection_.get(), &frame, &poll_now);
      if (status == AMQP_STATUS_TIMEOUT) break;
      if (status != AMQP_STATUS_OK) {
        connection_.set_lost(
            ErrorInfo(Errc::connection, "connection to " + endpoint() + " lost: " + status_text(status)));
        break;
      }
      handled = true;
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;  // stray content of a skipped message
      handle_method(frame);
      if (connection_.lost()) break;
    }
    for (const std::uint64_t tag : stray_tags_) {
      if (connection_.lost()) break;
      if (const int status = amqp_basic_nack(connection_.get(), kConsumeChannel, tag, 0, 1); status != AMQP_STATUS_OK) {
        connection_.set_lost(ErrorInfo(Errc::connection, "basic.nack: " + status_text(status)));
      }
    }
    stray_tags_.clear();
    if (amqp_release_buffers_ok(connection_.get())) amqp_release_buffers(connection_.get());
    if (!incoming_.empty()) {
      // One lock per batch of deliveries, not one per delivery.
      std::vector<std::pair<std::condition_variable*, int>> wake;  // per queue: how many receivers to wake
      {
        std::lock_guard lock(mutex_);
        Consumer* last = nullptr;
        for (Delivery& delivery : incoming_) {
          Consumer& consumer = consumers_[delivery.queue];
          consumer.buffer.push_back(std::move(delivery));
          if (&consumer != last) {
            wake.emplace_back(consumer.ready.get(), 0);
            last = &consumer;
          }
          if (wake.back().second < consumer.waiting) ++wake.back().second;
        }
      }
      incoming_.clear();
      for (auto [ready, count] : wake) {
        for (int i = 0; i < count; ++i) ready->notify_one();
      }
    }
    return handled;
  }

  void handle_method(const amqp_frame_t& frame) {
    const amqp_channel_t channel = frame.channel;
    switch (frame.payload.method.id) {
      case AMQP_BASIC_DELIVER_METHOD: {
        const amqp_basic_deliver_t deliver = *static_cast<const amqp_basic_deliver_t*>(frame.payload.method.decoded);
        amqp_message_t message;
        const amqp_rpc_reply_t read = amqp_read_message(connection_.get(), channel, &message, 0);
        if (read.reply_type != AMQP_RESPONSE_NORMAL) {
          connection_.set_lost(failure_of(read, "reading a delivery").info);
          return;
        }
        on_deliver(deliver, message);
        amqp_destroy_message(&message);
        return;
      }
      case AMQP_BASIC_ACK_METHOD: {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
        on_confirm(ack->delivery_tag, ack->multiple != 0, true);
        return;
      }
      case AMQP_BASIC_NACK_METHOD: {
        const auto* nack = static_cast<const amqp_basic_nack_t*>(frame.payload.method.decoded);
        on_confirm(nack->delivery_tag, nack->multiple != 0, false);
        return;
      }
      case AMQP_BASIC_RETURN_METHOD: {
        const amqp_basic_return_t returned = *static_cast<const amqp_basic_return_t*>(frame.payload.method.decoded);
        amqp_message_t message;
        const amqp_rpc_reply_t read = amqp_read_message(connection_.get(), channel, &message, 0);
        if (read.reply_type != AMQP_RESPONSE_NORMAL) {
          connection_.set_lost(failure_of(read, "reading a returned message").info);
          return;
        }
        on_return(returned, message);
        amqp_destroy_message(&message);
        return;
      }
      case AMQP_BASIC_CANCEL_METHOD: {
        // The broker cancelled a consumer (its queue was deleted): forget it,
        // so the next receive() declares the queue and consumes again.
        const auto* cancel = static_cast<const amqp_basic_cancel_t*>(frame.payload.method.decoded);
        std::lock_guard lock(mutex_);
        auto tag = consumer_tags_.find(std::string(view(cancel->consumer_tag)));
        if (tag != consumer_tags_.end()) {
          Consumer& consumer = consumers_[tag->second];
          consumer.active = false;
          // Its queue is gone, and with it the messages it had delivered.
          for (const Delivery& delivery : consumer.buffer) unacked_.erase(delivery.token.id);
          consumer.buffer.clear();
          declarer_.forget(tag->second);
          consumer_tags_.erase(tag);
        }
        return;
      }
      case AMQP_CHANNEL_CLOSE_METHOD: {
        const auto* close = static_cast<const amqp_channel_close_t*>(frame.payload.method.decoded);
        const ErrorInfo why(Errc::broker, "broker closed channel " + std::to_string(channel) + ": " +
                                              std::to_string(close->reply_code) + " " +
                                              std::string(view(close->reply_text)));
        connection_.on_channel_close(channel, why);
        return;
      }
      case AMQP_CONNECTION_CLOSE_METHOD: {
        const auto* close = static_cast<const amqp_connection_close_t*>(frame.payload.method.decoded);
        connection_.on_connection_close(
            ErrorInfo(Errc::connection, "broker closed the connection: " + std::to_string(close->reply_code) + " " +
                                            std::string(view(close->reply_text))));
        return;
      }
      default: return;
    }
  }

  // Waits for the broker's bytes or a request from an API thread, at most a
  // quarter heartbeat so heartbeats keep flowing on an idle connection.
  void sleep_until_readable() {
    {
      std::lock_guard lock(mutex_);
      const bool work = !settles_.empty() || !stats_jobs_.empty() || closed_ ||
                        (!publish_queue_.empty() && (!options_.confirm || pending_.size() < options_.max_in_flight)) ||
                        std::any_of(consumers_.begin(), consumers_.end(), [](const auto& entry) {
                          return !entry.second.active && !entry.second.starting && !entry.second.start_error;
                        });
      if (work) return;
      io_sleeping_ = true;
    }
    if (amqp_frames_enqueued(connection_.get()) == 0 && amqp_data_in_buffer(connection_.get()) == 0) {
      pollfd fds[2];
      fds[0] = pollfd{amqp_get_sockfd(connection_.get()), POLLIN, 0};
      fds[1] = pollfd{wake_fd_, POLLIN, 0};
      milliseconds timeout(200);
      if (options_.heartbeat.count() > 0) {
        timeout = std::min(timeout, std::chrono::duration_cast<milliseconds>(options_.heartbeat) / 4);
      }
      ::poll(fds, 2, static_cast<int>(timeout.count()));
      if ((fds[1].revents & POLLIN) != 0) drain_wake_fd();
    }
    std::lock_guard lock(mutex_);
    io_sleeping_ = false;
  }

  const Options options_;
  const std::string endpoint_;
  Connection connection_;                     // I/O thread only (and start/stop while no I/O thread runs)
  rabbitmq::detail::QueueDeclarer declarer_;  // I/O thread only
  std::uint64_t next_seq_ = 1;                // I/O thread only
  std::set<std::uint64_t> unacked_;           // I/O thread only: consume-channel delivery tags not yet settled
  std::vector<std::uint64_t> stray_tags_;     // I/O thread only: deliveries of no consumer, to nack
  std::vector<Delivery> incoming_;            // I/O thread only: read this turn, not yet buffered
  int wake_fd_ = -1;
  std::thread io_thread_;
  std::atomic<std::uint64_t> reconnects_{0};

  std::mutex stop_mutex_;  // serialises stop()
  std::mutex mutex_;
  std::condition_variable job_done_;        // a publish or stats job finished
  std::condition_variable reconnect_wait_;  // closed while backing off
  bool closed_ = false;
  bool connected_ = false;
  bool io_sleeping_ = false;
  Clock::time_point close_deadline_;
  std::string last_error_;
  std::deque<std::shared_ptr<PublishJob>> publish_queue_;
  std::deque<PendingConfirm> pending_;
  std::vector<Settle> settles_;
  std::vector<std::shared_ptr<StatsJob>> stats_jobs_;
  std::map<std::string, Consumer, std::less<>> consumers_;
  std::map<std::string, std::string, std::less<>> consumer_tags_;  // consumer tag -> queue
  std::unordered_set<std::uint64_t> handed_out_;                   // delivery tags of generation_
  std::uint64_t generation_ = 1;
  rabbitmq::detail::KnownBuckets known_buckets_;
};

// ---- RabbitmqTransport ----------------------------------------------------

RabbitmqTransport::RabbitmqTransport(std::shared_ptr<State> state) : state_(std::move(state)) {}

RabbitmqTransport::~RabbitmqTransport() { close(std::chrono::seconds(5)); }

Result<std::unique_ptr<RabbitmqTransport>> RabbitmqTransport::open(Options options) {
  if (options.host.empty()) return unexpected(Errc::invalid_argument, "rabbitmq: empty host");
  if (options.max_in_flight == 0) return unexpected(Errc::invalid_argument, "rabbitmq: max_in_flight must be >= 1");
  if (options.heartbeat.count() < 0 || options.heartbeat.count() > 65535) {
    return unexpected(Errc::invalid_argument, "rabbitmq: heartbeat must be 0..65535 seconds");
  }
  if (options.connect_timeout.count() <= 0 || options.publish_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "rabbitmq: timeouts must be positive");
  }
  if (options.reconnect_min.count() <= 0 || options.reconnect_max < options.reconnect_min) {
    return unexpected(Errc::invalid_argument, "rabbitmq: need 0 < reconnect_min <= reconnect_max");
  }
  if (options.client_cert.empty() != options.client_key.empty()) {
    return unexpected(Errc::invalid_argument, "rabbitmq: cert and key go together");
  }
  auto state = std::make_shared<State>(std::move(options));
  if (auto started = state->start(); !started) return unexpected(started.error());
  return std::unique_ptr<RabbitmqTransport>(new RabbitmqTransport(std::move(state)));
}

Result<RabbitmqTransport::Options> RabbitmqTransport::options_from_url(const Url& url) {
  Options options;
  if (url.scheme != "amqp" && url.scheme != "amqps") {
    return unexpected(Errc::invalid_argument, "rabbitmq: not an amqp:// or amqps:// URL: " + url.redacted());
  }
  options.tls = url.scheme == "amqps";
  options.host = url.host.empty() ? "localhost" : url.host;
  if (options.host.find(',') != std::string::npos) {
    return unexpected(Errc::invalid_argument, "rabbitmq: one host per URL: " + url.redacted());
  }
  options.port = url.port.value_or(options.tls ? 5671 : 5672);
  if (!url.user.empty()) options.user = url.user;
  if (!url.user.empty() || !url.password.empty()) options.password = url.password;
  options.vhost = url.path.empty() ? "/" : url.path;
  static const std::set<std::string, std::less<>> known = {
      "heartbeat",  "connection_name", "connect_timeout", "publish_timeout", "confirm", "max_in_flight", "prefetch",
      "queue_type", "reconnect_min",   "reconnect_max",   "cacert",          "cert",    "key",           "verify"};
  for (const auto& [key, value] : url.query) {
    if (!known.contains(key)) {
      return unexpected(Errc::invalid_argument, "rabbitmq: unknown URL parameter '" + key + "' in " + url.redacted());
    }
  }
  auto seconds = [&](std::string_view key, milliseconds fallback) -> Result<milliseconds> {
    auto value = url.number(key, static_cast<double>(fallback.count()) / 1000.0);
    if (!value) return unexpected(value.error());
    if (*value < 0 || *value > 1e7)
      return unexpected(Errc::invalid_argument, "rabbitmq: " + std::string(key) + " out of range");
    return milliseconds(static_cast<std::int64_t>(*value * 1000.0));
  };
  auto whole = [&](std::string_view key, double fallback, double max) -> Result<double> {
    auto value = url.number(key, fallback);
    if (!value) return unexpected(value.error());
    if (*value < 0 || *value > max || *value != static_cast<double>(static_cast<std::int64_t>(*value))) {
      return unexpected(Errc::invalid_argument, "rabbitmq: " + std::string(key) + " must be a whole number 0.." +
                                                    std::to_string(static_cast<std::int64_t>(max)));
    }
    return *value;
  };
  auto heartbeat = whole("heartbeat", 30, 65535);
  if (!heartbeat) return unexpected(heartbeat.error());
  options.heartbeat = std::chrono::seconds(static_cast<std::int64_t>(*heartbeat));
  auto connect_timeout = seconds("connect_timeout", options.connect_timeout);
  if (!connect_timeout) return unexpected(connect_timeout.error());
  options.connect_timeout = *connect_timeout;
  auto publish_timeout = seconds("publish_timeout", options.publish_timeout);
  if (!publish_timeout) return unexpected(publish_timeout.error());
  options.publish_timeout = *publish_timeout;
  auto reconnect_min = seconds("reconnect_min", options.reconnect_min);
  if (!reconnect_min) return unexpected(reconnect_min.error());
  options.reconnect_min = *reconnect_min;
  auto reconnect_max = seconds("reconnect_max", options.reconnect_max);
  if (!reconnect_max) return unexpected(reconnect_max.error());
  options.reconnect_max = *reconnect_max;
  auto confirm = url.flag("confirm", true);
  if (!confirm) return unexpected(confirm.error());
  options.confirm = *confirm;
  auto verify = url.flag("verify", true);
  if (!verify) return unexpected(verify.error());
  options.verify_peer = *verify;
  auto in_flight = whole("max_in_flight", 1024, 1e6);
  if (!in_flight) return unexpected(in_flight.error());
  options.max_in_flight = static_cast<std::size_t>(*in_flight);
  auto prefetch = whole("prefetch", 0, 65535);
  if (!prefetch) return unexpected(prefetch.error());
  options.prefetch = static_cast<std::uint16_t>(*prefetch);
  const std::string queue_type = url.param("queue_type", "classic");
  if (queue_type == "quorum") {
    options.queue_type = QueueType::quorum;
  } else if (queue_type != "classic") {
    return unexpected(Errc::invalid_argument, "rabbitmq: queue_type must be classic or quorum, not " + queue_type);
  }
  options.connection_name = url.param("connection_name", options.connection_name);
  options.ca_cert = url.param("cacert");
  options.client_cert = url.param("cert");
  options.client_key = url.param("key");
  if (!options.tls && (!options.ca_cert.empty() || !options.client_cert.empty())) {
    return unexpected(Errc::invalid_argument, "rabbitmq: cacert/cert/key need an amqps:// URL");
  }
  return options;
}

const RabbitmqTransport::Options& RabbitmqTransport::options() const noexcept { return state_->options(); }

Capabilities RabbitmqTransport::capabilities() const {
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

Result<void> RabbitmqTransport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  OutgoingMessage message;
  message.queue = std::string(queue);
  message.body = std::string(body);
  message.options = options;
  return state_->publish(std::span<const OutgoingMessage>(&message, 1));
}

Result<void> RabbitmqTransport::publish_batch(std::span<const OutgoingMessage> messages) {
  return state_->publish(messages);
}

Result<std::vector<Delivery>> RabbitmqTransport::receive(std::string_view queue, std::size_t max,
                                                         std::chrono::milliseconds wait) {
  return state_->receive(queue, max, wait);
}

Result<void> RabbitmqTransport::ack(const Delivery& delivery) { return state_->settle(delivery, true); }

Result<void> RabbitmqTransport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
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

Result<QueueStats> RabbitmqTransport::stats(std::string_view queue) { return state_->stats(queue); }

void RabbitmqTransport::close(std::chrono::milliseconds deadline) { state_->stop(deadline); }

std::uint64_t RabbitmqTransport::reconnects() const noexcept { return state_->reconnects(); }

namespace rabbitmq {

std::uint16_t auto_prefetch(std::size_t first_receive_max) {
  return static_cast<std::uint16_t>(
      std::clamp<std::size_t>(kAutoPrefetchFactor * first_receive_max, kMinAutoPrefetch, 65535));
}

void register_transport() {
  const TransportFactory factory = url_factory<RabbitmqTransport>();
  babelqueue::register_transport("amqp", factory);
  babelqueue::register_transport("amqps", factory);
}

}  // namespace rabbitmq
}  // namespace babelqueue
