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
  std::size_t settled = 0;
  for (const Delivery& delivery : deliveries) {
    auto result = ack(delivery);
    if (!result) {
      return unexpected(result.error().code(), "batch ack stopped after " + std::to_string(settled) + " of " +
                                                   std::to_string(deliveries.size()) +
                                                   " deliveries: " + result.error().message());
    }
    ++settled;
  }
  return {};
}

Result<void> Transport::extend(const Delivery& /*delivery*/, std::chrono::milliseconds /*lease*/) {
  return unexpected(Errc::unsupported, "this transport has no leases to extend");
}

std::string Transport::dead_letter_queue(std::string_view queue) const { return std::string(queue) + ".dlq"; }

Result<QueueStats> Transport::stats(std::string_view queue) {
  return unexpected(Errc::unsupported,
                    "this transport cannot count the messages of queue '" + std::string(queue) + "'");
}

}  // namespace babelqueue
