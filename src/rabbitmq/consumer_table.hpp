// SPDX-License-Identifier: Apache-2.0
// The consumers as API threads see them: per queue, its QoS, whether it is
// consuming, the deliveries the broker pushed and nobody received yet (the
// ready buffer), and the deliveries received and not yet settled.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace babelqueue::rabbitmq::detail {

// One queue's consumer. Under the mutex (in ConsumerTable).
struct Consumer {
  std::uint16_t prefetch = 1;
  bool active = false;  // consuming on the current channel generation
  bool starting = false;
  std::deque<Delivery> buffer;  // delivered by the broker, not yet received
  std::int64_t reserved = 0;    // received, not settled
  std::optional<ErrorInfo> start_error;
  // receive() calls of this queue wait here, so a batch of deliveries wakes
  // as many of them as it can feed, not every waiting thread of every queue.
  std::unique_ptr<std::condition_variable> ready = std::make_unique<std::condition_variable>();
  int waiting = 0;
};

// An ack or a nack an API thread asked for, for the I/O thread to send.
struct Settle {
  std::uint64_t generation;
  std::uint64_t tag;
  bool ack;
};

// Every queue's consumer, the deliveries handed out and the settles not yet
// sent. Under the mutex (a member of Guarded): receive(), ack() and release()
// on API threads, starts, deliveries and channel losses on the I/O thread.
class ConsumerTable {
 public:
  // queue's consumer, and whether this call created it.
  std::pair<Consumer*, bool> open(const std::string& queue);
  // queue's consumer (created when missing).
  Consumer& at(const std::string& queue) { return consumers_[queue]; }
  const Consumer* find(std::string_view queue) const;

  // Up to max deliveries off consumer's ready buffer, held from now on.
  std::vector<Delivery> take(Consumer& consumer, std::size_t max);
  // Queues an ack (or a nack) of a delivery of generation; false when that
  // delivery is not held (settled already, or of a lost channel).
  bool settle(std::uint64_t generation, const Delivery& delivery, bool ack);
  // Whether delivery (its token's generation in text) is held.
  bool holds(const Delivery& delivery) const;
  std::vector<Settle> take_settles() { return std::exchange(settles_, {}); }
  bool has_settles() const { return !settles_.empty(); }

  // The queues whose consumer should start (neither consuming, starting nor
  // failed), marked as starting.
  std::vector<std::string> claim_starts();
  bool has_starts() const;
  void started(const std::string& queue);
  void start_failed(const std::string& queue, const ErrorInfo& error);

  // Puts the I/O thread's deliveries into their ready buffers, and adds to
  // wake, per buffer, how many of its waiting receivers they can feed.
  void deliver(std::vector<Delivery>& deliveries, std::vector<std::pair<std::condition_variable*, int>>& wake);
  // The broker cancelled queue's consumer (its queue was deleted, and with
  // it what the consumer buffered): answers the delivery tags it buffered.
  std::vector<std::uint64_t> cancelled(const std::string& queue);
  // The consume channel is gone: its deliveries are dead (the broker
  // requeues them), so every delivery handed out so far becomes stale.
  // Answers the new channel generation.
  std::uint64_t drop();
  // Wakes every waiting receive().
  void wake_all();

 private:
  std::map<std::string, Consumer, std::less<>> consumers_;
  std::unordered_set<std::uint64_t> handed_out_;  // delivery tags of generation_
  std::uint64_t generation_ = 1;
  std::vector<Settle> settles_;
};

}  // namespace babelqueue::rabbitmq::detail
