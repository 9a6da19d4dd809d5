// SPDX-License-Identifier: Apache-2.0
// The Artemis binding's projection: a body and its publish options as an
// AMQP 1.0 message, and a received message as a Delivery.
//
// Thread-safety: pure functions over values, except MessageEncoder (below).
#pragma once

#include "client.hpp"

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <proton/message.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::artemis {

inline constexpr std::string_view kJmsTypeAnnotation = "x-opt-jms-type";
// Scheduled delivery: an AMQP long of epoch milliseconds (as a timestamp
// Artemis ignores it).
inline constexpr std::string_view kDeliveryTimeAnnotation = "x-opt-delivery-time";
// The delay mirrored as a string property, in ms (JMS-legal name).
inline constexpr std::string_view kDelayProperty = "bq_delay";
// Artemis's duplicate-detection property.
inline constexpr std::string_view kDuplicateIdProperty = "_AMQ_DUPL_ID";

// Encodes the message for body: durable, the envelope as an AMQP string
// value, the binding's slots and properties, options' headers, delay, group
// and dedup id. delivery_count: set on a copy that stands for a redelivery.
//
// It fills one C message (proton's pn_message_t) field by field and reuses
// it and its scratch space for every message: once warm it allocates only
// where the output grows. (A proton::message per publish costs some twenty
// allocations, and its encode() copies each map into a std::map and back.)
// The bytes equal those of the same message built with proton::message.
//
// Thread-safety: one thread at a time.
class MessageEncoder {
 public:
  MessageEncoder();
  ~MessageEncoder();
  MessageEncoder(const MessageEncoder&) = delete;
  MessageEncoder& operator=(const MessageEncoder&) = delete;

  // Appends the message to out.
  Result<void> append(std::string_view body, const PublishOptions& options, std::optional<std::uint32_t> delivery_count,
                      amqp10::EncodedMessages& out);

 private:
  pn_message_t* message_;
  std::string text_;  // NUL-terminated copies for the C setters
  std::vector<std::pair<std::string_view, std::string_view>> properties_;
  char schema_version_[24] = {}, attempts_[24] = {}, delay_[24] = {};
};

// The message for body as a proton::message (for tests and the conformance
// runner): what MessageEncoder sends, decoded again.
proton::message make_message(std::string_view body, const PublishOptions& options,
                             std::optional<std::uint32_t> delivery_count);

// A received message as the runtime sees it: body bytes, out-of-band
// headers, the bq_schema_version gate, delivery-count and group-id.
Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message);
// The same from the C message into d, every field replaced (the token's id
// 0), keeping the storage d's strings have.
void read_into(std::string_view queue, pn_message_t* message, Delivery& d);

// The same off the message's encoded bytes, without proton's decoding
// (encoded_message.hpp); false, with d's fields left to be replaced, for
// a message that reading does not cover or whose application properties
// are not all text (read_into() then reads it).
bool read_encoded(std::string_view queue, std::string_view encoded, Delivery& d);

// The transport's amqp10::MessageReader: read_into() on the connection's
// thread, the token's id left for the receiver to fill in. The receiver
// copies the delivery out and recycles the read, so the connection's thread
// fills the same strings again instead of allocating new ones (which the
// receiving threads would free).
struct DeliveryRead final : amqp10::Read {
  Delivery delivery;
};
std::unique_ptr<amqp10::Read> read_delivery(std::string_view queue, pn_message_t* message,
                                            std::unique_ptr<amqp10::Read> reuse);
// Its amqp10::EncodedReader: read_encoded() into a DeliveryRead.
std::unique_ptr<amqp10::Read> read_encoded_delivery(std::string_view queue, std::string_view encoded,
                                                    std::unique_ptr<amqp10::Read>& reuse);

}  // namespace babelqueue::artemis
