// SPDX-License-Identifier: Apache-2.0
// kafka::Transport: the composition of the Kafka binding's parts, and the
// operations that span them (ack and release settle what the consumer
// handed out; release and stats also use the producer).
#include "assignments.hpp"
#include "client_support.hpp"
#include "consumer.hpp"
#include "group_lag.hpp"
#include "group_peek.hpp"
#include "kafka_record.hpp"
#include "producer.hpp"
#include "publisher.hpp"
#include "retry_tiers.hpp"
#include "topic_admin.hpp"
#include "transport_access.hpp"

#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport_registry.hpp>

#include <algorithm>
#include <atomic>
#include <utility>

namespace babelqueue {

using std::chrono::milliseconds;
namespace kafka_detail = kafka::detail;

// Threads: any (every public method is thread-safe); each part says which
// threads use it and holds its own lock.
class kafka::Transport::State {
 public:
  explicit State(Options options)
      : options_(std::move(options)),
        log_events_(options_.log),
        tiers_(options_.retry_tiers, options_.retry_topic_pattern),
        producer_(options_, closed_, log_events_),
        admin_(options_, closed_, producer_),
        publisher_(closed_, tiers_, admin_, producer_),
        consumer_(options_, closed_, log_events_, tiers_, admin_, producer_, assignments_) {}

  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() { close(std::chrono::seconds(5)); }

  // Marks the delivery done. Errc::not_found when it is no longer held.
  Result<void> settle(const Delivery& delivery) {
    auto parts = kafka_detail::parse_token(delivery);
    if (!parts) return unexpected(Errc::invalid_argument, "not a Kafka delivery token");
    if (!assignments_.settle(parts->generation, parts->offset)) {
      return unexpected(Errc::not_found, "the record at offset " + std::to_string(parts->offset) + " of " +
                                             delivery.queue +
                                             " is no longer held (settled already, or its partition was "
                                             "reassigned and it will be delivered again)");
    }
    return {};
  }

  Result<void> ack(const Delivery& delivery) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    return settle(delivery);
  }

  Result<void> release(const Delivery& delivery, milliseconds delay) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    auto parts = kafka_detail::parse_token(delivery);
    if (!parts) return unexpected(Errc::invalid_argument, "not a Kafka delivery token");
    if (!assignments_.pending(parts->generation, parts->offset)) {
      return unexpected(Errc::not_found, "the record at offset " + std::to_string(parts->offset) + " of " +
                                             delivery.queue + " is no longer held");
    }
    // The same bytes again, one attempt further (the header is authoritative).
    std::int64_t attempts =
        delivery.native_attempts.value_or(kafka_detail::project(delivery.body).attempts.value_or(0));
    PublishOptions options;
    options.headers = delivery.headers;
    options.delay = delay;
    options.ordering_key = delivery.ordering_key;  // the record key: the same partition
    if (auto sent =
            publisher_.publish(delivery.queue, delivery.body, options, babelqueue::detail::next_attempts(attempts));
        !sent) {
      return unexpected(sent.error().code(), sent.error().message() + "; the record stays uncommitted");
    }
    if (auto settled = settle(delivery); !settled) {
      // Its partition moved to another consumer meanwhile: the copy is out,
      // the original comes back there once more (at least once).
      return {};
    }
    return {};
  }

  Result<QueueStats> stats(std::string_view queue) {
    if (queue.empty()) return unexpected(Errc::invalid_argument, "stats needs a topic name");
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    kafka_detail::Producer::Lease lease(producer_);
    const std::string topic = kafka_detail::topic_for_queue(queue);
    auto waiting = kafka_detail::group_lag(lease.client(), admin_, consumer_, options_, topic);
    if (!waiting) return unexpected(waiting.error());
    QueueStats stats;
    stats.delayed = 0;
    for (std::size_t tier = 0; tier < tiers_.size(); ++tier) {
      auto parked = kafka_detail::group_lag(lease.client(), admin_, consumer_, options_, tiers_.topic(topic, tier));
      if (!parked) return unexpected(parked.error());
      stats.delayed += *parked;
    }
    // Received here and not settled: polled minus still buffered.
    stats.reserved = std::max<std::int64_t>(assignments_.reserved(topic, queue), 0);
    stats.ready = std::max<std::int64_t>(*waiting - stats.reserved, 0);
    return stats;
  }

  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) {
    if (queue.empty()) return unexpected(Errc::invalid_argument, "peek needs a topic name");
    if (max == 0) return unexpected(Errc::invalid_argument, "peek needs max >= 1");
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    kafka_detail::Producer::Lease lease(producer_);
    return kafka_detail::group_peek(lease.client(), admin_, options_, log_events_, kafka_detail::topic_for_queue(queue),
                                    max);
  }

  // Commits what is done and leaves the group, then lets the producer
  // deliver what it holds until the deadline.
  void close(milliseconds deadline) {
    if (closed_.exchange(true)) return;
    const auto until = babelqueue::detail::saturating_after(kafka_detail::Clock::now(), deadline);
    consumer_.close();
    producer_.close(until);
  }

  const Options options_;
  std::atomic<bool> closed_{false};
  kafka_detail::LogEvents log_events_;  // both clients' (it refers to options_.log)
  const kafka_detail::RetryTiers tiers_;
  kafka_detail::Producer producer_;
  kafka_detail::TopicAdmin admin_;
  kafka_detail::Publisher publisher_;
  kafka_detail::Assignments assignments_;
  kafka_detail::Consumer consumer_;
};

// ---- kafka::Transport ----

kafka::Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

kafka::Transport::~Transport() = default;

Result<std::unique_ptr<kafka::Transport>> kafka::Transport::open(Options options) {
  {
    // The TLS files as librdkafka will read them (it reports a missing one
    // as "ssl.ca.location failed: ... system lib").
    TlsOptions files;
    const auto property = [&](const char* name) {
      const auto it = options.client_properties.find(name);
      return it == options.client_properties.end() ? std::string() : it->second;
    };
    files.ca_file = property("ssl.ca.location");
    files.cert_file = property("ssl.certificate.location");
    files.key_file = property("ssl.key.location");
    if (auto usable = files.check_files(); !usable) return unexpected(usable.error());
  }
  if (options.bootstrap_servers.empty()) {
    return unexpected(Errc::invalid_argument, "Kafka needs at least one bootstrap server (host:port)");
  }
  if (options.group.empty()) return unexpected(Errc::invalid_argument, "the Kafka consumer group cannot be empty");
  if (options.partitions < 1) return unexpected(Errc::invalid_argument, "partitions must be at least 1");
  if (options.replication_factor < 1) {
    return unexpected(Errc::invalid_argument, "replication_factor must be at least 1");
  }
  for (std::size_t i = 0; i < options.retry_tiers.size(); ++i) {
    if (options.retry_tiers[i].count() <= 0 || (i > 0 && options.retry_tiers[i] <= options.retry_tiers[i - 1])) {
      return unexpected(Errc::invalid_argument, "retry tiers must be positive and strictly ascending");
    }
  }
  if (!options.retry_tiers.empty() && options.retry_topic_pattern.find("{topic}") == std::string::npos) {
    return unexpected(Errc::invalid_argument, "retry_topic must contain {topic}");
  }
  if (options.retry_tiers.size() > 1 && options.retry_topic_pattern.find("{n}") == std::string::npos &&
      options.retry_topic_pattern.find("{delay_ms}") == std::string::npos) {
    return unexpected(Errc::invalid_argument, "retry_topic must contain {n} or {delay_ms} to tell the tiers apart");
  }
  if (options.connect_timeout.count() < 0) return unexpected(Errc::invalid_argument, "connect_timeout is negative");
  if (options.session_timeout.count() <= 0 || options.commit_interval.count() <= 0 ||
      options.publish_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "session_timeout, commit_interval and publish_timeout must be positive");
  }
  auto state = std::make_unique<State>(std::move(options));
  const bool reach = state->options_.connect_timeout.count() > 0;
  // From the client's first connection attempt, which start() begins.
  if (reach) state->log_events_.hold();
  if (auto started = state->producer_.start(); !started) return unexpected(started.error());
  if (reach) {
    if (auto reached = state->producer_.reach(state->options_.connect_timeout); !reached) {
      return unexpected(reached.error());
    }
  }
  return std::unique_ptr<kafka::Transport>(new kafka::Transport(std::move(state)));
}

const kafka::Transport::Options& kafka::Transport::options() const noexcept { return state_->options_; }

Capabilities kafka::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = !state_->options_.retry_tiers.empty();
  caps.native_release = false;  // a release republishes a copy
  caps.delivery_count = true;   // the bq-attempts header
  caps.redelivers_unsettled = true;
  caps.batch_publish = true;
  caps.ordered = true;       // per partition
  caps.ordering_key = true;  // the record key, read back as Delivery::ordering_key
  caps.max_delay = state_->tiers_.longest();
  caps.peek = true;  // a reader assigned the group's offsets, which never commits
  return caps;
}

Result<void> kafka::Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  return state_->publisher_.publish(queue, body, options, std::nullopt);
}

Result<void> kafka::Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  return state_->publisher_.publish_batch(messages);
}

Result<std::vector<Delivery>> kafka::Transport::receive(std::string_view queue, std::size_t max,
                                                        std::chrono::milliseconds wait) {
  return state_->consumer_.receive(queue, max, wait);
}

Result<void> kafka::Transport::ack(const Delivery& delivery) { return state_->ack(delivery); }

Result<void> kafka::Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  return state_->release(delivery, delay);
}

void kafka::Transport::close(std::chrono::milliseconds deadline) { state_->close(deadline); }

Result<QueueStats> kafka::Transport::stats(std::string_view queue) { return state_->stats(queue); }

ConnectionStats kafka::Transport::connection_stats() const noexcept {
  return {"kafka", state_->log_events_.reconnects()};
}

Result<std::vector<PeekedMessage>> kafka::Transport::peek(std::string_view queue, std::size_t max) {
  return state_->peek(queue, max);
}

std::string kafka::detail::TransportAccess::retry_topic(const Transport& transport, std::string_view topic,
                                                        std::size_t tier) {
  return transport.state_->tiers_.topic(kafka_detail::topic_for_queue(topic), tier);
}

Result<void> kafka::detail::TransportAccess::ensure_topic(Transport& transport, std::string_view topic) {
  if (topic.empty()) return unexpected(Errc::invalid_argument, "ensure_topic needs a topic name");
  return transport.state_->admin_.ensure(kafka_detail::topic_for_queue(topic));
}

namespace kafka {

void register_transport() { babelqueue::register_transport("kafka", url_factory<kafka::Transport>()); }

}  // namespace kafka
}  // namespace babelqueue
