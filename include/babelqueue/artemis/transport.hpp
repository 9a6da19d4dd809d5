// SPDX-License-Identifier: Apache-2.0
// Transport: Apache ActiveMQ Artemis over AMQP 1.0 (library
// babelqueue::artemis; qpid-proton C++ underneath).
//
// URL: artemis://[user:password@]host[:port][?options]   (port 5672)
//      artemis+ssl://[user:password@]host[:port][?options]  (TLS)
// Without a user the connection authenticates as SASL ANONYMOUS, with one as
// PLAIN. Options (url_options.hpp: unknown ones are errors; durations are
// 250ms, 5s, 2m or a bare number of seconds):
//   credit=N                  messages the broker may push ahead per queue and connection (default 1000; 1..100000)
//   max_message_size=BYTES    the largest encoded message a publish sends (default 0: only
//                             the broker's limit, when its link announces one)
//   connections=N             connections receive() spreads over (default 1; 1..64; ADR 0041)
//   connect_timeout=DURATION  opening the connection (default 10s)
//   publish_timeout=DURATION  waiting for the broker to accept a publish (default 30s)
//   idle_timeout=DURATION     AMQP heartbeat (default 30s)
//   reconnect_min=DURATION, reconnect_max=DURATION  backoff between reconnects (200ms, 10s)
//   container_id=ID           the AMQP container id (default random)
//   tls_ca, tls_cert, tls_key, tls_server_name, tls_verify  (tls_options.hpp; artemis+ssl:// only)
//
// The binding (seeds/000 "Apache ActiveMQ Artemis", docs/transports/artemis.md):
//   - Body: the envelope bytes as an AMQP string value (what a JMS peer reads
//     as a TextMessage); Data sections and binary values are read too.
//     durable = true: a broker restart keeps the message.
//   - Projection: annotation x-opt-jms-type = job, and subject = job (what
//     Artemis's own JMS client reads as JMSType; ADR 0017); correlation-id =
//     trace_id; message-id = meta.id; creation-time = meta.created_at;
//     content-type application/json; string application properties
//     bq_schema_version, bq_source_lang, bq_attempts, bq_app_id = "babelqueue";
//     out-of-band headers as further string properties (the binding's names
//     win). An ordering key is the AMQP group-id (Artemis message groups: one
//     consumer at a time per group); a dedup id is Artemis's duplicate-detection
//     property _AMQ_DUPL_ID.
//   - Anycast: every link carries the "queue" terminus capability, so a
//     message sent before any consumer exists waits in the queue instead of
//     being dropped by an auto-created multicast address.
//   - receive(): the bq_schema_version gate before the body is read;
//     native_attempts = the header's delivery-count (0-based: attempts =
//     max(body, delivery-count)); the ordering key from group-id.
//   - ack() = accepted; release() = modified{delivery-failed=true}, the one
//     outcome Artemis counts in delivery-count. release(delay) sends a copy
//     held back by x-opt-delivery-time (an AMQP long of epoch ms, mirrored on
//     a bq_delay property) with the next delivery-count, then accepts the
//     original — never the other way round, so nothing is lost.
//   - Delay: x-opt-delivery-time + bq_delay on publish.
//   - dead_letter_queue(q) = q + ".dlq"; Artemis's own dead-letter address
//     (after 10 deliveries by default) only sees messages the SDK did not
//     dead-letter first.
//   - No leases: a held message stays held until settled or the connection
//     drops (capabilities().lease is 0, extend() is unsupported).
//
// Thread-safety: all methods are thread-safe. One connection per transport,
// or Options::connections for receiving; each runs its I/O on a thread of
// its own.
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
#include <span>
#include <string>
#include <vector>

/// The Apache ActiveMQ Artemis transport (library babelqueue::artemis).
namespace babelqueue::artemis {

/// The Apache ActiveMQ Artemis transport: artemis:// and artemis+ssl://, AMQP
/// 1.0 (this header's opening comment gives the URL and the binding).
class Transport final : public babelqueue::Transport {
 public:
  /// The connection and its behaviour; the URL parameters of the same names set them.
  struct Options {
    std::string host = "127.0.0.1";  ///< the broker's host
    std::uint16_t port = 5672;       ///< its AMQP port
    std::string user;                ///< empty: SASL ANONYMOUS
    std::string password;            ///< never logged
    TlsOptions tls;                  ///< enabled: artemis+ssl://
    /// Messages the broker may push ahead of receive() per queue, on each
    /// receiving connection.
    std::uint32_t credit = 1000;
    /// The largest message a publish sends, encoded as it goes on the wire:
    /// a larger one fails with Errc::invalid_argument naming both sizes,
    /// unsent. 0: no limit of the transport's; a broker that announces a
    /// max-message-size on the link is held to that either way.
    std::size_t max_message_size = 0;
    /// Connections receive() takes messages from, each with a receiver on
    /// the queue and an I/O thread of its own: several receiving threads (a
    /// Worker's concurrency) then share the work of reading and settling
    /// instead of queueing behind one connection, on the broker's side too.
    /// The first also publishes and peeks; the others open on the first
    /// receive(). Above 1, a queue's messages are spread over several
    /// consumers, so receive() no longer hands them out in queue order, and
    /// up to connections × credit messages wait in the client (ADR 0041).
    std::uint32_t connections = 1;
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};  ///< opening the connection
    std::chrono::milliseconds publish_timeout{
        std::chrono::seconds(30)};                                     ///< waiting for the broker to accept a publish
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};  ///< the AMQP heartbeat
    /// The pause before reconnect attempt n is reconnect.delay_for(n).
    BackoffPolicy reconnect{std::chrono::milliseconds(200), 2.0, std::chrono::seconds(10), 0.2};
    std::string container_id;  ///< the AMQP container id; empty: a random one
    /// Connection lost and back, and close() giving up; an empty function
    /// silences it.
    LogSink log = stderr_log_sink();
  };

  /// Connects (SASL, TLS) and waits until the broker opens the connection, at
  /// most connect_timeout: a refused password is Errc::auth, an unreachable
  /// broker Errc::connection or Errc::timeout, a certificate that does not
  /// match Errc::auth, each naming the endpoint.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from an artemis:// or artemis+ssl:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// All messages go out at once, as many in flight as the broker's credit
  /// allows, the first ones while the later ones are still being encoded;
  /// done when the broker has accepted each one. On a failure the error
  /// counts the messages accepted.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  /// Every delivery accepted in one hand-over to the connection's thread
  /// (Capabilities::batch_ack); each is settled on its own on the wire.
  using babelqueue::Transport::ack_batch;
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  /// A receiver link with distribution-mode "copy", which Artemis serves with
  /// a queue browser: the messages stay, their delivery count unchanged.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// "artemis", and the AMQP connections opened again after one was lost.
  ConnectionStats connection_stats() const noexcept override;
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the artemis:// and artemis+ssl:// schemes with open_transport().
/// Call it once, from any thread; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::artemis::Options.
using Options = Transport::Options;

}  // namespace babelqueue::artemis
