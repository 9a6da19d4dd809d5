// SPDX-License-Identifier: Apache-2.0
#include "chunked_send.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace babelqueue::amqp10 {

Result<void> send_in_chunks(Client& client, std::span<const OutgoingMessage> messages,
                            std::chrono::milliseconds timeout, std::string_view transport, const ChunkEncoder& encode) {
  struct Chunk {
    std::string_view queue;
    EncodedMessages messages;
  };
  struct Started {
    std::string_view queue;
    std::shared_ptr<SendOp> op;
    std::size_t count;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Chunk> open;
  std::vector<Started> started;
  std::optional<ErrorInfo> failure;
  auto start = [&](Chunk& chunk) {
    const std::size_t count = chunk.messages.size();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto op = client.start_send(chunk.queue, std::move(chunk.messages));
    chunk.messages = {};
    if (!op) {
      if (!failure) {
        failure = ErrorInfo(op.error().code(),
                            "batch publish to '" + std::string(chunk.queue) + "': " + op.error().message());
      }
      return;
    }
    started.push_back(Started{chunk.queue, std::move(*op), count, deadline});
  };
  for (const auto& m : messages) {
    if (failure) break;
    auto chunk = std::find_if(open.begin(), open.end(), [&](const Chunk& c) { return c.queue == m.queue; });
    if (chunk == open.end()) chunk = open.insert(open.end(), Chunk{m.queue, {}});
    if (auto appended = encode(m, chunk->messages); !appended) {
      failure = appended.error();
      break;
    }
    if (chunk->messages.size() == kChunkMessages) start(*chunk);
  }
  if (!failure) {
    for (auto& chunk : open) {
      if (!chunk.messages.empty()) start(chunk);
    }
  }
  std::size_t accepted = 0;
  for (auto& s : started) {
    if (auto done = client.finish_send(*s.op, s.deadline); done) {
      accepted += s.count;
    } else if (!failure) {
      failure =
          ErrorInfo(done.error().code(), "batch publish to '" + std::string(s.queue) + "': " + done.error().message());
    }
  }
  if (!failure) return {};
  return unexpected(failure->code(), std::string(transport) + ": " + failure->message() + " (" +
                                         std::to_string(accepted) + " of " + std::to_string(messages.size()) +
                                         " messages of the batch were published, counting whole chunks of " +
                                         std::to_string(kChunkMessages) + ")");
}

}  // namespace babelqueue::amqp10
