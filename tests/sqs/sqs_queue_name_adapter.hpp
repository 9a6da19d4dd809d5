// SPDX-License-Identifier: Apache-2.0
// A test-only Transport decorator that maps the contract suite's queue names
// onto names SQS accepts. The suite names queues after the parameterised test
// ("contract-Test/standard-q-1a2b"), and SQS queue names may hold only
// letters, digits, '-' and '_' (at most 80): every other character becomes
// '_' and long names are shortened. Deliveries
// carry the caller's name back, so the suite sees exactly what it asked for.
// Nothing else is changed; capabilities are the wrapped transport's.
#pragma once

#include <babelqueue/transport.hpp>

#include <cctype>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::testing {

class SqsQueueNameAdapter final : public Transport {
 public:
  // fifo: names get the ".fifo" suffix SQS FIFO queue names end with.
  SqsQueueNameAdapter(std::unique_ptr<Transport> inner, bool fifo) : inner_(std::move(inner)), fifo_(fifo) {}

  std::string sqs_name(std::string_view queue) const {
    std::string out(queue);
    for (char& c : out) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) == 0 && c != '-' && c != '_') c = '_';
    }
    // SQS names are at most 80 characters, and "-dlq" must still fit: a long
    // name keeps its start and its unique end.
    if (out.size() > 65) out = out.substr(0, 35) + "-" + out.substr(out.size() - 29);
    return fifo_ ? out + ".fifo" : out;
  }

  Capabilities capabilities() const override { return inner_->capabilities(); }
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options) override {
    return inner_->publish(sqs_name(queue), body, options);
  }
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override {
    std::vector<OutgoingMessage> renamed(messages.begin(), messages.end());
    for (auto& message : renamed) message.queue = sqs_name(message.queue);
    return inner_->publish_batch(renamed);
  }
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override {
    auto received = inner_->receive(sqs_name(queue), max, wait);
    if (received) {
      for (Delivery& delivery : *received) delivery.queue = std::string(queue);
    }
    return received;
  }
  Result<void> ack(const Delivery& delivery) override { return inner_->ack(renamed(delivery)); }
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay) override {
    return inner_->release(renamed(delivery), delay);
  }
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override {
    return inner_->extend(renamed(delivery), lease);
  }
  std::string dead_letter_queue(std::string_view queue) const override { return inner_->dead_letter_queue(queue); }
  Result<QueueStats> stats(std::string_view queue) override { return inner_->stats(sqs_name(queue)); }
  void close(std::chrono::milliseconds deadline) override { inner_->close(deadline); }

 private:
  Delivery renamed(const Delivery& delivery) const {
    Delivery copy = delivery;
    copy.queue = sqs_name(delivery.queue);
    return copy;
  }
  std::unique_ptr<Transport> inner_;
  bool fifo_ = false;
};

}  // namespace babelqueue::testing
