// SPDX-License-Identifier: Apache-2.0
// Transport: Azure Service Bus queues over AMQP 1.0 (library
// babelqueue::servicebus; qpid-proton C++ underneath, OpenSSL for SAS).
//
// URL: sb://NAMESPACE[:port][?options]   (also servicebus://, azureservicebus://)
//   NAMESPACE is the namespace's host, e.g. contoso.servicebus.windows.net;
//   it may be left out (sb://) when the connection string names it. A port
//   in the URL is where the TCP connection goes (a local proxy, a port
//   forward); the connection string's endpoint stays the namespace: the AMQP
//   hostname, the TLS name checked and the tokens' audience.
// Credentials, as the Python SDK reads them: a connection string in
// Options::connection_string, else in the environment variable
// AZURE_SERVICEBUS_CONNECTION_STRING:
//   Endpoint=sb://NAMESPACE/;SharedAccessKeyName=NAME;SharedAccessKey=KEY[;EntityPath=QUEUE]
//   Endpoint=sb://NAMESPACE/;SharedAccessSignature=SharedAccessSignature sr=...&sig=...&se=...&skn=...
//   ...;UseDevelopmentEmulator=true   plain AMQP on the endpoint's port (default 5672), no TLS:
//                                     the emulator, and the project's test server
// Keys are matched without regard to case. Without UseDevelopmentEmulator
// the connection is AMQP over TLS on 5671, the certificate checked against
// the namespace's host. Instead of a key, Options::token_provider can hand
// out bearer tokens (Azure AD); the transport never fetches them itself.
// Options (url_options.hpp: unknown ones are errors; durations are 250ms,
// 5s, 2m or a bare number of seconds):
//   lock_duration=DURATION    the queues' LockDuration (default 30s: set it to the queue's):
//                             the lease within which the runtime renews a long handler's lock
//   prefetch=N                messages the service may lock and send ahead of receive() per
//                             queue (default 20; 1..5000). Each lock runs from the moment
//                             the message is sent, so keep prefetch x handling time well
//                             inside the lock duration
//   max_message_size=BYTES    the largest encoded message a publish sends (default 0: the
//                             service's own limit, which its links announce: 256 KiB on the
//                             Standard tier)
//   token_lifetime=DURATION   lifetime of the SAS tokens the transport signs (default 1h); a
//                             fresh one is put on $cbs after 80% of it
//   connect_timeout=DURATION  opening the connection (default 10s)
//   operation_timeout=DURATION  waiting for the service to confirm a send, a settlement or a
//                             lock renewal (default 30s)
//   idle_timeout=DURATION     AMQP heartbeat (default 30s)
//   reconnect_min=DURATION, reconnect_max=DURATION  backoff between reconnects (200ms, 10s)
//   container_id=ID           the AMQP container id (default random)
//   tls_ca, tls_cert, tls_key, tls_server_name, tls_verify  (tls_options.hpp; not with
//                             UseDevelopmentEmulator=true)
//
// The binding (seeds/000 "Azure Service Bus", docs/transports/servicebus.md):
//   - Body: the envelope bytes as one AMQP Data section (the Python SDK's
//     consumer takes an AMQP string value for poison). subject = job (the
//     URN), correlation-id = trace_id, message-id = meta.id, content-type
//     application/json; application properties with native AMQP types:
//     bq-schema-version int, bq-source-lang string, bq-created-at long
//     (epoch ms); out-of-band headers as further string properties (the
//     binding's names win).
//   - Delay: the x-opt-scheduled-enqueue-time annotation (ScheduledEnqueueTime).
//   - publish_batch(): every message of a queue on one link at once, each
//     confirmed by the service.
//   - receive(): PeekLock, a receiver with rcv-settle-mode second. The
//     bq-schema-version gate (int, long or string) runs before the body is
//     read; native_attempts = DeliveryCount - 1, where DeliveryCount = the
//     AMQP header's delivery-count + 1 (the service sends DeliveryCount - 1
//     there), so attempts = max(body.attempts, DeliveryCount - 1);
//     Delivery::token.text = the lock token.
//   - Settlement waits for the service to settle back: ack() = accepted
//     (Complete), release() = modified{delivery-failed} (Abandon:
//     DeliveryCount rises; after MaxDeliveryCount the service moves the
//     message to <queue>/$DeadLetterQueue). A lock the service no longer
//     holds (expired: the message was delivered again) is Errc::not_found.
//     ack_batch() settles every delivery at once and waits once.
//   - release(delay): a copy scheduled for now + delay goes first, then the
//     original is completed (Service Bus has no delayed abandon); the copy's
//     DeliveryCount starts again at 1, its body keeps its attempts.
//   - extend(lease): com.microsoft:renew-lock on <queue>/$management at once,
//     then again before each lock ends until lease has passed.
//   - dead_letter_natively(): rejected{com.microsoft:dead-letter} with
//     DeadLetterReason and DeadLetterErrorDescription: the runtime sends
//     poison and version-gated messages there when its own dead-lettering is
//     off. dead_letter_queue(q) = q + ".dlq", the SDK's own dead-letter queue
//     (Service Bus refuses sends into a $DeadLetterQueue).
//   - peek(): com.microsoft:peek-message on <queue>/$management, copies in
//     sequence order without a lock; scheduled and deferred messages are
//     skipped, locked ones shown.
//   - Auth: a SAS token (HMAC-SHA256 of the URL-encoded audience and the
//     expiry, as Microsoft's clients sign it) put on $cbs for each entity's
//     audience sb://NAMESPACE/QUEUE before its links open, and again before
//     it expires and after every reconnect.
//
// Thread-safety: all methods are thread-safe. One connection per transport;
// its I/O runs on a thread of its own, lock renewals on another.
#pragma once

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

/// The Azure Service Bus transport (library babelqueue::servicebus).
namespace babelqueue::servicebus {

/// A bearer token (Azure AD) for an audience, as a token provider returns it.
struct AccessToken {
  std::string token;                                 ///< a secret: never logged
  std::chrono::system_clock::time_point expires_at;  ///< when the service stops taking it
};

/// Hands out a token for an audience (sb://NAMESPACE/QUEUE). It runs on the
/// transport's I/O thread: return a cached token, and refresh it elsewhere.
using TokenProvider = std::function<Result<AccessToken>(const std::string& audience)>;

/// The environment variable a connection string is read from.
inline constexpr const char* kConnectionStringVariable = "AZURE_SERVICEBUS_CONNECTION_STRING";

/// The Azure Service Bus transport: sb://, servicebus:// and
/// azureservicebus://, AMQP 1.0 (this header's opening comment gives the
/// URL, the credentials and the binding).
class Transport final : public babelqueue::Transport {
 public:
  /// The connection and its behaviour; the URL parameters of the same names set them.
  struct Options {
    /// The namespace's host (contoso.servicebus.windows.net); empty: the
    /// connection string's endpoint. When both are given they must agree.
    std::string namespace_host;
    std::optional<std::uint16_t> port;  ///< empty: the endpoint's, else 5671 (TLS) or 5672
    /// The connection string (a secret); empty: AZURE_SERVICEBUS_CONNECTION_STRING,
    /// read by open(). Not needed with a token_provider.
    std::string connection_string;
    TokenProvider token_provider;  ///< bearer tokens instead of a key; empty: the connection string's key
    /// TLS is on unless the connection string says UseDevelopmentEmulator=true.
    TlsOptions tls;
    /// The queues' LockDuration: the lease within which the runtime renews a long handler's lock.
    std::chrono::milliseconds lock_duration{std::chrono::seconds(30)};
    std::uint32_t prefetch = 20;  ///< messages the service may lock and send ahead of receive(), per queue
    /// The largest message a publish sends, encoded as it goes on the wire:
    /// a larger one fails with Errc::invalid_argument naming both sizes,
    /// unsent. 0: no limit of the transport's; the service announces its
    /// own (max-message-size on the link: 256 KiB on the Standard tier, up to
    /// 100 MiB on Premium), which holds either way.
    std::size_t max_message_size = 0;
    std::chrono::seconds token_lifetime{std::chrono::hours(1)};           ///< of the SAS tokens the transport signs
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};  ///< opening the connection
    /// Waiting for the service to confirm a send, a settlement or a lock renewal.
    std::chrono::milliseconds operation_timeout{std::chrono::seconds(30)};
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};  ///< the AMQP heartbeat
    /// The pause before reconnect attempt n is reconnect.delay_for(n).
    BackoffPolicy reconnect{std::chrono::milliseconds(200), 2.0, std::chrono::seconds(10), 0.2};
    std::string container_id;  ///< the AMQP container id; empty: a random one
    /// Connection lost and back, tokens that could not be refreshed, locks
    /// that could not be renewed; never a key, a token or a signature. An
    /// empty function silences it.
    LogSink log = stderr_log_sink();
  };

  /// Reads the credentials (the connection string, else the token provider)
  /// and connects, waiting at most connect_timeout. A malformed connection
  /// string or missing credentials are Errc::invalid_argument, an expired
  /// shared access signature Errc::auth, an unreachable namespace
  /// Errc::connection or Errc::timeout, each naming what is wrong and never
  /// the secret. A key the service refuses is Errc::auth from the first
  /// publish or receive that needs it (tokens are per entity).
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from an sb://, servicebus:// or azureservicebus:// URL (see the
  /// top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// Every message of a queue on one link at once, each confirmed by the
  /// service; on a failure the error counts the messages published.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  /// Every Complete goes out at once, and one wait for the service's
  /// answers covers them all (Capabilities::batch_ack).
  using babelqueue::Transport::ack_batch;
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  /// com.microsoft:renew-lock at once, then again before each lock ends
  /// until lease has passed or the message is settled.
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override;
  /// rejected{com.microsoft:dead-letter} with DeadLetterReason and
  /// DeadLetterErrorDescription: the message moves to
  /// native_dead_letter_queue(its queue).
  Result<void> dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                    std::string_view description) override;
  /// com.microsoft:peek-message on the queue's $management node: copies in
  /// sequence order, none locked, DeliveryCount unchanged. Scheduled and
  /// deferred messages are skipped; a message locked by a receiver is
  /// shown (the service keeps it in its place).
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// "servicebus", and the AMQP connections opened again after one was lost.
  ConnectionStats connection_stats() const noexcept override;
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

  /// The service's own dead-letter sub-queue of queue: queue + "/$DeadLetterQueue".
  static std::string native_dead_letter_queue(std::string_view queue);

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the sb://, servicebus:// and azureservicebus:// schemes with
/// open_transport(). Call it once, from any thread; calling it again is
/// harmless.
void register_transport();

/// The options by their short name: babelqueue::servicebus::Options.
using Options = Transport::Options;

}  // namespace babelqueue::servicebus
