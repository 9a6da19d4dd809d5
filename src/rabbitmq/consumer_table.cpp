// SPDX-License-Identifier: Apache-2.0
#include "consumer_table.hpp"

#include <algorithm>

namespace babelqueue::rabbitmq::detail {

std::pair<Consumer*, bool> ConsumerTable::open(const std::string& queue) {
  auto [it, created] = consumers_.try_emplace(queue);
  return {&it->second, created};
}

const Consumer* ConsumerTable::find(std::string_view queue) const {
  auto it = consumers_.find(queue);
  return it == consumers_.end() ? nullptr : &it->second;
}

std::vector<Delivery> ConsumerTable::take(Consumer& consumer, std::size_t max) {
  std::vector<Delivery> out;
  while (!consumer.buffer.empty() && out.size() < max) {
    Delivery& delivery = consumer.buffer.front();
    handed_out_.insert(delivery.token.id);
    ++consumer.reserved;
    out.push_back(std::move(delivery));
    consumer.buffer.pop_front();
  }
  return out;
}

bool ConsumerTable::settle(std::uint64_t generation, const Delivery& delivery, bool ack) {
  if (generation != generation_ || handed_out_.erase(delivery.token.id) == 0) return false;
  if (auto it = consumers_.find(delivery.queue); it != consumers_.end() && it->second.reserved > 0) {
    --it->second.reserved;
  }
  settles_.push_back(Settle{generation, delivery.token.id, ack});
  return true;
}

bool ConsumerTable::holds(const Delivery& delivery) const {
  return delivery.token.text == std::to_string(generation_) && handed_out_.contains(delivery.token.id);
}

std::vector<std::string> ConsumerTable::claim_starts() {
  std::vector<std::string> queues;
  for (auto& [queue, consumer] : consumers_) {
    if (!consumer.active && !consumer.starting && !consumer.start_error) {
      consumer.starting = true;
      queues.push_back(queue);
    }
  }
  return queues;
}

bool ConsumerTable::has_starts() const {
  return std::any_of(consumers_.begin(), consumers_.end(), [](const auto& entry) {
    return !entry.second.active && !entry.second.starting && !entry.second.start_error;
  });
}

void ConsumerTable::started(const std::string& queue) {
  Consumer& consumer = consumers_[queue];
  consumer.starting = false;
  consumer.active = true;
}

void ConsumerTable::start_failed(const std::string& queue, const ErrorInfo& error) {
  Consumer& consumer = consumers_[queue];
  consumer.starting = false;
  consumer.start_error = error;
  wake_all();
}

void ConsumerTable::deliver(std::vector<Delivery>& deliveries,
                            std::vector<std::pair<std::condition_variable*, int>>& wake) {
  Consumer* last = nullptr;
  for (Delivery& delivery : deliveries) {
    Consumer& consumer = consumers_[delivery.queue];
    consumer.buffer.push_back(std::move(delivery));
    if (&consumer != last) {
      wake.emplace_back(consumer.ready.get(), 0);
      last = &consumer;
    }
    if (wake.back().second < consumer.waiting) ++wake.back().second;
  }
}

std::vector<std::uint64_t> ConsumerTable::cancelled(const std::string& queue) {
  Consumer& consumer = consumers_[queue];
  consumer.active = false;
  std::vector<std::uint64_t> tags;
  for (const Delivery& delivery : consumer.buffer) tags.push_back(delivery.token.id);
  consumer.buffer.clear();
  return tags;
}

std::uint64_t ConsumerTable::drop() {
  ++generation_;
  handed_out_.clear();
  for (auto& [queue, consumer] : consumers_) {
    consumer.active = false;
    consumer.starting = false;
    consumer.buffer.clear();
    consumer.reserved = 0;
  }
  return generation_;
}

void ConsumerTable::wake_all() {
  for (auto& [queue, consumer] : consumers_) consumer.ready->notify_all();
}

}  // namespace babelqueue::rabbitmq::detail
