// SPDX-License-Identifier: Apache-2.0
// A test-only Transport decorator that gives every test its own queues on a
// shared broker: each queue name the caller uses gets a fixed prefix on the
// broker ("orders" -> "t1a2b3c4-orders", its dead-letter queue
// "t1a2b3c4-orders.dlq"), and deliveries carry the caller's name back. The
// suites written for a fresh, empty broker per test (worker_semantics.hpp)
// then run on a real one. Nothing else is changed; capabilities are the
// wrapped transport's.
#pragma once

#include <babelqueue/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::test_support {

class QueueNamespace final : public Transport {
 public:
  explicit QueueNamespace(std::unique_ptr<Transport> inner, std::string prefix = "t" + uuid_v4().substr(0, 8) + "-")
      : inner_(std::move(inner)), prefix_(std::move(prefix)) {}

  std::string on_broker(std::string_view queue) const { return prefix_ + std::string(queue); }

  Capabilities capabilities() const override { return inner_->capabilities(); }
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options) override {
    return inner_->publish(on_broker(queue), body, options);
  }
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override {
    std::vector<OutgoingMessage> renamed(messages.begin(), messages.end());
    for (auto& message : renamed) message.queue = on_broker(message.queue);
    return inner_->publish_batch(renamed);
  }
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override {
    auto received = inner_->receive(on_broker(queue), max, wait);
    if (received) {
      for (Delivery& delivery : *received) delivery.queue = std::string(queue);
    }
    return received;
  }
  Result<void> ack(const Delivery& delivery) override { return inner_->ack(renamed(delivery)); }
  using Transport::ack_batch;
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override {
    std::vector<Delivery> copies;
    copies.reserve(deliveries.size());
    for (const auto& d : deliveries) copies.push_back(renamed(d));
    return inner_->ack_batch(copies, failures);
  }
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay) override {
    return inner_->release(renamed(delivery), delay);
  }
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override {
    return inner_->extend(renamed(delivery), lease);
  }
  Result<void> dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                    std::string_view description) override {
    return inner_->dead_letter_natively(renamed(delivery), reason, description);
  }
  std::string dead_letter_queue(std::string_view queue) const override { return inner_->dead_letter_queue(queue); }
  Result<QueueStats> stats(std::string_view queue) override { return inner_->stats(on_broker(queue)); }
  void close(std::chrono::milliseconds deadline) override { inner_->close(deadline); }

 private:
  Delivery renamed(const Delivery& delivery) const {
    Delivery copy = delivery;
    copy.queue = on_broker(delivery.queue);
    return copy;
  }

  std::unique_ptr<Transport> inner_;
  std::string prefix_;
};

}  // namespace babelqueue::test_support
