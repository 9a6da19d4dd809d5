// SPDX-License-Identifier: Apache-2.0
// How a binding turns a broker's native delivery count into the envelope's
// `attempts`, and how that count meets the body's own (broker-bindings.md,
// the conformance manifest's attempts_reconciliation tables).
//
// Two things vary between bindings, and nothing else:
//   - the base of the native count: SQS ApproximateReceiveCount and Service
//     Bus DeliveryCount are 1 on a first delivery, Pulsar redeliveryCount,
//     the AMQP 1.0 delivery-count and RabbitMQ's x-delivery-count are 0;
//   - the merge: every broker count is merged with max(body, native), so a
//     count the runtime raised by republishing is never lowered; Kafka's
//     bq-attempts header is authoritative instead (it replaces the body's
//     count, even when lower), because Kafka has no native count at all.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>

namespace babelqueue {

/// How a broker's native count meets the body's own attempts.
enum class AttemptsMerge {
  max_with_body,  ///< attempts = max(body.attempts, native)
  authoritative,  ///< attempts = native when present, else body.attempts
};

/// One binding's rule: how its native count reads and how it meets the body's.
struct AttemptsRule {
  AttemptsMerge merge = AttemptsMerge::max_with_body;  ///< by max(), or replacing the body's count
  /// What the native count reads on a first delivery: 0 or 1.
  std::int64_t first_delivery_count = 0;

  /// The native count as attempts: count - first_delivery_count, never below
  /// 0; nothing when the broker said nothing.
  constexpr std::optional<std::int64_t> native_attempts(std::optional<std::int64_t> count) const noexcept {
    if (!count) return std::nullopt;
    // A count below the base (a garbage 0 where 1 is the first) is a first delivery.
    return *count > first_delivery_count ? *count - first_delivery_count : 0;
  }

  /// The attempts a consumer works with.
  constexpr std::int64_t reconcile(std::int64_t body, std::optional<std::int64_t> native) const noexcept {
    if (!native) return body;
    if (merge == AttemptsMerge::authoritative) return *native;
    return *native > body ? *native : body;
  }
};

/// The rules of the bindings, by the kind of count they carry.
inline constexpr AttemptsRule kZeroBasedDeliveryCount{AttemptsMerge::max_with_body,
                                                      0};  // Pulsar, AMQP 1.0, quorum queues
inline constexpr AttemptsRule kOneBasedDeliveryCount{AttemptsMerge::max_with_body, 1};        ///< SQS, Service Bus
inline constexpr AttemptsRule kAuthoritativeAttemptsHeader{AttemptsMerge::authoritative, 0};  ///< Kafka bq-attempts

}  // namespace babelqueue
