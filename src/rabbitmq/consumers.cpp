// SPDX-License-Identifier: Apache-2.0
#include "consumers.hpp"

#include "amqp_projection.hpp"
#include "shared_state.hpp"

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <utility>

namespace babelqueue::rabbitmq {
namespace detail {
namespace {

// The auto QoS: several times what one receive() asks for, so the broker
// keeps pushing while the caller holds a batch and its handlers run another
// (measured: a QoS of 16 -> 64 doubles consume throughput, 64 -> 128..256
// gains again at concurrency 4; RabbitMQ suggests 100-300).
constexpr std::size_t kAutoPrefetchFactor = 8;
constexpr std::size_t kMinAutoPrefetch = 128;

}  // namespace

std::size_t cover_oldest(const std::vector<std::uint64_t>& sorted_acks, std::set<std::uint64_t>& unacked) {
  std::size_t covered = 0;
  while (covered < sorted_acks.size() && !unacked.empty() && *unacked.begin() == sorted_acks[covered]) {
    unacked.erase(unacked.begin());
    ++covered;
  }
  return covered;
}

Delivery delivery_of(const amqp_message_t& message, bool quorum) {
  Delivery delivery;
  delivery.body.assign(static_cast<const char*>(message.body.bytes), message.body.len);
  const amqp_basic_properties_t& props = message.properties;
  std::optional<std::int64_t> delivery_count;
  if ((props._flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
    for (int i = 0; i < props.headers.num_entries; ++i) {
      const amqp_table_entry_t& entry = props.headers.entries[i];
      const std::string_view name = view(entry.key);
      if (name == kDeliveryCountHeader) delivery_count = field_integer(entry.value);
      if (name.empty() || is_reserved_header(name)) continue;
      if (auto text = field_text(entry.value); text && !text->empty()) {
        delivery.headers.emplace(std::string(name), std::move(*text));
      }
    }
  }
  if (quorum) delivery.native_attempts = delivery_count.value_or(0);
  return delivery;
}

ConsumerChannel::ConsumerChannel(const rabbitmq::Transport::Options& options, SharedState& shared,
                                 Connection& connection, QueueDeclarer& declarer)
    : options_(options), shared_(shared), connection_(connection), declarer_(declarer) {}

void ConsumerChannel::start(const std::string& queue) {
  std::uint16_t prefetch = 1;
  {
    Locked locked = shared_.lock();
    prefetch = locked->consumers.at(queue).prefetch;
  }
  auto fail = [&](const ErrorInfo& error) {
    Locked locked = shared_.lock();
    locked->consumers.start_failed(queue, error);
  };
  if (auto declared = declarer_.declare(queue); !declared) return fail(declared.error());
  amqp_basic_qos(connection_.get(), kConsumeChannel, 0, prefetch, 0);
  if (auto checked = connection_.check_rpc(kConsumeChannel, "basic.qos on " + queue); !checked) {
    return fail(checked.error());
  }
  const amqp_basic_consume_ok_t* ok = amqp_basic_consume(connection_.get(), kConsumeChannel, bytes_of(queue),
                                                         amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  if (auto checked = connection_.check_rpc(kConsumeChannel, "basic.consume on " + queue); !checked) {
    return fail(checked.error());
  }
  queues_[std::string(view(ok->consumer_tag))] = queue;
  Locked locked = shared_.lock();
  locked->consumers.started(queue);
}

bool ConsumerChannel::send_settles(const std::vector<Settle>& settles) {
  if (settles.empty()) return true;
  std::vector<std::uint64_t> acks;
  acks.reserve(settles.size());
  for (const Settle& settle : settles) {
    if (settle.generation != generation_) continue;  // its channel is gone: the broker requeued it
    if (settle.ack) {
      acks.push_back(settle.tag);
      continue;
    }
    unacked_.erase(settle.tag);
    if (const int status = amqp_basic_nack(connection_.get(), kConsumeChannel, settle.tag, 0, 1);
        status != AMQP_STATUS_OK) {
      connection_.set_lost(ErrorInfo(Errc::connection, "basic.nack: " + status_text(status)));
      return false;
    }
  }
  std::sort(acks.begin(), acks.end());
  auto send_ack = [&](std::uint64_t tag, bool multiple) {
    if (const int status = amqp_basic_ack(connection_.get(), kConsumeChannel, tag, multiple ? 1 : 0);
        status != AMQP_STATUS_OK) {
      connection_.set_lost(ErrorInfo(Errc::connection, "basic.ack: " + status_text(status)));
      return false;
    }
    return true;
  };
  const std::size_t covered = cover_oldest(acks, unacked_);
  if (covered > 0 && !send_ack(acks[covered - 1], covered > 1)) return false;
  for (std::size_t i = covered; i < acks.size(); ++i) {
    unacked_.erase(acks[i]);
    if (!send_ack(acks[i], false)) return false;
  }
  return true;
}

void ConsumerChannel::on_deliver(const amqp_basic_deliver_t& deliver, const amqp_message_t& message) {
  Delivery delivery = delivery_of(message, options_.queue_type == rabbitmq::Transport::QueueType::quorum);
  delivery.token.id = deliver.delivery_tag;
  auto tag = queues_.find(view(deliver.consumer_tag));
  if (tag == queues_.end()) {
    // A cancelled consumer's leftover: hand it back at once.
    stray_tags_.push_back(deliver.delivery_tag);
    return;
  }
  unacked_.insert(deliver.delivery_tag);
  delivery.queue = tag->second;
  delivery.token.text = std::to_string(generation_);
  incoming_.push_back(std::move(delivery));
}

void ConsumerChannel::on_cancel(const amqp_basic_cancel_t& cancel) {
  auto tag = queues_.find(view(cancel.consumer_tag));
  if (tag == queues_.end()) return;
  std::vector<std::uint64_t> buffered;
  {
    Locked locked = shared_.lock();
    buffered = locked->consumers.cancelled(tag->second);
  }
  // Its queue is gone, and with it the messages it had delivered.
  for (const std::uint64_t delivery_tag : buffered) unacked_.erase(delivery_tag);
  declarer_.forget(tag->second);
  queues_.erase(tag);
}

void ConsumerChannel::nack_strays() {
  for (const std::uint64_t tag : stray_tags_) {
    if (connection_.lost()) break;
    if (const int status = amqp_basic_nack(connection_.get(), kConsumeChannel, tag, 0, 1); status != AMQP_STATUS_OK) {
      connection_.set_lost(ErrorInfo(Errc::connection, "basic.nack: " + status_text(status)));
    }
  }
  stray_tags_.clear();
}

void ConsumerChannel::hand_over() {
  if (incoming_.empty()) return;
  // One lock per batch of deliveries, not one per delivery.
  std::vector<std::pair<std::condition_variable*, int>> wake;  // per queue: how many receivers to wake
  {
    Locked locked = shared_.lock();
    locked->consumers.deliver(incoming_, wake);
  }
  incoming_.clear();
  for (auto [ready, count] : wake) {
    for (int i = 0; i < count; ++i) ready->notify_one();
  }
}

void ConsumerChannel::drop(const Locked& locked) {
  generation_ = locked->consumers.drop();
  unacked_.clear();
  queues_.clear();
}

std::uint16_t auto_prefetch(std::size_t first_receive_max) {
  return static_cast<std::uint16_t>(
      std::clamp<std::size_t>(kAutoPrefetchFactor * first_receive_max, kMinAutoPrefetch, 65535));
}

}  // namespace detail

}  // namespace babelqueue::rabbitmq
