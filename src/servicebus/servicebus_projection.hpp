// SPDX-License-Identifier: Apache-2.0
// The Service Bus binding's projection: a body and its publish options as
// an AMQP 1.0 message, and a received message as a Delivery.
//
// Thread-safety: pure functions over values, except MessageEncoder (below).
#pragma once

#include "client.hpp"
#include "message_reader.hpp"

#include <babelqueue/transport.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <proton/binary.hpp>
#include <proton/message.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pn_message_t;

namespace babelqueue::servicebus {

// Message annotations the service reads or writes.
inline constexpr std::string_view kScheduledEnqueueTimeAnnotation = "x-opt-scheduled-enqueue-time";
inline constexpr std::string_view kLockTokenAnnotation = "x-opt-lock-token";
inline constexpr std::string_view kLockedUntilAnnotation = "x-opt-locked-until";
inline constexpr std::string_view kSequenceNumberAnnotation = "x-opt-sequence-number";

// Encodes the message for body — the envelope as one Data section, subject,
// correlation-id, message-id, content-type and the typed bq- properties
// from its contract fields, options' headers as string properties, and the
// scheduled enqueue time of options.delay (counted from now) — straight
// into wire bytes through one reused C message, on the caller's thread.
// (A proton::message costs some twenty allocations to build, and its
// encode() copies each map into a std::map and back.) The bytes equal those
// of the same message built with proton::message.
//
// Thread-safety: one thread at a time.
class MessageEncoder {
 public:
  MessageEncoder();
  ~MessageEncoder();
  MessageEncoder(const MessageEncoder&) = delete;
  MessageEncoder& operator=(const MessageEncoder&) = delete;

  // Appends the message to out.
  Result<void> append(std::string_view body, const PublishOptions& options, amqp10::EncodedMessages& out);

 private:
  // An application property: text, or an int (a long when wide).
  struct Property {
    std::string_view name;
    std::string_view text;
    std::optional<std::int64_t> number;
    bool wide = false;
  };
  pn_message_t* message_;
  std::string text_;  // NUL-terminated copies for the C setters
  std::vector<Property> properties_;
};

// The message for body as a proton::message (for tests, the benchmark and
// the conformance runner): what MessageEncoder sends, decoded again.
proton::message make_message(std::string_view body, const PublishOptions& options);

// DeliveryCount - 1 as attempts (Service Bus's DeliveryCount is 1 on a first
// delivery): the binding's rule for a count read as DeliveryCount.
std::int64_t native_attempts_of_delivery_count(std::int64_t delivery_count);

// What the transport keeps of a received message to renew its lock.
struct Lock {
  std::string token;  // the lock token, a GUID in its text form
  std::optional<std::chrono::system_clock::time_point> locked_until;
};

// A received message as the runtime sees it: body bytes, out-of-band
// headers, the bq-schema-version gate, attempts from the header's
// delivery-count (DeliveryCount - 1) and the lock token (x-opt-lock-token,
// else the delivery tag's GUID) in token.text. With a lock_duration (the
// message just arrived), lease_deadline too: see lease_deadline_of().
Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message,
                     const proton::binary& tag, std::chrono::milliseconds lock_duration = {});
// The same into d, every field replaced (the token's id 0), keeping the
// storage d's strings have.
void read_into(std::string_view queue, pn_message_t* message, const proton::binary& tag,
               std::chrono::milliseconds lock_duration, Delivery& d);

// When a lock taken now ends, on this process's steady clock: now +
// lock_duration, unless the service's x-opt-locked-until (read on the
// system clock) is more than a second earlier, which means the queue's
// LockDuration is shorter than lock_duration. (The service writes whole
// milliseconds, and clocks differ a little: within a second they are taken
// to agree.)
std::chrono::steady_clock::time_point lease_deadline_of(const Lock& lock, std::chrono::milliseconds lock_duration,
                                                        std::chrono::steady_clock::time_point steady_now,
                                                        std::chrono::system_clock::time_point system_now);

// The transport's amqp10::MessageReader: read_into() on the connection's
// thread, the token's id left for the receiver to fill in. Null (the
// message is handed over with its delivery tag) when the message carries no
// x-opt-lock-token: the lock token is then the tag's GUID. The receiver
// copies the delivery out and recycles the read (reuse), so the connection's
// thread fills the same strings again instead of allocating new ones (which
// the receiving threads would free).
struct DeliveryRead final : amqp10::Read {
  Delivery delivery;
};
std::unique_ptr<amqp10::Read> read_delivery(std::string_view queue, pn_message_t* message,
                                            std::unique_ptr<amqp10::Read> reuse,
                                            std::chrono::milliseconds lock_duration);

// The message's lock: its token, and until when the service holds it.
Lock lock_of(const proton::message& message, const proton::binary& tag);

// A lock token's text as the GUID bytes Service Bus sends as a delivery tag
// (.NET Guid.ToByteArray order: the first three fields little-endian), and
// back; empty when it is not a GUID.
std::string lock_token_from_tag(const proton::binary& tag);

}  // namespace babelqueue::servicebus
