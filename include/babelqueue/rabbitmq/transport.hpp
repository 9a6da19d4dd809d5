// SPDX-License-Identifier: Apache-2.0
// Transport: the RabbitMQ (AMQP 0-9-1) binding over rabbitmq-c
// (library babelqueue::rabbitmq).
//
// URL: amqp://user:pass@host[:port]/vhost[?key=value&...]   (port 5672)
//      amqps://user:pass@host[:port]/vhost[?key=value&...]  (port 5671, TLS)
//   The vhost is percent-decoded ("%2F" is "/"); an empty path is "/".
//   Durations take the syntax of duration.hpp (500ms, 5s, 2m, or a bare
//   number of seconds); url_options.hpp says how every parameter is read.
//   heartbeat=DURATION          AMQP heartbeat in whole seconds, up to 65535s
//                               (default 30s; 0 turns it off)
//   connection_name=TEXT        shown by rabbitmqctl list_connections (default babelqueue-cpp)
//   connect_timeout=DURATION    TCP + TLS + AMQP handshake, 1ms to 1h (default 10s)
//   publish_timeout=DURATION    how long publish() waits for the broker's confirm,
//                               across reconnects, 1ms to 24h (default 30s)
//   confirm=true|false          publisher confirms (default true)
//   max_in_flight=N             unconfirmed messages on the wire, 1 to 1000000 (default 1024)
//   max_message_size=BYTES      the largest body a publish sends (default 134217728, the
//                               broker's default max_message_size); larger ones are refused
//   prefetch=N                  QoS per consumer, 0 to 65535; 0 (default) = 8 x the first receive's max, at least 128
//                               of the first receive() on that queue
//   queue_type=classic|quorum   quorum declares x-queue-type=quorum (default classic)
//   reconnect_min=DURATION      first pause before a reconnect, 1ms to 1h (default 100ms)
//   reconnect_max=DURATION      longest pause, 1ms to 1h (default 10s)
//   tls_ca=PATH tls_cert=PATH tls_key=PATH tls_server_name=NAME tls_verify=true|false
//                               (tls_options.hpp; amqps:// only, but tls_verify is
//                               accepted on amqp:// too). The older spellings cacert,
//                               cert, key and verify stay accepted.
// Unknown parameters are errors, so a misspelt one is never silently ignored.
//
// Binding (SPEC.md §5): default exchange, routing key = queue, durable queues
// declared with no arguments (as the Python and Go SDKs declare them),
// persistent messages; type = job, correlation_id = trace_id, message_id =
// meta.id, app_id = "babelqueue", content_type = application/json,
// content_encoding = utf-8; headers x-schema-version (int), x-source-lang,
// x-attempts (int) when the body is an envelope; out-of-band headers sit in
// the same table and the contract keys win collisions.
//
// Guarantees (docs/transports/rabbitmq.md explains how):
//   - publish() succeeds only once the broker confirmed the message
//     (publisher confirms, mandatory flag: an unroutable message is an
//     Errc::not_found error, a broker nack an Errc::broker error).
//   - receive() serves a basic.consume push consumer (one per queue, QoS
//     prefetch), never basic.get polling; ack is basic.ack, release is
//     basic.nack with requeue, a delayed release or publish goes through a
//     per-delay bucket queue (message TTL + dead-letter back to the queue).
//   - After a dropped connection the transport reconnects with
//     Options::reconnect_backoff (exponential, with jitter), re-declares its
//     queues and consumers; deliveries of the lost channel are never acked
//     on the new one (the broker requeued them): settling them answers
//     Errc::not_found.
//   - Options::log hears of the first connect, lost connections, failed
//     reconnect attempts with the next pause, reconnects, and a close that
//     gives up reconnecting. Lines name the broker by scheme://host:port and
//     vhost, never by credentials; the sink is never called under the
//     transport's lock.
//
// Thread-safety: all methods are thread-safe. One I/O thread owns the
// rabbitmq-c connection (rabbitmq-c connections are not thread-safe): every
// other thread hands it requests through a queue and waits for the answer
// where one is needed (publish confirms, declares), so heartbeats are served
// continuously by that thread.
#pragma once

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

/// The RabbitMQ transport (library babelqueue::rabbitmq).
namespace babelqueue::rabbitmq {

/// The RabbitMQ transport: amqp:// and amqps:// (this header's opening comment
/// gives the URL, the binding and the guarantees).
class Transport final : public babelqueue::Transport {
 public:
  /// The type of the queues it declares.
  enum class QueueType { classic, quorum };

  /// The connection and its behaviour; the URL parameters of the same names set them.
  struct Options {
    std::string host = "127.0.0.1";  ///< the broker's host
    std::uint16_t port = 5672;       ///< its AMQP port (5671 for amqps://)
    std::string user = "guest";      ///< the user name
    std::string password = "guest";  ///< the password, never logged
    std::string vhost = "/";         ///< the virtual host
    /// tls.enabled is amqps://. verify checks the certificate chain and the
    /// host (or tls.server_name) against the certificate's names.
    TlsOptions tls;
    std::chrono::seconds heartbeat{30};                                   ///< AMQP heartbeat; 0 turns it off
    std::string connection_name = "babelqueue-cpp";                       ///< as rabbitmqctl shows it
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};  ///< TCP, TLS and AMQP handshake
    std::chrono::milliseconds publish_timeout{std::chrono::seconds(30)};  ///< how long publish() waits for the confirm
    bool confirm = true;               ///< publisher confirms: publish() succeeds only once the broker has the message
    std::size_t max_in_flight = 1024;  ///< unconfirmed messages on the wire
    /// The largest body a publish sends; a larger one fails with
    /// Errc::invalid_argument naming both sizes, before anything is sent.
    /// Default: RabbitMQ's own default max_message_size (128 MiB); set the
    /// broker's value if it is configured otherwise. Must be at least 1.
    std::size_t max_message_size = std::size_t{128} << 20U;
    std::uint16_t prefetch = 0;                 ///< 0 = eight times the first receive()'s max, at least 128
    QueueType queue_type = QueueType::classic;  ///< the type of the queues it declares
    /// The pause before reconnect attempt n is reconnect_backoff.delay_for(n);
    /// URL reconnect_min and reconnect_max set its initial and max.
    BackoffPolicy reconnect_backoff{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(10), 0.25};
    /// Connects, lost connections, failed reconnect attempts, reconnects and
    /// give-ups (from the I/O thread too); an empty function silences them.
    LogSink log = stderr_log_sink();
  };

  /// Connects (so bad credentials, a wrong CA or an unreachable host are
  /// reported here): Errc::auth for refused credentials or a failed
  /// certificate verification, Errc::connection for an unreachable broker,
  /// Errc::invalid_argument for bad options.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from an amqp:// or amqps:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// Pipelined: every message is sent, then the confirms are awaited together.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  /// ready: the broker's ready count plus the deliveries this transport holds
  /// unreceived; reserved: received through this transport and unsettled;
  /// delayed: messages in the delay buckets of queue this transport used.
  Result<QueueStats> stats(std::string_view queue) override;
  /// Errc::unsupported: RabbitMQ shows a message only by delivering it.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

  /// Reconnections since open (for tests and monitoring).
  std::uint64_t reconnects() const noexcept;
  /// "rabbitmq", and reconnects().
  ConnectionStats connection_stats() const noexcept override;

 private:
  class State;
  explicit Transport(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// Registers the amqp:// and amqps:// schemes with open_transport(). Call it
/// once, from any thread; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::rabbitmq::Options.
using Options = Transport::Options;

}  // namespace babelqueue::rabbitmq
