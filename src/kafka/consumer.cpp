// SPDX-License-Identifier: Apache-2.0
#include "consumer.hpp"

#include "committer.hpp"
#include "kafka_record.hpp"
#include "retry_parking.hpp"

#include <babelqueue/detail/saturating.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace babelqueue::kafka::detail {

using std::chrono::milliseconds;

// The receiving thread's side of the consumer: the librdkafka consumer and
// what only the holder of Consumer::mutex_ uses.
// Threads: the receiving thread only (Consumer::mutex_ held), and
// librdkafka's rebalance callback, which runs inside its calls (poll, close).
class Consumer::Session {
 public:
  explicit Session(Consumer& owner) : owner_(owner) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  // Creates the client (it joins the group on its first poll) and starts
  // the committer.
  Result<void> start();

  // Adds queue (and its retry topics) to the subscription.
  Result<void> subscribe(std::string_view queue);

  void reinject_due() { retry_.reinject_due(*client_, owner_.producer_, owner_.assignments_); }

  // Polls up to one batch of records, waiting up to first_wait for the first.
  Result<void> poll(milliseconds first_wait);

  RdKafka::ErrorCode committed(std::vector<RdKafka::TopicPartition*>& partitions, int timeout_ms) {
    return client_->committed(partitions, timeout_ms);
  }

  // Stops the committer, commits what is done, leaves the group.
  void close();

 private:
  // librdkafka's rebalance callback. Threads: the receiving thread, inside
  // rd_kafka_consumer_poll() or the client's close().
  class Rebalance final : public RdKafka::RebalanceCb {
   public:
    explicit Rebalance(Session& session) : session_(session) {}
    void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                      std::vector<RdKafka::TopicPartition*>& partitions) override {
      if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
        session_.on_assigned(partitions);
        consumer->assign(partitions);
      } else {
        session_.on_revoked(partitions);
        consumer->unassign();
      }
    }

   private:
    Session& session_;
  };

  void on_assigned(const std::vector<RdKafka::TopicPartition*>& partitions);
  void on_revoked(const std::vector<RdKafka::TopicPartition*>& partitions);
  Result<void> consumer_error(const rd_kafka_message_t* message);
  Track* take(Assignments::Filing& filing, const rd_kafka_message_t* raw, Track* last);

  Consumer& owner_;
  Rebalance rebalance_{*this};
  std::unique_ptr<RdKafka::KafkaConsumer> client_;
  rd_kafka_queue_t* queue_ = nullptr;        // client_'s queue, for batch polls
  std::optional<Committer> committer_;       // while client_ runs
  std::vector<rd_kafka_message_t*> polled_;  // poll()'s batch
  std::set<std::string, std::less<>> subscribed_queues_;
  std::vector<std::string> subscription_;
  std::map<std::string, std::string, std::less<>> queue_names_;  // topic -> queue
  RetryParking retry_;
};

Result<void> Consumer::Session::start() {
  const kafka::Transport::Options& options = owner_.options_;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  const int session = to_int_ms(options.session_timeout);
  std::map<std::string, std::string> props = {
      {"bootstrap.servers", options.bootstrap_servers},
      {"group.id", options.group},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"session.timeout.ms", std::to_string(session)},
      {"heartbeat.interval.ms", std::to_string(std::max(100, session / 3))},
      {"enable.partition.eof", "false"},
      // A topic created while subscribed is noticed within a second.
      {"topic.metadata.refresh.interval.ms", "1000"},
      // A report a second, for the reconnect count (LogEvents::count_reconnects).
      // Only here: the consumer is polled all along while it receives, and a
      // report nobody polls stays queued in the client (the producer is
      // polled only while it publishes).
      {"statistics.interval.ms", "1000"},
  };
  add_connection_settings(props, options);
  for (const auto& [k, v] : options.client_properties) props[k] = v;
  for (const auto& [k, v] : options.consumer_properties) props[k] = v;
  if (auto set = apply_properties(*conf, props, "consumer"); !set) return set;
  std::string error;
  if (conf->set("rebalance_cb", &rebalance_, error) != RdKafka::Conf::CONF_OK ||
      conf->set("event_cb", &owner_.log_, error) != RdKafka::Conf::CONF_OK) {
    return unexpected(Errc::internal, "librdkafka refused the consumer's callbacks: " + error);
  }
  client_.reset(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!client_) return unexpected(Errc::invalid_argument, "could not create the Kafka consumer: " + error);
  queue_ = rd_kafka_queue_get_consumer(client_->c_ptr());
  committer_.emplace(owner_.assignments_, *client_, options.commit_interval);
  return {};
}

Result<void> Consumer::Session::subscribe(std::string_view queue) {
  if (subscribed_queues_.contains(queue)) return {};
  const std::string topic = topic_for_queue(queue);
  if (auto ensured = owner_.admin_.ensure(topic); !ensured) return ensured;
  std::vector<std::string> added{topic};
  queue_names_[topic] = std::string(queue);
  const RetryTiers& tiers = owner_.tiers_;
  for (std::size_t tier = 0; tier < tiers.size(); ++tier) {
    std::string retry = tiers.topic(topic, tier);
    if (auto ensured = owner_.admin_.ensure(retry, true); !ensured) return ensured;
    retry_.add_topic(retry, topic, tiers.delay(tier));
    added.push_back(std::move(retry));
  }
  subscribed_queues_.emplace(queue);
  subscription_.insert(subscription_.end(), added.begin(), added.end());
  RdKafka::ErrorCode code = client_->subscribe(subscription_);
  if (code != RdKafka::ERR_NO_ERROR) {
    subscribed_queues_.erase(std::string(queue));
    subscription_.resize(subscription_.size() - added.size());
    return unexpected(errc_of(code), "could not subscribe to Kafka topic " + topic + ": " + RdKafka::err2str(code));
  }
  return {};
}

void Consumer::Session::on_assigned(const std::vector<RdKafka::TopicPartition*>& partitions) {
  std::vector<PartitionKey> assigned;
  assigned.reserve(partitions.size());
  for (const RdKafka::TopicPartition* p : partitions) assigned.emplace_back(p->topic(), p->partition());
  owner_.assignments_.assign(assigned);
}

// Stops handing out records of the revoked partitions, gives their handlers
// a moment to finish, and commits only what is done.
void Consumer::Session::on_revoked(const std::vector<RdKafka::TopicPartition*>& partitions) {
  std::set<PartitionKey> revoked;
  for (const RdKafka::TopicPartition* p : partitions) revoked.emplace(p->topic(), p->partition());
  // Parked records are dropped too: the next owner reads them again.
  std::map<PartitionKey, std::size_t> dropped;
  retry_.revoke(revoked, dropped);
  const milliseconds grace =
      owner_.closed_.load() ? milliseconds(0) : std::min(owner_.options_.session_timeout / 4, milliseconds(2000));
  const std::vector<Commit> commits = owner_.assignments_.revoke(revoked, std::move(dropped), grace);
  (void)commit_offsets(*client_, commits);
}

// Waits up to first_wait for the first record with rd_kafka_consumer_poll(),
// which also serves the rebalance callbacks, then takes what is already
// fetched in one rd_kafka_consume_batch_queue() call without waiting (it
// would wait for a full batch): one queue lock for the batch and no C++
// wrapper per record. Records of a partition that was revoked meanwhile find
// no Track and are dropped; librdkafka itself drops from the batch the
// records of an earlier assignment of a partition assigned again.
Result<void> Consumer::Session::poll(milliseconds first_wait) {
  constexpr std::size_t kBatch = 500;
  rd_kafka_t* rk = client_->c_ptr();
  rd_kafka_message_t* first = rd_kafka_consumer_poll(rk, to_int_ms(first_wait));
  if (first == nullptr) return {};  // nothing within first_wait
  polled_.resize(kBatch);
  polled_[0] = first;
  const ssize_t more = queue_ != nullptr ? rd_kafka_consume_batch_queue(queue_, 0, polled_.data() + 1, kBatch - 1) : 0;
  polled_.resize(1 + static_cast<std::size_t>(std::max<ssize_t>(more, 0)));
  Result<void> outcome;
  {
    Assignments::Filing filing = owner_.assignments_.filing();
    Track* track = nullptr;
    for (rd_kafka_message_t* message : polled_) {
      if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        track = take(filing, message, track);
      } else if (outcome) {
        outcome = consumer_error(message);
      }
    }
  }
  for (rd_kafka_message_t* message : polled_) rd_kafka_message_destroy(message);
  polled_.clear();
  return outcome;
}

// What a consumer error record means for receive(): authorization and fatal
// errors fail it; anything else (a connection loss, a broker restart)
// librdkafka recovers from by itself.
Result<void> Consumer::Session::consumer_error(const rd_kafka_message_t* message) {
  const rd_kafka_resp_err_t code = message->err;
  if (code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED || code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
      code == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
    return unexpected(Errc::auth, "Kafka refused the consumer (group " + owner_.options_.group +
                                      "): " + rd_kafka_message_errstr(message));
  }
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    std::string reason;
    client_->fatal_error(reason);
    return unexpected(Errc::broker, "the Kafka consumer failed: " + reason);
  }
  return {};
}

// Files one polled record (parks it when it is of a retry topic); last is
// the previous record's partition (most are the same). Reads the record
// through the C API, so nothing is copied but what is kept.
Track* Consumer::Session::take(Assignments::Filing& filing, const rd_kafka_message_t* raw, Track* last) {
  const std::string_view topic = rd_kafka_topic_name(raw->rkt);
  const std::int64_t offset = raw->offset;
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(raw, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) headers = nullptr;
  const char* key = static_cast<const char*>(raw->key);
  const std::string_view value(static_cast<const char*>(raw->payload), raw->len);

  Track* track = filing.add(topic, raw->partition, offset, last);
  if (track == nullptr) return nullptr;  // not assigned (any more): it will be fetched again

  if (retry_.has_topics()) {
    if (const RetryParking::Tier* tier = retry_.find(topic)) {
      retry_.park(*client_, raw, headers, *tier);
      return track;
    }
  }

  Delivery& delivery = filing.emplace(*track, [&]() -> std::string_view {
    auto name = queue_names_.find(topic);
    return name != queue_names_.end() ? std::string_view(name->second) : topic;
  });
  delivery.body.assign(value);
  // A repeated contract header counts by its first value, as the Go and
  // Python SDKs read it.
  std::optional<std::string_view> version;
  bool attempts_seen = false;
  for_each_header(headers, [&](std::string_view header, std::string_view text) {
    if (header == kAttemptsHeader) {
      if (!std::exchange(attempts_seen, true)) delivery.native_attempts = binding::parse_count(text);
    } else if (header == kSchemaVersionHeader) {
      if (!version) version = text;
    } else if (!is_reserved_header(header)) {
      delivery.headers.insert_or_assign(std::string(header), std::string(text));
    }
  });
  if (delivery.native_attempts) delivery.attempts_merge = AttemptsMerge::authoritative;
  delivery.gate_rejection = binding::schema_version_gate(version);
  if (key != nullptr) delivery.ordering_key.assign(key, raw->key_len);
  delivery.token = make_token(track->generation, offset);
  return track;
}

void Consumer::Session::close() {
  if (committer_) committer_->stop();
  if (!client_) return;
  commit_finished(owner_.assignments_, *client_);
  owner_.assignments_.clear_ready();
  client_->close();  // leaves the group; the revoke callback commits what is done
  rd_kafka_queue_destroy(queue_);
  queue_ = nullptr;
  committer_.reset();
  client_.reset();
}

Consumer::Consumer(const kafka::Transport::Options& options, const std::atomic<bool>& closed, LogEvents& log,
                   const RetryTiers& tiers, TopicAdmin& admin, Producer& producer, Assignments& assignments)
    : options_(options),
      closed_(closed),
      log_(log),
      tiers_(tiers),
      admin_(admin),
      producer_(producer),
      assignments_(assignments) {}

Consumer::~Consumer() = default;

Result<std::vector<Delivery>> Consumer::receive(std::string_view queue, std::size_t max, milliseconds wait) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "receive needs a topic name");
  if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
  const auto deadline = babelqueue::detail::saturating_after(Clock::now(), wait);
  for (;;) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    {
      std::vector<Delivery> out;
      if (assignments_.take_ready(queue, max, out)) return out;
    }
    if (Clock::now() >= deadline) return std::vector<Delivery>{};
    std::lock_guard lock(mutex_);
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    if (assignments_.has_ready(queue)) continue;  // another receive() polled meanwhile
    if (!session_) {
      auto session = std::make_unique<Session>(*this);
      if (auto started = session->start(); !started) return unexpected(started.error());
      session_ = std::move(session);
    }
    if (auto subscribed = session_->subscribe(queue); !subscribed) return unexpected(subscribed.error());
    session_->reinject_due();
    auto slice = std::min(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()), milliseconds(100));
    if (auto polled = session_->poll(std::max(slice, milliseconds(0))); !polled) return unexpected(polled.error());
  }
}

Result<RdKafka::ErrorCode> Consumer::read_committed(std::vector<RdKafka::TopicPartition*>& partitions, int timeout_ms) {
  std::lock_guard lock(mutex_);
  if (session_) return session_->committed(partitions, timeout_ms);
  // A consumer of the group that never subscribes: it reads the group's
  // offsets without joining it.
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::map<std::string, std::string> props = {{"bootstrap.servers", options_.bootstrap_servers},
                                              {"group.id", options_.group}};
  for (const auto& [k, v] : options_.client_properties) props[k] = v;
  for (const auto& [k, v] : options_.consumer_properties) props[k] = v;
  if (auto set = apply_properties(*conf, props, "consumer"); !set) return unexpected(set.error());
  std::string error;
  if (conf->set("event_cb", &log_, error) != RdKafka::Conf::CONF_OK) {
    return unexpected(Errc::internal, "librdkafka refused the consumer's callbacks: " + error);
  }
  std::unique_ptr<RdKafka::KafkaConsumer> reader(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!reader) return unexpected(Errc::invalid_argument, "could not create a Kafka consumer: " + error);
  const RdKafka::ErrorCode code = reader->committed(partitions, timeout_ms);
  reader->close();
  return code;
}

void Consumer::close() {
  std::lock_guard lock(mutex_);
  if (session_) session_->close();
  session_.reset();
}

}  // namespace babelqueue::kafka::detail
