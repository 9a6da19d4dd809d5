// SPDX-License-Identifier: Apache-2.0
// A batch publish streamed in chunks, shared by the AMQP 1.0 transports
// (Artemis, Service Bus): the messages are encoded a chunk at a time and
// each chunk is handed to the client as soon as it is full, so the first
// transfers are on the wire (and the broker stores them) while the rest are
// being encoded. Each queue has a chunk of its own, so a queue's messages
// keep their order.
#pragma once

#include "client.hpp"

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

namespace babelqueue::amqp10 {

// How many messages send_in_chunks() hands the client at a time.
inline constexpr std::size_t kChunkMessages = 64;

// Appends one message, encoded for the wire, to a chunk.
using ChunkEncoder = std::function<Result<void>(const OutgoingMessage&, EncodedMessages&)>;

// Sends every message to its queue, each chunk waited for at most timeout
// from when it was handed over. Every chunk handed over is waited for, even
// after a failure, so the error's count of published messages (whole
// chunks) is exact; it starts with "<transport>: ".
Result<void> send_in_chunks(Client& client, std::span<const OutgoingMessage> messages,
                            std::chrono::milliseconds timeout, std::string_view transport, const ChunkEncoder& encode);

}  // namespace babelqueue::amqp10
