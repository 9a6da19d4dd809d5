// SPDX-License-Identifier: Apache-2.0
// Transport: Apache Pulsar over its native binary protocol (library
// babelqueue::pulsar; the protocol client is the SDK's own, on Boost.Asio
// and OpenSSL — there is no Pulsar C++ client in Debian).
//
// URL: pulsar://host[:port][?options]       plain TCP (port 6650)
//      pulsar+ssl://host[:port][?options]   TLS, certificate verified (port 6651)
// Options (url_options.hpp: unknown ones are errors; durations are 500ms, 5s,
// 2m or a bare number of seconds):
//   tenant=NAME, namespace=NAME   where queues live (default public/default)
//   subscription=NAME             the Shared subscription consumers use (default babelqueue)
//   token=TOKEN                   token authentication (auth method "token")
//   listener_name=NAME            the broker's advertised listener (advertisedListeners) whose
//                                 address topic lookups answer with (default: the broker's
//                                 internal one); for clients that reach the broker through
//                                 another address (a NAT, a proxy)
//   connect_timeout=DURATION      TCP + TLS + CONNECT/CONNECTED (default 10s)
//   operation_timeout=DURATION    lookup, producer and subscription creation (default 30s)
//   publish_timeout=DURATION      waiting for the broker's receipts (default 30s)
//   keepalive=DURATION            PING after this much silence; dropped after twice (default 30s)
//   receiver_queue=N              messages the broker may push ahead per queue (default 1000)
//   reconnect_min=DURATION, reconnect_max=DURATION  backoff between reconnects (100ms, 10s)
//   tls_ca, tls_cert, tls_key, tls_server_name, tls_verify  (tls_options.hpp; pulsar+ssl:// only)
//
// The binding (seeds/000 "Apache Pulsar", docs/transports/pulsar.md):
//   - A queue is the topic persistent://<tenant>/<namespace>/<queue>; a
//     character other than letters, digits and . _ - = : becomes _xHH_ (a
//     '/' would split the name). A queue that is a full topic name
//     (persistent://... or non-persistent://...) is used as it is. Non-partitioned topics only:
//     a partitioned one is refused with Errc::unsupported.
//   - Produce: payload = the envelope bytes; string properties bq-job,
//     bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang,
//     bq-attempts; out-of-band headers as further properties (the binding's
//     names win); the ordering key is the message key; a delay sets
//     deliver_at_time and is mirrored on the property bq-delay (ms).
//     publish_batch() sends every message before waiting for any receipt.
//   - Consume: subscription `babelqueue`, type Shared, created at the
//     earliest position (a message published before the first consumer is
//     not lost). The bq-schema-version gate runs before the body is read;
//     native_attempts = the message's redeliveryCount (0-based:
//     attempts = max(body, redeliveryCount)). Batched entries, compressed
//     with LZ4, ZLIB, ZSTD or Snappy, are unpacked.
//   - ack() = ACK (a batch's entry once each of its messages is acked);
//     release() = a negative acknowledgement (REDELIVER_UNACKNOWLEDGED_MESSAGES),
//     which raises redeliveryCount; release(delay) sends it after the delay.
//   - dead_letter_queue(q) = q + ".dlq" (persistent://public/default/<q>.dlq).
//   - No leases: a received message stays held until settled or the
//     connection drops (capabilities().lease is 0, extend() is unsupported).
//
// Thread-safety: all methods are thread-safe. One I/O thread per transport.
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

/// The Apache Pulsar transport (library babelqueue::pulsar).
namespace babelqueue::pulsar {

/// The Pulsar transport: pulsar:// and pulsar+ssl:// over Pulsar's binary
/// protocol (this header's opening comment gives the URL and the binding).
class Transport final : public babelqueue::Transport {
 public:
  /// The connection and its behaviour; the URL parameters of the same names set them.
  struct Options {
    std::string host = "127.0.0.1";  ///< the broker's host
    std::uint16_t port = 6650;       ///< its binary-protocol port
    TlsOptions tls;                  ///< enabled: pulsar+ssl://
    std::string token;               ///< token authentication; empty: none. Never logged
    /// The broker's advertised listener whose address lookups answer with
    /// (CommandLookupTopic's advertised_listener_name); empty: its internal one.
    std::string listener_name;
    std::string tenant = "public";                                          ///< the tenant of the topics
    std::string ns = "default";                                             ///< the namespace of the topics
    std::string subscription = "babelqueue";                                ///< the Shared subscription consumers use
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};    ///< TCP, TLS and CONNECT
    std::chrono::milliseconds operation_timeout{std::chrono::seconds(30)};  ///< lookups, producers, subscriptions
    std::chrono::milliseconds publish_timeout{std::chrono::seconds(30)};    ///< waiting for the broker's receipts
    std::chrono::milliseconds keepalive{std::chrono::seconds(30)};          ///< PING after this much silence
    std::uint32_t receiver_queue = 1000;  ///< messages the broker may push ahead per queue
    /// The pause before reconnect attempt n is reconnect.delay_for(n).
    BackoffPolicy reconnect{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(10), 0.2};
    /// Lost connections and their return; an empty function silences them.
    LogSink log = stderr_log_sink();
  };

  /// Connects (TCP, TLS, CONNECT) and waits for CONNECTED, at most
  /// connect_timeout: a refused token or a certificate that does not verify
  /// is Errc::auth, an unreachable broker Errc::connection or Errc::timeout,
  /// each naming the endpoint.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from a pulsar:// or pulsar+ssl:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  /// The topic of a queue: `persistent://TENANT/NAMESPACE/QUEUE`, escaped.
  std::string topic(std::string_view queue) const;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// Every message goes out before the first receipt is awaited.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  /// The subscription's waiting messages, read by a non-durable reader from
  /// its mark-delete position to the topic's last message (see
  /// docs/transports/pulsar.md for what that includes).
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// "pulsar", and the broker connections ready again after one was lost.
  ConnectionStats connection_stats() const noexcept override;
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the pulsar:// and pulsar+ssl:// schemes with open_transport().
/// Call it once, from any thread; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::pulsar::Options.
using Options = Transport::Options;

}  // namespace babelqueue::pulsar
