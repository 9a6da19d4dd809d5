// SPDX-License-Identifier: Apache-2.0
// The default implementations of Transport's optional operations: what a
// transport gets when its broker offers nothing better.
#include <babelqueue/transport.hpp>

#include <string>

namespace babelqueue {

Result<void> Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  std::size_t published = 0;
  for (const OutgoingMessage& message : messages) {
    auto result = publish(message.queue, message.body, message.options);
    if (!result) {
      // Keep the code (the caller decides on retrying by it) and say how far
      // the batch got, so nothing is published twice by a blind retry.
      return unexpected(result.error().code(), "batch publish stopped after " + std::to_string(published) + " of " +
                                                   std::to_string(messages.size()) +
                                                   " messages: " + result.error().message());
    }
    ++published;
  }
  return {};
}

Result<void> Transport::ack_batch(std::span<const Delivery> deliveries) {
  std::vector<AckFailure> failures;
  return ack_batch(deliveries, failures);
}

Result<void> Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  const std::size_t before = failures.size();
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    if (auto result = ack(deliveries[i]); !result) failures.push_back(AckFailure{i, result.error()});
  }
  if (failures.size() == before) return {};
  const ErrorInfo& first = failures[before].error;
  return unexpected(first.code(), std::to_string(failures.size() - before) + " of " +
                                      std::to_string(deliveries.size()) +
                                      " deliveries were not settled; the first: " + first.message());
}

Result<void> Transport::extend(const Delivery& /*delivery*/, std::chrono::milliseconds /*lease*/) {
  return unexpected(Errc::unsupported, "this transport has no leases to extend");
}

Result<void> Transport::dead_letter_natively(const Delivery& /*delivery*/, std::string_view /*reason*/,
                                             std::string_view /*description*/) {
  return unexpected(Errc::unsupported, "this transport cannot move a message into a dead-letter queue of the broker");
}

std::string Transport::dead_letter_queue(std::string_view queue) const { return std::string(queue) + ".dlq"; }

ConnectionStats Transport::connection_stats() const noexcept { return {}; }

Result<QueueStats> Transport::stats(std::string_view queue) {
  return unexpected(Errc::unsupported,
                    "this transport cannot count the messages of queue '" + std::string(queue) + "'");
}

Result<std::vector<PeekedMessage>> Transport::peek(std::string_view queue, std::size_t /*max*/) {
  return unexpected(Errc::unsupported, "this transport cannot show the messages of queue '" + std::string(queue) +
                                           "' without taking them");
}

}  // namespace babelqueue
