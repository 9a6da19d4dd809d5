// SPDX-License-Identifier: Apache-2.0
// com.microsoft:peek-message on an entity's $management node: copies of
// its messages from a sequence number on, none locked, none counted as a
// delivery (the service's Peek, which Microsoft's clients call
// peek_messages / PeekMessagesAsync).
//
// Thread-safety: as amqp10::Client::request (any thread).
#pragma once

#include "client.hpp"

#include <babelqueue/result.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <proton/message.hpp>
#include <string>
#include <vector>

namespace babelqueue::servicebus {

// A message as peek-message returns it, with what the service says of it.
struct PeekedCopy {
  proton::message message;
  std::int64_t sequence_number = 0;  // x-opt-sequence-number
  // Not handed out by a receive now: scheduled for later
  // (x-opt-message-state 2, or x-opt-scheduled-enqueue-time still ahead)
  // or deferred (x-opt-message-state 1).
  bool waiting_elsewhere = false;
};

// Up to count messages of queue from sequence number `from` on, in sequence
// order; empty when there are none (the service answers 204). Errc::broker
// for another status, with the service's description.
Result<std::vector<PeekedCopy>> peek_messages(amqp10::Client& client, const std::string& queue, std::int64_t from,
                                              std::int32_t count, std::chrono::milliseconds timeout);

}  // namespace babelqueue::servicebus
