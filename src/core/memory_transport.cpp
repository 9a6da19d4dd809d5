// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/memory/transport.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace babelqueue {
namespace {

using Clock = std::chrono::steady_clock;

struct StoredMessage {
  std::string body;
  Headers headers;
  std::string ordering_key;     // as published; read back into Delivery::ordering_key
  std::int64_t deliveries = 0;  // how many times receive() handed it out
};

struct Reservation {
  StoredMessage message;
  Clock::time_point expires = Clock::time_point::max();  // max: never (no visibility timeout)
  // The headers were moved into the Delivery rather than copied: a
  // reservation that never expires comes back only through release(), which
  // is handed the Delivery and takes them back from it.
  bool headers_lent = false;
};

struct MemoryQueue {
  std::deque<StoredMessage> ready;
  // By due time; equal keys keep insertion order (multimap inserts at the end
  // of an equal range), so messages due together stay first in, first out.
  std::multimap<Clock::time_point, StoredMessage> delayed;
  std::map<std::uint64_t, Reservation> reserved;  // by token id
};

// Token ids are unique in the process, not just per broker, so a Delivery
// settled through a transport of another broker can never hit a reservation
// that happens to have the same number.
constinit std::atomic<std::uint64_t> next_token_id{1};

Unexpected<ErrorInfo> closed_error() { return unexpected(Errc::closed, "the memory transport is closed"); }

Unexpected<ErrorInfo> stale_token(const Delivery& delivery) {
  return unexpected(Errc::not_found, "delivery " + std::to_string(delivery.token.id) + " of queue '" + delivery.queue +
                                         "' is not reserved any more (already settled, or its visibility timeout "
                                         "passed and it went back to the queue)");
}

Result<void> check_queue_name(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

}  // namespace

// The shared state of every memory::Transport opened on it. One mutex guards all
// queues: operations are a few pointer moves, so contention is short, and one
// condition variable is enough to wake receivers.
namespace memory {

class Broker {
 public:
  std::mutex mutex;
  std::condition_variable changed;  // a message became ready somewhere, or a transport closed

  MemoryQueue& queue(std::string_view name) {
    auto it = queues_.find(name);
    if (it == queues_.end()) it = queues_.emplace(std::string(name), MemoryQueue{}).first;
    return it->second;
  }

  MemoryQueue* find_queue(std::string_view name) {
    const auto it = queues_.find(name);
    return it == queues_.end() ? nullptr : &it->second;
  }

  // The reservation a delivery holds, or null when it is stale (settled,
  // expired and taken again, or of another broker). Call with mutex held.
  std::pair<MemoryQueue*, std::map<std::uint64_t, Reservation>::iterator> find_reservation(const Delivery& delivery) {
    MemoryQueue* source = find_queue(delivery.queue);
    if (source == nullptr) return {nullptr, {}};
    const auto it = source->reserved.find(delivery.token.id);
    if (it == source->reserved.end()) return {nullptr, {}};
    return {source, it};
  }

  // Moves what is due — delayed messages and expired reservations — to the
  // tail of the ready list, in the order they became due.
  static void promote_due(MemoryQueue& queue, Clock::time_point now) {
    std::vector<std::pair<Clock::time_point, StoredMessage>> due;
    for (auto it = queue.delayed.begin(); it != queue.delayed.end() && it->first <= now;) {
      due.emplace_back(it->first, std::move(it->second));
      it = queue.delayed.erase(it);
    }
    for (auto it = queue.reserved.begin(); it != queue.reserved.end();) {
      if (it->second.expires <= now) {
        due.emplace_back(it->second.expires, std::move(it->second.message));
        it = queue.reserved.erase(it);
      } else {
        ++it;
      }
    }
    std::stable_sort(due.begin(), due.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& entry : due) queue.ready.push_back(std::move(entry.second));
  }

  // When the next delayed message or reservation of queue becomes due.
  static Clock::time_point next_due(const MemoryQueue& queue) {
    Clock::time_point next = Clock::time_point::max();
    if (!queue.delayed.empty()) next = queue.delayed.begin()->first;
    for (const auto& entry : queue.reserved) next = std::min(next, entry.second.expires);
    return next;
  }

 private:
  std::map<std::string, MemoryQueue, std::less<>> queues_;
};

}  // namespace memory

memory::Transport::Transport() : memory::Transport(Options{}) {}

memory::Transport::Transport(Options options) : memory::Transport(std::make_shared<memory::Broker>(), options) {}

memory::Transport::Transport(std::shared_ptr<memory::Broker> broker, Options options)
    : broker_(std::move(broker)), options_(options) {
  if (!broker_) throw Error(Errc::invalid_argument, "memory::Transport needs a broker");
  if (options_.visibility_timeout.count() < 0) {
    throw Error(Errc::invalid_argument, "memory::Transport visibility_timeout must not be negative");
  }
}

memory::Transport::~Transport() { close(); }

std::shared_ptr<memory::Broker> memory::Transport::shared_broker(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<memory::Broker>, std::less<>> brokers;
  const std::lock_guard lock(mutex);
  auto it = brokers.find(name);
  if (it == brokers.end()) it = brokers.emplace(std::string(name), std::make_shared<memory::Broker>()).first;
  return it->second;
}

Capabilities memory::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;
  caps.native_release = true;
  caps.delivery_count = true;
  caps.redelivers_unsettled = options_.visibility_timeout.count() > 0;
  caps.lease = options_.visibility_timeout;  // zero: reservations never expire
  caps.extendable_lease = true;
  caps.batch_publish = false;  // the default loop; there is no round trip to save
  caps.ordered = true;
  // Every queue is one first-in-first-out line, so order per key holds
  // trivially; the key is kept and read back for the runtime's republishes.
  caps.ordering_key = true;
  caps.peek = true;
  return caps;
}

Result<void> memory::Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (auto valid = check_queue_name(queue); !valid) return valid;
  if (options.delay.count() < 0) return unexpected(Errc::invalid_argument, "the publish delay is negative");
  if (closed_) return closed_error();
  StoredMessage message{std::string(body), options.headers, options.ordering_key, 0};
  {
    const std::lock_guard lock(broker_->mutex);
    MemoryQueue& target = broker_->queue(queue);
    if (options.delay.count() > 0) {
      target.delayed.emplace(detail::saturating_after(Clock::now(), options.delay), std::move(message));
    } else {
      target.ready.push_back(std::move(message));
    }
  }
  // A delayed message wakes receivers too: they recompute when to wake up.
  broker_->changed.notify_all();
  return {};
}

Result<std::vector<Delivery>> memory::Transport::receive(std::string_view queue, std::size_t max,
                                                         std::chrono::milliseconds wait) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
  // Clamped so that adding it to now cannot overflow the clock.
  const auto bounded_wait =
      std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(std::chrono::hours(24 * 365)));
  const Clock::time_point deadline = Clock::now() + bounded_wait;
  std::unique_lock lock(broker_->mutex);
  MemoryQueue& source = broker_->queue(queue);
  for (;;) {
    if (closed_) return closed_error();
    const Clock::time_point now = Clock::now();
    memory::Broker::promote_due(source, now);
    if (!source.ready.empty()) {
      std::vector<Delivery> deliveries;
      const std::size_t count = std::min(max, source.ready.size());
      deliveries.reserve(count);
      for (std::size_t i = 0; i < count; ++i) {
        StoredMessage message = std::move(source.ready.front());
        source.ready.pop_front();
        ++message.deliveries;
        Delivery delivery;
        delivery.queue = std::string(queue);
        delivery.body = message.body;
        const bool expires = options_.visibility_timeout.count() > 0;
        if (expires) {
          delivery.headers = message.headers;
        } else {
          delivery.headers = std::move(message.headers);
          message.headers.clear();  // a moved-from map is only valid, not empty
        }
        delivery.ordering_key = message.ordering_key;
        delivery.native_attempts = message.deliveries - 1;
        delivery.token.id = next_token_id.fetch_add(1, std::memory_order_relaxed);
        Reservation reservation{std::move(message), Clock::time_point::max(), !expires};
        if (expires) {
          reservation.expires = now + options_.visibility_timeout;
          delivery.lease_deadline = reservation.expires;
        }
        source.reserved.emplace(delivery.token.id, std::move(reservation));
        deliveries.push_back(std::move(delivery));
      }
      return deliveries;
    }
    if (now >= deadline) return std::vector<Delivery>{};
    // Sleep until something may have changed: a publish, a release or a close
    // notifies; a delayed message or an expiring reservation is a known time.
    broker_->changed.wait_until(lock, std::min(deadline, memory::Broker::next_due(source)));
  }
}

Result<void> memory::Transport::ack(const Delivery& delivery) {
  if (closed_) return closed_error();
  const std::lock_guard lock(broker_->mutex);
  MemoryQueue* source = broker_->find_queue(delivery.queue);
  if (source == nullptr || source->reserved.erase(delivery.token.id) == 0) return stale_token(delivery);
  return {};
}

Result<void> memory::Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  if (delay.count() < 0) return unexpected(Errc::invalid_argument, "the release delay is negative");
  if (closed_) return closed_error();
  {
    const std::lock_guard lock(broker_->mutex);
    const auto [source, it] = broker_->find_reservation(delivery);
    if (source == nullptr) return stale_token(delivery);
    StoredMessage message = std::move(it->second.message);
    if (it->second.headers_lent) message.headers = delivery.headers;
    source->reserved.erase(it);
    if (delay.count() > 0) {
      source->delayed.emplace(detail::saturating_after(Clock::now(), delay), std::move(message));
    } else {
      source->ready.push_back(std::move(message));
    }
  }
  broker_->changed.notify_all();
  return {};
}

Result<void> memory::Transport::extend(const Delivery& delivery, std::chrono::milliseconds lease) {
  if (lease.count() < 0) return unexpected(Errc::invalid_argument, "the lease is negative");
  if (closed_) return closed_error();
  {
    const std::lock_guard lock(broker_->mutex);
    const auto [source, it] = broker_->find_reservation(delivery);
    if (source == nullptr) return stale_token(delivery);
    // A reservation that never expires needs no extension.
    if (it->second.expires != Clock::time_point::max())
      it->second.expires = detail::saturating_after(Clock::now(), lease);
  }
  // Receivers sleeping until the old expiry recompute their wake-up time.
  broker_->changed.notify_all();
  return {};
}

Result<QueueStats> memory::Transport::stats(std::string_view queue) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (closed_) return closed_error();
  const std::lock_guard lock(broker_->mutex);
  QueueStats stats{0, 0, 0};
  MemoryQueue* source = broker_->find_queue(queue);
  if (source == nullptr) return stats;
  memory::Broker::promote_due(*source, Clock::now());
  stats.ready = static_cast<std::int64_t>(source->ready.size());
  stats.reserved = static_cast<std::int64_t>(source->reserved.size());
  stats.delayed = static_cast<std::int64_t>(source->delayed.size());
  return stats;
}

Result<std::vector<PeekedMessage>> memory::Transport::peek(std::string_view queue, std::size_t max) {
  if (auto valid = check_queue_name(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "peek needs max >= 1");
  if (closed_) return closed_error();
  const std::lock_guard lock(broker_->mutex);
  std::vector<PeekedMessage> shown;
  MemoryQueue* source = broker_->find_queue(queue);
  if (source == nullptr) return shown;
  memory::Broker::promote_due(*source, Clock::now());
  const std::size_t count = std::min(max, source->ready.size());
  shown.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const StoredMessage& message = source->ready[i];
    shown.push_back(PeekedMessage{message.body, message.headers, message.deliveries});
  }
  return shown;
}

void memory::Transport::close(std::chrono::milliseconds /*deadline*/) {
  if (closed_.exchange(true)) return;
  // Taking the lock orders the flag before any receiver's next check of it, so
  // a receiver about to sleep cannot miss the notification.
  { const std::lock_guard lock(broker_->mutex); }
  broker_->changed.notify_all();
}

}  // namespace babelqueue
