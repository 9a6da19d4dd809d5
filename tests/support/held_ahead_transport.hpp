// SPDX-License-Identifier: Apache-2.0
// A test-only Transport decorator that says its client holds messages ahead
// (Capabilities::held_ahead), as a broker client with a credit window does,
// and otherwise passes everything to the transport it wraps. Over the memory
// transport it runs the Worker's suite the way the Worker runs on such a
// transport: its handler threads receive for themselves.
#pragma once

#include <babelqueue/transport.hpp>

#include <memory>
#include <utility>

namespace babelqueue::test_support {

class HeldAheadTransport final : public Transport {
 public:
  HeldAheadTransport(std::unique_ptr<Transport> inner, std::size_t held_ahead)
      : inner_(std::move(inner)), held_ahead_(held_ahead) {}

  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    caps.held_ahead = held_ahead_;
    return caps;
  }
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options) override {
    return inner_->publish(queue, body, options);
  }
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override {
    return inner_->publish_batch(messages);
  }
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override {
    return inner_->receive(queue, max, wait);
  }
  Result<void> ack(const Delivery& delivery) override { return inner_->ack(delivery); }
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override {
    return inner_->ack_batch(deliveries, failures);
  }
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay) override {
    return inner_->release(delivery, delay);
  }
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override {
    return inner_->extend(delivery, lease);
  }
  Result<void> dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                    std::string_view description) override {
    return inner_->dead_letter_natively(delivery, reason, description);
  }
  std::string dead_letter_queue(std::string_view queue) const override { return inner_->dead_letter_queue(queue); }
  Result<QueueStats> stats(std::string_view queue) override { return inner_->stats(queue); }
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override {
    return inner_->peek(queue, max);
  }
  ConnectionStats connection_stats() const noexcept override { return inner_->connection_stats(); }
  void close(std::chrono::milliseconds deadline) override { inner_->close(deadline); }

 private:
  std::unique_ptr<Transport> inner_;
  std::size_t held_ahead_;
};

}  // namespace babelqueue::test_support
