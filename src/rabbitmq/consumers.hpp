// SPDX-License-Identifier: Apache-2.0
// The consume channel: basic.qos and basic.consume per queue, deliveries
// into the ready buffers, acks and nacks.
#pragma once

#include "connection.hpp"
#include "consumer_table.hpp"
#include "locked.hpp"
#include "queue_declarer.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/transport.hpp>

#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace babelqueue::rabbitmq::detail {

class SharedState;

// How many of a turn's acks (sorted) cover the oldest unacknowledged
// deliveries of the channel: those go as one basic.ack, with multiple=1 when
// there are several (one frame, and much less work for the broker). They are
// removed from unacked.
std::size_t cover_oldest(const std::vector<std::uint64_t>& sorted_acks, std::set<std::uint64_t>& unacked);

// A delivered message as the application sees it: the body, the out-of-band
// headers (the binding's and the broker's own left out, see
// is_reserved_header) and, on a quorum queue, x-delivery-count as
// native_attempts. Queue and token are left to the caller.
Delivery delivery_of(const amqp_message_t& message, bool quorum);

// Starts consumers, reads deliveries into the ready buffers, sends acks and
// nacks. Used by the I/O thread only.
class ConsumerChannel {
 public:
  ConsumerChannel(const rabbitmq::Transport::Options& options, SharedState& shared, Connection& connection,
                  QueueDeclarer& declarer);

  // Declares queue, sets the QoS of its consumer and consumes; a failure is
  // the consumer's start_error, which its receive() reports.
  void start(const std::string& queue);
  // Sends the acks and nacks of this turn (acks of an older channel
  // generation are dropped: the broker requeued those messages). False when
  // the connection was lost.
  bool send_settles(const std::vector<Settle>& settles);
  void on_deliver(const amqp_basic_deliver_t& deliver, const amqp_message_t& message);
  // The broker cancelled a consumer (its queue was deleted): it is
  // forgotten, so the next receive() declares the queue and consumes again.
  void on_cancel(const amqp_basic_cancel_t& cancel);
  // Nacks (requeues) deliveries of no consumer, leftovers of a cancelled one.
  void nack_strays();
  // Puts this turn's deliveries into their ready buffers, under one lock,
  // and wakes as many receivers as they can feed.
  void hand_over();
  // The consume channel is gone (see ConsumerTable::drop).
  void drop(const Locked& locked);

 private:
  const rabbitmq::Transport::Options& options_;
  SharedState& shared_;
  Connection& connection_;
  QueueDeclarer& declarer_;
  std::map<std::string, std::string, std::less<>> queues_;  // consumer tag -> queue
  std::set<std::uint64_t> unacked_;                         // delivery tags not yet settled
  std::vector<std::uint64_t> stray_tags_;                   // deliveries of no consumer, to nack
  std::vector<Delivery> incoming_;                          // read this turn, not yet handed over
  // ConsumerTable's generation, which only this thread changes (in drop()).
  std::uint64_t generation_ = 1;
};

// The QoS prefetch a consumer gets when Options::prefetch is 0, from the max
// of the first receive() on its queue (the worker's prefetch, itself at
// least its concurrency): eight times that, at least 128, so the broker
// keeps pushing while the caller holds one batch and its handlers run another.
std::uint16_t auto_prefetch(std::size_t first_receive_max);

}  // namespace babelqueue::rabbitmq::detail
