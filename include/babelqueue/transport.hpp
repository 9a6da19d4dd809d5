// SPDX-License-Identifier: Apache-2.0
// Transport: the narrow interface every broker binding implements.
//
// A transport moves bytes; the runtime (Worker) owns every semantic of the
// wire contract — retries, dead-lettering, poison handling. The runtime asks a
// transport what it can do (capabilities()), never which broker it is.
//
// Delivery model (at-least-once): receive() reserves messages; each reserved
// message must be settled exactly once with ack() (done, remove it) or
// release() (give it back for redelivery, optionally after a delay). A message
// that is never settled — its worker died — comes back by itself on
// transports with Capabilities::redelivers_unsettled (visibility timeout,
// broker-side lease, consumer-group rebalance).
//
// Errors every transport reports the same way (tests/support/
// transport_contract.hpp checks them): an empty queue name or max == 0 is
// Errc::invalid_argument; settling a delivery that is no longer held — settled
// already, or its visibility timeout passed and the broker handed it to
// someone else — is Errc::not_found (a stale delivery: the runtime logs it and
// moves on, the message is not lost); any call after close(), and a receive()
// blocked when close() was called, is Errc::closed.
//
// Thread-safety: every method of a Transport may be called from several
// threads at once; a Delivery may be settled from a thread other than the one
// that received it.
#pragma once

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

/// The BabelQueue C++ SDK: the envelope, transports, the Worker (babelqueue.hpp includes the core).
namespace babelqueue {

namespace binding {
struct ContractFields;
}

/// Out-of-band headers (traceparent, tracestate, bq-replay-bypass, ...): they
/// ride on the broker's native metadata, never inside the envelope.
using Headers = std::map<std::string, std::string, std::less<>>;

/// Header names the SDK itself uses: a redrive's replay marker, and the
/// reason a dead-lettered message carries where the broker has headers.
///@{
inline constexpr std::string_view kReplayBypassHeader = "bq-replay-bypass";
inline constexpr std::string_view kDeadLetterReasonHeader = "bq-dead-letter-reason";
///@}

/// How one message is published, beyond its queue and body.
struct PublishOptions {
  Headers headers;  ///< out-of-band headers, where Capabilities::headers
  /// Deliver no earlier than now + delay. Transports without native delay
  /// (Capabilities::native_delay false) fail with Errc::unsupported when it is
  /// not zero, rather than silently ignoring it.
  std::chrono::milliseconds delay{0};
  /// Broker-side deduplication id (SQS FIFO MessageDeduplicationId). Empty:
  /// the transport's default.
  std::string dedup_id;
  /// Ordering / partitioning key (Kafka record key, SQS FIFO message group).
  std::string ordering_key;
  /// The body's contract fields (binding.hpp) when the caller already knows
  /// them (the Worker, which built or decoded the envelope), so the transport
  /// projects them without reading the body again; null = the transport reads
  /// them itself. Non-owning: it must stay valid for the publish (or
  /// publish_batch) call, and describe exactly this message's body.
  const binding::ContractFields* contract = nullptr;
};

/// One message of a batch publish.
struct OutgoingMessage {
  std::string queue;       ///< where it goes
  std::string body;        ///< the envelope's bytes
  PublishOptions options;  ///< headers, delay, keys
};

/// A transport's handle on a reserved message, opaque to everyone else. Each
/// transport stores what it needs to settle the message (a row id and lease, a
/// delivery tag, a receipt handle, a partition and offset, ...).
struct DeliveryToken {
  std::uint64_t id = 0;  ///< a number the transport chose (row id, delivery tag, offset, ...)
  std::string text;      ///< a text the transport chose (receipt handle, lock token, ...)
};

/// A reserved message, as receive() hands it out: settle it exactly once with
/// Transport::ack() or Transport::release().
struct Delivery {
  std::string queue;  ///< the queue it was received from
  std::string body;   ///< the bytes as the broker holds them
  Headers headers;    ///< out-of-band headers (empty when the broker has none)
  /// The attempts count read from the broker's native metadata by the
  /// binding's reconciliation rule (SQS ApproximateReceiveCount - 1, Kafka's
  /// bq-attempts header, ...), to be merged with the body's own count by
  /// the runtime. Empty when the broker says nothing.
  std::optional<std::int64_t> native_attempts;
  /// Set when the transport's bq-schema-version gate rejected the message
  /// before any decoding: the runtime treats it as poison.
  std::optional<Rejection> gate_rejection;
  /// How native_attempts meets the body's count (attempts_rule.hpp): by
  /// max(), or replacing it (Kafka: the bq-attempts header is authoritative).
  AttemptsMerge attempts_merge = AttemptsMerge::max_with_body;
  /// The ordering key the message was published with (Kafka record key, SQS
  /// FIFO MessageGroupId), where the transport can read it back
  /// (Capabilities::ordering_key); empty otherwise. A retry, dead-letter or
  /// redrive republishes with it, so a keyed message keeps its partition or
  /// group.
  std::string ordering_key;
  /// When this reservation ends unless extended, on this process's steady
  /// clock (Capabilities::extendable_lease transports set it; empty where
  /// the lease does not expire). Taken just before the broker granted the
  /// lease, so it errs early (SQS, whose long poll grants it at a moment of
  /// the wait the client cannot know: when the reply arrived). The runtime drops a message
  /// whose lease has passed before its handler starts: the broker has
  /// already handed it, or will hand it, to another consumer.
  std::optional<std::chrono::steady_clock::time_point> lease_deadline;
  DeliveryToken token;  ///< the transport's handle to settle it
};

/// What a transport can do: the runtime asks this, never which broker it is.
struct Capabilities {
  bool headers = false;               ///< publish/receive carry out-of-band headers
  bool native_delay = false;          ///< publish and release honour a delay
  bool native_release = false;        ///< release() hands back the same message
  bool delivery_count = false;        ///< Delivery::native_attempts is filled
  bool redelivers_unsettled = false;  ///< an unsettled message comes back after a crash
  bool extendable_lease = false;      ///< extend() keeps a long handler's message reserved
  bool batch_publish = false;         ///< publish_batch() is one round trip, not a loop
  bool ordered = false;               ///< first in, first out per queue (or partition)
  bool ordering_key = false;          ///< PublishOptions::ordering_key is honoured and read back
  bool deduplication = false;         ///< PublishOptions::dedup_id is honoured by the broker
  bool batch_ack = false;             ///< ack_batch() is one round trip, not a loop
  /// Where batch_ack is set, how many acks the worker gathers into one
  /// ack_batch(): SQS's DeleteMessageBatch takes 10; an embedded store
  /// settles more in one transaction, at the same cost.
  std::size_t ack_batch_size = 10;
  /// The smallest prefetch of a worker left on automatic
  /// (WorkerOptions::prefetch 0): a transport whose every receive costs a
  /// transaction asks for more, so that one claims a bigger batch.
  std::size_t default_prefetch = 16;
  std::chrono::milliseconds max_delay{0};  ///< longest native delay; 0 = no limit
  /// How long a receive reserves a message before it may be redelivered
  /// (visibility timeout); zero when unknown or unlimited.
  std::chrono::milliseconds lease{0};
  /// The broker dead-letters by itself after repeated deliveries (SQS
  /// RedrivePolicy, Service Bus MaxDeliveryCount): with the SDK's
  /// dead-lettering off, poison is released to that policy, not dropped.
  bool broker_dead_letter_policy = false;
  /// peek() shows waiting messages without taking them (a browse); false
  /// where the broker can only show a message by delivering it.
  bool peek = false;
  /// dead_letter_natively() moves a message into the broker's own
  /// dead-letter queue at once (Service Bus DeadLetter into
  /// QUEUE/$DeadLetterQueue): with the SDK's dead-lettering off, poison
  /// and version-gated messages go there on their first delivery instead of
  /// being released until the broker's policy moves them.
  bool native_dead_letter = false;
  /// Messages the broker pushes to this client ahead of receive() anyway (an
  /// AMQP credit window), per queue: a receive takes them from memory. 0
  /// when a receive asks the broker. The Worker's automatic prefetch then
  /// takes them in bigger batches (WorkerOptions::prefetch): holding them in
  /// its buffer instead of the client's keeps nothing more from other
  /// consumers, and each hand-over between its threads carries more. Its
  /// handler threads receive for themselves (no receive loop thread): a
  /// receive costs no round trip to wait out.
  std::size_t held_ahead = 0;
};

/// A delivery that ack_batch() could not settle.
struct AckFailure {
  std::size_t index;  ///< its position in the deliveries given to ack_batch()
  ErrorInfo error;    ///< Errc::not_found when it is no longer held (a stale delivery)
};

/// A message as peek() shows it: a copy, neither reserved nor settled.
struct PeekedMessage {
  std::string body;  ///< the envelope's bytes
  Headers headers;   ///< its out-of-band headers
  /// The broker's delivery count where it keeps one (as Delivery's); empty
  /// otherwise.
  std::optional<std::int64_t> native_attempts;
};

/// Counts a transport can report for a queue; -1 where it cannot tell.
struct QueueStats {
  std::int64_t ready = -1;     ///< waiting to be received
  std::int64_t reserved = -1;  ///< received, not yet settled
  std::int64_t delayed = -1;   ///< published with a delay that has not passed
};

/// What a transport's connections went through (Transport::connection_stats()).
struct ConnectionStats {
  /// The transport's name ("redis", "rabbitmq", ...): the label its counts
  /// go under. Empty where the transport reports nothing.
  std::string_view transport;
  /// Connections re-established after one was lost, since it was opened.
  std::uint64_t reconnects = 0;
};

/// The narrow interface every broker binding implements: it moves bytes, the
/// Worker owns the semantics (this header's opening comment gives the
/// delivery model, the errors every transport reports alike, and the
/// thread-safety).
class Transport {
 public:
  virtual ~Transport() = default;  ///< closes it (close())
  Transport() = default;           ///< for derived classes
  /// A transport owns its connections: it is neither copied nor assigned.
  ///@{
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ///@}

  /// What this transport can do.
  virtual Capabilities capabilities() const = 0;

  /// Appends body to queue. Succeeds only once the broker has accepted the
  /// message (confirmed, acknowledged, committed).
  virtual Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) = 0;

  /// Publishes every message; stops at the first failure and reports how many
  /// were published before it in the error message. The default loops over
  /// publish().
  virtual Result<void> publish_batch(std::span<const OutgoingMessage> messages);

  /// Reserves up to max (>= 1) messages of queue, waiting up to wait for the
  /// first one; it returns as soon as at least one is there, without waiting
  /// to fill max. An empty vector means nothing arrived in time.
  virtual Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                                std::chrono::milliseconds wait) = 0;

  /// Settles a delivery as done: the broker forgets the message.
  /// Errc::not_found when the delivery is no longer held (see above).
  virtual Result<void> ack(const Delivery& delivery) = 0;

  /// Settles every delivery as done, trying each one even after a failure
  /// (a failed ack leaves only its own message to be delivered again). The
  /// error, if any, is the first failure's code with how many were not
  /// settled.
  Result<void> ack_batch(std::span<const Delivery> deliveries);

  /// The same, appending to failures each delivery that was not settled, so
  /// the caller can tell which messages will come back. The result is an
  /// error exactly when something was appended. The default loops over
  /// ack(); transports with a batch settle (Capabilities::batch_ack) override
  /// this one (a derived class that does adds `using Transport::ack_batch;`
  /// to keep the form above visible).
  virtual Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures);

  /// Settles a delivery as not done: the message is delivered again (after
  /// delay, where native_delay). Its body is unchanged.
  virtual Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) = 0;

  /// Keeps a delivery reserved for `lease` from now (a long handler), replacing
  /// the visibility timeout's deadline. Errc::unsupported where the transport
  /// has no leases.
  virtual Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease);

  /// Settles a delivery by moving it into the broker's own dead-letter queue,
  /// with why (reason, a short phrase such as "poison", and a description),
  /// the body unchanged. Errc::not_found for a delivery no longer held;
  /// Errc::unsupported where the broker has no such settlement (the default;
  /// see Capabilities::native_dead_letter).
  virtual Result<void> dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                            std::string_view description);

  /// The dead-letter queue's name for queue under this transport's naming:
  /// queue + ".dlq" by default (SQS: "-dlq", its names cannot hold a dot).
  virtual std::string dead_letter_queue(std::string_view queue) const;

  /// Counts for queue; Errc::unsupported where the broker cannot tell.
  virtual Result<QueueStats> stats(std::string_view queue);

  /// Up to max (>= 1) of queue's ready messages, in the order receive() would
  /// hand them out, without reserving, settling or counting a delivery of
  /// any: after a peek the queue is as it was (Capabilities::peek). Delayed
  /// and reserved messages are not shown. It does not wait: an empty vector
  /// means none is ready now. Errc::unsupported, with the reason, where the
  /// broker can only show a message by delivering it (the default).
  virtual Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max);

  /// Its connections' counts, for monitoring: a Worker hands a change to its
  /// middleware (WorkerEventKind::reconnected). Cheap and thread-safe: the
  /// Worker asks after every receive. The default reports nothing (a
  /// transport without connections of its own to lose).
  virtual ConnectionStats connection_stats() const noexcept;

  /// Stops background work and closes connections, waiting at most deadline
  /// for in-flight broker operations. Reserved, unsettled deliveries are left
  /// to the broker's redelivery. Idempotent; the destructor calls it.
  virtual void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) = 0;
};

}  // namespace babelqueue
