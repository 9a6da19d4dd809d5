// SPDX-License-Identifier: Apache-2.0
// The Artemis binding's projection: a body and its publish options as an
// AMQP 1.0 message, and a received message as a Delivery.
//
// Thread-safety: pure functions over values.
#pragma once

#include <babelqueue/transport.hpp>

#include <cstdint>
#include <optional>
#include <proton/message.hpp>
#include <string_view>

namespace babelqueue::artemis {

inline constexpr std::string_view kJmsTypeAnnotation = "x-opt-jms-type";
// Scheduled delivery: an AMQP long of epoch milliseconds (as a timestamp
// Artemis ignores it).
inline constexpr std::string_view kDeliveryTimeAnnotation = "x-opt-delivery-time";
// The delay mirrored as a string property, in ms (JMS-legal name).
inline constexpr std::string_view kDelayProperty = "bq_delay";
// Artemis's duplicate-detection property.
inline constexpr std::string_view kDuplicateIdProperty = "_AMQ_DUPL_ID";

// The message for body: durable, the envelope as an AMQP string value, the
// binding's slots and properties, options' headers, delay, group and dedup
// id. delivery_count: set on a copy that stands for a redelivery.
proton::message make_message(std::string_view body, const PublishOptions& options,
                             std::optional<std::uint32_t> delivery_count);

// A received message as the runtime sees it: body bytes, out-of-band
// headers, the bq_schema_version gate, delivery-count and group-id.
Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message);

}  // namespace babelqueue::artemis
