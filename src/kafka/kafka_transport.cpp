#include "kafka_record.hpp"
#include "partition_progress.hpp"

#include <babelqueue/kafka_transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace babelqueue {
namespace {

using Clock = std::chrono::steady_clock;
using kafka::detail::PartitionProgress;
using kafka::detail::RecordHeaders;
using std::chrono::milliseconds;
namespace record = kafka::detail;

std::int64_t epoch_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int to_int_ms(milliseconds value) {
  return static_cast<int>(std::clamp<std::int64_t>(value.count(), 0, std::numeric_limits<int>::max()));
}

Errc errc_of(RdKafka::ErrorCode code) {
  switch (code) {
    case RdKafka::ERR__MSG_TIMED_OUT:
    case RdKafka::ERR__TIMED_OUT:
    case RdKafka::ERR_REQUEST_TIMED_OUT: return Errc::timeout;
    case RdKafka::ERR__UNKNOWN_TOPIC:
    case RdKafka::ERR_UNKNOWN_TOPIC_OR_PART: return Errc::not_found;
    case RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED:
    case RdKafka::ERR_GROUP_AUTHORIZATION_FAILED:
    case RdKafka::ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RdKafka::ERR__AUTHENTICATION:
    case RdKafka::ERR_SASL_AUTHENTICATION_FAILED: return Errc::auth;
    case RdKafka::ERR_MSG_SIZE_TOO_LARGE:
    case RdKafka::ERR_RECORD_LIST_TOO_LARGE: return Errc::invalid_argument;
    case RdKafka::ERR__TRANSPORT:
    case RdKafka::ERR__ALL_BROKERS_DOWN:
    case RdKafka::ERR__RESOLVE: return Errc::connection;
    case RdKafka::ERR__PURGE_QUEUE:
    case RdKafka::ERR__PURGE_INFLIGHT:
    case RdKafka::ERR__DESTROY: return Errc::closed;
    default: return Errc::broker;
  }
}

// The delivery reports a publish waits for: one per produced record.
struct DeliveryGroup {
  std::mutex mutex;
  std::size_t remaining = 0;
  std::optional<ErrorInfo> first_error;

  void report(RdKafka::Message& message) {
    std::lock_guard lock(mutex);
    if (message.err() != RdKafka::ERR_NO_ERROR && !first_error) {
      first_error.emplace(errc_of(message.err()), "the broker did not confirm the record on topic " +
                                                      message.topic_name() + ": " + message.errstr());
    }
    --remaining;
  }

  // Waits for the reports, serving them itself (poll) as the raw client's
  // loop does: no hand-over to another thread on the way back.
  Result<void> wait(RdKafka::Producer& producer) {
    for (;;) {
      {
        std::lock_guard lock(mutex);
        if (remaining == 0) break;
      }
      producer.poll(1);
    }
    std::lock_guard lock(mutex);
    if (first_error) return unexpected(*first_error);
    return {};
  }
};

class DeliveryReports final : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& message) override {
    // A Publication waits until every record it produced was reported (purged
    // records are reported too), so the group outlives its reports.
    auto* group = static_cast<DeliveryGroup*>(message.msg_opaque());
    if (group != nullptr) group->report(message);
  }
};

// librdkafka's log lines and client-level errors, to the transport's LogSink.
class LogEvents final : public RdKafka::EventCb {
 public:
  explicit LogEvents(const LogSink& sink) : sink_(sink) {}

  void event_cb(RdKafka::Event& event) override {
    if (!sink_) return;
    switch (event.type()) {
      case RdKafka::Event::EVENT_LOG:
        sink_(level_of(event.severity()), "kafka " + event.fac() + ": " + event.str());
        break;
      case RdKafka::Event::EVENT_ERROR:
        // Client errors (all brokers down, authentication) are retried by
        // librdkafka itself; fatal ones also fail the next call.
        sink_(event.fatal() ? LogLevel::error : LogLevel::warning,
              "kafka: " + RdKafka::err2str(event.err()) + ": " + event.str());
        break;
      default: break;
    }
  }

 private:
  static LogLevel level_of(RdKafka::Event::Severity severity) {
    switch (severity) {
      case RdKafka::Event::EVENT_SEVERITY_EMERG:
      case RdKafka::Event::EVENT_SEVERITY_ALERT:
      case RdKafka::Event::EVENT_SEVERITY_CRITICAL:
      case RdKafka::Event::EVENT_SEVERITY_ERROR: return LogLevel::error;
      case RdKafka::Event::EVENT_SEVERITY_WARNING: return LogLevel::warning;
      case RdKafka::Event::EVENT_SEVERITY_NOTICE:
      case RdKafka::Event::EVENT_SEVERITY_INFO: return LogLevel::info;
      default: return LogLevel::debug;
    }
  }

  const LogSink& sink_;
};

struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* headers) const { rd_kafka_headers_destroy(headers); }
};
using HeadersPtr = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;

void add_header(rd_kafka_headers_t* headers, std::string_view name, std::string_view value) {
  rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.data(),
                      static_cast<ssize_t>(value.size()));
}

// One record about to be produced.
struct OutgoingRecord {
  std::string_view topic;  // NUL-terminated: a std::string the caller keeps
  std::string_view value;
  std::string_view key;
  bool has_key = false;
  HeadersPtr headers{rd_kafka_headers_new(8)};  // handed to librdkafka when produced
  std::int64_t timestamp = 0;                   // 0: the producer's clock
};

// The record for body on topic: out-of-band headers (contract names are the
// SDK's own: dropped), then the bq- projection; timestamp = meta.created_at.
void fill_record(OutgoingRecord& out, const std::string& topic, std::string_view body, const PublishOptions& options,
                 std::optional<std::int64_t> attempts_override) {
  out.topic = topic;
  out.value = body;
  out.has_key = !options.ordering_key.empty();
  out.key = options.ordering_key;
  rd_kafka_headers_t* headers = out.headers.get();
  for (const auto& [name, value] : options.headers) {
    if (!name.empty() && !value.empty() && !record::is_reserved_header(name)) add_header(headers, name, value);
  }
  auto projected = record::project_with(
      body, [headers](std::string_view name, std::string_view value) { add_header(headers, name, value); },
      attempts_override);
  if (projected) {
    out.timestamp = projected->created_at.value_or(0);
  } else if (attempts_override) {
    add_header(headers, record::kAttemptsHeader, std::to_string(*attempts_override));
  }
}

// The token of a received record: the offset (DeliveryToken::id), and in the
// text the partition assignment's generation (8 bytes), whether the record
// has a key (1 byte) and the key, so a release republishes with it.
struct TokenParts {
  std::uint64_t generation = 0;
  std::int64_t offset = 0;
  bool has_key = false;
  std::string_view key;
};

DeliveryToken make_token(std::uint64_t generation, std::int64_t offset, const char* key, std::size_t key_size) {
  DeliveryToken token;
  token.id = static_cast<std::uint64_t>(offset);
  token.text.resize(sizeof generation + 1 + (key ? key_size : 0));
  std::memcpy(token.text.data(), &generation, sizeof generation);
  token.text[sizeof generation] = key ? '1' : '0';
  if (key && key_size > 0) std::memcpy(token.text.data() + sizeof generation + 1, key, key_size);
  return token;
}

std::optional<TokenParts> parse_token(const Delivery& delivery) {
  const std::string& text = delivery.token.text;
  TokenParts parts;
  if (text.size() < sizeof parts.generation + 1) return std::nullopt;
  std::memcpy(&parts.generation, text.data(), sizeof parts.generation);
  parts.has_key = text[sizeof parts.generation] == '1';
  parts.key = std::string_view(text).substr(sizeof parts.generation + 1);
  parts.offset = static_cast<std::int64_t>(delivery.token.id);
  return parts;
}

// A record of a retry topic waiting to be re-injected into its queue.
struct ParkedRecord {
  std::int64_t offset = 0;
  std::string value;
  std::optional<std::string> key;
  RecordHeaders headers;  // without bq-delay and bq-original-topic
  std::string original_topic;
  Clock::time_point due;
};

using PartitionKey = std::pair<std::string, std::int32_t>;

// Orders partitions by topic then number, and finds them by a topic view
// (no string built per record).
struct PartitionOrder {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    const int c = std::string_view(a.first).compare(std::string_view(b.first));
    return c < 0 || (c == 0 && a.second < b.second);
  }
};

// Records fetched and waiting to be handed out, oldest first. A vector with a
// read index, not a std::deque: a Delivery is big enough that a deque would
// allocate a block for every two of them.
class ReadyRecords {
 public:
  bool empty() const noexcept { return head_ == records_.size(); }
  std::size_t size() const noexcept { return records_.size() - head_; }

  // A new record at the back, to be filled in place.
  Delivery& emplace_back() {
    if (empty()) clear();  // reuses the storage
    return records_.emplace_back();
  }

  // Moves up to max records, oldest first, to the back of out.
  void take(std::size_t max, std::vector<Delivery>& out) {
    out.reserve(out.size() + std::min(max, size()));
    for (std::size_t n = 0; n < max && !empty(); ++n) out.push_back(std::move(records_[head_++]));
    if (empty()) {
      clear();
    } else if (head_ >= 1024 && head_ * 2 >= records_.size()) {
      compact();  // a reader that never catches up does not grow it forever
    }
  }

  // Removes the waiting records for which drop(record) is true.
  template <class Drop>
  void erase_if(Drop&& drop) {
    compact();
    std::erase_if(records_, std::forward<Drop>(drop));
  }

  void clear() noexcept {
    records_.clear();
    head_ = 0;
  }

 private:
  void compact() {
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }

  std::vector<Delivery> records_;
  std::size_t head_ = 0;  // the oldest waiting record
};

struct Track {
  std::uint64_t generation = 0;
  std::string topic;
  std::int32_t partition = 0;
  PartitionProgress progress;
  // Where its records wait to be handed out, and the queue name they report
  // (nodes of the transport's ready map, found once).
  ReadyRecords* ready = nullptr;
  const std::string* queue = nullptr;
};

}  // namespace

class KafkaTransport::State {
 public:
  explicit State(Options options) : options_(std::move(options)) {}

  ~State() { close(std::chrono::seconds(5)); }

  Options options_;

  // ---- producer ----

  Result<void> start_producer() {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::map<std::string, std::string> props = {
        {"bootstrap.servers", options_.bootstrap_servers},
        {"acks", "all"},
        {"enable.idempotence", "true"},
        {"linger.ms", "1"},
        {"message.timeout.ms", std::to_string(to_int_ms(options_.publish_timeout))},
        // Topics are created by ensure_topic() with the configured partitions,
        // never by the broker's defaults as a side effect of a metadata look-up.
        {"allow.auto.create.topics", "false"},
    };
    for (const auto& [k, v] : options_.client_properties) props[k] = v;
    for (const auto& [k, v] : options_.producer_properties) props[k] = v;
    if (auto set = apply(*conf, props, "producer"); !set) return set;
    std::string error;
    if (conf->set("dr_cb", &delivery_reports_, error) != RdKafka::Conf::CONF_OK ||
        conf->set("event_cb", &log_events_, error) != RdKafka::Conf::CONF_OK) {
      return unexpected(Errc::internal, "librdkafka refused the producer's callbacks: " + error);
    }
    producer_.reset(RdKafka::Producer::create(conf.get(), error));
    if (!producer_) return unexpected(Errc::invalid_argument, "could not create the Kafka producer: " + error);
    // No polling thread: every Publication waits for its delivery reports and
    // serves them itself (DeliveryGroup::wait).
    return {};
  }

  static Result<void> apply(RdKafka::Conf& conf, const std::map<std::string, std::string>& props,
                            std::string_view client) {
    for (const auto& [name, value] : props) {
      std::string error;
      if (conf.set(name, value, error) != RdKafka::Conf::CONF_OK) {
        return unexpected(Errc::invalid_argument,
                          "librdkafka refused the " + std::string(client) + " property " + name + ": " + error);
      }
    }
    return {};
  }

  // One publish in progress: add() hands each record to librdkafka at once
  // (so the broker thread can send while the caller builds the next ones),
  // finish() waits for every delivery report. Holds the producer alive
  // (lifetime_ shared) until it is destroyed.
  class Publication {
   public:
    explicit Publication(State& state) : state_(state), life_(state.lifetime_) {}
    Publication(const Publication&) = delete;
    Publication& operator=(const Publication&) = delete;
    // librdkafka points at group_ until each report is served.
    ~Publication() { (void)finish(); }

    // Produces out (its headers then belong to librdkafka). An error when
    // librdkafka refuses it; the records produced before it still count.
    Result<void> add(OutgoingRecord& out) {
      if (state_.closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
      rd_kafka_vu_t fields[7];
      fields[0].vtype = RD_KAFKA_VTYPE_TOPIC;
      fields[0].u.cstr = out.topic.data();
      fields[1].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
      fields[1].u.i = RD_KAFKA_MSG_F_COPY;
      fields[2].vtype = RD_KAFKA_VTYPE_VALUE;
      // librdkafka's field is non-const but the value is copied (RD_KAFKA_MSG_F_COPY).
      fields[2].u.mem.ptr = const_cast<char*>(out.value.data());
      fields[2].u.mem.size = out.value.size();
      fields[3].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
      fields[3].u.i64 = out.timestamp;
      fields[4].vtype = RD_KAFKA_VTYPE_HEADERS;
      fields[4].u.headers = out.headers.get();
      fields[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
      fields[5].u.ptr = &group_;
      std::size_t count = 6;
      if (out.has_key) {
        fields[6].vtype = RD_KAFKA_VTYPE_KEY;
        fields[6].u.mem.ptr = const_cast<char*>(out.key.data());
        fields[6].u.mem.size = out.key.size();
        count = 7;
      }
      {
        // Another publishing thread may serve this group's reports.
        std::lock_guard lock(group_.mutex);
        ++group_.remaining;
      }
      rd_kafka_t* rk = state_.producer_->c_ptr();
      rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
      std::optional<Clock::time_point> deadline;  // taken only when the queue is full
      for (;;) {
        rd_kafka_error_t* error = rd_kafka_produceva(rk, fields, count);
        code = error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (error) rd_kafka_error_destroy(error);
        if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL || state_.closed_.load()) break;
        if (!deadline) deadline = Clock::now() + state_.options_.publish_timeout;
        if (Clock::now() >= *deadline) break;
        // The queue empties as delivery reports are served, and only
        // publishers serve them: serve some.
        state_.producer_->poll(2);
      }
      if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::lock_guard lock(group_.mutex);
        --group_.remaining;
        return unexpected(errc_of(static_cast<RdKafka::ErrorCode>(code)),
                          "could not produce to topic " + std::string(out.topic) + ": " + rd_kafka_err2str(code));
      }
      (void)out.headers.release();  // librdkafka owns them now
      ++produced_;
      return {};
    }

    // Waits for the report of every record produced: the first failure, if any.
    Result<void> finish() {
      if (produced_ == 0) return {};  // (after close() the producer may be gone)
      return group_.wait(*state_.producer_);
    }

    std::size_t produced() const noexcept { return produced_; }

   private:
    State& state_;
    std::shared_lock<std::shared_mutex> life_;
    DeliveryGroup group_;
    std::size_t produced_ = 0;
  };

  // Produces one record and waits for its delivery report.
  Result<void> produce_one(OutgoingRecord& out) {
    Publication publication(*this);
    if (auto added = publication.add(out); !added) return added;
    return publication.finish();
  }

  // ---- topics ----

  Result<void> ensure_topic(std::string_view topic, bool retry_topic = false) {
    {
      std::lock_guard lock(topics_mutex_);
      if (known_topics_.contains(topic)) return {};
    }
    std::shared_lock life(lifetime_);
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    auto exists = topic_exists(topic);
    if (!exists) return unexpected(exists.error());
    if (!*exists) {
      if (!options_.create_topics) {
        return unexpected(Errc::not_found, "the Kafka topic " + std::string(topic) +
                                               " does not exist (create_topics is off: create it first)");
      }
      if (auto created = create_topic(topic, retry_topic); !created) return created;
    }
    std::lock_guard lock(topics_mutex_);
    known_topics_.emplace(topic);
    return {};
  }

  Result<bool> topic_exists(std::string_view topic) {
    std::string error;
    std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(producer_.get(), std::string(topic), nullptr, error));
    if (!handle) return unexpected(Errc::invalid_argument, "bad Kafka topic name " + std::string(topic) + ": " + error);
    RdKafka::Metadata* raw = nullptr;
    // Asks for this topic only, so the broker's auto-creation is not triggered by a look-up.
    RdKafka::ErrorCode code =
        producer_->metadata(false, handle.get(), &raw, std::min(10000, to_int_ms(options_.publish_timeout)));
    std::unique_ptr<RdKafka::Metadata> metadata(raw);
    if (code != RdKafka::ERR_NO_ERROR) {
      return unexpected(errc_of(code), "could not read the metadata of Kafka topic " + std::string(topic) + " from " +
                                           options_.bootstrap_servers + ": " + RdKafka::err2str(code));
    }
    for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
      if (t->topic() == topic) return t->err() == RdKafka::ERR_NO_ERROR && !t->partitions()->empty();
    }
    return false;
  }

  Result<void> create_topic(std::string_view topic, bool retry_topic) {
    rd_kafka_t* rk = producer_->c_ptr();
    char error[512];
    const std::string name(topic);
    rd_kafka_NewTopic_t* new_topic =
        rd_kafka_NewTopic_new(name.c_str(), options_.partitions, options_.replication_factor, error, sizeof error);
    if (new_topic == nullptr) return unexpected(Errc::invalid_argument, "topic " + name + ": " + error);
    if (retry_topic) {
      // A parked record's timestamp is then the broker's append time, so its
      // due time does not depend on the producer's clock.
      rd_kafka_NewTopic_set_config(new_topic, "message.timestamp.type", "LogAppendTime");
    }
    rd_kafka_AdminOptions_t* admin = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(admin, 10000, error, sizeof error);
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &new_topic, 1, admin, queue);
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 20000);
    Result<void> outcome;
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR__TIMED_OUT;
    std::string why = "no answer from the cluster";
    if (event != nullptr) {
      code = rd_kafka_event_error(event);
      why = rd_kafka_event_error_string(event) ? rd_kafka_event_error_string(event) : "";
      if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event);
        std::size_t count = 0;
        const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
        if (count == 1) {
          code = rd_kafka_topic_result_error(topics[0]);
          const char* message = rd_kafka_topic_result_error_string(topics[0]);
          why = message ? message : rd_kafka_err2str(code);
        }
      }
      rd_kafka_event_destroy(event);
    }
    rd_kafka_queue_destroy(queue);
    rd_kafka_AdminOptions_destroy(admin);
    rd_kafka_NewTopic_destroy(new_topic);
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      const Errc errc =
          code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED || code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED
              ? Errc::not_found
              : errc_of(static_cast<RdKafka::ErrorCode>(code));
      return unexpected(errc, "the Kafka topic " + name + " is missing and could not be created: " + why);
    }
    // Wait until the metadata shows it, so a consumer subscribing next sees its partitions.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      auto exists = topic_exists(topic);
      if (exists && *exists) return {};
      std::this_thread::sleep_for(milliseconds(50));
    }
    return unexpected(Errc::timeout, "the Kafka topic " + name + " was created but its metadata did not appear");
  }

  std::string retry_topic(std::string_view topic, std::size_t tier) const {
    std::string out;
    const std::string& pattern = options_.retry_topic_pattern;
    for (std::size_t i = 0; i < pattern.size();) {
      auto replace = [&](std::string_view placeholder, const std::string& value) {
        if (pattern.compare(i, placeholder.size(), placeholder) != 0) return false;
        out += value;
        i += placeholder.size();
        return true;
      };
      if (replace("{topic}", std::string(topic)) || replace("{n}", std::to_string(tier + 1)) ||
          replace("{delay_ms}", std::to_string(options_.retry_tiers[tier].count()))) {
        continue;
      }
      out += pattern[i++];
    }
    return out;
  }

  // The tier for a delay: the smallest one at least as long.
  Result<std::size_t> tier_for(std::string_view topic, milliseconds delay) const {
    if (options_.retry_tiers.empty()) {
      return unexpected(Errc::unsupported, "a delay on Kafka topic " + std::string(topic) +
                                               " needs retry tiers (kafka://...?retry_tiers=5s,30s,5m); "
                                               "nothing was published");
    }
    for (std::size_t i = 0; i < options_.retry_tiers.size(); ++i) {
      if (options_.retry_tiers[i] >= delay) return i;
    }
    return unexpected(Errc::invalid_argument, "a delay of " + std::to_string(delay.count()) +
                                                  " ms is longer than the largest retry tier (" +
                                                  std::to_string(options_.retry_tiers.back().count()) + " ms)");
  }

  // ---- publish ----

  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options,
                       std::optional<std::int64_t> attempts_override) {
    if (queue.empty()) return unexpected(Errc::invalid_argument, "publish needs a topic name");
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    const std::string topic = record::topic_for_queue(queue);
    std::string parked_topic;
    OutgoingRecord out;
    fill_record(out, topic, body, options, attempts_override);
    if (options.delay.count() > 0) {
      auto tier = tier_for(topic, options.delay);
      if (!tier) return unexpected(tier.error());
      parked_topic = retry_topic(topic, *tier);
      out.topic = parked_topic;
      add_header(out.headers.get(), record::kDelayHeader, std::to_string(options.delay.count()));
      add_header(out.headers.get(), record::kOriginalTopicHeader, topic);
      out.timestamp = epoch_ms();  // the parking time: due = timestamp + tier delay
      if (auto ensured = ensure_topic(topic); !ensured) return ensured;
      if (auto ensured = ensure_topic(parked_topic, true); !ensured) return ensured;
    } else {
      if (auto ensured = ensure_topic(topic); !ensured) return ensured;
    }
    return produce_one(out);
  }

  Result<void> publish_batch(std::span<const OutgoingMessage> messages) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    std::size_t published = 0;  // confirmed, for the error message
    std::optional<Publication> publication;
    // The records of publication are confirmed (or the first failure).
    auto confirm = [&]() -> Result<void> {
      if (!publication) return {};
      auto reported = publication->finish();
      if (reported) published += publication->produced();
      publication.reset();
      return reported;
    };
    auto failed = [&](const ErrorInfo& error) -> Result<void> {
      const std::size_t before = published + (publication ? publication->produced() : 0);
      (void)confirm();
      return unexpected(error.code(), error.message() + " (" + std::to_string(before) +
                                          " earlier records of the batch were produced)");
    };
    // Records are built a chunk at a time, then produced together: the
    // broker thread starts sending the first chunk while the next is built,
    // and is woken once per chunk rather than once per record.
    constexpr std::size_t kChunk = 64;
    std::vector<OutgoingRecord> built;
    built.reserve(std::min(messages.size(), kChunk));
    auto produce_built = [&]() -> Result<void> {
      if (built.empty()) return {};
      if (!publication) publication.emplace(*this);
      for (OutgoingRecord& out : built) {
        if (auto added = publication->add(out); !added) {
          built.clear();
          return failed(added.error());
        }
      }
      built.clear();
      return {};
    };
    std::string topic;  // the topic of previous_queue (empty before the first); the built records keep views of it
    std::string_view previous_queue;
    for (const OutgoingMessage& message : messages) {
      if (message.queue.empty()) {
        (void)produce_built();
        return failed(ErrorInfo(Errc::invalid_argument, "publish needs a topic name"));
      }
      if (message.options.delay.count() > 0) {
        // Parked records go one by one (a retry topic per tier), after the
        // records before them are confirmed.
        if (auto sent = produce_built(); !sent) return sent;
        if (auto sent = confirm(); !sent) return sent;
        if (auto sent = publish(message.queue, message.body, message.options, std::nullopt); !sent) {
          return failed(sent.error());
        }
        ++published;
        continue;
      }
      if (topic.empty() || message.queue != previous_queue) {
        if (auto sent = produce_built(); !sent) return sent;
        topic = record::topic_for_queue(message.queue);
        if (auto ensured = ensure_topic(topic); !ensured) return failed(ensured.error());
        previous_queue = message.queue;
      }
      fill_record(built.emplace_back(), topic, message.body, message.options, std::nullopt);
      if (built.size() == kChunk) {
        if (auto sent = produce_built(); !sent) return sent;
      }
    }
    if (auto sent = produce_built(); !sent) return sent;
    return confirm();
  }

  // ---- consumer ----

  class Rebalance final : public RdKafka::RebalanceCb {
   public:
    explicit Rebalance(State& state) : state_(state) {}
    void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                      std::vector<RdKafka::TopicPartition*>& partitions) override {
      if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
        state_.on_assigned(partitions);
        consumer->assign(partitions);
      } else {
        state_.on_revoked(partitions);
        consumer->unassign();
      }
    }

   private:
    State& state_;
  };

  Result<void> start_consumer() {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    const int session = to_int_ms(options_.session_timeout);
    std::map<std::string, std::string> props = {
        {"bootstrap.servers", options_.bootstrap_servers},
        {"group.id", options_.group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"},
        {"session.timeout.ms", std::to_string(session)},
        {"heartbeat.interval.ms", std::to_string(std::max(100, session / 3))},
        {"enable.partition.eof", "false"},
        // A topic created while subscribed is noticed within a second.
        {"topic.metadata.refresh.interval.ms", "1000"},
    };
    for (const auto& [k, v] : options_.client_properties) props[k] = v;
    for (const auto& [k, v] : options_.consumer_properties) props[k] = v;
    if (auto set = apply(*conf, props, "consumer"); !set) return set;
    std::string error;
    if (conf->set("rebalance_cb", &rebalance_, error) != RdKafka::Conf::CONF_OK ||
        conf->set("event_cb", &log_events_, error) != RdKafka::Conf::CONF_OK) {
      return unexpected(Errc::internal, "librdkafka refused the consumer's callbacks: " + error);
    }
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), error));
    if (!consumer_) return unexpected(Errc::invalid_argument, "could not create the Kafka consumer: " + error);
    consumer_queue_ = rd_kafka_queue_get_consumer(consumer_->c_ptr());
    committer_ = std::thread([this] { commit_loop(); });
    return {};
  }

  // Adds queue (and its retry topics) to the subscription. Called with consumer_mutex_ held.
  Result<void> subscribe(std::string_view queue) {
    if (subscribed_queues_.contains(queue)) return {};
    const std::string topic = record::topic_for_queue(queue);
    if (auto ensured = ensure_topic(topic); !ensured) return ensured;
    std::vector<std::string> added{topic};
    {
      std::lock_guard lock(state_mutex_);
      queue_names_[topic] = std::string(queue);
    }
    for (std::size_t tier = 0; tier < options_.retry_tiers.size(); ++tier) {
      std::string retry = retry_topic(topic, tier);
      if (auto ensured = ensure_topic(retry, true); !ensured) return ensured;
      std::lock_guard lock(state_mutex_);
      retry_topics_[retry] = {topic, options_.retry_tiers[tier]};
      added.push_back(std::move(retry));
    }
    subscribed_queues_.emplace(queue);
    subscription_.insert(subscription_.end(), added.begin(), added.end());
    RdKafka::ErrorCode code = consumer_->subscribe(subscription_);
    if (code != RdKafka::ERR_NO_ERROR) {
      subscribed_queues_.erase(std::string(queue));
      subscription_.resize(subscription_.size() - added.size());
      return unexpected(errc_of(code), "could not subscribe to Kafka topic " + topic + ": " + RdKafka::err2str(code));
    }
    return {};
  }

  void on_assigned(const std::vector<RdKafka::TopicPartition*>& partitions) {
    std::lock_guard lock(state_mutex_);
    for (const RdKafka::TopicPartition* p : partitions) {
      Track& track = tracks_[{p->topic(), p->partition()}];
      by_generation_.erase(track.generation);
      track = Track{};
      track.generation = ++generation_;
      track.topic = p->topic();
      track.partition = p->partition();
      by_generation_[track.generation] = &track;
    }
  }

  // Stops handing out records of the revoked partitions, gives their handlers
  // a moment to finish, and commits only what is done.
  void on_revoked(const std::vector<RdKafka::TopicPartition*>& partitions) {
    std::set<PartitionKey> revoked;
    for (const RdKafka::TopicPartition* p : partitions) revoked.emplace(p->topic(), p->partition());
    std::unique_lock lock(state_mutex_);
    // Records fetched but not handed out are dropped: not done, so the commit
    // stops before them and the next owner reads them again.
    std::map<PartitionKey, std::size_t> dropped;
    for (auto& [queue, records] : ready_) {
      records.erase_if([&](const Delivery& d) {
        auto parts = parse_token(d);
        auto track = parts ? by_generation_.find(parts->generation) : by_generation_.end();
        if (track == by_generation_.end()) return true;  // of an earlier assignment
        PartitionKey key{track->second->topic, track->second->partition};
        if (!revoked.contains(key)) return false;
        ++dropped[key];
        return true;
      });
    }
    for (const PartitionKey& key : revoked) {
      auto parked = parked_.find(key);
      if (parked != parked_.end()) dropped[key] += parked->second.size();
      parked_.erase(key);
    }
    paused_.clear();
    auto outstanding = [&] {
      std::size_t count = 0;
      for (const PartitionKey& key : revoked) {
        auto found = tracks_.find(key);
        if (found != tracks_.end()) count += found->second.progress.outstanding() - dropped[key];
      }
      return count;
    };
    if (!closed_.load()) {
      settled_.wait_for(lock, std::min(options_.session_timeout / 4, milliseconds(2000)),
                        [&] { return outstanding() == 0; });
    }
    std::vector<RdKafka::TopicPartition*> commits;
    for (const PartitionKey& key : revoked) {
      auto found = tracks_.find(key);
      if (found == tracks_.end()) continue;
      if (auto offset = found->second.progress.take_commit()) {
        commits.push_back(RdKafka::TopicPartition::create(key.first, key.second, *offset));
      }
      by_generation_.erase(found->second.generation);
      tracks_.erase(found);
    }
    lock.unlock();
    if (!commits.empty()) consumer_->commitSync(commits);
    RdKafka::TopicPartition::destroy(commits);
  }

  void commit_loop() {
    std::unique_lock lock(state_mutex_);
    while (!stop_committer_) {
      commit_wake_.wait_for(lock, options_.commit_interval, [this] { return stop_committer_; });
      if (stop_committer_) break;
      commit_done(lock);
    }
  }

  // Commits every partition's finished prefix. Called with state_mutex_ held (lock).
  void commit_done(std::unique_lock<std::mutex>& lock) {
    std::vector<RdKafka::TopicPartition*> commits;
    std::vector<std::uint64_t> generations;
    for (auto& [key, track] : tracks_) {
      if (auto offset = track.progress.take_commit()) {
        commits.push_back(RdKafka::TopicPartition::create(key.first, key.second, *offset));
        generations.push_back(track.generation);
      }
    }
    if (commits.empty()) return;
    lock.unlock();
    RdKafka::ErrorCode code = consumer_->commitSync(commits);
    lock.lock();
    if (code != RdKafka::ERR_NO_ERROR) {
      // Offer them again next time, unless the partition moved on or away.
      for (std::size_t i = 0; i < commits.size(); ++i) {
        auto found = tracks_.find({commits[i]->topic(), commits[i]->partition()});
        if (found != tracks_.end() && found->second.generation == generations[i]) {
          found->second.progress.restore_commit(commits[i]->offset());
        }
      }
    }
    RdKafka::TopicPartition::destroy(commits);
  }

  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max, milliseconds wait) {
    if (queue.empty()) return unexpected(Errc::invalid_argument, "receive needs a topic name");
    if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
    const auto deadline = Clock::now() + wait;
    for (;;) {
      if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
      {
        std::lock_guard lock(state_mutex_);
        auto found = ready_.find(queue);
        if (found != ready_.end() && !found->second.empty()) {
          std::vector<Delivery> out;
          found->second.take(max, out);
          return out;
        }
      }
      const auto now = Clock::now();
      if (now >= deadline) return std::vector<Delivery>{};
      std::unique_lock consumer_lock(consumer_mutex_);
      if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
      {
        std::lock_guard lock(state_mutex_);
        auto found = ready_.find(queue);
        if (found != ready_.end() && !found->second.empty()) continue;
      }
      if (!consumer_) {
        std::shared_lock life(lifetime_);
        if (auto started = start_consumer(); !started) return unexpected(started.error());
      }
      if (auto subscribed = subscribe(queue); !subscribed) return unexpected(subscribed.error());
      reinject_due();
      auto slice = std::min(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()), milliseconds(100));
      if (auto polled = poll(std::max(slice, milliseconds(0))); !polled) return unexpected(polled.error());
    }
  }

  // Polls up to one batch of records. Called with consumer_mutex_ held.
  // Waits up to first_wait for the first one with rd_kafka_consumer_poll(),
  // which also serves the rebalance callbacks, then takes what is already
  // fetched in one rd_kafka_consume_batch_queue() call without waiting (it
  // would wait for a full batch): one queue lock for the batch and no C++
  // wrapper per record. Records of a partition that was revoked meanwhile
  // find no Track and are dropped; librdkafka itself drops from the batch the
  // records of an earlier assignment of a partition assigned again.
  Result<void> poll(milliseconds first_wait) {
    constexpr std::size_t kBatch = 500;
    rd_kafka_t* rk = consumer_->c_ptr();
    rd_kafka_message_t* first = rd_kafka_consumer_poll(rk, to_int_ms(first_wait));
    if (first == nullptr) return {};  // nothing within first_wait
    polled_.resize(kBatch);
    polled_[0] = first;
    const ssize_t more = consumer_queue_ != nullptr
                             ? rd_kafka_consume_batch_queue(consumer_queue_, 0, polled_.data() + 1, kBatch - 1)
                             : 0;
    polled_.resize(1 + static_cast<std::size_t>(std::max<ssize_t>(more, 0)));
    Result<void> outcome;
    {
      std::lock_guard lock(state_mutex_);
      Track* track = nullptr;
      for (rd_kafka_message_t* message : polled_) {
        if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          track = take(message, track);
        } else if (outcome) {
          outcome = consumer_error(message);
        }
      }
    }
    for (rd_kafka_message_t* message : polled_) rd_kafka_message_destroy(message);
    polled_.clear();
    return outcome;
  }

  // What a consumer error record means for receive(): authorization and
  // fatal errors fail it; anything else (a connection loss, a broker
  // restart) librdkafka recovers from by itself.
  Result<void> consumer_error(const rd_kafka_message_t* message) {
    const rd_kafka_resp_err_t code = message->err;
    if (code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED || code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
        code == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
      return unexpected(
          Errc::auth, "Kafka refused the consumer (group " + options_.group + "): " + rd_kafka_message_errstr(message));
    }
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
      std::string reason;
      consumer_->fatal_error(reason);
      return unexpected(Errc::broker, "the Kafka consumer failed: " + reason);
    }
    return {};
  }

  // Files one polled record. Called with consumer_mutex_ and state_mutex_
  // held; last is the previous record's partition (most are the same).
  // Reads the record through the C API, so nothing is copied but what is kept.
  Track* take(const rd_kafka_message_t* raw, Track* last) {
    const std::string_view topic = rd_kafka_topic_name(raw->rkt);
    const std::int32_t partition = raw->partition;
    const std::int64_t offset = raw->offset;
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(raw, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) headers = nullptr;
    auto each_header = [headers](auto&& visit) {
      if (headers == nullptr) return;
      const char* name = nullptr;
      const void* value = nullptr;
      std::size_t size = 0;
      for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        visit(std::string_view(name),
              value ? std::string_view(static_cast<const char*>(value), size) : std::string_view());
      }
    };
    const char* key = static_cast<const char*>(raw->key);
    const std::string_view value(static_cast<const char*>(raw->payload), raw->len);

    Track* track = last;
    if (track == nullptr || track->partition != partition || track->topic != topic) {
      auto found = tracks_.find(std::pair<std::string_view, std::int32_t>(topic, partition));
      if (found == tracks_.end()) return nullptr;  // not assigned (any more): it will be fetched again
      track = &found->second;
    }
    track->progress.add(offset);

    if (!retry_topics_.empty()) {
      if (auto retry = retry_topics_.find(topic); retry != retry_topics_.end()) {
        park(raw, retry->second, value, key, raw->key_len, each_header);
        return track;
      }
    }

    if (track->ready == nullptr) {
      auto name = queue_names_.find(topic);
      auto& queue = ready_[name != queue_names_.end() ? name->second : std::string(topic)];
      track->ready = &queue;
      track->queue = &ready_.find(name != queue_names_.end() ? name->second : std::string(topic))->first;
    }
    Delivery& delivery = track->ready->emplace_back();  // filled in place
    delivery.queue = *track->queue;
    delivery.body.assign(value);
    // A repeated contract header counts by its first value, as the Go and
    // Python SDKs read it.
    std::optional<std::string_view> version;
    bool attempts_seen = false;
    each_header([&](std::string_view header, std::string_view text) {
      if (header == record::kAttemptsHeader) {
        if (!std::exchange(attempts_seen, true)) delivery.native_attempts = record::parse_attempts(text);
      } else if (header == record::kSchemaVersionHeader) {
        if (!version) version = text;
      } else if (!record::is_reserved_header(header)) {
        delivery.headers.insert_or_assign(std::string(header), std::string(text));
      }
    });
    if (delivery.native_attempts) delivery.attempts_merge = AttemptsMerge::authoritative;
    delivery.gate_rejection = record::schema_version_gate(version);
    delivery.token = make_token(track->generation, offset, key, raw->key_len);
    return track;
  }

  // Holds a retry-topic record until it is due. Called with both mutexes held.
  template <class EachHeader>
  void park(const rd_kafka_message_t* raw, const std::pair<std::string, milliseconds>& retry, std::string_view value,
            const char* key, std::size_t key_size, EachHeader&& each_header) {
    const PartitionKey where{rd_kafka_topic_name(raw->rkt), raw->partition};
    ParkedRecord parked;
    parked.offset = raw->offset;
    parked.value.assign(value);
    if (key) parked.key.emplace(key, key_size);
    parked.original_topic = retry.first;
    each_header([&](std::string_view header, std::string_view text) {
      if (header == record::kOriginalTopicHeader) {
        if (!text.empty()) parked.original_topic.assign(text);
      } else if (header != record::kDelayHeader) {
        parked.headers.emplace_back(std::string(header), std::string(text));
      }
    });
    // Due at the record's timestamp + the tier delay, held within [now, now + tier].
    const std::int64_t now = epoch_ms();
    const std::int64_t tier = retry.second.count();
    rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    const std::int64_t stamp = rd_kafka_message_timestamp(raw, &type);
    const std::int64_t due =
        type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? now + tier : std::clamp(stamp + tier, now, now + tier);
    parked.due = Clock::now() + milliseconds(due - now);
    auto& queue = parked_[where];
    queue.push_back(std::move(parked));
    if (queue.size() == 1 && queue.front().due > Clock::now() && !paused_.contains(where)) {
      std::vector<RdKafka::TopicPartition*> pause{RdKafka::TopicPartition::create(where.first, where.second)};
      consumer_->pause(pause);
      RdKafka::TopicPartition::destroy(pause);
      paused_.insert(where);
    }
  }

  // Re-injects the parked records that are due, oldest first per partition.
  // Called with consumer_mutex_ held.
  void reinject_due() {
    std::map<PartitionKey, std::deque<ParkedRecord>> due;
    {
      std::lock_guard lock(state_mutex_);
      const auto now = Clock::now();
      for (auto& [key, records] : parked_) {
        while (!records.empty() && records.front().due <= now) {
          due[key].push_back(std::move(records.front()));
          records.pop_front();
        }
      }
    }
    for (auto& [key, records] : due) {
      while (!records.empty()) {
        ParkedRecord& parked = records.front();
        // The same bytes, key and headers (bq-attempts as parked: no new
        // attempt), minus the retry headers; the timestamp back to created_at.
        OutgoingRecord out;
        out.topic = parked.original_topic;  // NUL-terminated: a std::string
        out.value = parked.value;
        out.has_key = parked.key.has_value();
        if (parked.key) out.key = *parked.key;
        for (const auto& [name, value] : parked.headers) add_header(out.headers.get(), name, value);
        if (auto envelope = Envelope::decode(parked.value)) out.timestamp = envelope->created_at().value_or(0);
        auto sent = produce_one(out);
        std::lock_guard lock(state_mutex_);
        if (!sent) {
          // Not confirmed: it and the records after it wait another second.
          parked.due = Clock::now() + std::chrono::seconds(1);
          auto& waiting = parked_[key];
          waiting.insert(waiting.begin(), std::make_move_iterator(records.begin()),
                         std::make_move_iterator(records.end()));
          break;
        }
        auto track = tracks_.find(key);
        if (track != tracks_.end()) track->second.progress.done(parked.offset);
        records.pop_front();
      }
    }
    // A partition waits (paused) while its oldest parked record is not due.
    std::lock_guard lock(state_mutex_);
    std::vector<RdKafka::TopicPartition*> resume;
    std::vector<RdKafka::TopicPartition*> pause;
    for (auto it = parked_.begin(); it != parked_.end();) {
      const PartitionKey& key = it->first;
      const bool waiting = !it->second.empty();
      if (!waiting && paused_.erase(key) > 0) resume.push_back(RdKafka::TopicPartition::create(key.first, key.second));
      if (waiting && paused_.insert(key).second) {
        pause.push_back(RdKafka::TopicPartition::create(key.first, key.second));
      }
      it = waiting ? std::next(it) : parked_.erase(it);
    }
    if (!resume.empty()) consumer_->resume(resume);
    if (!pause.empty()) consumer_->pause(pause);
    RdKafka::TopicPartition::destroy(resume);
    RdKafka::TopicPartition::destroy(pause);
  }

  // ---- settling ----

  // Marks the delivery done. Errc::not_found when it is no longer held.
  Result<void> settle(const Delivery& delivery) {
    auto parts = parse_token(delivery);
    if (!parts) return unexpected(Errc::invalid_argument, "not a Kafka delivery token");
    std::lock_guard lock(state_mutex_);
    auto track = by_generation_.find(parts->generation);
    if (track == by_generation_.end() || !track->second->progress.done(parts->offset)) {
      return unexpected(Errc::not_found, "the record at offset " + std::to_string(parts->offset) + " of " +
                                             delivery.queue +
                                             " is no longer held (settled already, or its partition was "
                                             "reassigned and it will be delivered again)");
    }
    settled_.notify_all();
    return {};
  }

  Result<void> ack(const Delivery& delivery) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    return settle(delivery);
  }

  Result<void> release(const Delivery& delivery, milliseconds delay) {
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    auto parts = parse_token(delivery);
    if (!parts) return unexpected(Errc::invalid_argument, "not a Kafka delivery token");
    {
      std::lock_guard lock(state_mutex_);
      auto track = by_generation_.find(parts->generation);
      if (track == by_generation_.end() || !track->second->progress.pending(parts->offset)) {
        return unexpected(Errc::not_found, "the record at offset " + std::to_string(parts->offset) + " of " +
                                               delivery.queue + " is no longer held");
      }
    }
    // The same bytes again, one attempt further (the header is authoritative).
    std::int64_t attempts = delivery.native_attempts.value_or(record::project(delivery.body).attempts.value_or(0));
    PublishOptions options;
    options.headers = delivery.headers;
    options.delay = delay;
    if (parts->has_key) options.ordering_key = std::string(parts->key);
    if (auto sent = publish(delivery.queue, delivery.body, options, attempts + 1); !sent) {
      return unexpected(sent.error().code(), sent.error().message() + "; the record stays uncommitted");
    }
    if (auto settled = settle(delivery); !settled) {
      // Its partition moved to another consumer meanwhile: the copy is out,
      // the original comes back there once more (at least once).
      return {};
    }
    return {};
  }

  // ---- stats ----

  // The group's lag on topic: records after the committed offsets (the
  // earliest ones where the group has none). A missing topic has none.
  Result<std::int64_t> lag(const std::string& topic) {
    auto exists = topic_exists(topic);
    if (!exists) return unexpected(exists.error());
    if (!*exists) return std::int64_t{0};
    std::string error;
    std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(producer_.get(), topic, nullptr, error));
    RdKafka::Metadata* raw = nullptr;
    const int timeout = std::min(10000, to_int_ms(options_.publish_timeout));
    if (auto code = producer_->metadata(false, handle.get(), &raw, timeout); code != RdKafka::ERR_NO_ERROR) {
      return unexpected(errc_of(code), "could not read the partitions of Kafka topic " + topic);
    }
    std::unique_ptr<RdKafka::Metadata> metadata(raw);
    std::vector<RdKafka::TopicPartition*> partitions;
    for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
      if (t->topic() != topic) continue;
      for (const RdKafka::PartitionMetadata* p : *t->partitions()) {
        partitions.push_back(RdKafka::TopicPartition::create(topic, p->id()));
      }
    }
    RdKafka::ErrorCode code = RdKafka::ERR_NO_ERROR;
    {
      std::lock_guard consumer_lock(consumer_mutex_);
      if (consumer_) {
        code = consumer_->committed(partitions, timeout);
      } else {
        // A consumer of the group that never subscribes: it reads the
        // group's offsets without joining it.
        std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
        std::map<std::string, std::string> props = {{"bootstrap.servers", options_.bootstrap_servers},
                                                    {"group.id", options_.group}};
        for (const auto& [k, v] : options_.client_properties) props[k] = v;
        for (const auto& [k, v] : options_.consumer_properties) props[k] = v;
        if (auto set = apply(*conf, props, "consumer"); !set) return unexpected(set.error());
        if (conf->set("event_cb", &log_events_, error) != RdKafka::Conf::CONF_OK) {
          return unexpected(Errc::internal, "librdkafka refused the consumer's callbacks: " + error);
        }
        std::unique_ptr<RdKafka::KafkaConsumer> reader(RdKafka::KafkaConsumer::create(conf.get(), error));
        if (!reader) return unexpected(Errc::invalid_argument, "could not create a Kafka consumer: " + error);
        code = reader->committed(partitions, timeout);
        reader->close();
      }
    }
    std::int64_t total = 0;
    for (RdKafka::TopicPartition* p : partitions) {
      std::int64_t low = 0;
      std::int64_t high = 0;
      if (code == RdKafka::ERR_NO_ERROR) {
        code = producer_->query_watermark_offsets(topic, p->partition(), &low, &high, timeout);
      }
      if (code == RdKafka::ERR_NO_ERROR) total += high - std::max(low, p->offset() >= 0 ? p->offset() : low);
    }
    RdKafka::TopicPartition::destroy(partitions);
    if (code != RdKafka::ERR_NO_ERROR) {
      return unexpected(errc_of(code), "could not read the offsets of Kafka topic " + topic + " for group " +
                                           options_.group + ": " + RdKafka::err2str(code));
    }
    return total;
  }

  Result<QueueStats> stats(std::string_view queue) {
    if (queue.empty()) return unexpected(Errc::invalid_argument, "stats needs a topic name");
    if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
    std::shared_lock life(lifetime_);
    const std::string topic = record::topic_for_queue(queue);
    auto waiting = lag(topic);
    if (!waiting) return unexpected(waiting.error());
    QueueStats stats;
    stats.delayed = 0;
    for (std::size_t tier = 0; tier < options_.retry_tiers.size(); ++tier) {
      auto parked = lag(retry_topic(topic, tier));
      if (!parked) return unexpected(parked.error());
      stats.delayed += *parked;
    }
    // Received here and not settled: polled minus still buffered.
    std::int64_t reserved = 0;
    {
      std::lock_guard lock(state_mutex_);
      for (auto it = tracks_.lower_bound(PartitionKey{topic, 0}); it != tracks_.end() && it->first.first == topic;
           ++it) {
        reserved += static_cast<std::int64_t>(it->second.progress.outstanding());
      }
      if (auto buffered = ready_.find(queue); buffered != ready_.end()) {
        reserved -= static_cast<std::int64_t>(buffered->second.size());
      }
    }
    stats.reserved = std::max<std::int64_t>(reserved, 0);
    stats.ready = std::max<std::int64_t>(*waiting - stats.reserved, 0);
    return stats;
  }

  // ---- close ----

  void close(milliseconds deadline) {
    if (closed_.exchange(true)) return;
    const auto until = Clock::now() + deadline;
    {
      std::lock_guard lock(state_mutex_);
      stop_committer_ = true;
      commit_wake_.notify_all();
    }
    if (committer_.joinable()) committer_.join();
    {
      std::lock_guard consumer_lock(consumer_mutex_);
      if (consumer_) {
        {
          std::unique_lock lock(state_mutex_);
          commit_done(lock);
          for (auto& [queue, records] : ready_) records.clear();  // the nodes stay: tracks point at them
        }
        consumer_->close();  // leaves the group; the revoke callback commits what is done
        rd_kafka_queue_destroy(consumer_queue_);
        consumer_queue_ = nullptr;
        consumer_.reset();
      }
    }
    if (producer_) {
      auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
      producer_->flush(std::max(0, to_int_ms(left)));
      producer_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
      producer_->poll(0);  // serves the purged records' reports
    }
    std::unique_lock life(lifetime_);  // every Publication has had its reports
    if (producer_) producer_->poll(0);
    producer_.reset();
  }

  std::atomic<bool> closed_{false};

 private:
  DeliveryReports delivery_reports_;
  LogEvents log_events_{options_.log};
  Rebalance rebalance_{*this};

  std::shared_mutex lifetime_;  // shared while a client is in use, unique to destroy them
  std::unique_ptr<RdKafka::Producer> producer_;

  std::mutex topics_mutex_;
  std::set<std::string, std::less<>> known_topics_;

  std::mutex consumer_mutex_;  // serialises consumer calls (poll, subscribe)
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  rd_kafka_queue_t* consumer_queue_ = nullptr;  // consumer_'s queue, for batch polls
  std::vector<rd_kafka_message_t*> polled_;     // poll()'s batch (consumer_mutex_)
  std::set<std::string, std::less<>> subscribed_queues_;
  std::vector<std::string> subscription_;

  std::mutex state_mutex_;  // guards what follows
  std::condition_variable settled_;
  std::condition_variable commit_wake_;
  bool stop_committer_ = false;
  std::thread committer_;
  std::uint64_t generation_ = 0;
  std::map<PartitionKey, Track, PartitionOrder> tracks_;
  std::unordered_map<std::uint64_t, Track*> by_generation_;  // into tracks_
  std::map<std::string, ReadyRecords, std::less<>> ready_;
  std::map<std::string, std::string, std::less<>> queue_names_;                            // topic -> queue
  std::map<std::string, std::pair<std::string, milliseconds>, std::less<>> retry_topics_;  // retry topic -> queue, tier
  std::map<PartitionKey, std::deque<ParkedRecord>> parked_;
  std::set<PartitionKey> paused_;
};

// ---- KafkaTransport ----

KafkaTransport::KafkaTransport(std::unique_ptr<State> state) : state_(std::move(state)) {}

KafkaTransport::~KafkaTransport() = default;

Result<std::unique_ptr<KafkaTransport>> KafkaTransport::open(Options options) {
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
  if (options.session_timeout.count() <= 0 || options.commit_interval.count() <= 0 ||
      options.publish_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "session_timeout, commit_interval and publish_timeout must be positive");
  }
  auto state = std::make_unique<State>(std::move(options));
  if (auto started = state->start_producer(); !started) return unexpected(started.error());
  return std::unique_ptr<KafkaTransport>(new KafkaTransport(std::move(state)));
}

const KafkaTransport::Options& KafkaTransport::options() const noexcept { return state_->options_; }

std::string KafkaTransport::retry_topic(std::string_view topic, std::size_t tier) const {
  return state_->retry_topic(kafka::detail::topic_for_queue(topic), tier);
}

Capabilities KafkaTransport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = !state_->options_.retry_tiers.empty();
  caps.native_release = false;  // a release republishes a copy
  caps.delivery_count = true;   // the bq-attempts header
  caps.redelivers_unsettled = true;
  caps.batch_publish = true;
  caps.ordered = true;  // per partition
  caps.max_delay = state_->options_.retry_tiers.empty() ? milliseconds(0) : state_->options_.retry_tiers.back();
  return caps;
}

Result<void> KafkaTransport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  return state_->publish(queue, body, options, std::nullopt);
}

Result<void> KafkaTransport::publish_batch(std::span<const OutgoingMessage> messages) {
  return state_->publish_batch(messages);
}

Result<std::vector<Delivery>> KafkaTransport::receive(std::string_view queue, std::size_t max,
                                                      std::chrono::milliseconds wait) {
  return state_->receive(queue, max, wait);
}

Result<void> KafkaTransport::ack(const Delivery& delivery) { return state_->ack(delivery); }

Result<void> KafkaTransport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  return state_->release(delivery, delay);
}

void KafkaTransport::close(std::chrono::milliseconds deadline) { state_->close(deadline); }

Result<QueueStats> KafkaTransport::stats(std::string_view queue) { return state_->stats(queue); }

Result<void> KafkaTransport::ensure_topic(std::string_view topic) {
  if (topic.empty()) return unexpected(Errc::invalid_argument, "ensure_topic needs a topic name");
  return state_->ensure_topic(kafka::detail::topic_for_queue(topic));
}

namespace kafka {

void register_transport() { babelqueue::register_transport("kafka", url_factory<KafkaTransport>()); }

}  // namespace kafka
}  // namespace babelqueue
