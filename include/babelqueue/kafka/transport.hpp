// SPDX-License-Identifier: Apache-2.0
// Transport: Apache Kafka through librdkafka (library babelqueue::kafka).
//
// URL: kafka://HOST:PORT[,HOST:PORT...][?key=value&...]
//   group=NAME                 consumer group (default "babelqueue", as the Python SDK)
//   partitions=N               partitions of a topic this transport creates (default 1)
//   replication_factor=N       replication factor of a topic it creates (default 1)
//   create_topics=true|false   create missing queue, retry and DLQ topics (default true)
//   retry_tiers=5s,30s,5m      retry tiers (durations, see below); none by default: a
//                              delayed publish or release is then refused
//   retry_topic=PATTERN        retry topic name: {topic}, {n} (1-based tier) and {delay_ms};
//                              default "{topic}.retry.{n}" (the Python and Node SDKs' names)
//   session_timeout=DURATION   consumer group session timeout (default 10s; up to 1h)
//   commit_interval=DURATION   how often finished offsets are committed (default 100ms; up to 1h)
//   publish_timeout=DURATION   longest wait for a delivery report (default 30s; up to 24h)
//   connect_timeout=DURATION   how long open() waits for a broker to answer (default 10s; 0:
//                              open without contacting one, the first operation finds out)
//   request_timeout=DURATION   how long a request to a broker may go unanswered before its
//                              connection is given up and made again (default 30s; 10ms to 5m)
//   reconnect_min=DURATION     the first pause before reconnecting to a broker (default 100ms)
//   reconnect_max=DURATION     the longest pause, the pauses doubling up to it (default 10s)
//   tls=true                   TLS (security.protocol SSL, or SASL_SSL with a user), also on
//                              when rdkafka.security.protocol is SSL or SASL_SSL
//   tls_ca=PATH tls_cert=PATH tls_key=PATH tls_verify=true|false  (tls_options.hpp), as
//                              ssl.ca.location, ssl.certificate.location, ssl.key.location,
//                              enable.ssl.certificate.verification; rdkafka.* given wins
//   rdkafka.NAME=VALUE         any librdkafka property, for both clients (set last, so it
//                              wins): rdkafka.security.protocol=SASL_SSL, rdkafka.sasl.mechanisms=
//                              PLAIN, rdkafka.ssl.ca.location=/path/ca.pem, rdkafka.linger.ms=5 ...
//   producer.NAME / consumer.NAME=VALUE  a librdkafka property for one client only
// kafka://user:password@host:port sets sasl.username / sasl.password. Durations are 500ms, 5s,
// 2m, 1h or a bare number of seconds (duration.hpp). Unknown parameters are errors, so a
// misspelt one is never silently ignored (url_options.hpp).
//
// Semantics (docs/transports/kafka.md explains why they are safe):
//   - publish: record value = the body byte for byte, record timestamp = meta.created_at, the
//     six bq- headers projected from the envelope, out-of-band headers as extra record
//     headers, PublishOptions::ordering_key as the record key; acks=all and the idempotent
//     producer; it returns only after the broker's delivery report.
//   - receive: the consumer group's partitions of the queue's topic; process-then-commit: an
//     offset is committed only when that record and every earlier record of its partition
//     were settled (ack, or release after its copy was confirmed). Delivery::ordering_key is
//     the record key (empty for a record without one).
//   - release(delay 0) republishes the same bytes and key (so the same partition) to the same
//     topic with bq-attempts + 1, then settles the original; release(delay > 0) and
//     publish(delay > 0) park the record on the smallest retry tier covering the delay; the
//     consuming transport re-injects it into the queue's topic when due. Without retry tiers a
//     delay is Errc::unsupported.
//   - Delivery::native_attempts is the bq-attempts header (authoritative), absent when the
//     record has none; Delivery::gate_rejection is set when bq-schema-version is not "1".
//
// Thread-safety: all methods are thread-safe. One producer and (after the first receive) one
// consumer per transport; receive() calls are serialised on the consumer, settling is not.
#pragma once

#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

/// The Apache Kafka transport (library babelqueue::kafka).
namespace babelqueue::kafka {

namespace detail {
struct TransportAccess;
}

/// The Apache Kafka transport: kafka:// through librdkafka (this header's
/// opening comment gives the URL, the binding and the retry tiers).
class Transport final : public babelqueue::Transport {
 public:
  /// The clients and their behaviour; the URL parameters of the same names set them.
  struct Options {
    /// Comma-separated host:port list (librdkafka bootstrap.servers).
    std::string bootstrap_servers = "localhost:9092";
    std::string group = "babelqueue";  ///< the consumer group
    /// Topics this transport creates when missing (queue, retry and DLQ topics).
    bool create_topics = true;
    int partitions = 1;          ///< partitions of a topic it creates
    int replication_factor = 1;  ///< replication factor of a topic it creates
    /// Ascending retry tiers; empty: delayed publish and release are refused.
    std::vector<std::chrono::milliseconds> retry_tiers;
    /// The retry topics' names: {topic}, {n} (the 1-based tier) and {delay_ms}.
    std::string retry_topic_pattern = "{topic}.retry.{n}";
    std::chrono::milliseconds session_timeout{std::chrono::seconds(10)};  ///< the consumer group's session timeout
    std::chrono::milliseconds commit_interval{100};                       ///< how often finished offsets are committed
    /// Longest wait for a delivery report (message.timeout.ms); a record
    /// whose request is in flight then is reported when that request times
    /// out (request_timeout): see reconnect_max for the whole bound.
    std::chrono::milliseconds publish_timeout{std::chrono::seconds(30)};
    /// How long open() waits for a bootstrap server to answer; it fails sooner
    /// when librdkafka finds every one of them down (a refused connection).
    /// Zero: open() contacts no broker.
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
    /// How long a request to a broker may go unanswered before librdkafka
    /// gives its connection up and connects again (socket.timeout.ms,
    /// 10 ms to 5 min); a new connection that does not finish its setup
    /// within it (or connect_timeout, when that is shorter; at least 1 s) is
    /// given up too (socket.connection.setup.timeout.ms). This bounds how
    /// long a connection that went silent without closing (half-open) holds
    /// up receiving, and how long past publish_timeout a publish whose
    /// request was in flight may wait for its answer.
    std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
    /// The first pause before librdkafka connects to a broker again after a
    /// connection closed (reconnect.backoff.ms); it doubles up to
    /// reconnect_max (reconnect.backoff.max.ms), with librdkafka's jitter of
    /// -25 % to +50 %.
    std::chrono::milliseconds reconnect_min{100};
    /// The longest pause between two connects to a broker. A publish made
    /// while its broker's connection waits for the next try may be reported
    /// only after it: under network faults a publish stayed within
    /// publish_timeout + request_timeout + reconnect_max (docs/reliability.md).
    std::chrono::milliseconds reconnect_max{std::chrono::seconds(10)};
    /// librdkafka properties, applied after the SDK's defaults.
    std::map<std::string, std::string> client_properties;    ///< both clients
    std::map<std::string, std::string> producer_properties;  ///< the producer only
    std::map<std::string, std::string> consumer_properties;  ///< the consumer only
    /// Where librdkafka's own log lines and client errors (a broker down, a
    /// failed SASL handshake) go, instead of librdkafka's print to stderr.
    /// Called from librdkafka's threads: it must be thread-safe. While open()
    /// waits for a broker, they are held back: a failed open says why in its
    /// error instead, a successful one passes them on.
    LogSink log = stderr_log_sink();
  };

  /// Connects the producer and waits for a broker to answer (connect_timeout;
  /// the consumer joins its group on the first receive()). Errc::invalid_argument
  /// for bad options or a librdkafka property it refuses; Errc::connection,
  /// "cannot reach Kafka at ...", when no bootstrap server answered.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from a kafka:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// Produces every record, then waits for all delivery reports.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  /// For the consumer group: ready = the group's lag on the queue's topic minus
  /// reserved; reserved = received by this transport and not settled (other
  /// processes' are counted as ready); delayed = the lag on its retry topics.
  Result<QueueStats> stats(std::string_view queue) override;
  /// The records after the group's committed offsets, read by a consumer that
  /// never joins the group nor commits; records received by a consumer of
  /// the group and not committed yet are among them (Kafka cannot tell them
  /// apart). Partition by partition, each in offset order.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// "kafka", and the broker connections the consumer lost and made again,
  /// from librdkafka's statistics: they come once a second while receive()
  /// polls (statistics.interval.ms; consumer.statistics.interval.ms=0
  /// turns them off, and the count with them). The producer's are not counted.
  ConnectionStats connection_stats() const noexcept override;
  /// Commits what is done, leaves the group, closes both clients.
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  friend struct detail::TransportAccess;  ///< the tests' and benchmarks' view, not public API
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the kafka:// scheme with open_transport(). Call it once, from any
/// thread, before opening kafka:// URLs; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::kafka::Options.
using Options = Transport::Options;

}  // namespace babelqueue::kafka
