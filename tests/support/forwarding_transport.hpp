// SPDX-License-Identifier: Apache-2.0
// ForwardingTransport: the base of the test-only Transport decorators. It
// passes every operation to the transport it wraps; a decorator overrides
// what it changes. ack_batch(), peek() and connection_stats() are not
// passed on: they keep Transport's own (a batch ack is a loop of ack(),
// which a decorator may fail).
//
// Thread-safety: as thread-safe as the wrapped transport.
#pragma once

#include <babelqueue/transport.hpp>

#include <memory>
#include <utility>

namespace babelqueue::test_support {

class ForwardingTransport : public Transport {
 public:
  // Owns the wrapped transport.
  explicit ForwardingTransport(std::unique_ptr<Transport> inner) : owned_(std::move(inner)), inner_(owned_.get()) {}
  // Borrows it: the caller keeps it alive longer than this object.
  explicit ForwardingTransport(Transport& inner) : inner_(&inner) {}
  ~ForwardingTransport() override = default;  // closing is the owner's (or owned_'s destructor's) business

  Transport& inner() noexcept { return *inner_; }
  const Transport& inner() const noexcept { return *inner_; }

  Capabilities capabilities() const override { return inner_->capabilities(); }
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override {
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
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override {
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
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override { inner_->close(deadline); }

 private:
  std::unique_ptr<Transport> owned_;
  Transport* inner_;  // owned_.get() or the borrowed transport; never null
};

}  // namespace babelqueue::test_support
